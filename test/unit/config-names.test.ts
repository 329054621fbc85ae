// Pipeline names and plugin ids become directory names (a disk buffer lives in
// `<data_dir>/buffers/<pipeline>/<source id>/`): the name rule keeps every buffer in a directory
// of its own, inside `buffers/`.

import { isAbsolute, relative } from 'node:path';
import test from 'ava';
import fc from 'fast-check';
import { bufferDir } from '../../src/buffer/source.js';
import { loadConfig } from '../../src/config/load.js';
import { nameFault } from '../../src/config/validate.js';
import { ConfigError } from '../../src/core/errors.js';
import { tempDir } from '../helpers/node.js';

function load(text: string) {
  const dir = tempDir();
  try {
    return loadConfig({ file: dir.file('c.toml', text), env: {}, flags: new Map() });
  } finally {
    dir.remove();
  }
}

const pipeline = (name: string, sourceId: string) => `
[[pipelines]]
name = ${JSON.stringify(name)}
[[pipelines.plugin_sources]]
id = ${JSON.stringify(sourceId)}
type = "random"
[[pipelines.plugin_sinks]]
type = "null"
`;

function faults(text: string): string[] {
  try {
    load(text);
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return [...err.messages];
    throw err;
  }
}

test('a pipeline name or plugin id that is no safe directory name is a configuration error naming the key', (t) => {
  // the two that collided: buffers/x/a/b/ both
  t.deepEqual(faults(pipeline('x', 'a/b') + pipeline('x/a', 'b')), [
    'pipelines[0].plugin_sources[0].id: must be 1 to 64 letters, digits, "_", "-" or "." and not start with ".", got "a/b"',
    'pipelines[1].name: must be 1 to 64 letters, digits, "_", "-" or "." and not start with ".", got "x/a"',
  ]);
  t.deepEqual(faults(pipeline('../escape', 'in')), ['pipelines[0].name: must be 1 to 64 letters, digits, "_", "-" or "." and not start with ".", got "../escape"']);
  for (const bad of ['..', '.hidden', 'a b', 'a\\b', 'ä', 'x'.repeat(65), 'a:b']) t.truthy(nameFault(bad), JSON.stringify(bad));
  for (const good of ['app', 'relay-a', 'v1.2', '_x', '-x', 'A9', 'x'.repeat(64), 'a..b']) t.is(nameFault(good), undefined, JSON.stringify(good));
  t.deepEqual(faults(pipeline('app.v2', 'in_1-x') + pipeline('relay-a', 'in')), []);
});

test('no two disk buffers of a valid configuration share a directory, and none leaves buffers/', (t) => {
  const dataDir = '/var/lib/logrelay';
  // names drawn from the allowed characters and from the ones that would make paths meet
  const part = fc.stringMatching(/^[a-b./_-]{1,4}$/);
  fc.assert(
    fc.property(fc.array(fc.tuple(part, fc.array(part, { minLength: 1, maxLength: 3 })), { minLength: 1, maxLength: 4 }), (pipes) => {
      let text = 'data_dir = "/var/lib/logrelay"\n';
      for (const [name, ids] of pipes) {
        text += `[[pipelines]]\nname = ${JSON.stringify(name)}\n`;
        for (const id of ids) text += `[[pipelines.plugin_sources]]\nid = ${JSON.stringify(id)}\ntype = "random"\n`;
        text += '[[pipelines.plugin_sinks]]\ntype = "null"\n';
      }
      let config;
      try {
        config = load(text);
      } catch (err) {
        if (err instanceof ConfigError) return; // refused: nothing runs
        throw err;
      }
      const dirs = new Map<string, string>();
      for (const p of config.pipelines) {
        for (const s of p.plugin_sources) {
          const dir = bufferDir(dataDir, p.name, s.id!);
          const inside = relative(`${dataDir}/buffers`, dir);
          if (inside.startsWith('..') || isAbsolute(inside) || inside.split('/').length !== 2) throw new Error(`${dir} is not two levels under buffers/`);
          if (dirs.has(dir)) throw new Error(`${p.name}/${s.id} and ${dirs.get(dir)} share ${dir}`);
          // one directory inside another would do harm too: a buffer's listing would see the other's directory
          for (const other of dirs.keys()) if (dir.startsWith(`${other}/`) || other.startsWith(`${dir}/`)) throw new Error(`${dir} and ${other} nest`);
          dirs.set(dir, `${p.name}/${s.id}`);
        }
      }
    }),
    { numRuns: 300 },
  );
  t.pass();
});
