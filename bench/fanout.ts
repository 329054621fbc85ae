// SSE fan-out: entries/s delivered per client by one `http` sink to 1, 10 and 100 stream clients,
// the worker's peak RSS (VmHWM), and what one client that stops reading costs the others.
// Runs a real node on 127.0.0.1 per scenario; bounded to about a minute. `node dist/bench/fanout.js`

import { type ClientRequest, type IncomingMessage, request } from 'node:http';
import { childPids, freePort, type RunningNode, sleep, spawnNode, type TempDir, tempDir, waitFor } from '../test/helpers/node.js';
import { localPluginToml, randomSourceToml } from '../test/helpers/toml.js';
import { statusBytes } from './proc.js';
import { runIfMain, textTable } from './report.js';

const WARMUP_MS = 1000;
const MEASURE_MS = 4000;
/** Offered load: the random source emits this many entries every millisecond (timer permitting). */
const ENTRIES_PER_TICK = 20;

interface Scenario {
  readonly name: string;
  readonly clients: number;
  /** clients that stop reading right after connecting */
  readonly slow: number;
}

const SCENARIOS: readonly Scenario[] = [
  { name: '1 client', clients: 1, slow: 0 },
  { name: '10 clients', clients: 10, slow: 0 },
  { name: '100 clients', clients: 100, slow: 0 },
  { name: '10 clients, 1 stalled', clients: 10, slow: 1 },
];

interface Row {
  readonly scenario: string;
  readonly offered: number;
  readonly perClientAvg: number;
  readonly perClientMin: number;
  readonly droppedWrites: number;
  readonly hwmMb: number;
  readonly rssMb: number;
}

/** Counts SSE entry events (`id: ` at a line start) without decoding text. */
interface Counter {
  readonly req: ClientRequest;
  res?: IncomingMessage;
  events: number;
}

const ID = Buffer.from('\nid: ');

function stream(port: number): Counter {
  const c: Counter = { req: request({ host: '127.0.0.1', port, path: '/stream', agent: false }), events: 0 };
  c.req.on('response', (res) => {
    c.res = res;
    res.on('data', (chunk: Buffer) => {
      for (let i = chunk.indexOf(ID); i >= 0; i = chunk.indexOf(ID, i + ID.length)) c.events++;
    });
    res.on('error', () => {});
  });
  c.req.on('error', () => {});
  c.req.end();
  return c;
}

function statusOf(port: number): Promise<{ statistics: { total_processed: number; dropped_writes: number } }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/status', agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve(JSON.parse(body)));
    });
    req.on('error', reject);
    req.end();
  });
}

function memMb(pid: number): { rss: number; hwm: number } {
  const MiB = 1024 * 1024;
  return { rss: statusBytes(pid, 'VmRSS') / MiB, hwm: statusBytes(pid, 'VmHWM') / MiB };
}

async function runScenario(s: Scenario, dir: TempDir): Promise<Row> {
  const port = await freePort();
  const file = dir.file(
    `${s.clients}-${s.slow}.toml`,
    `quiet = true
[[pipelines]]
name = "fanout"
${randomSourceToml(`interval_ms = 1\nentries_per_tick = ${ENTRIES_PER_TICK}\nlength = 20`)}${localPluginToml('sinks', 'sse', 'http', port, 'buffer_size = 10000\nwrite_timeout_ms = 60000\n')}`,
  );
  const node: RunningNode = spawnNode(['-c', file]);
  try {
    await waitFor(() => statusOf(port).then(() => true, () => false), 'sink listening', 15_000);
    const worker = await waitFor(async () => (await childPids(node.child.pid!))[0], 'worker pid');
    const clients = Array.from({ length: s.clients }, () => stream(port));
    await waitFor(() => clients.every((c) => c.res), 'clients connected', 15_000);
    for (const c of clients.slice(0, s.slow)) c.res!.pause();
    await sleep(WARMUP_MS);
    const readers = clients.slice(s.slow);
    const start = readers.map((c) => c.events);
    const st0 = await statusOf(port);
    const t0 = performance.now();
    await sleep(MEASURE_MS);
    const secs = (performance.now() - t0) / 1000;
    const st1 = await statusOf(port);
    const rates = readers.map((c, i) => (c.events - start[i]!) / secs);
    const mem = memMb(worker);
    for (const c of clients) c.req.destroy();
    return {
      scenario: s.name,
      offered: (st1.statistics.total_processed - st0.statistics.total_processed) / secs,
      perClientAvg: rates.reduce((a, b) => a + b, 0) / rates.length,
      perClientMin: Math.min(...rates),
      droppedWrites: st1.statistics.dropped_writes - st0.statistics.dropped_writes,
      hwmMb: mem.hwm,
      rssMb: mem.rss,
    };
  } finally {
    await node.stop(5000);
  }
}

function table(rows: readonly Row[]): string {
  const head = ['scenario', 'sink entries/s', 'per reading client avg/s', 'min/s', 'dropped_writes', 'worker RSS MB', 'worker VmHWM MB'];
  const body = rows.map((r) => [
    r.scenario,
    r.offered.toFixed(0),
    r.perClientAvg.toFixed(0),
    r.perClientMin.toFixed(0),
    String(r.droppedWrites),
    r.rssMb.toFixed(1),
    r.hwmMb.toFixed(1),
  ]);
  return textTable(head, body);
}

export async function main(): Promise<void> {
  const dir = tempDir('logrelay-bench-');
  const guard = setTimeout(() => {
    process.stderr.write('fanout bench: over its time bound, giving up\n');
    process.exit(1);
  }, 120_000);
  try {
    const rows: Row[] = [];
    for (const s of SCENARIOS) rows.push(await runScenario(s, dir));
    process.stdout.write(
      `SSE fan-out, one http sink, random source offering up to ${ENTRIES_PER_TICK} entries/ms (~130 B each), ${MEASURE_MS / 1000} s per scenario\n`,
    );
    process.stdout.write(`${table(rows)}\n`);
  } finally {
    clearTimeout(guard);
    dir.remove();
  }
}

runIfMain(import.meta.url, main);
