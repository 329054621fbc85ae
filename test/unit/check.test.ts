// `check`'s build errors for plugin types the registries do not know name the valid types.

import test from 'ava';
import { checkPipelines } from '../../src/check.js';
import { loadConfig } from '../../src/config/load.js';
import { SINKS } from '../../src/sinks/index.js';
import { SOURCES } from '../../src/sources/index.js';
import { tempDir } from '../helpers/node.js';

async function check(text: string): Promise<string[]> {
  const dir = tempDir();
  try {
    return await checkPipelines(loadConfig({ file: dir.file('c.toml', text), env: {}, flags: new Map() }));
  } finally {
    dir.remove();
  }
}

test('an unknown sink or source type lists the valid types', async (t) => {
  const errors = await check(`
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

test('every TLS file a plugin cannot read is reported, not only the first', async (t) => {
  const errors = await check(`
[[pipelines]]
name = "edge"
[[pipelines.plugin_sources]]
id = "in"
type = "random"
[[pipelines.plugin_sinks]]
id = "up"
type = "tcp_chain"
[pipelines.plugin_sinks.config]
host = "127.0.0.1"
port = 9000
[pipelines.plugin_sinks.config.tls]
enabled = true
ca_file = "/nonexistent/ca.crt"
cert_file = "/nonexistent/edge.crt"
key_file = "/nonexistent/edge.key"
[[pipelines.plugin_sinks]]
id = "listen"
type = "tcp"
[pipelines.plugin_sinks.config]
port = 9001
[pipelines.plugin_sinks.config.tls]
enabled = true
client_ca_file = "/nonexistent/ca.crt"
`);
  t.is(errors.length, 6, errors.join('\n'));
  for (const key of ['ca_file', 'cert_file', 'key_file']) t.true(errors.some((e) => e.startsWith(`pipeline=edge: failed to create sink up: tls.${key}: cannot read /nonexistent/`)), key);
  t.true(errors.includes('pipeline=edge: failed to create sink listen: tls.cert_file: is required when tls is enabled'));
  t.true(errors.includes('pipeline=edge: failed to create sink listen: tls.key_file: is required when tls is enabled'));
  t.true(errors.some((e) => e.startsWith('pipeline=edge: failed to create sink listen: tls.client_ca_file: cannot read /nonexistent/ca.crt')));
});

test('every fault of one plugin\'s config table is reported, a line each, not only the first', async (t) => {
  const errors = await check(`
[[pipelines]]
name = "app"
[[pipelines.plugin_sources]]
id = "in"
type = "random"
[pipelines.plugin_sources.config]
interval_ms = "soon"
count = -1
colour = "red"
[[pipelines.plugin_sinks]]
id = "out"
type = "tcp"
[pipelines.plugin_sinks.config]
port = 0
write_timeout_ms = "x"
`);
  t.deepEqual(errors, [
    'pipeline=app: failed to create sink out: port: must be 1 to 65535, got 0',
    'pipeline=app: failed to create sink out: write_timeout_ms: must be a number, got string',
    'pipeline=app: failed to create source in: interval_ms: must be a number, got string',
    'pipeline=app: failed to create source in: count: must be >= 0, got -1',
    'pipeline=app: failed to create source in: colour: unknown key',
  ]);
});
