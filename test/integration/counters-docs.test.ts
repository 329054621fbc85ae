// docs/counters.md is generated from the declarations in src/docs/counters-reference.ts; this
// checks those declarations against a running node: every counter a plugin of each type reports
// is declared for that type, and every declared one is reported. One node runs every source and
// sink type (a nats-server on loopback for the nats pair), with dedup, a rate limit and data_dir.

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { COUNTER_SECTIONS, declaredCounters } from '../../src/docs/counters-reference.js';
import { adminRequest, adminStatus, parseExposition, sampleValue } from '../helpers/admin.js';
import { chainSinkToml, chainSourceToml } from '../helpers/chain.js';
import { createStream, natsClient, natsSinkToml, natsSourceToml, startNats } from '../helpers/nats.js';
import { freePort, ownedTempDir, startOwnedNode, waitFor } from '../helpers/node.js';
import { fileSinkToml, fileSourceToml, localPluginToml, randomSourceToml, sinkToml } from '../helpers/toml.js';

/** One step of each type, its id the type (so a reported counter names its owner). */
const TRANSFORM_STEPS = `[[pipelines.flow.transforms]]
id = "parse"
type = "parse"
format = "json"
[[pipelines.flow.transforms]]
id = "set"
type = "set"
fields = { "fields.env" = "test" }
[[pipelines.flow.transforms]]
id = "rename"
type = "rename"
fields = { "fields.env" = "fields.environment" }
[[pipelines.flow.transforms]]
id = "delete"
type = "delete"
fields = ["fields.none"]
[[pipelines.flow.transforms]]
id = "keep"
type = "keep"
fields = ["fields.environment"]
[[pipelines.flow.transforms]]
id = "redact"
type = "redact"
presets = ["email"]
[[pipelines.flow.transforms]]
id = "drop"
type = "drop"
when = "message contains 'zzzz'"
[[pipelines.flow.transforms]]
id = "sample"
type = "sample"
rate = 1
[[pipelines.flow.transforms]]
id = "throttle"
type = "throttle"
rate = 1000
key = "{{ source }}"
`;

test.serial('every counter a running node reports is declared (and documented) for its owner, and every declared one is reported', async (t) => {
  t.timeout(90_000);
  const servers = await startNats(t);
  const nc = await natsClient(t, servers);
  await createStream(nc, 'LOGS', ['logs.>']);
  const dir = ownedTempDir(t);
  mkdirSync(join(dir.path, 'in'));
  writeFileSync(join(dir.path, 'in', 'app.log'), 'one\ntwo\n');
  const [admin, tcpChain, httpChain, syslog, tcp, http, otlp] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort(), freePort(), freePort()]);
  const toml = `status_interval_ms = 300
data_dir = ${JSON.stringify(join(dir.path, 'data'))}
[admin]
port = ${admin}
[[pipelines]]
name = "out"
[pipelines.flow.rate_limit]
rate = 100000
[pipelines.flow.dedup]
enabled = true
${randomSourceToml('interval_ms = 100')}${sinkToml('null', 'null')}${sinkToml('stdout', 'stdout')}${fileSinkToml('file', join(dir.path, 'out'))}${localPluginToml('sinks', 'tcp', 'tcp', tcp)}${localPluginToml('sinks', 'http', 'http', http)}${chainSinkToml('tcp_chain', 'tcp_chain', tcpChain, 'me')}${chainSinkToml('http_chain', 'http_chain', httpChain, 'me')}${localPluginToml('sinks', 'syslog', 'syslog', syslog)}${natsSinkToml('nats', servers, 'subject = "logs.app"')}[[pipelines.plugin_sinks]]
id = "otlp"
type = "otlp"
[pipelines.plugin_sinks.config]
endpoint = "http://127.0.0.1:${otlp}/v1/logs"
[[pipelines]]
name = "in"
${fileSourceToml('file', join(dir.path, 'in'))}[[pipelines.plugin_sources]]
id = "stdin"
type = "stdin"
${chainSourceToml('tcp_chain', 'tcp_chain', tcpChain, '[pipelines.plugin_sources.config.buffer]\ntype = "disk"\n')}${chainSourceToml('http_chain', 'http_chain', httpChain)}${localPluginToml('sources', 'syslog', 'syslog', syslog)}${localPluginToml('sources', 'syslog_udp', 'syslog', syslog, 'mode = "udp"\n')}${natsSourceToml('nats', servers, 'LOGS', 'docs')}${localPluginToml('sources', 'otlp', 'otlp', otlp)}${sinkToml('null', 'null')}
[[pipelines]]
name = "any"
fanout = "any"
${randomSourceToml('interval_ms = 1000')}${sinkToml('a', 'null')}${sinkToml('b', 'null')}
[[pipelines]]
name = "shape"
${TRANSFORM_STEPS}${randomSourceToml('interval_ms = 100')}[[pipelines.plugin_sinks]]
id = "routed"
type = "file"
when = "level >= 'error'"
dead_letter = "dl"
[pipelines.plugin_sinks.config]
directory = ${JSON.stringify(join(dir.path, 'routed'))}
name = "out"
[[pipelines.plugin_sinks]]
id = "dl"
type = "null"
`;
  startOwnedNode(t, toml);
  const status = await waitFor(async () => {
    const s = await adminStatus(admin).catch(() => undefined);
    const inCounters = s?.pipelines.in?.counters;
    // entries crossed the chain, syslog and nats links
    if (!inCounters || !['tcp_chain', 'http_chain', 'syslog', 'nats', 'otlp'].every((id) => (inCounters.sources[id]?.total_entries ?? 0) > 0)) return undefined;
    // and every plugin of every pipeline has reported (each worker's counters come once a second,
    // on their own: the `any` pipeline's could still be missing when `in` had all of its)
    const all = ['out', 'in', 'any', 'shape'].every((name) => {
      const p = s.pipelines[name];
      // (before a worker's first report the primary shows a sink as total_processed 0 alone)
      return (
        p &&
        (['sources', 'sinks'] as const).every((kind) => Object.keys(p.types[kind]).every((id) => Object.keys(p.counters[kind][id] ?? {}).length > 0)) &&
        Object.keys(p.types.sinks).every((id) => p.counters.sinks[id]?.dropped_queue_full !== undefined)
      );
    });
    return all ? s : undefined;
  }, 'entries through every link, and counters from every plugin of every pipeline', 60_000);
  const reported = new Set<string>();
  for (const p of Object.values(status.pipelines)) {
    for (const kind of ['sources', 'sinks'] as const) {
      for (const [id, counters] of Object.entries(p.counters[kind])) for (const name of Object.keys(counters)) reported.add(`${kind}/${p.types[kind][id]}/${name}`);
    }
    for (const name of Object.keys(p.counters.flow)) reported.add(`flow/flow/${name}`);
    for (const name of Object.keys(p.counters.rate_limit ?? {})) reported.add(`rate_limit/rate_limit/${name}`);
    // a step's id is its type in this configuration
    for (const [id, counters] of Object.entries((p.counters as { transforms?: Record<string, Record<string, number>> }).transforms ?? {})) {
      for (const name of Object.keys(counters)) reported.add(`transforms/${id}/${name}`);
    }
    for (const [name, value] of Object.entries(p.counters)) if (typeof value === 'number') reported.add(`pipeline/pipeline/${name}`);
    reported.add('pipeline/pipeline/restarts');
  }
  const declared = declaredCounters();
  // a counter every plugin of a kind keeps under a condition (dedup, fanout any) is declared once as kind/*/name
  for (const key of [...reported]) {
    const [kind, , name] = key.split('/');
    if (declared.has(`${kind}/*/${name}`)) {
      reported.delete(key);
      reported.add(`${kind}/*/${name}`);
    }
  }
  t.deepEqual([...reported].filter((k) => !declared.has(k)).sort(), [], 'reported but not declared in src/docs/counters-reference.ts');
  t.deepEqual([...declared].filter((k) => !reported.has(k)).sort(), [], 'declared but not reported by any running plugin');
  t.true(COUNTER_SECTIONS.length >= 4);
  // the nats source's link gauges are in /metrics, as the sinks' are
  const metrics = parseExposition((await adminRequest(admin, '/metrics')).body);
  t.is(sampleValue(metrics, 'logrelay_chain_connected', { pipeline: 'in', component: 'nats' }), 1);
  t.not(sampleValue(metrics, 'logrelay_chain_unacked_entries', { pipeline: 'in', component: 'nats' }), undefined);
  t.not(sampleValue(metrics, 'logrelay_chain_reconnects_total', { pipeline: 'in', component: 'nats' }), undefined);
});
