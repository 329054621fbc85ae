// Every TOML example in the README passes `check`; broken files give their errors and 78.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { ownedTempDir, ROOT, spawnOwnedNode } from '../helpers/node.js';
import { makePki } from '../helpers/pki.js';

const examples = [...readFileSync(join(ROOT, 'README.md'), 'utf8').matchAll(/```toml\n([\s\S]*?)```/g)].map((m) => m[1]!);

test.serial('the README has configuration examples and every one passes check', async (t) => {
  t.true(examples.length >= 4, `found ${examples.length} examples`);
  const dir = ownedTempDir(t);
  const pki = makePki(join(dir.path, 'pki'), ['edge-01', 'relay', 'collector']);
  for (const [i, text] of examples.entries()) {
    const file = dir.file(`example-${i}.toml`, text);
    const node = spawnOwnedNode(t, ['check', '-c', file], { env: { PKI_DIR: pki.dir } });
    const { code } = await node.finish(`check of example ${i}`);
    t.is(code, 0, `example ${i}: ${node.errText.join('\n')}`);
    t.regex(node.out.join('\n'), /^configuration ok: (1 pipeline|(?!1 )\d+ pipelines)$/);
  }
});

const broken: [string, string, RegExp][] = [
  ['toml syntax', '[[pipelines]\nname = "a"\n', /configuration error: .*bad\.toml/],
  ["unknown key", `verbose = true\n${examples[0]}`, /configuration error: verbose: unknown key/],
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
