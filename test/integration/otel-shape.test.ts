// The OpenTelemetry shape of the otlp sink (DESIGN.md §24): container entries read from a
// /var/log/pods tree, with `fields.k8s` and trace ids (parsed from the line by a transform), go
// out with the semantic-convention resource attributes and the record's trace and span ids, as
// the protobufjs oracle decodes them.

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { otlpReceiver } from '../helpers/otlp.js';
import { ownedTempDir, startOwnedNode, waitFor } from '../helpers/node.js';

type Msg = Record<string, unknown>;
interface KeyValue {
  key: string;
  value: { stringValue?: string; intValue?: string };
}

const TRACE = '4BF92F3577B34DA6A3CE929D0E0E4736';
const SPAN = '00f067aa0ba902b7';
const hexToBase64 = (hex: string) => Buffer.from(hex, 'hex').toString('base64');

test.serial('container entries with fields.k8s and trace ids decode with k8s resource attributes and the record ids set', async (t) => {
  t.timeout(60_000);
  const receiver = await otlpReceiver();
  t.teardown(() => receiver.close());
  const dir = ownedTempDir(t);
  const podDir = join(dir.path, 'pods', 'shop_web-7d4b9c_0f5e2a1c-1111-2222-3333-444455556666', 'nginx');
  mkdirSync(podDir, { recursive: true });
  writeFileSync(
    join(podDir, '3.log'),
    `2026-11-25T10:45:00.123456789Z stdout F trace_id=${TRACE} span_id=${SPAN} msg="order placed"\n2026-11-25T10:45:01.000000000Z stderr F plain line without ids\n`,
  );
  startOwnedNode(
    t,
    `node_name = "worker-3"
[[pipelines]]
name = "k8s"
[[pipelines.flow.transforms]]
type = "parse"
format = "logfmt"
when = "message contains 'trace_id='"
[[pipelines.plugin_sources]]
id = "pods"
type = "file"
[pipelines.plugin_sources.config]
include = [${JSON.stringify(join(dir.path, 'pods', '*', '*', '*.log'))}]
container_format = "cri"
kubernetes_metadata = true
from = "start"
[[pipelines.plugin_sinks]]
id = "otel"
type = "otlp"
[pipelines.plugin_sinks.config]
endpoint = "${receiver.url}"
flush_interval_ms = 50
`,
  );
  await waitFor(() => receiver.requests.flatMap((r) => r.messages).length >= 2, 'both entries at the receiver', 30_000);
  const records: { resource: KeyValue[]; record: Msg }[] = [];
  for (const req of receiver.requests) {
    for (const rl of req.decoded.resourceLogs as Msg[]) {
      for (const sl of rl.scopeLogs as Msg[]) for (const record of sl.logRecords as Msg[]) records.push({ resource: (rl.resource as Msg).attributes as KeyValue[], record });
    }
  }
  const attrs = (kv: readonly KeyValue[]) => Object.fromEntries(kv.map((a) => [a.key, a.value.stringValue ?? Number(a.value.intValue)]));
  const traced = records.find((r) => (r.record.body as Msg).stringValue === 'order placed');
  const plain = records.find((r) => (r.record.body as Msg).stringValue === 'plain line without ids');
  t.truthy(traced);
  t.truthy(plain);
  const want = {
    'service.name': 'nginx',
    'host.name': 'worker-3',
    'k8s.namespace.name': 'shop',
    'k8s.pod.name': 'web-7d4b9c',
    'k8s.pod.uid': '0f5e2a1c-1111-2222-3333-444455556666',
    'k8s.container.name': 'nginx',
    'k8s.container.restart_count': 3,
    'k8s.node.name': 'worker-3',
  };
  t.deepEqual(attrs(traced!.resource), want);
  t.deepEqual(attrs(plain!.resource), want);
  t.is(traced!.record.traceId, hexToBase64(TRACE.toLowerCase()));
  t.is(traced!.record.spanId, hexToBase64(SPAN));
  t.falsy(plain!.record.traceId);
  // the ids and the metadata are not repeated among the record's attributes
  const recordKeys = ((traced!.record.attributes as KeyValue[] | undefined) ?? []).map((a) => a.key);
  t.false(recordKeys.includes('k8s'));
  t.false(recordKeys.includes('trace_id'));
  t.false(recordKeys.includes('span_id'));
  t.true(recordKeys.includes('stream'));
});
