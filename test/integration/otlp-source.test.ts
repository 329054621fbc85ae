// The otlp source in a real node: the OpenTelemetry JS SDK (protobuf exporter with gzip, JSON
// exporter without) delivering 5,000 records each exactly once and mapped as DESIGN.md §20 says;
// and requests by hand: every refusal with its status and a google.rpc.Status body in the
// request's encoding, a gzip bomb cut short, partial success, JSON's 64-bit integers and hex ids.

import { gzipSync } from 'node:zlib';
import test from 'ava';
import { childPids, freePort, nodeStarter, type RunningNode, sleep, tempDir, waitFor, waitReady } from '../helpers/node.js';
import { ExportLogsServiceRequest, ExportLogsServiceResponse, otlpReceiverToml, post, Status } from '../helpers/otlp.js';
import { expectedEntry, sdkSend } from '../helpers/otlp-sdk.js';
import { latestCounter } from '../helpers/status.js';

const tmp = tempDir('logrelay-otlp-source-');
test.after.always(() => tmp.remove());

const running: RunningNode[] = [];
test.afterEach.always(async () => {
  await Promise.all(running.splice(0).map((n) => n.stop(5000)));
});
const start = nodeStarter(tmp, running);

type Line = Record<string, unknown> & { fields: Record<string, unknown> & { attributes?: Record<string, unknown> } };
const parsed = (node: RunningNode): Line[] => node.out.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Line);

const RFC3339_NANOS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/;

test.serial('the OpenTelemetry SDK (protobuf + gzip, JSON without) delivers 5,000 records each exactly once, mapped as §20 says', async (t) => {
  t.timeout(150_000);
  const port = await freePort();
  const node = start('sdk', otlpReceiverToml(port, '', 'on_full = "block"'), ['--logging.level=debug']);
  await waitReady(node, 'otlp receiver');
  const url = `http://127.0.0.1:${port}/v1/logs`;
  const count = 5000;
  await sdkSend({ url, encoding: 'protobuf', gzip: true, service: 'svc-proto', host: 'host-p', count });
  await sdkSend({ url, encoding: 'json', gzip: false, service: 'svc-json', host: 'host-j', count });
  await waitFor(() => node.out.length >= 2 * count, `${2 * count} lines on stdout (got ${node.out.length})`, 60_000);
  const seen = new Map<string, number>();
  let checked = 0;
  for (const line of parsed(node)) {
    const n = line.fields.attributes?.n as number;
    const key = `${String(line.source)}:${n}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
    const host = line.source === 'svc-proto' ? 'host-p' : 'host-j';
    const { resource, observed_time: observed, ...fields } = line.fields;
    t.like(resource as Record<string, unknown>, { 'service.name': line.source, 'host.name': host }, `record ${key} resource`);
    t.regex(String(observed), RFC3339_NANOS, `record ${key} observed_time`);
    t.deepEqual({ ...line, fields }, expectedEntry(n, String(line.source), host), `record ${key}`);
    checked++;
  }
  t.is(checked, 2 * count);
  for (const service of ['svc-proto', 'svc-json']) {
    for (let n = 0; n < count; n++) t.is(seen.get(`${service}:${n}`), 1, `${service} record ${n} arrived once`);
  }
  await waitFor(() => latestCounter(node, 'recv', 'sources.in.total_entries') === 2 * count, 'total_entries counted');
  t.is(latestCounter(node, 'recv', 'sources.in.parse_errors'), 0);
});

const PROTO = { 'Content-Type': 'application/x-protobuf' };
const JSON_CT = { 'Content-Type': 'application/json' };

/** Peak resident memory of a process (VmHWM), bytes. */
async function peakRss(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const m = /VmHWM:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) * 1024;
}

test.serial('requests by hand: 405, 415, 400 with a Status, br, a gzip bomb 413, empty 200, JSON int64 and hex, partial success; the node counts on', async (t) => {
  t.timeout(90_000);
  const port = await freePort();
  const node = start('hand', otlpReceiverToml(port, 'max_body_bytes = 1048576\nmax_line_bytes = 4096'), ['--logging.level=debug']);
  await waitReady(node, 'otlp receiver');

  const get = await post(port, '', {}, '/v1/logs', 'GET');
  t.is(get.status, 405);
  t.is(get.headers.allow, 'POST');
  t.regex(String((JSON.parse(get.body.toString()) as { message: string }).message), /use POST/);

  const plain = await post(port, 'hello', { 'Content-Type': 'text/plain' });
  t.is(plain.status, 415);
  t.regex((JSON.parse(plain.body.toString()) as { message: string }).message, /Content-Type/);

  // undecodable protobuf: a Status in protobuf that says what was wrong
  const bad = await post(port, Buffer.from([0x0a, 0x7f, 0x01, 0x02]), PROTO);
  t.is(bad.status, 400);
  t.is(bad.headers['content-type'], 'application/x-protobuf');
  const status = Status.toObject(Status.decode(bad.body)) as { code: number; message: string };
  t.is(status.code, 3);
  t.regex(status.message, /does not decode.*runs past the end/);

  const badJson = await post(port, '{"resourceLogs": [', JSON_CT);
  t.is(badJson.status, 400);
  t.is(badJson.headers['content-type'], 'application/json');
  t.regex((JSON.parse(badJson.body.toString()) as { message: string }).message, /malformed JSON/);

  const br = await post(port, Buffer.from([1, 2, 3]), { ...PROTO, 'Content-Encoding': 'br' });
  t.is(br.status, 400);
  t.regex(Status.toObject(Status.decode(br.body)).message as string, /Content-Encoding "br"/);

  // 256 gzip members of 1 MiB of zeros: a quarter of a MiB that inflates to 256 MiB
  const worker = (await childPids(node.child.pid!))[0]!;
  const before = await peakRss(worker);
  const member = gzipSync(Buffer.alloc(1 << 20));
  const bomb = Buffer.concat(Array.from({ length: 256 }, () => member));
  t.true(bomb.length < 1 << 20);
  const bombed = await post(port, bomb, { ...PROTO, 'Content-Encoding': 'gzip' });
  t.is(bombed.status, 413);
  t.regex(Status.toObject(Status.decode(bombed.body)).message as string, /once decompressed/);
  const grew = (await peakRss(worker)) - before;
  t.true(grew < 64 << 20, `the worker's peak memory grew by ${grew} bytes for a 256 MiB bomb`);

  const empty = await post(port, Buffer.alloc(0), PROTO);
  t.is(empty.status, 200);
  t.is(empty.body.length, 0);
  const emptyJson = await post(port, '{}', JSON_CT);
  t.is(emptyJson.status, 200);
  t.is(emptyJson.body.toString(), '{}');

  const json = JSON.stringify({
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'by-hand' } }], futureField: 1 },
        scopeLogs: [
          {
            logRecords: [
              {
                timeUnixNano: '1700000000000000001',
                observedTimeUnixNano: 1700000000000000000,
                severityNumber: 17,
                body: { stringValue: 'json record' },
                traceId: '0102030405060708090A0B0C0D0E0F10',
                spanId: 'A1A2A3A4A5A6A7A8',
                attributes: [
                  { key: 'big', value: { intValue: '9007199254740993' } },
                  { key: 'small', value: { intValue: 7 } },
                ],
                somethingNew: { x: 1 },
              },
            ],
          },
        ],
      },
    ],
  });
  const ok = await post(port, json, JSON_CT);
  t.is(ok.status, 200);
  t.is(ok.headers['content-type'], 'application/json');
  t.is(ok.body.toString(), '{}');
  const line = await waitFor(() => parsed(node).find((l) => l.message === 'json record'), 'the JSON record on stdout');
  t.like(line, {
    time: '2023-11-14T22:13:20.000Z',
    source: 'by-hand',
    level: 'ERROR',
    fields: {
      attributes: { big: '9007199254740993', small: 7 },
      trace_id: '0102030405060708090a0b0c0d0e0f10',
      span_id: 'a1a2a3a4a5a6a7a8',
      observed_time: '2023-11-14T22:13:20.000000000Z',
      time_nanos: '2023-11-14T22:13:20.000000001Z',
    },
  });

  // a record over max_line_bytes once mapped is refused alone: partial success, the rest taken
  const partial = ExportLogsServiceRequest.encode(
    ExportLogsServiceRequest.fromObject({
      resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: 'x'.repeat(8192) } }, { body: { stringValue: 'small one' } }] }] }],
    }),
  ).finish();
  const ps = await post(port, Buffer.from(partial), PROTO);
  t.is(ps.status, 200);
  const resp = ExportLogsServiceResponse.toObject(ExportLogsServiceResponse.decode(ps.body), { longs: String }) as { partialSuccess: { rejectedLogRecords: string; errorMessage: string } };
  t.is(resp.partialSuccess.rejectedLogRecords, '1');
  t.regex(resp.partialSuccess.errorMessage, /max_line_bytes/);
  await waitFor(() => parsed(node).find((l) => l.message === 'small one'), 'the small record of the partial request on stdout');

  // up and counting through all of it
  await waitFor(() => latestCounter(node, 'recv', 'sources.in.total_requests') === 10, 'ten requests counted');
  t.is(latestCounter(node, 'recv', 'sources.in.rejected_requests'), 6);
  t.is(latestCounter(node, 'recv', 'sources.in.parse_errors'), 4);
  t.is(latestCounter(node, 'recv', 'sources.in.total_entries'), 2);
  t.is(node.child.exitCode, null);
  t.false(node.records.some((r) => r.msg === 'Pipeline process exited unexpectedly'));
});

/** A protobuf request of records whose bodies are `prefix-<i>` for i < count. */
const requestOf = (prefix: string, count: number): Buffer =>
  Buffer.from(
    ExportLogsServiceRequest.encode(
      ExportLogsServiceRequest.fromObject({
        resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'filler' } }] }, scopeLogs: [{ logRecords: Array.from({ length: count }, (_, i) => ({ body: { stringValue: `${prefix}-${i}` } })) }] }],
      }),
    ).finish(),
  );

test.serial('a stalled sink (on_full = "block"): 503 with Retry-After, nothing of that request taken; the SDK retries and everything arrives once', async (t) => {
  t.timeout(120_000);
  const port = await freePort();
  const node = start('stall', otlpReceiverToml(port, 'buffer_size = 100', 'buffer_size = 100\non_full = "block"'), ['--logging.level=debug']);
  await waitReady(node, 'otlp receiver');
  node.child.stdout!.pause(); // nobody reads: the pipe fills, the sink stalls
  // a filler the pipe and the queue cannot hold: it is answered once the sink moves
  const filler = post(port, requestOf('filler', 3000), PROTO);
  const refused: string[] = [];
  // A probe taken before the queue filled is answered only once the sink moves: not awaited
  // here. The stdout sink may take the whole filler into its pending write, so the probes carry
  // enough records to fill its queue (buffer_size 100) themselves.
  const taken: Promise<unknown>[] = [];
  let probes = 0;
  await waitFor(
    async () => {
      const probe = `probe${probes++}`;
      const pending = post(port, requestOf(probe, 150), PROTO);
      const answer = await Promise.race([pending, sleep(500).then(() => undefined)]);
      if (answer?.status !== 503) {
        taken.push(pending);
        return false;
      }
      t.is(answer.headers['retry-after'], '1');
      t.regex(Status.toObject(Status.decode(answer.body)).message as string, /saturated/);
      refused.push(probe);
      return refused.length >= 3;
    },
    'three requests answered 503 while the sink is stalled',
    30_000,
  );
  const url = `http://127.0.0.1:${port}/v1/logs`;
  const count = 500;
  const sdk = sdkSend({ url, encoding: 'protobuf', gzip: true, service: 'svc-stall', host: 'h', count });
  await waitFor(() => latestCounter(node, 'recv', 'sources.in.rejected_requests')! >= 4, 'the SDK was answered 503 too', 20_000);
  node.child.stdout!.resume();
  t.is((await filler).status, 200);
  await Promise.all(taken);
  await sdk;
  await waitFor(() => parsed(node).filter((l) => l.source === 'svc-stall').length >= count, `${count} SDK records on stdout`, 30_000);
  const lines = parsed(node);
  const sdkSeen = new Map<number, number>();
  for (const l of lines.filter((x) => x.source === 'svc-stall')) sdkSeen.set(l.fields.attributes!.n as number, (sdkSeen.get(l.fields.attributes!.n as number) ?? 0) + 1);
  for (let n = 0; n < count; n++) t.is(sdkSeen.get(n), 1, `SDK record ${n} arrived once`);
  t.is(lines.filter((l) => String(l.message).startsWith('filler-')).length, 3000);
  for (const probe of refused) t.false(lines.some((l) => String(l.message).startsWith(`${probe}-`)), `${probe} was answered 503 and not taken`);
});
