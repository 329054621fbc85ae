// `check`'s build errors for plugin types the registries do not know name the valid types.

import test from 'ava';
import { checkPipelines } from '../../src/check.js';
import { loadConfig } from '../../src/config/load.js';
import { SINKS } from '../../src/sinks/index.js';
import { SOURCES } from '../../src/sources/index.js';
import { tempDir } from '../helpers/node.js';

function check(text: string): string[] {
  const dir = tempDir();
  try {
    return checkPipelines(loadConfig({ file: dir.file('c.toml', text), env: {}, flags: new Map() }));
  } finally {
    dir.remove();
  }
}

test('an unknown sink or source type lists the valid types', (t) => {
  const errors = check(`
[[pipelines]]
name = "app"
[[pipelines.plugin_sources]]
id = "in"
type = "kinesis"
[[pipelines.plugin_sinks]]
id = "out"
type = "kafka"
`);
  // every registered type, sorted, so types added later are listed without touching this test
  t.deepEqual(errors, [
    `pipeline=app: failed to create sink out: type: unknown sink type "kafka" (valid types: ${Object.keys(SINKS).sort().join(', ')})`,
    `pipeline=app: failed to create source in: type: unknown source type "kinesis" (valid types: ${Object.keys(SOURCES).sort().join(', ')})`,
  ]);
  t.regex(errors[0]!, /\(valid types: file, http, http_chain, .*tcp_chain\b/);
});
