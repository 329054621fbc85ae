// Role bench: the CPU one fleet node's pipeline worker spends per line, each role alone on a fixed
// load with the bench as its peers (no TLS), so the figure does not depend on what else shares the
// two cores (the fleet bench's per-process CPU moves by ±20 % with contention):
//  - edge: a 300,000-line file → two tcp_chain sinks (fanout any) → two bench listeners that ack
//  - relay: a bench sender (tcp_chain hello, canonical lines) → tcp_chain source → http_chain
//    sink → a bench HTTP server answering 204
//  - collector: two bench "relays" post the same 300,000 canonical lines in 500-line bodies →
//    http_chain source → dedup → json → file sink (and an idle http stream sink)
//  - collector-fleet: the shipped collector as the compose fleet runs it (deploy/collector.toml,
//    mutual TLS): two bench "relays" with their own certificates post version 2 frames, 1,450 a
//    body, four in flight each, every line once (the fleet's `balance` edges), as fast as it takes them
// Each role runs BENCH_RUNS times (5); the median µs of worker CPU per line is printed.
// Run: npm run build && node dist/bench/roles.js [edge|relay|collector|collector-fleet]

import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { Agent, createServer as httpServer, request } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { connect, createServer as netServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { chainSinkToml, chainSourceToml } from '../test/helpers/chain.js';
import { freePort, ROOT, type RunningNode, sleep, spawnNode, tempDir, waitReady } from '../test/helpers/node.js';
import { makePki } from '../test/helpers/pki.js';
import { encodeFrames, framedItem } from '../src/core/entry-frame.js';
import { fileSourceToml, localPluginToml, sinkToml } from '../test/helpers/toml.js';
import { childPids, cpuMs } from './proc.js';
import { runIfMain } from './report.js';

const LINES = Number(process.env.BENCH_LINES ?? 300_000);
const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 5));
const DEADLINE_MS = 60_000;

interface RunResult {
  readonly lines: number;
  readonly secs: number;
  readonly cpuMs: number;
}

const T0 = Date.now();
/** A line as a logrelay sink writes it (canonical form), 512 lines sharing a millisecond. */
const canonical = (i: number, node?: string): string =>
  `{"time":"${new Date(T0 + (i >> 9)).toISOString()}"${node ? `,"node":"${node}"` : ''},"source":"app.log","message":"line-${String(i).padStart(7, '0')} ${'x'.repeat(180)}","id":"Abcdefghijklmnop.${i.toString(36)}"}`;

/** `LINES` canonical lines in bodies (chunks) of 500. */
function bodies(node?: string): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < LINES; i += 500) {
    const lines: string[] = [];
    for (let k = i; k < Math.min(LINES, i + 500); k++) lines.push(canonical(k, node));
    out.push(Buffer.from(`${lines.join('\n')}\n`));
  }
  return out;
}

async function workerPid(node: RunningNode): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const pids = childPids(node.child.pid!);
    if (pids.length > 0) return pids[0]!;
    await sleep(50);
  }
  throw new Error('no pipeline worker');
}

async function withNode(toml: string, what: string, load: (dir: string) => Promise<void>, lines: number): Promise<RunResult> {
  const dir = tempDir('logrelay-bench-roles-');
  mkdirSync(join(dir.path, 'app'));
  const node = spawnNode(['-c', dir.file('node.toml', `status_interval_ms = 1000\n${toml.replaceAll('@DIR@', dir.path)}`)]);
  try {
    await waitReady(node, what);
    const pid = await workerPid(node);
    const cpu0 = cpuMs(pid);
    const t0 = performance.now();
    await load(dir.path);
    return { lines, secs: (performance.now() - t0) / 1000, cpuMs: cpuMs(pid) - cpu0 };
  } finally {
    node.child.kill('SIGKILL');
    dir.remove();
  }
}

const listen = (server: Server | ReturnType<typeof httpServer>): Promise<number> =>
  new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));

async function edge(): Promise<RunResult> {
  const counts = [0, 0];
  const servers = [0, 1].map((k) =>
    netServer((s) => {
      let hello = false;
      let n = 0;
      s.on('error', () => {});
      s.on('data', (chunk: Buffer) => {
        let i = 0;
        if (!hello) {
          i = chunk.indexOf(10) + 1;
          hello = true;
          s.write('{"ok":1}\n');
        }
        for (i = chunk.indexOf(10, i); i >= 0; i = chunk.indexOf(10, i + 1)) n++;
        counts[k] = n;
        s.write(`{"ack":${n}}\n`);
      });
    }),
  );
  const ports = await Promise.all(servers.map(listen));
  const sink = (k: number) => chainSinkToml(`relay-${k}`, 'tcp_chain', ports[k]!, 'edge', 'buffer_size = 20000\n');
  let text = '';
  for (let i = 1; i <= LINES; i++) text += `line-${String(i).padStart(7, '0')} ${'x'.repeat(180)}\n`;
  const bytes = Buffer.from(text);
  try {
    return await withNode(
      `[[pipelines]]
name = "app"
fanout = "any"
${fileSourceToml('app', '@DIR@/app', 'pattern = "*.log"')}${sink(0)}${sink(1)}`,
      'edge',
      async (dir) => {
        appendFileSync(join(dir, 'app', 'backlog.log'), bytes);
        const deadline = performance.now() + DEADLINE_MS;
        // a fanout-any sink whose queue is full skips entries: done when one link took them all
        while (Math.max(...counts) < LINES && performance.now() < deadline) await sleep(5);
        if (Math.max(...counts) < LINES) throw new Error(`edge: ${Math.max(...counts)} of ${LINES} lines within the deadline`);
      },
      LINES,
    );
  } finally {
    for (const s of servers) s.close();
  }
}

async function relay(): Promise<RunResult> {
  let got = 0;
  const collector = httpServer((req, res) => {
    let n = 0;
    req.on('data', (c: Buffer) => {
      for (let i = c.indexOf(10); i >= 0; i = c.indexOf(10, i + 1)) n++;
    });
    req.on('end', () => {
      got += n;
      res.writeHead(204, { 'x-logrelay-accepted': String(n) });
      res.end();
    });
  });
  const collectorPort = await listen(collector);
  const port = await freePort();
  const chunks = bodies();
  try {
    return await withNode(
      `[[pipelines]]
name = "relay"
${chainSourceToml('edges', 'tcp_chain', port, 'buffer_size = 5000\n')}${chainSinkToml(
        'collector',
        'http_chain',
        collectorPort,
        'relay-a',
        'buffer_size = 5000\non_full = "block"\nflush_interval_ms = 200\n',
      )}`,
      'relay',
      () =>
        new Promise<void>((resolve, reject) => {
          const s = connect(port, '127.0.0.1');
          const timer = setTimeout(() => reject(new Error(`relay: not every line acknowledged within ${DEADLINE_MS} ms`)), DEADLINE_MS);
          let rest = '';
          s.setEncoding('utf8');
          s.on('error', reject);
          s.write('{"logrelay":1,"node":"edge"}\n');
          s.on('data', (d: string) => {
            rest += d;
            for (let i = rest.indexOf('\n'); i >= 0; i = rest.indexOf('\n')) {
              const line = rest.slice(0, i);
              rest = rest.slice(i + 1);
              if (line === '{"ok":1}') for (const c of chunks) s.write(c);
              const m = /"ack":(\d+)/.exec(line);
              if (m && Number(m[1]) === LINES) {
                clearTimeout(timer);
                s.end();
                resolve();
              }
            }
          });
        }),
      LINES,
    );
  } finally {
    collector.close();
    if (got < LINES) console.error(`relay: the collector side got ${got} of ${LINES} lines`);
  }
}

async function collector(): Promise<RunResult> {
  const port = await freePort();
  const streamPort = await freePort();
  const all = bodies('edge');
  const post = (agent: Agent, relay: string, body: Buffer) =>
    new Promise<number>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, path: '/ingest', method: 'POST', agent, headers: { 'x-logrelay-protocol': '1', 'x-logrelay-node': relay, 'content-type': 'application/x-ndjson', 'content-length': body.length } },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  /** one relay's copy of every line: four requests in flight, a 503 tried again after 20 ms */
  const relaySends = async (relay: string) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    const deadline = performance.now() + DEADLINE_MS;
    let next = 0;
    const lane = async () => {
      while (next < all.length) {
        const body = all[next++]!;
        while ((await post(agent, relay, body)) !== 204) {
          if (performance.now() > deadline) throw new Error(`collector: a body not taken within ${DEADLINE_MS} ms`);
          await sleep(20);
        }
      }
    };
    await Promise.all([lane(), lane(), lane(), lane()]);
    agent.destroy();
  };
  return withNode(
    `[[pipelines]]
name = "collect"
[pipelines.flow.dedup]
enabled = true
[pipelines.flow.format]
type = "json"
${chainSourceToml('relays', 'http_chain', port, 'buffer_size = 5000\n')}${localPluginToml('sinks', 'stream', 'http', streamPort, 'client_buffer_size = 1024\n')}${sinkToml(
      'archive',
      'file',
      'directory = "@DIR@/out"\nname = "fleet"\nbuffer_size = 20000\non_full = "block"',
    )}`,
    'collector',
    async () => {
      await Promise.all([relaySends('relay-a'), relaySends('relay-b')]);
    },
    2 * LINES,
  );
}

/** Lines of a body as the fleet's relays post them (bench/fleet.js: about 1,400–1,550 a request). */
const FLEET_BODY_LINES = 1450;

/** `LINES` entries as an edge frames them (version 2), in bodies of FLEET_BODY_LINES; `file` tells the rounds' ids apart. */
function frameBodies(file: string): Buffer[] {
  const out: Buffer[] = [];
  const now = Date.now();
  for (let i = 0; i < LINES; i += FLEET_BODY_LINES) {
    const items = [];
    for (let k = i; k < Math.min(LINES, i + FLEET_BODY_LINES); k++) {
      const entry = { time: T0 + (k >> 9), source: '/var/log/app/backlog.log', message: `line-${String(k).padStart(7, '0')} ${'x'.repeat(180)}`, node: 'edge', id: `Abcdefghijklmno${file}.${k.toString(36)}` };
      items.push(framedItem(entry, '', undefined));
    }
    encodeFrames(items, 0, items.length, now, 'collect');
    out.push(Buffer.concat(items.map((it) => it.frameBuf!.subarray(it.frameAt, it.frameEnd))));
  }
  return out;
}

async function collectorFleet(): Promise<RunResult> {
  const dir = tempDir('logrelay-bench-roles-');
  const pki = makePki(join(dir.path, 'pki'), ['collector', 'relay-a', 'relay-b']);
  mkdirSync(join(dir.path, 'data'));
  const port = await freePort();
  const env = {
    NODE_NAME: 'collector',
    PKI_DIR: pki.dir,
    DATA_DIR: join(dir.path, 'data'),
    CHAIN_HOST: '127.0.0.1',
    CHAIN_PORT: String(port),
    ADMIN_HOST: '127.0.0.1',
    ADMIN_PORT: String(await freePort()),
    STREAM_HOST: '127.0.0.1',
    STREAM_PORT: String(await freePort()),
  };
  const node = spawnNode(['-c', join(ROOT, 'deploy', 'collector.toml')], { env });
  const agentOf = (name: string) => new HttpsAgent({ keepAlive: true, maxSockets: 4, ca: readFileSync(pki.ca), cert: readFileSync(pki.cert(name)), key: readFileSync(pki.key(name)), servername: 'collector' });
  const agents = [agentOf('relay-a'), agentOf('relay-b')];
  const post = (agent: HttpsAgent, body: Buffer) =>
    new Promise<number>((resolve) => {
      const req = httpsRequest(
        { host: '127.0.0.1', port, path: '/ingest', method: 'POST', agent, headers: { 'x-logrelay-protocol': '2', 'content-type': 'application/x-logrelay-frames', 'content-length': body.length } },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      // a kept-alive socket the collector closed meanwhile: posted again
      req.on('error', () => resolve(0));
      req.end(body);
    });
  /** Every body once, by whichever relay's lane takes it next; a 503 (saturated) tried again after 10 ms. */
  const send = async (all: readonly Buffer[]) => {
    const deadline = performance.now() + DEADLINE_MS;
    let next = 0;
    const lane = async (agent: HttpsAgent) => {
      while (next < all.length) {
        const body = all[next++]!;
        while ((await post(agent, body)) !== 204) {
          if (performance.now() > deadline) throw new Error(`collector-fleet: a body not taken within ${DEADLINE_MS} ms`);
          await sleep(10);
        }
      }
    };
    await Promise.all(agents.flatMap((a) => [lane(a), lane(a), lane(a), lane(a)]));
  };
  try {
    await waitReady(node, 'collector');
    const pid = await workerPid(node);
    // a first round not measured, as the fleet bench's backlogs follow its warm-up: the code compiled, the dedup window full
    await send(frameBodies('w'));
    const all = frameBodies('p');
    const cpu0 = cpuMs(pid);
    const t0 = performance.now();
    await send(all);
    return { lines: LINES, secs: (performance.now() - t0) / 1000, cpuMs: cpuMs(pid) - cpu0 };
  } finally {
    for (const a of agents) a.destroy();
    node.child.kill('SIGKILL');
    dir.remove();
  }
}

const ROLES = { edge, relay, collector, 'collector-fleet': collectorFleet } as const;

export async function main(): Promise<void> {
  const asked = process.argv.slice(2).filter((a): a is keyof typeof ROLES => a in ROLES);
  const rows: string[] = [];
  for (const role of asked.length > 0 ? asked : (Object.keys(ROLES) as (keyof typeof ROLES)[])) {
    const perLine: number[] = [];
    for (let run = 1; run <= RUNS; run++) {
      const r = await ROLES[role]();
      perLine.push((1000 * r.cpuMs) / r.lines);
      console.error(`${role} run ${run}: ${r.lines} lines in ${r.secs.toFixed(2)} s, worker CPU ${(r.cpuMs / 1000).toFixed(2)} s`);
    }
    const sorted = [...perLine].sort((a, b) => a - b);
    rows.push(`| ${role.padEnd(15)} | ${sorted[Math.floor(sorted.length / 2)]!.toFixed(2).padStart(13)} | ${`${sorted[0]!.toFixed(2)}–${sorted.at(-1)!.toFixed(2)}`.padStart(11)} |`);
  }
  console.log(`Worker CPU per line, one node per role with the bench as its peers (no TLS but collector-fleet's), ${LINES} lines, median of ${RUNS}`);
  console.log('| role            | µs a line     | runs        |');
  console.log('|-----------------|--------------:|------------:|');
  for (const r of rows) console.log(r);
}

runIfMain(import.meta.url, main, { exitWhenDone: true });
