// Disk buffer outages and full disks (issue 26, acceptance 4 and 5), with real processes: a relay
// keeps answering 204 to a backlog while its collector is down, drains it when the collector
// returns and deletes the segments; `max_size_mb` reached blocks (http 503 + Retry-After, tcp stops
// reading, udp counts `buffer_full` drops) or drops the newest (counted), and both recover; a
// write error (ENOSPC on a small tmpfs) makes /readyz say `buffer_error` until space returns.

import test from 'ava';
import { spawnSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { segmentSeq } from '../../src/buffer/record.js';
import { adminRequest } from '../helpers/admin.js';
import { collectorToml, idLine, postLines, printedCounts, relayToml } from '../helpers/buffer-node.js';
import { childPids, freePort, killWithWorkers, killedNodesIn, nodeStarter, type RunningNode, sleep, spawnNode, tempDir, waitFor, waitReady } from '../helpers/node.js';
import { latestCounter, latestStatus, statusAfter } from '../helpers/status.js';

const running: RunningNode[] = [];
test.afterEach.always(() => {
  for (const n of running.splice(0)) n.child.kill('SIGKILL');
});

const segmentsIn = (dir: string) => {
  try {
    return readdirSync(dir).filter((f) => segmentSeq(f) !== undefined).length;
  } catch {
    return 0;
  }
};

/** Posts `count` entries `prefix nnnnnn` in batches of `batch`, each until 204; resolves when all were. */
async function postAll(port: number, prefix: string, from: number, count: number, batch: number): Promise<void> {
  for (let i = from; i < from + count; i += batch) {
    const lines = Array.from({ length: Math.min(batch, from + count - i) }, (_, k) => idLine(prefix, i + k));
    for (let attempt = 0; ; attempt++) {
      const { status } = await postLines(port, lines, 10_000);
      if (status === 204) break;
      if (attempt > 200) throw new Error(`batch at ${i} never answered 204 (last ${status})`);
      await sleep(50);
    }
  }
}

test.serial('collector down: the relay answers 204 to a backlog, drains it when the collector returns, and deletes the segments', async (t) => {
  const { dir, start } = killedNodesIn(t, running);
  const [port, collectorPort] = [await freePort(), await freePort()];
  const dataDir = join(dir.path, 'data');
  const bufDir = join(dataDir, 'buffers', 'relay', 'in');
  const relay = start('relay', relayToml({ dataDir, source: 'http_chain', port, sinkPort: collectorPort, buffer: 'segment_size_mb = 0.05\nmax_size_mb = 64' }), ['--logging.level=debug']);
  await waitReady(relay, 'relay', 30_000);
  const N = 20_000;
  await postAll(port, 'b', 0, N, 500);
  await waitFor(() => latestCounter(relay, 'relay', 'sources.in.buffer_entries') === N, `${N} entries in the buffer`, 30_000);
  const held = segmentsIn(bufDir);
  t.true(held > 10, `segments while the collector is down: ${held}`);
  t.is(latestCounter(relay, 'relay', 'sinks.out.total_processed') ?? 0, 1000, 'the reader hands on no more than the sink queue holds');

  // a shutdown with the backlog on disk is a normal exit: nothing abandoned, all of it kept
  t.is(await relay.stop(30_000), 0);
  t.false(relay.records.some((r) => r.msg === 'Drain deadline passed, entries abandoned'));
  const relay2 = start('relay', relayToml({ dataDir, source: 'http_chain', port, sinkPort: collectorPort, buffer: 'segment_size_mb = 0.05\nmax_size_mb = 64' }), ['--logging.level=debug']);
  await waitReady(relay2, 'relay again', 30_000);

  const collector = start('collector', collectorToml(collectorPort));
  await waitFor(() => printedCounts([collector.out]).size >= N, `the backlog of ${N} at the collector`, 60_000);
  await waitFor(() => latestCounter(relay2, 'relay', 'sources.in.buffer_entries') === 0, 'the buffer empty', 30_000);
  // the segments the saved sequence passed are deleted; the one being written stays
  await waitFor(() => segmentsIn(bufDir) <= 1, `segments deleted (${segmentsIn(bufDir)} left)`, 30_000);
  const seen = printedCounts([collector.out]);
  t.is(seen.size, N);
  t.true([...seen.values()].every((n) => n === 1));
});

test.serial('max_size_mb reached, when_full = "block": http 503 with Retry-After, tcp stops reading; both recover when the backlog drains', async (t) => {
  const { dir, start } = killedNodesIn(t, running);
  const [port, tcpPort, collectorPort] = [await freePort(), await freePort(), await freePort()];
  const buffer = 'segment_size_mb = 0.05\nmax_size_mb = 0.1';
  const relay = start('relay', relayToml({ dataDir: join(dir.path, 'data'), source: 'http_chain', port, sinkPort: collectorPort, buffer }), ['--logging.level=debug']);
  await waitReady(relay, 'relay', 30_000);
  let i = 0;
  let refused: { status: number; retryAfter?: string } | undefined;
  while (!refused && i < 100_000) {
    const lines = Array.from({ length: 100 }, (_, k) => idLine('f', i + k));
    const r = await postLines(port, lines);
    if (r.status === 204) i += 100;
    else refused = r;
  }
  t.is(refused?.status, 503);
  t.is(refused?.retryAfter, '1');
  const bytes = latestCounter(relay, 'relay', 'sources.in.buffer_bytes') ?? 0;
  t.true(bytes <= 0.1 * 1024 * 1024 + 100 * 200, `bytes on disk ${bytes}`);

  // a syslog tcp source with the same buffer stops reading: the sender's writes back up
  const tcpRelay = start(
    'tcp-relay',
    relayToml({ dataDir: join(dir.path, 'data2'), source: 'syslog', port: tcpPort, sinkPort: collectorPort, sourceConfig: 'mode = "tcp"', buffer }),
    ['--logging.level=debug'],
  );
  await waitReady(tcpRelay, 'tcp relay', 30_000);
  const line = (n: number) => `<134>1 2026-11-25T10:00:00.000Z host app - - - t ${String(n).padStart(6, '0')} ${'y'.repeat(150)}\n`;
  const sock = connect(tcpPort, '127.0.0.1');
  sock.on('error', () => undefined);
  await new Promise((r) => sock.once('connect', r));
  const TCP_N = 4000; // about 0.8 MB: eight times the buffer
  let text = '';
  for (let n = 0; n < TCP_N; n++) text += line(n);
  sock.write(text);
  await waitFor(() => (latestCounter(tcpRelay, 'relay', 'sources.in.buffer_bytes') ?? 0) > 0.08 * 1024 * 1024, 'the tcp buffer filled', 30_000);
  // stopped: the source took far less than was written, and drops nothing
  const taken = () => latestCounter(tcpRelay, 'relay', 'sources.in.total_entries') ?? 0;
  const at = taken();
  await waitFor(() => statusCount(tcpRelay) >= 3, 'more status reports', 10_000);
  t.true(taken() < TCP_N, `tcp source took ${taken()} of ${TCP_N}`);
  t.true(taken() - at < 1000, 'it does not go on taking');
  t.is(latestCounter(tcpRelay, 'relay', 'sources.in.dropped_buffer_full'), 0);

  // recovery: the collector comes up, both backlogs drain, the http source takes again, tcp reads the rest
  const collector = start('collector', collectorToml(collectorPort));
  await postAll(port, 'f', i, 500, 100);
  await waitFor(() => printedCounts([collector.out]).size >= i + 500 + TCP_N, `everything at the collector (${printedCounts([collector.out]).size} of ${i + 500 + TCP_N})`, 60_000).catch((err: unknown) => {
    const seen = [...printedCounts([collector.out]).keys()];
    t.log(i, seen.filter((m) => m.startsWith('f ')).length, seen.filter((m) => m.startsWith('t ')).length);
    t.log(latestStatus(relay, 'relay'), latestStatus(tcpRelay, 'relay'));
    t.log(tcpRelay.records.filter((r) => r.level !== 'debug'));
    throw err;
  });
  sock.end();
  const seen = printedCounts([collector.out]);
  t.true([...seen.values()].every((n) => n === 1));
});

const statusCount = (node: RunningNode) => node.records.filter((r) => r.msg === 'status report').length;

test.serial('when_full = "drop_newest" counts drops and recovers; a udp source counts buffer_full drops', async (t) => {
  const { dir, start } = killedNodesIn(t, running);
  const [port, udpPort, collectorPort, adminPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const relay = start(
    'relay',
    relayToml({ dataDir: join(dir.path, 'data'), source: 'http_chain', port, sinkPort: collectorPort, buffer: 'segment_size_mb = 0.05\nmax_size_mb = 0.1\nwhen_full = "drop_newest"', adminPort }),
    ['--logging.level=debug'],
  );
  await waitReady(relay, 'relay', 30_000);
  // once the buffer is open (the first batch), every batch is answered 204: dropped with a count once full
  await postAll(port, 'd', 0, 100, 100);
  let i = 100;
  for (; i < 3000; i += 100) {
    const r = await postLines(port, Array.from({ length: 100 }, (_, k) => idLine('d', i + k)));
    t.is(r.status, 204);
  }
  // every batch was answered, so every drop counted, before now
  const posted = Date.now();
  await waitFor(() => (latestCounter(relay, 'relay', 'sources.in.dropped_buffer_full') ?? 0) > 0, 'drops counted', 20_000);
  await waitFor(async () => /logrelay_dropped_entries_total\{pipeline="relay",component="in",reason="buffer_full"\} [1-9]/.test((await adminRequest(adminPort, '/metrics')).body), 'buffer_full in /metrics', 20_000);
  await waitFor(() => relay.records.some((r) => r.msg === 'Entries dropped' && r.reason === 'buffer_full' && r.level === 'warn'), 'WARN Entries dropped, reason buffer_full', 20_000);
  // the buffer's own families, labelled by pipeline and component, equal to its counters
  const metrics = (await adminRequest(adminPort, '/metrics')).body;
  const sample = (name: string) => Number(new RegExp(`^${name}\\{pipeline="relay",component="in"\\} (\\S+)$`, 'm').exec(metrics)?.[1] ?? Number.NaN);
  t.true(sample('logrelay_buffer_bytes') > 0);
  t.true(sample('logrelay_buffer_entries') > 0);
  t.is(sample('logrelay_buffer_errors_total'), 0);
  // from a report of after the last batch: the latest one may be of a second when drops were still being counted
  const dropped = await waitFor(() => statusAfter(relay, 'relay', posted)?.['sources.in.dropped_buffer_full'] as number | undefined, 'the drops in a report from after the last batch', 20_000);
  // recovery: the backlog drains, new entries are kept again
  const collector = start('collector', collectorToml(collectorPort));
  await waitFor(() => latestCounter(relay, 'relay', 'sources.in.buffer_entries') === 0, 'the buffer drained', 30_000);
  await waitFor(() => segmentsIn(join(dir.path, 'data', 'buffers', 'relay', 'in')) <= 1, 'segments deleted', 30_000);
  await postAll(port, 'e', 0, 200, 100);
  await waitFor(() => [...printedCounts([collector.out]).keys()].filter((m) => m.startsWith('e ')).length === 200, 'new entries delivered', 30_000);
  t.is(latestCounter(relay, 'relay', 'sources.in.dropped_buffer_full'), dropped, 'no drops after recovery');

  // udp: never pausable, so a full buffer counts buffer_full drops whatever when_full says
  const udpRelay = start(
    'udp-relay',
    relayToml({ dataDir: join(dir.path, 'data2'), source: 'syslog', port: udpPort, sinkPort: await freePort(), sourceConfig: 'mode = "udp"', buffer: 'segment_size_mb = 0.05\nmax_size_mb = 0.1' }),
    ['--logging.level=debug'],
  );
  await waitReady(udpRelay, 'udp relay', 30_000);
  const udp = createSocket('udp4');
  t.teardown(() => udp.close());
  for (let n = 0; n < 3000; n++) {
    await new Promise((r) => udp.send(`<134>1 2026-11-25T10:00:00.000Z host app - - - u ${n} ${'z'.repeat(100)}`, udpPort, '127.0.0.1', r));
    if (n % 100 === 99) await sleep(5);
  }
  await waitFor(() => (latestCounter(udpRelay, 'relay', 'sources.in.dropped_buffer_full') ?? 0) > 0, 'udp buffer_full drops counted', 20_000);
});

/** Mounts a tmpfs of `kb` KiB at `dir`; false when this process may not (not root, no CAP_SYS_ADMIN). */
function mountTmpfs(dir: string, kb: number): boolean {
  mkdirSync(dir, { recursive: true });
  return spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${kb}k`, 'tmpfs', dir]).status === 0;
}

const probe = tempDir();
const canMount = mountTmpfs(join(probe.path, 'm'), 64) && spawnSync('umount', [join(probe.path, 'm')]).status === 0;
probe.remove();

/** Bytes a file of the relay may grow to while its disk "fails" without a tmpfs (RLIMIT_FSIZE). */
const FSIZE_LIMIT = 16 * 1024;

// A real write error from the kernel: ENOSPC from a small tmpfs where this process may mount one
// (root), else EFBIG from a file size limit (RLIMIT_FSIZE, set with prlimit on the relay and
// raised again on its processes: Node ignores SIGXFSZ, so the write fails). Making a directory
// unwritable is no error for root, so it is not used.
test.serial(`a disk that fails (${canMount ? 'a small tmpfs fills up' : 'a file size limit'}): ERROR, /readyz says buffer_error, http 503; all recovers when it writes again`, async (t) => {
  const dir = tempDir();
  const start = nodeStarter(dir, running);
  const [port, collectorPort, adminPort] = [await freePort(), await freePort(), await freePort()];
  const dataDir = join(dir.path, 'data');
  const mount = join(dataDir, 'buffers');
  if (canMount) t.true(mountTmpfs(mount, 512));
  t.teardown(async () => {
    await Promise.all(running.splice(0).map((n) => killWithWorkers(n)));
    if (canMount) spawnSync('umount', ['-l', mount]);
    dir.remove();
  });
  const toml = relayToml({ dataDir, source: 'http_chain', port, sinkPort: collectorPort, buffer: 'segment_size_mb = 0.05\nmax_size_mb = 64', adminPort });
  const relay = canMount
    ? start('relay', toml, ['--logging.level=debug'])
    : spawnNode(['-c', dir.file('relay.toml', toml), '--logging.level=debug'], { via: ['prlimit', `--fsize=${FSIZE_LIMIT}:unlimited`] });
  if (!canMount) running.push(relay);
  await waitReady(relay, 'relay', 30_000);
  // the collector is down until the end: running, /readyz names the relay link_down (not buffer_error)
  const readyButLink = async () => {
    const r = await adminRequest(adminPort, '/readyz');
    return r.status === 200 || (JSON.parse(r.body) as { pipelines: Record<string, string> }).pipelines.relay === 'link_down';
  };
  await waitFor(readyButLink, 'ready', 20_000);
  // the buffer has opened (its meta.json, the last file its opening writes, is there): the disk
  // fails under its appends, not under its opening, which would refuse every request at once
  await waitFor(() => existsSync(join(mount, 'relay', 'in', 'meta.json')), 'the disk buffer opened', 20_000);
  // the file system is filled but for a little (with the size limit, the segment reaches it by itself)
  const filler = join(mount, 'filler');
  if (canMount) {
    const fill = Buffer.alloc(4096, 1);
    try {
      for (let k = 0; k < 1000; k++) writeFileSync(filler, fill, { flag: 'a' });
    } catch {
      // ENOSPC: full
    }
  }
  let i = 0;
  let pending: Promise<{ status: number }> | undefined;
  /** the first number of each request's 100 lines that was taken (answered 204, or held by the failing write) */
  const taken: number[] = [];
  while (!relay.records.some((r) => r.msg === 'Disk buffer write failed') && i < 100_000) {
    const r = postLines(port, Array.from({ length: 100 }, (_, k) => idLine('s', i + k)), 60_000);
    const first = await Promise.race([r, sleep(500).then(() => undefined)]);
    if (first === undefined || first.status === 204) taken.push(i);
    i += 100;
    if (first === undefined) {
      pending = r;
      break;
    }
  }
  await waitFor(() => relay.records.find((r) => r.msg === 'Disk buffer write failed' && r.level === 'error'), 'ERROR Disk buffer write failed', 20_000);
  await waitFor(async () => {
    const r = await adminRequest(adminPort, '/readyz');
    return r.status === 503 && (JSON.parse(r.body) as { pipelines: Record<string, string> }).pipelines.relay === 'buffer_error';
  }, '/readyz says buffer_error', 20_000);
  t.is((await postLines(port, [idLine('s', 999_999)])).status, 503, 'a failing buffer takes nothing');
  await waitFor(async () => /^logrelay_buffer_errors_total\{pipeline="relay",component="in"\} [1-9]/m.test((await adminRequest(adminPort, '/metrics')).body), 'logrelay_buffer_errors_total counts the failed writes', 20_000);
  // space returns
  if (canMount) rmSync(filler);
  else for (const pid of [relay.child.pid!, ...(await childPids(relay.child.pid!))]) spawnSync('prlimit', ['--pid', String(pid), '--fsize=unlimited:unlimited']);
  await waitFor(readyButLink, '/readyz ready again (but for the collector link)', 30_000);
  t.truthy(pending, 'a request was held by the failing write');
  t.is((await pending!).status, 204, 'the request held during the failure is answered once its entries are durable');
  await waitFor(() => relay.records.some((r) => r.msg === 'Disk buffer write recovered'), 'Disk buffer write recovered logged');
  const collector = start('collector', collectorToml(collectorPort));
  const want = taken.flatMap((from) => Array.from({ length: 100 }, (_, k) => `s ${String(from + k).padStart(6, '0')}`));
  const counts = await waitFor(() => {
    const c = printedCounts([collector.out]);
    return want.every((m) => c.has(m)) ? c : undefined;
  }, `all ${want.length} entries taken delivered`, 60_000);
  t.deepEqual(
    want.filter((m) => counts.get(m) !== 1),
    [],
    'each entry taken arrives once',
  );
});
