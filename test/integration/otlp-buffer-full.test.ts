// An otlp source whose disk buffer is full (its downstream down) answers exporters 503 saying
// `disk buffer full`, not `pipeline saturated`, and the node logs WARN `Disk buffer full` once,
// not once per refused request (issue 38).

import { join } from 'node:path';
import test from 'ava';
import { freePort, ownedTempDir, startOwnedNode, waitFor, waitReady } from '../helpers/node.js';
import { post } from '../helpers/otlp.js';
import { localPluginToml } from '../helpers/toml.js';

const JSON_CT = { 'Content-Type': 'application/json' };
const requestOf = (n: number) =>
  JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: Array.from({ length: 20 }, (_, i) => ({ body: { stringValue: `r${n}-${i} ${'x'.repeat(200)}` } })) }] }] });

test('a full disk buffer: 503 "disk buffer full" with Retry-After, and one WARN Disk buffer full', async (t) => {
  t.timeout(90_000);
  const dir = ownedTempDir(t);
  const [port, down] = [await freePort(), await freePort()];
  const node = startOwnedNode(
    t,
    `data_dir = ${JSON.stringify(join(dir.path, 'data'))}
[[pipelines]]
name = "recv"
${localPluginToml('sources', 'in', 'otlp', port)}
[pipelines.plugin_sources.config.buffer]
type = "disk"
max_size_mb = 0.02
segment_size_mb = 0.01
${localPluginToml('sinks', 'up', 'tcp_chain', down, 'node = "n"\nbackoff_min_ms = 100\nbackoff_max_ms = 1000\nbuffer_size = 10')}
`,
  );
  await waitReady(node, 'receiver');
  // the source takes requests once its buffer is open
  await waitFor(async () => ((await post(port, requestOf(0), JSON_CT)).status === 200 ? true : undefined), 'a first request taken', 20_000);
  let refused: { status: number; body: Buffer; headers: Record<string, unknown> } | undefined;
  for (let n = 1; n < 500 && !refused; n++) {
    const r = await post(port, requestOf(n), JSON_CT);
    if (r.status === 503) refused = r;
    else t.is(r.status, 200, r.body.toString());
  }
  t.truthy(refused, 'the buffer filled up within 500 requests');
  t.is(refused!.headers['retry-after'], '1');
  t.regex(refused!.body.toString(), /disk buffer full/, refused!.body.toString());
  for (let n = 0; n < 20; n++) t.is((await post(port, requestOf(1000 + n), JSON_CT)).status, 503);
  await waitFor(() => node.records.some((r) => r.msg === 'Disk buffer full'), 'WARN Disk buffer full', 20_000);
  t.is(node.records.filter((r) => r.msg === 'Disk buffer full').length, 1, 'one line for many refusals');
  const w = node.records.find((r) => r.msg === 'Disk buffer full')!;
  t.is(w.level, 'warn');
  t.is(w.plugin, 'in');
});
