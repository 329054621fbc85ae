// OTLP through a chain hop: the SDK → node A (otlp source → tcp_chain) → node B (tcp_chain →
// otlp sink) → a receiver decoding with the oracle. Every field comes out as it went in, with
// the entry id as `log.record.uid`; and a batch an upstream sends twice (the same uids) is
// dropped the second time by B's dedup.

import test from 'ava';
import { chainSinkToml, chainSourceToml } from '../helpers/chain.js';
import { freePort, nodeStarter, type RunningNode, tempDir, waitFor, waitReady } from '../helpers/node.js';
import { ExportLogsServiceRequest, type OtlpReceiver, otlpReceiver, post } from '../helpers/otlp.js';
import { recordOf, sdkSend, spanIdOf, traceIdOf } from '../helpers/otlp-sdk.js';
import { latestCounter } from '../helpers/status.js';
import { localPluginToml } from '../helpers/toml.js';

const tmp = tempDir('logrelay-otlp-chain-');
test.after.always(() => tmp.remove());
const running: RunningNode[] = [];
const receivers: OtlpReceiver[] = [];
test.afterEach.always(async () => {
  await Promise.all(running.splice(0).map((n) => n.stop(5000)));
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});
const start = nodeStarter(tmp, running);

type Msg = Record<string, unknown>;

/** An AnyValue in protobufjs's object form (longs as strings), as the SDK's value must come out. */
function anyOf(v: unknown): Msg {
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (typeof v === 'number') return Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
  // bytes travel as base64 text through the entry's JSON (§20 maps bytes so)
  if (v instanceof Uint8Array) return { stringValue: Buffer.from(v).toString('base64') };
  if (Array.isArray(v)) return { arrayValue: { values: v.map(anyOf) } };
  return { kvlistValue: { values: Object.entries(v as Msg).map(([key, value]) => ({ key, value: anyOf(value) })) } };
}

test.serial('SDK → otlp → tcp_chain → tcp_chain → otlp sink: every field, kind, id and nanosecond comes out as it went in; a resent batch is deduplicated', async (t) => {
  t.timeout(120_000);
  const receiver = await otlpReceiver();
  receivers.push(receiver);
  const [portA, portB] = [await freePort(), await freePort()];
  const b = start(
    'b',
    `status_interval_ms = 500
[[pipelines]]
name = "b"
[pipelines.flow.dedup]
enabled = true
${chainSourceToml('link', 'tcp_chain', portB)}
[[pipelines.plugin_sinks]]
id = "out"
type = "otlp"
[pipelines.plugin_sinks.config]
endpoint = "${receiver.url}"
`,
    ['--logging.level=debug'],
  );
  const a = start(
    'a',
    `status_interval_ms = 500
[[pipelines]]
name = "a"
${localPluginToml('sources', 'in', 'otlp', portA)}
${chainSinkToml('link', 'tcp_chain', portB, 'node-a')}`,
  );
  await waitReady(b, 'node B');
  await waitReady(a, 'node A');
  const count = 500;
  await sdkSend({ url: `http://127.0.0.1:${portA}/v1/logs`, encoding: 'protobuf', gzip: true, service: 'svc-rt', host: 'host-rt', count });
  const records = () => receiver.requests.flatMap((r) => ((r.decoded.resourceLogs as Msg[]) ?? []).flatMap((rl) => ((rl.scopeLogs as Msg[]) ?? []).flatMap((sl) => ((sl.logRecords as Msg[]) ?? []).map((rec) => ({ rl, sl, rec })))));
  await waitFor(() => records().length >= count, `${count} records at the receiver`, 60_000);
  const uids = new Set<string>();
  for (const { rl, sl, rec } of records()) {
    const attrs = rec.attributes as { key: string; value: Msg }[];
    const n = Number((attrs.find((kv) => kv.key === 'n')!.value as { intValue: string }).intValue);
    const r = recordOf(n);
    const uid = attrs.find((kv) => kv.key === 'log.record.uid');
    t.truthy(uid, `record ${n} carries log.record.uid`);
    uids.add(String(uid!.value.stringValue));
    t.deepEqual(
      attrs.filter((kv) => kv.key !== 'log.record.uid'),
      Object.entries(r.attributes).map(([key, value]) => ({ key, value: anyOf(value) })),
      `record ${n} attributes`,
    );
    t.deepEqual(rec.body, anyOf(r.body), `record ${n} body`);
    t.is(rec.timeUnixNano, String(BigInt(r.seconds) * 1_000_000_000n + BigInt(r.nanos)), `record ${n} time`);
    t.regex(String(rec.observedTimeUnixNano), /^\d{19}$/);
    // a record without a severity number gets its level's (WARN: 13)
    t.is(rec.severityNumber, r.severityNumber ?? 13, `record ${n} severity number`);
    t.is(rec.severityText, r.severityText);
    t.is(Buffer.from(rec.traceId as string, 'base64').toString('hex'), traceIdOf(n));
    t.is(Buffer.from(rec.spanId as string, 'base64').toString('hex'), spanIdOf(n));
    t.is(rec.flags, 1);
    t.is(rec.eventName, r.eventName);
    t.deepEqual(sl.scope, { name: 'test-scope', version: '1.2.3' });
    const resource = Object.fromEntries(((rl.resource as Msg).attributes as { key: string; value: Msg }[]).map((kv) => [kv.key, kv.value]));
    t.deepEqual(resource, { 'service.name': { stringValue: 'svc-rt' }, 'host.name': { stringValue: 'host-rt' } });
  }
  t.is(uids.size, count, 'one id per record');

  // an upstream that sends the same batch twice (its ids unchanged): B's dedup drops the copy
  const resend = Buffer.from(
    ExportLogsServiceRequest.encode(
      ExportLogsServiceRequest.fromObject({
        resourceLogs: [
          {
            scopeLogs: [
              { logRecords: Array.from({ length: 20 }, (_, i) => ({ body: { stringValue: `resent ${i}` }, attributes: [{ key: 'log.record.uid', value: { stringValue: `upstream.${i}` } }] })) },
            ],
          },
        ],
      }),
    ).finish(),
  );
  for (let i = 0; i < 2; i++) t.is((await post(portA, resend, { 'Content-Type': 'application/x-protobuf' })).status, 200);
  await waitFor(() => latestCounter(b, 'b', 'flow.duplicates_dropped') === 20, 'twenty duplicates dropped at B');
  const resent = records().filter(({ rec }) => String((rec.body as Msg).stringValue).startsWith('resent '));
  t.is(resent.length, 20, 'each resent record arrived once');
  t.deepEqual(
    resent.map(({ rec }) => (rec.attributes as { key: string; value: Msg }[]).find((kv) => kv.key === 'log.record.uid')!.value.stringValue).sort(),
    Array.from({ length: 20 }, (_, i) => `upstream.${i}`).sort(),
  );
});
