// The otlp sink in a real node against a receiver in the test (node:http, decoding with the
// protobufjs oracle) scripted to answer 503 with Retry-After, 429, 413 for large batches, 400
// once and partial success once: what was not rejected arrives exactly once, split batches add
// up, rejections are counted and logged, Retry-After is honoured; JSON encoding is camelCase.

import test from 'ava';
import { feed, numbered } from '../helpers/chain.js';
import { nodeStarter, type RunningNode, tempDir, waitFor, waitReady } from '../helpers/node.js';
import { type Answer, ExportLogsServiceResponse, type OtlpReceiver, otlpReceiver, otlpSenderToml, Status } from '../helpers/otlp.js';
import { latestCounter } from '../helpers/status.js';

const tmp = tempDir('logrelay-otlp-sink-');
test.after.always(() => tmp.remove());

const running: RunningNode[] = [];
const receivers: OtlpReceiver[] = [];
test.afterEach.always(async () => {
  await Promise.all(running.splice(0).map((n) => n.stop(5000)));
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});
const start = nodeStarter(tmp, running);

const QUICK = 'backoff_min_ms = 50\nbackoff_max_ms = 200\nflush_interval_ms = 50\n';

test.serial('scripted receiver: 503 + Retry-After, 429, 413 splits, 400 once, partial success once; all not rejected arrives once', async (t) => {
  t.timeout(90_000);
  let gave400: string[] | undefined;
  let gavePartial: string[] | undefined;
  const receiver = await otlpReceiver((req): Answer => {
    if (req.n === 0) return { status: 503, headers: { 'Retry-After': '1' } };
    if (req.n === 1) return { status: 429 };
    if (req.messages.length > 50) return { status: 413 };
    if (gave400 === undefined) {
      gave400 = req.messages;
      return { status: 400, headers: { 'Content-Type': 'application/x-protobuf' }, body: Buffer.from(Status.encode(Status.fromObject({ code: 3, message: 'bad batch' })).finish()) };
    }
    if (gavePartial === undefined) {
      gavePartial = req.messages;
      const body = ExportLogsServiceResponse.encode(ExportLogsServiceResponse.fromObject({ partialSuccess: { rejectedLogRecords: 2, errorMessage: 'two bad' } })).finish();
      return { status: 200, headers: { 'Content-Type': 'application/x-protobuf' }, body: Buffer.from(body) };
    }
    return { status: 200 };
  });
  receivers.push(receiver);
  const total = 1000;
  const node = start('sink', otlpSenderToml(receiver.url, `${QUICK}max_batch_count = 200\nmax_in_flight = 1`), ['--logging.level=debug'], true);
  await waitReady(node, 'otlp sender');
  await feed(node.child.stdin!, total, total, 0, false);

  const accepted = () => receiver.requests.filter((r) => r.n > 1 && r.messages.length <= 50 && r.messages !== gave400);
  const delivered = () => {
    const seen = new Map<string, number>();
    for (const r of receiver.requests) {
      if (r.n <= 1 || r.messages.length > 50 || r.messages === gave400) continue;
      for (const m of r.messages) seen.set(m, (seen.get(m) ?? 0) + 1);
    }
    return seen;
  };
  await waitFor(() => gave400 && delivered().size + gave400.length >= total, 'every entry delivered or rejected', 60_000);
  t.truthy(gavePartial);
  t.true(accepted().length > 2);
  const seen = delivered();
  const expected = numbered(0, total).trimEnd().split('\n');
  // the 400 batch is gone (counted), everything else arrived exactly once, the partial-success batch too (not resent)
  for (const m of expected) {
    if (gave400!.includes(m)) t.false(seen.has(m), `${m} was rejected with 400 and not resent`);
    else t.is(seen.get(m), 1, `${m} arrived once`);
  }
  // 413 split the 200-entry batches until they fit: every refused batch's entries came back in halves
  const refused = receiver.requests.filter((r) => r.messages.length > 50);
  t.true(refused.length > 0);
  const same = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((m, i) => m === b[i]);
  for (const r of refused) {
    const half = r.messages.length >> 1;
    const later = receiver.requests.filter((x) => x.n > r.n);
    t.true(
      later.some((x) => same(x.messages, r.messages.slice(0, half))) && later.some((x) => same(x.messages, r.messages.slice(half))),
      `request ${r.n} (${r.messages.length} entries, 413) was sent again as its two halves`,
    );
  }
  // Retry-After: 1 was honoured: no request within a second of the 503
  t.true(receiver.requests[1]!.at - receiver.answeredAt[0]! >= 1000, `the retry came ${receiver.requests[1]!.at - receiver.answeredAt[0]!} ms after the 503`);
  // protobuf and gzip by default
  t.is(receiver.requests[0]!.headers['content-type'], 'application/x-protobuf');
  t.is(receiver.requests[0]!.headers['content-encoding'], 'gzip');

  await waitFor(() => latestCounter(node, 'send', 'sinks.out.dropped_batches') === gave400!.length + 2, 'rejections counted in dropped_batches');
  t.true(latestCounter(node, 'send', 'sinks.out.retries')! >= 2);
  const rejected = node.records.find((r) => r.msg === 'OTLP export rejected');
  t.like(rejected, { level: 'error', status: 400, entries: gave400!.length });
  t.like(
    node.records.find((r) => r.msg === 'OTLP records rejected'),
    { level: 'warn', rejected: 2, error_message: 'two bad' },
  );
  await waitFor(() => node.records.some((r) => r.msg === 'Entries dropped' && r.reason === 'batch_rejected'), 'WARN Entries dropped, batch_rejected');
  node.child.stdin!.end();
});

test.serial('encoding = "json" sends OTLP JSON with lowerCamelCase keys and hex ids, uncompressed when asked', async (t) => {
  t.timeout(60_000);
  const receiver = await otlpReceiver();
  receivers.push(receiver);
  const node = start('json', otlpSenderToml(receiver.url, `${QUICK}encoding = "json"\ncompression = "none"\nheaders = { "X-Tenant" = "t1" }`), [], true);
  await waitReady(node, 'otlp sender');
  await feed(node.child.stdin!, 10, 10, 0, false);
  await waitFor(() => receiver.requests.reduce((n, r) => n + r.messages.length, 0) >= 10, 'ten records at the receiver');
  const req = receiver.requests[0]!;
  t.is(req.headers['content-type'], 'application/json');
  t.is(req.headers['content-encoding'], undefined);
  t.is(req.headers['x-tenant'], 't1');
  const text = req.body.toString();
  t.regex(text, /^\{"resourceLogs":\[\{"resource":\{"attributes":\[\{"key":"service.name","value":\{"stringValue":"stdin"\}\}/);
  const rec = (((req.decoded.resourceLogs as Record<string, unknown>[])[0]!.scopeLogs as Record<string, unknown>[])[0]!.logRecords as Record<string, unknown>[])[0]!;
  t.regex(String(rec.timeUnixNano), /^\d{19}$/);
  t.regex(String(rec.observedTimeUnixNano), /^\d{19}$/);
  t.deepEqual(rec.body, { stringValue: 'entry 000000' });
  t.false(/"[a-z]+_[a-z_]+":/.test(text.replace(/"key":"[^"]*"/g, '')), 'no snake_case key');
  t.regex(text, /"log\.record\.uid"/);
  node.child.stdin!.end();
});
