// docs/transforms.md: every TOML example passes the configuration checks and the pipeline build
// (step examples inside a minimal pipeline), and every step example, run on the input line under
// it, gives the entry shown below that (as the json format writes it; `null`: the entry is dropped).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { checkPipelines } from '../../src/check.js';
import { loadConfig } from '../../src/config/load.js';
import { parseLine } from '../../src/core/entry.js';
import { createLogger } from '../../src/core/log.js';
import { formatJson } from '../../src/flow/format.js';
import { compileTransforms } from '../../src/transform/index.js';
import { ROOT, tempDir } from '../helpers/node.js';

const DOC = readFileSync(join(ROOT, 'docs', 'transforms.md'), 'utf8');
const T0 = Date.parse('2024-05-06T07:08:09.010Z');
const silent = createLogger('silent', { write() {} });

/** The fenced blocks in order: language and text. */
const blocks = [...DOC.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, text: m[2]! }));

const MINIMAL = (steps: string) => `[[pipelines]]\nname = "doc"\n${steps}\n[[pipelines.plugin_sources]]\ntype = "random"\n[[pipelines.plugin_sinks]]\ntype = "null"\n`;

function load(text: string) {
  const dir = tempDir();
  try {
    return loadConfig({ file: dir.file('c.toml', text), env: {}, flags: new Map() });
  } finally {
    dir.remove();
  }
}

test('docs/transforms.md: one example per step type, a routing and a dead letter example; each passes check', async (t) => {
  const tomls = blocks.filter((b) => b.lang === 'toml').map((b) => b.text);
  const stepTypes = new Set(tomls.flatMap((s) => [...s.matchAll(/^\[\[pipelines\.flow\.transforms\]\]\ntype = "(\w+)"/gm)].map((m) => m[1])));
  t.deepEqual([...stepTypes].sort(), ['delete', 'drop', 'keep', 'parse', 'redact', 'rename', 'sample', 'set', 'throttle']);
  t.true(tomls.some((s) => /when = "level >= 'error'"/.test(s) && /type = "sample"/.test(s)), 'the routing example: errors to the pager, debug sampled');
  t.true(tomls.some((s) => /dead_letter = /.test(s)));
  for (const text of tomls) {
    const config = load(text.includes('[[pipelines]]') ? text : MINIMAL(text));
    t.deepEqual(await checkPipelines(config), [], text);
  }
});

const examples: { toml: string; input: string; output: string }[] = [];
for (let i = 0; i + 2 < blocks.length; i++) {
  const [a, b, c] = [blocks[i]!, blocks[i + 1]!, blocks[i + 2]!];
  if (a.lang === 'toml' && b.lang === 'text' && c.lang === 'json') examples.push({ toml: a.text, input: b.text.trimEnd(), output: c.text.trimEnd() });
}

test('docs/transforms.md has an input and output under every step example', (t) => {
  t.is(examples.length, 10);
});

for (const [i, ex] of examples.entries()) {
  test(`docs/transforms.md step example ${i} (${/type = "(\w+)"/.exec(ex.toml)?.[1]}) gives the entry shown`, (t) => {
    const config = load(MINIMAL(ex.toml));
    const steps = compileTransforms(config.pipelines[0]!.flow.transforms ?? [], 'doc', 'doc', silent);
    const entry = parseLine(ex.input, 'app', T0, false);
    const passed = steps.run(entry, T0);
    t.is(passed ? formatJson(entry) : 'null', ex.output);
  });
}
