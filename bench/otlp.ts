// OTLP bench (DESIGN.md §20), all on 127.0.0.1 in one run:
//
//   1. codec: our protobuf decode + mapping against protobufjs decode + the same mapping, on a
//      request of 1,000 SDK-like records (seven attributes of every kind, trace context, nanosecond
//      times), in this process; records/s of each and the ratio (goal ≥ 2 ×)
//   2. source: a node with otlp source → null against a node with tcp_chain source → null, fed by
//      this process with the same BENCH_OTLP_ENTRIES entries (200,000) pre-encoded: OTLP protobuf
//      requests of 1,000 records, four at once over keep-alive connections, against the same
//      entries as chain lines (what an upstream node sends) on one link; timed from the first
//      byte to the last answer (OTLP) or until the null sink counted every entry (chain, status
//      every 100 ms); the ratio is the goal's (≥ 0.8 ×)
//   3. sink: a node with file source → otlp sink (protobuf, gzip) → a receiver in this process
//      that answers 200 at once and counts the records (decoded with our decoder after answering)
//
// Peak RSS is VmHWM of the node's pipeline worker. Every step has a deadline.

import { createServer, request, Agent } from 'node:http';
import { connect } from 'node:net';
import { mkdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { gunzipSync } from 'node:zlib';
import { encodeWire, type WireItem, wireItem } from '../src/core/entry-wire.js';
import type { Entry } from '../src/core/entry.js';
import { decodeRequest } from '../src/otlp/decode.js';
import { mapRequest } from '../src/otlp/map-in.js';
import { recordCount } from '../src/otlp/model.js';
import { freePort, type RunningNode, spawnNode, tempDir, type TempDir, waitFor, waitReady } from '../test/helpers/node.js';
import { ExportLogsServiceRequest, oracleToModel } from '../test/helpers/otlp.js';
import { latestStatus } from '../test/helpers/status.js';
import { fileSourceToml, localPluginToml, sinkToml } from '../test/helpers/toml.js';
import { writeInput } from './input.js';
import { childPids, peakRss } from './proc.js';
import { markdownTable, runIfMain } from './report.js';

const ENTRIES = Number(process.env.BENCH_OTLP_ENTRIES ?? 200_000);
const PER_REQUEST = 1000;
const CONCURRENCY = 4;
const DEADLINE_MS = 180_000;
const MiB = 1024 * 1024;

/** An SDK-like request of `count` records numbered from `from`. */
function sampleRequest(from: number, count: number): Buffer {
  const records = Array.from({ length: count }, (_, k) => {
    const n = from + k;
    return {
      timeUnixNano: String(1_700_000_000_000_000_000n + BigInt(n) * 1_000_123n),
      observedTimeUnixNano: String(1_700_000_000_000_000_000n + BigInt(n) * 1_000_123n + 5000n),
      severityNumber: 9,
      severityText: 'INFO',
      body: { stringValue: `GET /api/v1/items/${n % 9973} answered 200 in ${n % 250} ms for user ${n % 1000} lorem ipsum dolor sit amet` },
      attributes: [
        { key: 'http.method', value: { stringValue: 'GET' } },
        { key: 'http.status_code', value: { intValue: 200 } },
        { key: 'duration', value: { doubleValue: (n % 250) + 0.25 } },
        { key: 'cache.hit', value: { boolValue: n % 2 === 0 } },
        { key: 'item', value: { intValue: n % 9973 } },
        { key: 'tags', value: { arrayValue: { values: [{ stringValue: 'a' }, { stringValue: 'b' }] } } },
        { key: 'user', value: { kvlistValue: { values: [{ key: 'id', value: { intValue: n % 1000 } }, { key: 'tier', value: { stringValue: 'gold' } }] } } },
      ],
      flags: 1,
      traceId: Buffer.from(`${n.toString(16).padStart(8, '0')}${'ab'.repeat(12)}`, 'hex'),
      spanId: Buffer.from(`${n.toString(16).padStart(8, '0')}cdcdcdcd`, 'hex'),
    };
  });
  const msg = {
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'bench-svc' } }, { key: 'host.name', value: { stringValue: 'bench-host' } }] },
        scopeLogs: [{ scope: { name: 'bench', version: '1.0.0' }, logRecords: records }],
      },
    ],
  };
  return Buffer.from(ExportLogsServiceRequest.encode(ExportLogsServiceRequest.fromObject(msg)).finish());
}

interface CodecResult {
  readonly ours: number;
  readonly oracle: number;
}

/** Records/s of decode + mapping, ours and protobufjs's, best of three rounds of ~1 s each, interleaved. */
function codecBench(): CodecResult {
  const body = sampleRequest(0, PER_REQUEST);
  const now = Date.now();
  const ours = () => mapRequest(decodeRequest(body), now, 1 << 20).entries.length;
  const oracle = () => mapRequest(oracleToModel(ExportLogsServiceRequest.decode(body) as unknown as Record<string, unknown>), now, 1 << 20).entries.length;
  const rate = (fn: () => number) => {
    const t0 = performance.now();
    let records = 0;
    while (performance.now() - t0 < 1000) records += fn();
    return records / ((performance.now() - t0) / 1000);
  };
  // warm-up
  for (let i = 0; i < 50; i++) {
    ours();
    oracle();
  }
  let best = { ours: 0, oracle: 0 };
  for (let round = 0; round < 3; round++) best = { ours: Math.max(best.ours, rate(ours)), oracle: Math.max(best.oracle, rate(oracle)) };
  return best;
}

interface Result {
  readonly title: string;
  readonly entries: number;
  readonly ms: number;
  readonly rss: number;
}

const workerOf = (node: RunningNode) => waitFor(() => childPids(node.child.pid!)[0], 'worker pid', 10_000);
const receiverToml = (source: string) => `status_interval_ms = 100\n[[pipelines]]\nname = "b"\n${source}${sinkToml('out', 'null')}`;
const processed = (node: RunningNode) => Number(latestStatus(node, 'b')?.['sinks.out.total_processed'] ?? 0);

async function otlpSource(dir: TempDir): Promise<Result> {
  const port = await freePort();
  const node = spawnNode(['-c', dir.file('otlp.toml', receiverToml(localPluginToml('sources', 'in', 'otlp', port))), '--logging.level=debug']);
  try {
    await waitReady(node, 'otlp receiver');
    const worker = await workerOf(node);
    const bodies = Array.from({ length: Math.ceil(ENTRIES / PER_REQUEST) }, (_, i) => sampleRequest(i * PER_REQUEST, Math.min(PER_REQUEST, ENTRIES - i * PER_REQUEST)));
    const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const send = (body: Buffer) =>
      new Promise<void>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: '/v1/logs', method: 'POST', agent, headers: { 'Content-Type': 'application/x-protobuf', 'Content-Length': body.length } }, (res) => {
          res.resume();
          res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`))));
        });
        req.on('error', reject);
        req.end(body);
      });
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < bodies.length) await send(bodies[next++]!);
      }),
    );
    const ms = performance.now() - t0;
    agent.destroy();
    return { title: 'OTLP protobuf (1,000 records a request, 4 at once) → otlp source → null', entries: ENTRIES, ms, rss: peakRss(worker) };
  } finally {
    await node.stop(5000);
  }
}

async function chainSource(dir: TempDir): Promise<Result> {
  const port = await freePort();
  const node = spawnNode(['-c', dir.file('chain.toml', receiverToml(localPluginToml('sources', 'in', 'tcp_chain', port))), '--logging.level=debug']);
  try {
    await waitReady(node, 'chain receiver');
    const worker = await workerOf(node);
    // the same entries, as the otlp source maps them, written as an upstream node's chain lines
    const now = Date.now();
    const chunks: Buffer[] = [];
    for (let from = 0; from < ENTRIES; from += PER_REQUEST) {
      const entries: Entry[] = mapRequest(decodeRequest(sampleRequest(from, Math.min(PER_REQUEST, ENTRIES - from))), now, 1 << 20).entries;
      const items: WireItem[] = entries.map((entry, i) => wireItem({ ...entry, id: `bench.${from + i}` }, '', undefined));
      encodeWire(items, 0, items.length, now, 'b');
      for (const item of items) chunks.push(item.wireBuf!.subarray(item.wireAt, item.wireEnd));
    }
    const wire = Buffer.concat(chunks);
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    socket.write(`${JSON.stringify({ logrelay: 1, node: 'bench' })}\n`);
    await new Promise<void>((resolve) => socket.once('data', () => resolve()));
    socket.on('data', () => {}); // acks
    const t0 = performance.now();
    socket.write(wire);
    await waitFor(() => processed(node) >= ENTRIES, 'the chain receiver counted every entry', DEADLINE_MS);
    const ms = performance.now() - t0;
    socket.destroy();
    return { title: 'chain lines (one link) → tcp_chain source → null', entries: ENTRIES, ms, rss: peakRss(worker) };
  } finally {
    await node.stop(5000);
  }
}

async function otlpSink(dir: TempDir): Promise<Result> {
  let records = 0;
  const srv = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(200, { 'Content-Type': 'application/x-protobuf', 'Content-Length': 0 });
      res.end();
      const raw = Buffer.concat(chunks);
      records += recordCount(decodeRequest(req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw));
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as { port: number }).port;
  const watch = join(dir.path, 'watch');
  mkdirSync(watch);
  const input = join(dir.path, 'input.log');
  writeInput(input, ENTRIES, 200);
  const toml = `[[pipelines]]\nname = "a"\n${fileSourceToml('f', watch, 'from = "start"\ncheck_interval_ms = 10')}${sinkToml('out', 'otlp', `endpoint = "http://127.0.0.1:${port}/v1/logs"\non_full = "block"`)}`;
  const node = spawnNode(['-c', dir.file('sink.toml', toml)]);
  try {
    await waitReady(node, 'otlp sender');
    const worker = await workerOf(node);
    const t0 = performance.now();
    renameSync(input, join(watch, 'in.log'));
    await waitFor(() => records >= ENTRIES, 'the receiver counted every record', DEADLINE_MS);
    const ms = performance.now() - t0;
    return { title: 'file → otlp sink (protobuf, gzip) → receiver answering 200', entries: ENTRIES, ms, rss: peakRss(worker) };
  } finally {
    await node.stop(5000);
    srv.closeAllConnections();
    srv.close();
  }
}

export async function main(): Promise<void> {
  process.stderr.write('codec …\n');
  const codec = codecBench();
  const dir = tempDir('logrelay-bench-otlp-');
  try {
    const results: Result[] = [];
    for (const run of [otlpSource, chainSource, otlpSink]) {
      process.stderr.write(`running ${run.name} …\n`);
      results.push(await run(dir));
    }
    const rate = (r: Result) => r.entries / (r.ms / 1000);
    const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
    process.stdout.write(
      `\n${markdownTable(
        ['decode + mapping (1,000-record request, in process)', 'records/s'],
        [
          ['ours (src/otlp)', fmt(codec.ours)],
          ['protobufjs decode + the same mapping', fmt(codec.oracle)],
          ['ratio (goal ≥ 2)', (codec.ours / codec.oracle).toFixed(2)],
        ],
        true,
      )}\n\n${markdownTable(
        ['scenario', 'entries', 'seconds', 'entries/s', 'worker peak RSS MiB'],
        results.map((r) => [r.title, String(r.entries), (r.ms / 1000).toFixed(2), fmt(rate(r)), (r.rss / MiB).toFixed(1)]),
        true,
      )}\n\notlp source / tcp_chain source: ${(rate(results[0]!) / rate(results[1]!)).toFixed(2)} (goal ≥ 0.8)\nnode ${process.version}\n`,
    );
  } finally {
    dir.remove();
  }
}

runIfMain(import.meta.url, main, { exitWhenDone: true });
