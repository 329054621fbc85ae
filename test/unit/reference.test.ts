// The configuration reference is generated from the schema: the committed docs/configuration.md
// matches it, every key carries a one-line doc, and `check --explain` reads the same data.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import test from 'ava';
import { renderCountersReference } from '../../src/docs/counters-reference.js';
import { buildReference, explainKey, renderConfigurationReference, undocumented } from '../../src/docs/reference.js';
import type { Fields, PluginSpec } from '../../src/config/spec.js';
import { SINK_SPECS } from '../../src/sinks/specs.js';
import { SOURCE_SPECS } from '../../src/sources/specs.js';
import { ROOT } from '../helpers/node.js';

test('docs/configuration.md is what the schema generates (run `npm run docs` after changing a key)', (t) => {
  const committed = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8');
  t.is(committed, renderConfigurationReference(), 'docs/configuration.md is stale: run `npm run docs` and commit it');
});

test('docs/counters.md is what the counter declarations and the metric families generate (run `npm run docs`)', (t) => {
  t.is(readFileSync(join(ROOT, 'docs', 'counters.md'), 'utf8'), renderCountersReference(), 'docs/counters.md is stale: run `npm run docs` and commit it');
});

test('every key of the schema and of every plugin type has a one-line doc', (t) => {
  t.deepEqual(undocumented(buildReference()), []);
});

test('the reference has a section for every source and sink type of the registries, and their keys', (t) => {
  const md = renderConfigurationReference();
  for (const type of Object.keys(SOURCE_SPECS)) t.true(md.includes(`### \`${type}\` source\n`), `source ${type}`);
  for (const type of Object.keys(SINK_SPECS)) t.true(md.includes(`### \`${type}\` sink\n`), `sink ${type}`);
  t.regex(md, /\| `directory` \| string \| {2}\| {2}\| directory whose files are read/);
  t.regex(md, /\| `multiline\.preset` \| "java" \\\| "python" \\\| "go" \|/);
  t.regex(md, /\| `heartbeat_interval_ms` \| integer >= 1 \| `15000` \| ms \|/);
  t.regex(md, /\| `tls\.min_version` \| "1\.2" \\\| "1\.3" \| `"1\.3"` \|/);
  t.regex(md, /- `"json"`: one JSON object per line/);
  t.regex(md, /### \[\[pipelines\.flow\.filters\]\]/);
});

const documented: Fields = { port: { t: 'number', def: 1, doc: 'a port' } };

test('a key added without a doc fails the generator, named by its full path', (t) => {
  const config: Fields = {
    quiet: { t: 'boolean', def: false, doc: 'documented' },
    admin: { t: 'table', doc: 'admin endpoint', fields: { port: { t: 'number', def: 0 } } },
  };
  const sinks: Record<string, PluginSpec> = { kafka: { doc: 'a new sink', fields: { ...documented, topic: { t: 'string' } } } };
  const err = t.throws(() => renderConfigurationReference(buildReference(config, {}, sinks)));
  t.is(err?.message, 'configuration keys without a one-line doc string: admin.port, sinks.kafka.topic');
});

test('keys and types added later are picked up without touching the generator', (t) => {
  const config: Fields = { node_name: { t: 'string', doc: "this node's name" } };
  const sources: Record<string, PluginSpec> = { syslog: { doc: 'receives syslog', fields: { ...documented } } };
  const md = renderConfigurationReference(buildReference(config, sources, {}));
  t.regex(md, /\| `node_name` \| string \| {2}\| {2}\| this node's name \|/);
  t.regex(md, /### `syslog` source\n\nreceives syslog\n/);
  t.regex(md, /\| `port` \| number \| `1` \| {2}\| a port \|/);
});

test('explain prints one key by its full path, a section, or every key of a name', (t) => {
  t.is(explainKey('sinks.http.port'), 'sinks.http.port\n  type: integer, 1 to 65535\n  default: required\n  port to listen on\n');
  t.regex(explainKey('pipelines[0].flow.format.type') ?? '', /^pipelines\.flow\.format\.type\n.*\n {2}default: "raw"\n {2}the formatter\n {4}"raw": /);
  t.is(explainKey('pipelines.0.flow.format.type'), explainKey('pipelines.flow.format.type'));
  t.regex(explainKey('sources.file') ?? '', /^sources\.file: tails the files/);
  const all = explainKey('buffer_size') ?? '';
  t.regex(all, /sinks\.stdout\.buffer_size\n {2}type: integer >= 1\n {2}default: 1000\n {2}unit: entries\n/);
  t.regex(all, /sources\.tcp_chain\.buffer_size/);
  t.regex(explainKey('logging.file.max_size_mb') ?? '', /unit: MiB/);
  t.is(explainKey('no_such_key'), undefined);
  t.is(explainKey(''), undefined);
});

test('the reference does not depend on the host name it is generated on (a default computed at run time is written as what it is)', async (t) => {
  // Another host name injected into node:os before the generator loads: the output is the committed file.
  const dir = mkdtempSync(join(tmpdir(), 'logrelay-ref-'));
  const preload = join(dir, 'other-host.mjs');
  writeFileSync(preload, "import os from 'node:os';\nimport { syncBuiltinESMExports } from 'node:module';\nos.hostname = () => 'another-host-4711';\nsyncBuiltinESMExports();\n");
  const out = join(dir, 'configuration.md');
  const run = spawnSync(process.execPath, ['--import', pathToFileURL(preload).href, join(ROOT, 'dist', 'src', 'docs', 'build.js'), out, join(dir, 'counters.md')], { encoding: 'utf8' });
  t.is(run.status, 0, run.stderr);
  const generated = readFileSync(out, 'utf8');
  t.false(generated.includes('another-host-4711'), 'the injected host name leaked into the reference');
  t.is(generated, readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8'));
  t.regex(generated, /\| `node_name` \| string \| \*the machine's host name\* \|/);
  t.is(readFileSync(join(dir, 'counters.md'), 'utf8'), readFileSync(join(ROOT, 'docs', 'counters.md'), 'utf8'));
  rmSync(dir, { recursive: true, force: true });
});
