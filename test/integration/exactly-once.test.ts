// Exactly once at the collector (DESIGN.md §7, §14, §15): entries acknowledged end to end, resent
// after a relay or edge dies, and their copies removed by the collector's dedup stage. Every
// node is a real process on 127.0.0.1; relays and edges are SIGKILLed as a crash would.

import { mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { appendLines, collectorToml, edgeToml, relayToml, Tally, waitAllDelivered } from '../helpers/exactly-once.js';
import { childPids, freePort, killWithWorkers, nodeStarter, ownedTempDir, type RunningNode, sleep, type TempDir, waitFor, waitReady } from '../helpers/node.js';
import { latestCounter, statusReports } from '../helpers/status.js';

const DEBUG = ['--logging.level=debug'];

interface Fleet {
  readonly dir: TempDir;
  start(name: string, toml: string): Promise<RunningNode>;
  readonly nodes: Map<string, RunningNode>;
}

function fleet(t: { teardown(fn: () => unknown): void }): Fleet {
  const dir = ownedTempDir(t, 'logrelay-once-');
  const running: RunningNode[] = [];
  const starter = nodeStarter(dir, running);
  const nodes = new Map<string, RunningNode>();
  t.teardown(async () => {
    for (const n of running) n.child.kill('SIGKILL');
    await Promise.all(running.map((n) => n.exited));
  });
  return {
    dir,
    nodes,
    async start(name, toml) {
      const node = starter(name, toml, DEBUG);
      nodes.set(name, node);
      await waitReady(node, name, 30_000);
      return node;
    },
  };
}

/** Appends `total` lines to `path` in steps of `step`, `pauseMs` apart; `during(i)` runs before each step. */
async function writeSteadily(path: string, total: number, step: number, pauseMs: number, during?: (i: number) => Promise<void> | void, from = 0): Promise<void> {
  for (let i = from; i < total; i += step) {
    await during?.(i);
    appendLines(path, i, Math.min(total, i + step));
    await sleep(pauseMs);
  }
}

async function allThere(tally: Tally, total: number, what: string, ms = 90_000): Promise<void> {
  await waitFor(() => tally.distinct === total, `${what}: all ${total} lines (have ${tally.distinct})`, ms);
}

test.serial('0. single chain: a relay SIGKILLed mid-stream and started again loses nothing; the dedup collector has every line once', async (t) => {
  t.timeout(150_000);
  const f = fleet(t);
  const [relayPort, dedupPort, plainPort] = [await freePort(), await freePort(), await freePort()];
  const dedup = await f.start('dedup', collectorToml(dedupPort, true));
  const plain = await f.start('plain', collectorToml(plainPort, false));
  await f.start('relay', relayToml('relay', relayPort, [dedupPort, plainPort]));
  const app = join(f.dir.path, 'app');
  mkdirSync(app);
  await f.start('edge', edgeToml(app, [relayPort]));
  const total = 20_000;
  const once = new Tally(() => dedup);
  const atLeast = new Tally(() => plain);
  const log = join(app, 'app.log');
  await writeSteadily(log, 8000, 500, 50);
  // a burst, and the relay killed while it is on its way
  appendLines(log, 8000, 12_000);
  await waitFor(() => once.distinct > 8000, 'the burst reaching the collector');
  await killWithWorkers(f.nodes.get('relay')!);
  t.log(`relay SIGKILLed with ${once.distinct} lines at the collector`);
  await sleep(500);
  await f.start('relay', relayToml('relay', relayPort, [dedupPort, plainPort]));
  await writeSteadily(log, total, 500, 50, undefined, 12_000);
  await allThere(once, total, 'dedup collector');
  await allThere(atLeast, total, 'plain collector');
  await sleep(1000);
  t.deepEqual(once.missing(total), []);
  t.is(once.duplicates, 0, 'exactly once with dedup');
  t.deepEqual(atLeast.missing(total), [], 'at least once without dedup');
  t.log(`without dedup: ${atLeast.duplicates} lines twice (resent after the relay died)`);
});

test.serial('1. dual chain: relay-a SIGKILLed while lines are appended, then started again: exactly once, duplicates_dropped > 0', async (t) => {
  t.timeout(150_000);
  const f = fleet(t);
  const [aPort, bPort, cPort] = [await freePort(), await freePort(), await freePort()];
  const collector = await f.start('collector', collectorToml(cPort, true, 'http_chain'));
  await f.start('relay-a', relayToml('relay-a', aPort, [cPort], 'http_chain'));
  await f.start('relay-b', relayToml('relay-b', bPort, [cPort], 'http_chain'));
  const app = join(f.dir.path, 'app');
  mkdirSync(app);
  await f.start('edge', edgeToml(app, [aPort, bPort], { fanout: 'any' }));
  const total = 20_000;
  const tally = new Tally(() => collector);
  await writeSteadily(join(app, 'app.log'), total, 500, 50, async (i) => {
    if (i === 6000) await killWithWorkers(f.nodes.get('relay-a')!);
    if (i === 14_000) await f.start('relay-a', relayToml('relay-a', aPort, [cPort], 'http_chain'));
  });
  await allThere(tally, total, 'collector');
  await sleep(1000);
  t.is(tally.duplicates, 0, 'every line exactly once');
  const dropped = await waitFor(() => latestCounter(collector, 'collect', 'flow.duplicates_dropped'), 'duplicates_dropped reported');
  t.true(dropped > 0, `duplicates_dropped = ${dropped}`);
  t.log(`duplicates_dropped = ${dropped}`);
});

for (const variant of ['both relays up', 'relay-a stopped from the start', 'relay-a SIGKILLed in the middle of the burst'] as const) {
  test.serial(`2. backlog of 200,000 lines through the dual chain, ${variant}: exactly once`, async (t) => {
    t.timeout(180_000);
    const f = fleet(t);
    const [aPort, bPort, cPort] = [await freePort(), await freePort(), await freePort()];
    const collector = await f.start('collector', collectorToml(cPort, true, 'http_chain'));
    if (variant !== 'relay-a stopped from the start') await f.start('relay-a', relayToml('relay-a', aPort, [cPort], 'http_chain'));
    await f.start('relay-b', relayToml('relay-b', bPort, [cPort], 'http_chain'));
    const app = join(f.dir.path, 'app');
    mkdirSync(app);
    const total = 200_000;
    appendLines(join(app, 'app.log'), 0, total);
    const started = Date.now();
    await f.start('edge', edgeToml(app, [aPort, bPort], { fanout: 'any' }));
    const tally = new Tally(() => collector);
    if (variant === 'relay-a SIGKILLed in the middle of the burst') {
      await waitFor(() => tally.distinct >= total / 4, 'a quarter through', 90_000);
      await killWithWorkers(f.nodes.get('relay-a')!);
    }
    // the edge never stalls: the collector's count grows in every 10 s window until all are in
    await waitAllDelivered(tally, total);
    t.log(`${variant}: ${total} lines in ${Date.now() - started} ms`);
    await sleep(1000);
    t.deepEqual(tally.missing(total), []);
    t.is(tally.duplicates, 0, 'every line exactly once');
  });
}

test.serial('3. edge with data_dir: SIGKILL of the edge, lines appended and the file rotated while it is down, restart: exactly once (at least once without dedup)', async (t) => {
  t.timeout(150_000);
  const f = fleet(t);
  const [dedupPort, plainPort] = [await freePort(), await freePort()];
  const dedup = await f.start('dedup', collectorToml(dedupPort, true));
  const plain = await f.start('plain', collectorToml(plainPort, false));
  const app = join(f.dir.path, 'app');
  const data = join(f.dir.path, 'data');
  mkdirSync(app);
  const edge = () => edgeToml(app, [dedupPort, plainPort], { dataDir: data });
  await f.start('edge', edge());
  const once = new Tally(() => dedup);
  const atLeast = new Tally(() => plain);
  const log = join(app, 'app.log');
  const checkpointed = () => {
    try {
      const cp = JSON.parse(readFileSync(join(data, 'checkpoint.json'), 'utf8')) as { pipelines: { app?: { positions: { app?: Record<string, { offset: number }> } } } };
      return cp.pipelines.app?.positions.app?.[log]?.offset ?? 0;
    } catch {
      return 0;
    }
  };
  let before = 0;
  /** lines the checkpoint held acknowledged when the edge died (every line is 13 bytes) */
  let acked = 0;
  await writeSteadily(log, 10_000, 500, 100, async (i) => {
    if (i !== 6000) return;
    // mid-stream, once a checkpoint holds a position for the file
    await waitFor(checkpointed, 'a checkpoint with the position of app.log');
    await killWithWorkers(f.nodes.get('edge')!);
    before = once.distinct;
    acked = checkpointed() / 13;
  });
  // while it is down: more lines, a rotation (app.log → app.log.1, which the pattern leaves out), more lines
  appendLines(log, 10_000, 12_000);
  renameSync(log, join(app, 'app.log.1'));
  appendLines(log, 12_000, 15_000);
  await f.start('edge', edge());
  await allThere(once, 15_000, 'dedup collector');
  await allThere(atLeast, 15_000, 'plain collector');
  await sleep(1000);
  t.is(once.duplicates, 0, 'exactly once with dedup');
  t.deepEqual(atLeast.missing(15_000), [], 'at least once without dedup');
  // what is sent again is only what had not been acknowledged: no line before the checkpointed position twice
  t.true(acked > 0);
  const resentAcked = [...atLeast.seen].filter(([i, n]) => i < acked && n > 1).length;
  t.is(resentAcked, 0, `lines acknowledged before the kill (${acked}) arrived again`);
  t.log(`edge killed with ${before} lines delivered, ${acked} acknowledged in the checkpoint; ${atLeast.duplicates} lines resent after the restart`);
});

test.serial('4. a downstream that never acknowledges: the edge worker SIGKILLed and restarted sends the lines again', async (t) => {
  t.timeout(90_000);
  const { createServer } = await import('node:net');
  const connections: string[][] = [];
  const server = createServer((socket) => {
    const lines: string[] = [];
    connections.push(lines);
    let rest = '';
    socket.setEncoding('utf8');
    socket.on('error', () => {});
    socket.on('data', (chunk: string) => {
      rest += chunk;
      for (let nl = rest.indexOf('\n'); nl >= 0; nl = rest.indexOf('\n')) {
        const line = rest.slice(0, nl);
        rest = rest.slice(nl + 1);
        if (lines.length === 0 && line.startsWith('{"logrelay"')) socket.write('{"ok":1}\n');
        lines.push(line);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const port = (server.address() as { port: number }).port;
  const f = fleet(t);
  const app = join(f.dir.path, 'app');
  mkdirSync(app);
  appendLines(join(app, 'app.log'), 0, 100);
  const edge = await f.start('edge', edgeToml(app, [port]));
  const entries = (c: readonly string[]) => c.filter((l) => l.includes('"message":"line ')).length;
  await waitFor(() => connections.length === 1 && entries(connections[0]!) === 100, 'the peer read all 100 lines');
  const [worker] = await childPids(edge.child.pid!);
  process.kill(worker!, 'SIGKILL');
  await waitFor(() => connections.length >= 2 && entries(connections.at(-1)!) === 100, 'the restarted worker sent all 100 again', 30_000);
  t.is(entries(connections.at(-1)!), 100, 'nothing the peer never acknowledged is lost');
  t.true(edge.records.some((r) => r.msg === 'Pipeline process exited unexpectedly'));
});

test.serial('5. a reload of the dedup collector mid-stream hands its window over: exactly once', async (t) => {
  t.timeout(150_000);
  const f = fleet(t);
  const [aPort, bPort, cPort] = [await freePort(), await freePort(), await freePort()];
  const collector = await f.start('collector', collectorToml(cPort, true));
  await f.start('relay-a', relayToml('relay-a', aPort, [cPort]));
  await f.start('relay-b', relayToml('relay-b', bPort, [cPort]));
  const app = join(f.dir.path, 'app');
  mkdirSync(app);
  await f.start('edge', edgeToml(app, [aPort, bPort], { fanout: 'any' }));
  const tally = new Tally(() => collector);
  const total = 20_000;
  await writeSteadily(join(app, 'app.log'), total, 500, 50, async (i) => {
    if (i === 5000 || i === 12_000) collector.signal('SIGHUP');
  });
  await allThere(tally, total, 'collector');
  await waitFor(() => collector.records.filter((r) => r.msg === 'Configuration reloaded').length === 2, 'two reloads');
  await sleep(1000);
  t.is(tally.duplicates, 0, 'every line once across two reloads');
});

/** Whether the file system of `dir` gives a freed inode to the next new file (ext4 and xfs do; tmpfs never). */
function reusesInodes(dir: string): boolean {
  const probe = join(dir, '.probe');
  writeFileSync(probe, 'a');
  const before = statSync(probe).ino;
  unlinkSync(probe);
  writeFileSync(probe, 'b');
  const after = statSync(probe).ino;
  unlinkSync(probe);
  return after === before;
}

/** Whether any process among `pids` holds the file `path` open (after its deletion too). */
function holdsOpen(pids: readonly number[], path: string): boolean {
  for (const pid of pids) {
    let fds: string[] = [];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith(path)) return true;
      } catch {
        // closed meanwhile
      }
    }
  }
  return false;
}

test.serial('6. files deleted once read and new files that get their freed inodes: the new lines get ids of their own, the dedup collector keeps them', async (t) => {
  t.timeout(120_000);
  const f = fleet(t);
  const port = await freePort();
  const dedup = await f.start('dedup', collectorToml(port, true));
  const app = join(f.dir.path, 'app');
  mkdirSync(app);
  const edge = await f.start('edge', edgeToml(app, [port]));
  const workers = await childPids(edge.child.pid!);
  const once = new Tally(() => dedup);
  const log = join(app, 'app.log');
  // kubelet's gzip of a rotated log: the plain file deleted once read; the edge closes it, which
  // frees its inode, and ext4 hands a freed inode to the next new file if it comes soon enough
  let reused = 0;
  const rounds = 5;
  for (let r = 0; r < rounds; r++) {
    appendLines(log, r === 0 ? 0 : r * 1000 + 1, (r + 1) * 1000);
    await allThere(once, (r + 1) * 1000, `file ${r}`, 30_000);
    const inode = statSync(log).ino;
    unlinkSync(log);
    await waitFor(() => !holdsOpen(workers, log), 'the deleted file closed by the edge', 15_000);
    // the same line lengths: the new file's lines end at the old lines' offsets (its first line
    // is written at once, to be there before another file takes the inode)
    appendLines(log, (r + 1) * 1000, (r + 1) * 1000 + 1);
    if (statSync(log).ino === inode) reused++;
  }
  appendLines(log, rounds * 1000 + 1, (rounds + 1) * 1000);
  await allThere(once, (rounds + 1) * 1000, 'the last file', 30_000);
  t.log(`${reused} of ${rounds} new files got the inode of the file deleted before them`);
  t.true(reused > 0 || !reusesInodes(app), 'the file system reuses inodes, so the test must see it happen');
  t.deepEqual(once.missing((rounds + 1) * 1000), []);
  t.is(once.duplicates, 0);
  const total = (rounds + 1) * 1000;
  const report = await waitFor(() => statusReports(dedup, 'collect').find((r) => r['flow.total_processed'] === total), `a status report of the collector with ${total} entries processed`);
  t.is(report['flow.duplicates_dropped'], 0, 'no line of a new file taken for one of the old');
});
