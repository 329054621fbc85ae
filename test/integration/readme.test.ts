// Every whole TOML configuration in the README and in the hand-written docs/ pages passes `check`
// (docs/configuration.md and docs/transforms.md have tests of their own); broken files give their
// errors and 78.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { ownedTempDir, ROOT, spawnOwnedNode } from '../helpers/node.js';
import { makePki } from '../helpers/pki.js';

/** The ```toml blocks of a file that are whole configurations (they have a pipeline). */
const tomlExamples = (file: string): string[] =>
  [...readFileSync(join(ROOT, file), 'utf8').matchAll(/```toml\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((text) => /^\[\[pipelines\]\]$/m.test(text));

const OWN_TESTS = new Set(['configuration.md', 'transforms.md']);
const pages = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md') && !OWN_TESTS.has(f)).map((f) => `docs/${f}`)];
const examples = pages.flatMap((file) => tomlExamples(file).map((text, i) => ({ name: `${file} example ${i + 1}`, text })));
const readmeExamples = tomlExamples('README.md');

/** The least number of whole configurations each page shows, so an example cannot vanish unnoticed. */
const AT_LEAST: Record<string, number> = {
  'README.md': 6,
  'docs/delivery.md': 1,
  'docs/flow.md': 2,
  'docs/nats.md': 2,
  'docs/otlp.md': 2,
  'docs/sinks.md': 1,
  'docs/sources.md': 1,
  'docs/syslog.md': 1,
};

test.serial('the README and docs/ have configuration examples and every one passes check', async (t) => {
  t.timeout(300_000);
  for (const [file, least] of Object.entries(AT_LEAST)) {
    const found = tomlExamples(file).length;
    t.true(found >= least, `${file}: ${found} configuration examples, expected at least ${least}`);
  }
  const dir = ownedTempDir(t);
  const pki = makePki(join(dir.path, 'pki'), ['edge-01', 'relay', 'collector']);
  for (const [i, { name, text }] of examples.entries()) {
    const file = dir.file(`example-${i}.toml`, text);
    const node = spawnOwnedNode(t, ['check', '-c', file], { env: { PKI_DIR: pki.dir } });
    const { code } = await node.finish(`check of ${name}`);
    t.is(code, 0, `${name}: ${node.errText.join('\n')}`);
    t.regex(node.out.join('\n'), /^configuration ok: (1 pipeline|(?!1 )\d+ pipelines)$/, name);
  }
});

const broken: [string, string, RegExp][] = [
  ['toml syntax', '[[pipelines]\nname = "a"\n', /configuration error: .*bad\.toml/],
  ["unknown key", `verbose = true\n${readmeExamples[0]}`, /configuration error: verbose: unknown key/],
  ['missing variable', 'status_interval_ms = ${STATUS_EVERY:?set STATUS_EVERY}\n', /line 1: \$\{STATUS_EVERY\}: set STATUS_EVERY/],
];
for (const [name, text, message] of broken) {
  test.serial(`check on a broken file (${name}) exits 78 with the error`, async (t) => {
    const dir = ownedTempDir(t);
    const node = spawnOwnedNode(t, ['check', '-c', dir.file('bad.toml', text)], { env: { STATUS_EVERY: undefined } });
    t.is((await node.finish()).code, 78);
    t.regex(node.errText.join('\n'), message);
    t.deepEqual(node.out, []);
  });
}
