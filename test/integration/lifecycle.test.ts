// Reload, crash isolation, shutdown and `check`, each by spawning bin/logrelay.js (issue 4).

import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { childPids, exitedWithin, freePort, isAlive, ownedTempDir, pidsHolding, type RunningNode, sleep, spawnOwnedNode, type Teardown, waitFor } from '../helpers/node.js';
import { latestStatus, statusReports } from '../helpers/status.js';

const filePipeline = (name: string, dir: string, filter = 'NEVER-MATCHES') => `
[[pipelines]]
name = "${name}"
[[pipelines.flow.filters]]
type = "exclude"
patterns = ["${filter}"]
[[pipelines.plugin_sources]]
id = "tail"
type = "file"
config = { directory = "${dir}", from = "start", check_interval_ms = 200 }
[[pipelines.plugin_sinks]]
id = "out"
type = "stdout"
`;

const randomPipeline = (name: string, words: number, interval = 20) => `
[[pipelines]]
name = "${name}"
[[pipelines.plugin_sources]]
type = "random"
config = { interval_ms = ${interval}, length = ${words} }
[[pipelines.plugin_sinks]]
id = "out"
type = "stdout"
`;

/** A temp dir (the test's teardown removes it) holding an empty directory `logs`. */
function withLogsDir(t: Teardown) {
  const dir = ownedTempDir(t);
  const logs = join(dir.path, 'logs');
  mkdirSync(logs);
  return { dir, logs };
}

/** Pipeline `name`: a random source into a tcp sink to 127.0.0.1:`port`. */
const tcpPipeline = (name: string, port: number) => `[[pipelines]]
name = "${name}"
[[pipelines.plugin_sources]]
type = "random"
[[pipelines.plugin_sinks]]
type = "tcp"
config = { host = "127.0.0.1", port = ${port} }
`;

/**
 * A background writer appending numbered lines `<prefix>-<n>` every few ms; the test's teardown
 * stops it (and awaits it) before the directory goes. A write failure surfaces from stop().
 */
function startWriter(t: import('ava').ExecutionContext, file: string, prefix: string, everyMs = 4) {
  let n = 0;
  let stopped = false;
  let failure: unknown;
  const done = (async () => {
    while (!stopped && n < 20_000) {
      appendFileSync(file, `${prefix}-${String(n + 1).padStart(6, '0')}\n`);
      n++;
      await sleep(everyMs);
    }
  })().catch((err: unknown) => {
    failure = err;
  });
  t.teardown(async () => {
    stopped = true;
    await done;
  });
  return {
    get count() {
      return n;
    },
    async stop() {
      stopped = true;
      await done;
      if (failure) throw failure;
      return n;
    },
  };
}

function countsOf(lines: readonly string[], prefix: string): Map<number, number> {
  const counts = new Map<number, number>();
  for (const l of lines) {
    if (!l.startsWith(`${prefix}-`)) continue;
    const n = Number(l.slice(prefix.length + 1));
    counts.set(n, (counts.get(n) ?? 0) + 1);
  }
  return counts;
}

function assertExactlyOnce(t: import('ava').ExecutionContext, lines: readonly string[], prefix: string, total: number) {
  const counts = countsOf(lines, prefix);
  const missing: number[] = [];
  const dup: number[] = [];
  for (let i = 1; i <= total; i++) {
    const c = counts.get(i) ?? 0;
    if (c === 0) missing.push(i);
    if (c > 1) dup.push(i);
  }
  t.deepEqual(missing.slice(0, 20), [], `missing ${missing.length} of ${total}`);
  t.deepEqual(dup.slice(0, 20), [], `duplicated ${dup.length} of ${total}`);
}

const reloaded = (node: RunningNode) => node.records.filter((r) => r.msg === 'Configuration reloaded').length;

test.serial('five reloads while a file grows: every line arrives exactly once', async (t) => {
  const dir = ownedTempDir(t);
  const logs = join(dir.path, 'app logs');
  const other = join(dir.path, 'other');
  for (const d of [logs, other]) mkdirSync(d);
  writeFileSync(join(other, 'b.log'), '');
  const cfgFile = join(dir.path, 'node.toml');
  const configs = [
    filePipeline('app', logs),
    filePipeline('app', logs, 'ALSO-NEVER') + filePipeline('side', other),
    filePipeline('app', logs),
    filePipeline('app', logs, 'STILL-NEVER') + filePipeline('side', other),
    filePipeline('app', logs, 'NOPE'),
    filePipeline('app', logs),
  ];
  writeFileSync(cfgFile, configs[0]!);
  const node = spawnOwnedNode(t, ['-c', cfgFile]);
  await waitFor(() => node.records.some((r) => r.msg === 'Starting pipeline'), 'started');
  const appLog = join(logs, 'app.log');
  const writer = startWriter(t, appLog, 'line');
  // every generation reads lines written while it runs: the writer gets 60 lines further before
  // each reload and after the last one
  let mark = 0;
  const writtenOn = async (what: string) => {
    mark += 60;
    await waitFor(() => writer.count >= mark, `the writer wrote ${mark} lines ${what}`);
  };
  for (let i = 1; i <= 5; i++) {
    await writtenOn(`before reload ${i}`);
    writeFileSync(cfgFile, configs[i]!);
    node.signal('SIGHUP');
    await waitFor(() => reloaded(node) === i, `reload ${i} done`);
  }
  await writtenOn('after the last reload');
  const total = await writer.stop();
  // One generation runs now and reads the file in order: once the last line is out, a line read
  // twice would be out too.
  appendFileSync(appLog, 'marker\n');
  await waitFor(() => node.out.includes('marker'), 'the marker after the last line', 20_000);
  t.log(`${total} lines written during five reloads`);
  assertExactlyOnce(t, node.out, 'line', total);
  t.deepEqual(
    node.records.filter((r) => r.level === 'error'),
    [],
  );
  t.is(await node.stop(), 0);
});

test.serial('a failed reload keeps the old pipelines; removing and adding pipelines stops and starts workers', async (t) => {
  const dir = ownedTempDir(t);
  const cfgFile = dir.file('node.toml', randomPipeline('a', 3) + randomPipeline('b', 5));
  const node = spawnOwnedNode(t, ['-c', cfgFile]);
  const pidsOf = async (n: number) =>
    waitFor(async () => {
      const p = await childPids(node.child.pid!);
      return p.length === n ? p : undefined;
    }, `${n} workers`);
  const before = await pidsOf(2);

  // A sink whose port is 0: the new generation fails to build, the old one keeps delivering.
  writeFileSync(cfgFile, `${randomPipeline('a', 3)}${tcpPipeline('b', 0)}`);
  node.signal('SIGHUP');
  const failure = await waitFor(
    () => node.records.find((r) => r.msg === 'Failed to bootstrap new service, keeping old service running'),
    'reload failure logged',
  );
  t.regex(String(failure.error), /^pipeline=b: .*port: must be 1 to 65535, got 0/);
  t.is(failure.level, 'error');
  const seen = node.out.length;
  await waitFor(() => node.out.slice(seen).filter((l) => l.split(' ').length === 5).length >= 5, 'pipeline b still delivers');
  t.deepEqual((await childPids(node.child.pid!)).sort(), before.sort(), 'the old workers are untouched');

  // Remove b: its worker stops.
  writeFileSync(cfgFile, randomPipeline('a', 3));
  node.signal('SIGHUP');
  await waitFor(() => reloaded(node) === 1, 'reload without b');
  await pidsOf(1);
  t.true(before.every((p) => !isAlive(p)), 'the old generation exited');
  const afterRemove = node.out.length;
  await waitFor(() => node.out.length > afterRemove + 10, 'a keeps delivering');
  t.false(
    node.out.slice(afterRemove + 5).some((l) => l.split(' ').length === 5),
    'b stopped',
  );

  // Add c: it starts.
  writeFileSync(cfgFile, randomPipeline('a', 3) + randomPipeline('c', 7));
  node.signal('SIGHUP');
  await waitFor(() => reloaded(node) === 2, 'reload with c');
  await pidsOf(2);
  await waitFor(() => node.out.some((l) => l.split(' ').length === 7), 'c delivers');
  t.truthy(node.records.find((r) => r.msg === 'Starting pipeline' && r.pipeline === 'c' && r.generation === 3));
  t.is(await node.stop(), 0);
});

test.serial('SIGKILL of one pipeline worker: the other goes on without a gap, the killed one restarts and reads what was written meanwhile', async (t) => {
  const { dir, logs } = withLogsDir(t);
  const appLog = join(logs, 'app.log');
  writeFileSync(appLog, '');
  const cfgFile = dir.file('node.toml', `status_interval_ms = 500\n${filePipeline('files', logs)}${randomPipeline('steady', 4, 50)}`);
  const node = spawnOwnedNode(t, ['-c', cfgFile, '--logging.level=debug']);
  const steadyTimes: number[] = [];
  node.child.stdout!.on('data', (chunk: Buffer) => {
    for (const l of chunk.toString().split('\n')) if (l.split(' ').length === 4) steadyTimes.push(Date.now());
  });
  await waitFor(() => node.records.filter((r) => r.msg === 'Starting pipeline').length === 2, 'both started');
  appendFileSync(appLog, 'line-000001\nline-000002\n');
  await waitFor(() => countsOf(node.out, 'line').size === 2, 'first lines');
  // The stats message that carries these counters carries the positions too (the primary keeps
  // both at once): the position is past line 2 once a report shows both lines read.
  await waitFor(() => Number(latestStatus(node, 'files')?.['sources.tail.bytes_read']) >= 24, 'a status report with both lines read');

  const workers = await childPids(node.child.pid!);
  t.is(workers.length, 2);
  // the worker of `files` is the one that holds app.log open
  const holding = pidsHolding(workers, appLog);
  t.is(holding.length, 1, `one worker holds ${appLog}: ${holding.join(' ')}`);
  const filesPid = holding[0]!;
  const killedAt = Date.now();
  process.kill(filesPid, 'SIGKILL');
  appendFileSync(appLog, 'line-000003\nline-000004\n');
  const crash = await waitFor(() => node.records.find((r) => r.msg === 'Pipeline process exited unexpectedly'), 'crash logged');
  t.is(crash.pipeline, 'files');
  t.is(crash.code, null);
  t.is(crash.signal, 'SIGKILL');
  await waitFor(() => countsOf(node.out, 'line').size === 4, 'lines written after the kill arrive');
  assertExactlyOnce(t, node.out, 'line', 4);
  await waitFor(
    () => node.records.some((r) => r.msg === 'status report' && r.pipeline === 'files' && r.restarts === 1),
    'restarts counted',
  );
  const window = steadyTimes.filter((x) => x >= killedAt - 1000);
  let maxGap = 0;
  for (let i = 1; i < window.length; i++) maxGap = Math.max(maxGap, window[i]! - window[i - 1]!);
  t.true(window.length > 20, 'steady kept producing');
  t.true(maxGap < 1000, `largest gap in the other pipeline's output: ${maxGap} ms`);
  t.is(await node.stop(), 0);
});

test.serial('a file born just before a reload or a crash, not yet discovered, is read whole by the successor (from = "end")', async (t) => {
  const { dir, logs } = withLogsDir(t);
  writeFileSync(join(logs, 'old.log'), 'old-000001\nold-000002\n');
  // discovery only at start, events off: the running generation never sees a file created
  // after it (with events, a file born just before a reload is most often read by the old
  // generation, and the handover it tests would be skipped)
  const cfgFile = dir.file(
    'node.toml',
    `status_interval_ms = 200
[[pipelines]]
name = "files"
[[pipelines.plugin_sources]]
id = "tail"
type = "file"
config = { directory = "${logs}", check_interval_ms = 600000, watch_events = false }
[[pipelines.plugin_sinks]]
id = "out"
type = "stdout"
`,
  );
  const node = spawnOwnedNode(t, ['-c', cfgFile, '--logging.level=debug']);
  // the first scan is over once a report shows old.log watched: new.log is born after it
  await waitFor(() => latestStatus(node, 'files')?.['sources.tail.active_watchers'] === 1, 'the first generation watches old.log');
  writeFileSync(join(logs, 'new.log'), 'new-000001\nnew-000002\n');
  node.signal('SIGHUP');
  await waitFor(() => reloaded(node) === 1, 'reloaded');
  await waitFor(() => countsOf(node.out, 'new').size === 2, 'the new file read by the new generation');
  // The stats that carry these counters carry new.log's position (the old generation read no
  // byte): once reported, the restart must not read new.log again.
  await waitFor(() => Number(latestStatus(node, 'files')?.['sources.tail.bytes_read']) >= 22, 'a status report with new.log read');

  const pids = await childPids(node.child.pid!);
  t.is(pids.length, 1, 'the old generation is gone');
  writeFileSync(join(logs, 'newer.log'), 'newer-000001\n');
  process.kill(pids[0]!, 'SIGKILL');
  const crashAt = await waitFor(() => node.records.findIndex((r) => r.msg === 'Pipeline process exited unexpectedly') + 1, 'crash logged');
  const restartAt = await waitFor(() => node.records.findIndex((r, i) => i >= crashAt && r.msg === 'Starting pipeline') + 1, 'the pipeline restarted');
  await waitFor(() => countsOf(node.out, 'newer').size === 1, 'the file born before the crash read by the restarted worker');
  // the restarted worker's first stats (earlier reports carry only `restarts`): its first scan
  // read newer.log and nothing else
  const first = await waitFor(
    () => node.records.slice(restartAt).find((r) => r.msg === 'status report' && r.pipeline === 'files' && typeof r['sources.tail.total_entries'] === 'number'),
    'a status report of the restarted worker',
  );
  t.is(first['sources.tail.total_entries'], 1, 'the restarted worker read newer.log only');
  assertExactlyOnce(t, node.out, 'new', 2);
  t.is(countsOf(node.out, 'old').size, 0, 'a file older than the run is still read from its end');
  t.is(await node.stop(), 0);
});

test.serial('with directory events, a file born just before a reload is read by whichever generation sees it first, whole and once', async (t) => {
  const { dir, logs } = withLogsDir(t);
  const cfgFile = dir.file(
    'node.toml',
    `status_interval_ms = 200
[[pipelines]]
name = "files"
[[pipelines.plugin_sources]]
id = "tail"
type = "file"
config = { directory = "${logs}", from = "start", check_interval_ms = 600000 }
[[pipelines.plugin_sinks]]
id = "out"
type = "stdout"
`,
  );
  const node = spawnOwnedNode(t, ['-c', cfgFile, '--logging.level=debug']);
  await waitFor(() => latestStatus(node, 'files')?.['sources.tail.active_watchers'] === 0, 'the first generation running');
  // the old generation's events most often find it first and hand its position over
  writeFileSync(join(logs, 'new.log'), 'new-000001\nnew-000002\n');
  node.signal('SIGHUP');
  await waitFor(() => reloaded(node) === 1, 'reloaded');
  appendFileSync(join(logs, 'new.log'), 'new-000003\n');
  await waitFor(() => countsOf(node.out, 'new').size === 3, 'every line of the new file');
  assertExactlyOnce(t, node.out, 'new', 3);
  t.is(await node.stop(), 0);
});

/** Pipeline `files`: file source `tail` on `logs` with `pattern` (checked every 100 ms) → stdout; reports every 200 ms. */
const patternConfig = (logs: string, pattern: string) => `status_interval_ms = 200
[[pipelines]]
name = "files"
[[pipelines.plugin_sources]]
id = "tail"
type = "file"
config = { directory = "${logs}", pattern = "${pattern}", check_interval_ms = 100 }
[[pipelines.plugin_sinks]]
id = "out"
type = "stdout"
`;

test.serial('a reload that widens a file source\'s pattern starts it afresh: files it did not watch are read from their end', async (t) => {
  const { dir, logs } = withLogsDir(t);
  const cfg = (pattern: string) => patternConfig(logs, pattern);
  const cfgFile = dir.file('node.toml', cfg('app.log'));
  writeFileSync(join(logs, 'app.log'), '');
  const node = spawnOwnedNode(t, ['-c', cfgFile, '--logging.level=debug']);
  await waitFor(() => latestStatus(node, 'files')?.['sources.tail.active_watchers'] === 1, 'app.log watched');
  // born after the source started, but outside its pattern: the source never had to read it
  writeFileSync(join(logs, 'worker.log'), 'worker-000001\nworker-000002\n');
  appendFileSync(join(logs, 'app.log'), 'app-000001\n');
  await waitFor(() => countsOf(node.out, 'app').size === 1, 'app.log read');
  writeFileSync(cfgFile, cfg('*.log'));
  node.signal('SIGHUP');
  await waitFor(() => reloaded(node) === 1, 'reloaded');
  await waitFor(() => latestStatus(node, 'files')?.['sources.tail.active_watchers'] === 2, 'both files watched by the new generation');
  appendFileSync(join(logs, 'worker.log'), 'worker-000003\n');
  appendFileSync(join(logs, 'app.log'), 'app-000002\n');
  await waitFor(() => countsOf(node.out, 'worker').size >= 1 && countsOf(node.out, 'app').size === 2, 'lines written after the reload');
  t.deepEqual([...countsOf(node.out, 'worker').keys()], [3], 'worker.log from its end: only what was written after the reload');
  assertExactlyOnce(t, node.out, 'app', 2);
  t.is(await node.stop(), 0);
});

test.serial('a reload that narrows a file source\'s pattern stops reading the files it leaves out', async (t) => {
  const { dir, logs } = withLogsDir(t);
  const cfg = (pattern: string) => patternConfig(logs, pattern);
  const cfgFile = dir.file('node.toml', cfg('*.log'));
  writeFileSync(join(logs, 'app.log'), '');
  writeFileSync(join(logs, 'worker.log'), '');
  const node = spawnOwnedNode(t, ['-c', cfgFile, '--logging.level=debug']);
  await waitFor(() => latestStatus(node, 'files')?.['sources.tail.active_watchers'] === 2, 'both files watched');
  appendFileSync(join(logs, 'worker.log'), 'worker-000001\n');
  await waitFor(() => countsOf(node.out, 'worker').size === 1, 'worker.log read');
  writeFileSync(cfgFile, cfg('app.log'));
  node.signal('SIGHUP');
  await waitFor(() => reloaded(node) === 1, 'reloaded');
  const after = node.records.findIndex((r) => r.msg === 'Configuration reloaded');
  // the new generation's first stats: its first scan is done (a resumed worker.log would be open)
  const first = await waitFor(
    () => statusReports(node, 'files', after).find((r) => typeof r['sources.tail.active_watchers'] === 'number'),
    'a status report of the new generation',
  );
  t.is(first['sources.tail.active_watchers'], 1, 'the new generation opened app.log alone');
  appendFileSync(join(logs, 'worker.log'), 'worker-000002\n');
  appendFileSync(join(logs, 'app.log'), 'app-000001\n');
  await waitFor(() => countsOf(node.out, 'app').size === 1, 'app.log read');
  appendFileSync(join(logs, 'app.log'), 'app-000002\n');
  await waitFor(() => countsOf(node.out, 'app').size === 2, 'a later cycle');
  t.deepEqual([...countsOf(node.out, 'worker').keys()], [1], 'nothing of worker.log after the reload');
  t.is(await node.stop(), 0);
});

test.serial('a new-generation worker that dies after its build, while the old one drains, counts as a crash and is restarted', async (t) => {
  const dir = ownedTempDir(t);
  const deadPort = await freePort();
  // the chain sink to a dead port holds entries, so the old generation drains for the whole timeout
  const cfgFile = dir.file(
    'node.toml',
    `shutdown_timeout_ms = 4000
status_interval_ms = 300
${randomPipeline('p', 3)}[[pipelines.plugin_sinks]]
id = "link"
type = "tcp_chain"
config = { host = "127.0.0.1", port = ${deadPort} }
`,
  );
  const node = spawnOwnedNode(t, ['-c', cfgFile, '--logging.level=debug']);
  await waitFor(() => node.records.some((r) => r.msg === 'Starting pipeline'), 'started');
  const [oldPid] = await childPids(node.child.pid!);
  node.signal('SIGHUP');
  // both generations logged their two sinks: the new worker has built (its records precede `built`)
  await waitFor(() => node.records.filter((r) => r.msg === 'Created sink instance').length === 4, 'new generation built');
  await sleep(300);
  const fresh = (await childPids(node.child.pid!)).find((p) => p !== oldPid);
  t.truthy(fresh, 'a new worker beside the draining one');
  t.true(isAlive(oldPid!), 'the old generation is still draining');
  process.kill(fresh!, 'SIGKILL');
  const crash = await waitFor(() => node.records.find((r) => r.msg === 'Pipeline process exited unexpectedly'), 'crash logged', 30_000);
  t.is(crash.pipeline, 'p');
  t.is(crash.signal, 'SIGKILL');
  const after = node.out.length;
  await waitFor(() => node.out.length > after + 5, 'the restarted pipeline delivers', 30_000);
  await waitFor(() => node.records.some((r) => r.msg === 'status report' && r.pipeline === 'p' && r.restarts === 1), 'restarts counted');
  t.is(await node.stop(), 1, 'the chain sink still holds entries at shutdown');
});

test.serial('a worker that crashes in a loop is restarted with growing delays', async (t) => {
  const dir = ownedTempDir(t);
  const node = spawnOwnedNode(t, ['-c', dir.file('node.toml', randomPipeline('loop', 3))]);
  const starts = () => node.records.filter((r) => r.msg === 'Starting pipeline').map((r) => Date.parse(String(r.time)));
  const killed = new Set<number>();
  for (let round = 1; round <= 5; round++) {
    const pid = await waitFor(async () => {
      if (starts().length < round) return undefined;
      const p = await childPids(node.child.pid!);
      return p.find((x) => !killed.has(x));
    }, `worker of round ${round}`);
    killed.add(pid);
    process.kill(pid, 'SIGKILL');
  }
  await waitFor(() => starts().length >= 6, 'sixth start', 30_000);
  const s = starts();
  const gaps = s.slice(1).map((x, i) => x - s[i]!);
  t.log('gaps between starts (ms):', gaps.join(', '));
  // The restart delays double from 250 ms: each gap is its delay plus the run before the kill and
  // the build after it, so never shorter than the delay; and what the build and the kill add
  // varies, but not by seconds, so the later gaps exceed the first by at least half of what the
  // schedule adds.
  const schedule = [250, 500, 1000, 2000, 4000];
  t.is(gaps.length, schedule.length);
  schedule.forEach((delay, i) => t.true(gaps[i]! >= delay, `gap ${i + 1} of ${gaps[i]} ms is at least the ${delay} ms delay: ${gaps.join(', ')}`));
  for (const i of [3, 4]) {
    t.true(gaps[i]! - gaps[0]! >= (schedule[i]! - schedule[0]!) / 2, `gap ${i + 1} exceeds the first by at least ${(schedule[i]! - schedule[0]!) / 2} ms: ${gaps.join(', ')}`);
  }
  t.is(node.records.filter((r) => r.msg === 'Pipeline process exited unexpectedly').length, 5);
  t.is(await node.stop(), 0);
});

test.serial('shutdown cut short by a stalled stdout exits 1 and logs the abandoned count; a second SIGTERM exits at once', async (t) => {
  const dir = ownedTempDir(t);
  const cfg = (timeout: number) =>
    dir.file(
      `stall-${timeout}.toml`,
      `shutdown_timeout_ms = ${timeout}
[[pipelines]]
name = "stall"
[[pipelines.plugin_sources]]
type = "random"
config = { interval_ms = 5, entries_per_tick = 200, length = 20 }
[[pipelines.plugin_sinks]]
type = "stdout"
`,
    );
  const node = spawnOwnedNode(t, ['-c', cfg(1000)]);
  t.teardown(() => node.child.stdout!.resume());
  await waitFor(() => node.out.length > 0, 'output');
  node.child.stdout!.pause(); // nobody reads: the pipe fills, the sink stalls
  await sleep(1500);
  const t0 = Date.now();
  node.signal('SIGTERM');
  const rec = await waitFor(() => node.records.find((r) => r.msg === 'Drain deadline passed, entries abandoned'), 'abandoned logged');
  t.is(rec.level, 'error');
  t.is(rec.pipeline, 'stall');
  t.true(Number(rec.abandoned) > 0);
  node.child.stdout!.resume();
  t.is((await node.finish('the cut drain ends', 15_000)).code, 1);
  t.true(Date.now() - t0 < 5000, 'the deadline bounded the drain');

  const second = spawnOwnedNode(t, ['-c', cfg(60_000)]);
  const workers = await waitFor(async () => {
    const p = await childPids(second.child.pid!);
    return p.length === 1 ? p : undefined;
  }, 'the worker');
  // a worker left behind would block on the full pipe: the reader resumes and the worker goes
  t.teardown(() => {
    second.child.stdout!.resume();
    for (const p of workers) if (isAlive(p)) process.kill(p, 'SIGKILL');
  });
  await waitFor(() => second.out.length > 0, 'output');
  second.child.stdout!.pause();
  await sleep(1500);
  const t1 = Date.now();
  second.signal('SIGTERM');
  await waitFor(() => second.records.some((r) => r.msg === 'Shutting down'), 'first signal taken');
  second.signal('SIGTERM');
  const { code } = await exitedWithin(second, 'exit after the second signal', 15_000);
  t.true(Date.now() - t1 < 5000, 'exited at once, not after the 60 s deadline');
  t.not(code, 0);
  // still not reading: the workers end by the primary's kill, not by a drain
  await waitFor(() => workers.every((p) => !isAlive(p)), 'no worker outlives the primary', 5000);
});

test.serial('check builds every plugin without binding: ok with the count, or every error with exit 78', async (t) => {
  const dir = ownedTempDir(t);
  // A port in use by the test itself: check must not try to bind it.
  const { createServer } = await import('node:net');
  const busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  t.teardown(() => busy.close());
  const port = (busy.address() as { port: number }).port;
  const ok = dir.file('ok.toml', `${randomPipeline('a', 3)}${tcpPipeline('b', port)}`);
  const good = spawnOwnedNode(t, ['check', '-c', ok]);
  t.is((await good.finish()).code, 0);
  t.deepEqual(good.out, ['configuration ok: 2 pipelines']);

  const bad = dir.file(
    'bad.toml',
    `[[pipelines]]
name = "a"
[[pipelines.flow.filters]]
patterns = ["ok", "(unclosed"]
[[pipelines.plugin_sources]]
type = "random"
config = { interval_ms = 0 }
[[pipelines.plugin_sinks]]
id = "out"
type = "stdout"
config = { target = "nowhere" }
[[pipelines]]
name = "b"
[[pipelines.plugin_sources]]
type = "random"
[[pipelines.plugin_sinks]]
id = "net"
type = "tcp"
config = { port = 70000 }
`,
  );
  const failing = spawnOwnedNode(t, ['check', '-c', bad]);
  t.is((await failing.finish()).code, 78);
  const text = failing.errText.join('\n');
  t.regex(text, /pipeline=a: filters\[0\]\.patterns\[1\]: invalid regular expression/);
  t.regex(text, /pipeline=a: failed to create sink out: target: must be one of/);
  t.regex(text, /pipeline=a: failed to create source random: interval_ms: must be >= 1, got 0/);
  t.regex(text, /pipeline=b: failed to create sink net: port: must be 1 to 65535, got 70000/);
});

test.serial('auto_reload: an edit reloads, an unchanged effective configuration does nothing', async (t) => {
  const dir = ownedTempDir(t);
  const text = `auto_reload = true\n${randomPipeline('a', 3)}`;
  const cfgFile = dir.file('node.toml', text);
  const node = spawnOwnedNode(t, ['-c', cfgFile]);
  await waitFor(() => node.out.length > 0, 'output');
  writeFileSync(cfgFile, `${text}\n# a comment changes nothing\n`);
  await sleep(1500); // the watcher's debounce is 300 ms
  t.is(reloaded(node), 0, 'no reload for an unchanged effective configuration');
  writeFileSync(cfgFile, `auto_reload = true\n${randomPipeline('a', 6)}`);
  await waitFor(() => reloaded(node) === 1, 'reload after the edit');
  await waitFor(() => node.out.some((l) => l.split(' ').length === 6), 'the new configuration runs');
  t.is(await node.stop(), 0);
});
