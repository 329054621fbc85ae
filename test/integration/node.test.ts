// The node as a process: workers per pipeline, signals, exit codes, overrides, status report,
// service log rotation (issue 2).

import { existsSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { childPids, isAlive, type LogRecord, ownedTempDir, sleep, spawnOwnedNode, waitFor } from '../helpers/node.js';

const randomPipeline = (name: string, words: number, extra = '') => `
[[pipelines]]
name = "${name}"
${extra}
[[pipelines.plugin_sources]]
type = "random"
config = { interval_ms = 20, length = ${words} }
[[pipelines.plugin_sinks]]
id = "out"
type = "stdout"
`;

const words = (line: string) => line.split(' ').length;

test.serial('three pipelines run as three workers; SIGTERM exits 0 and leaves no worker', async (t) => {
  const dir = ownedTempDir(t);
  const file = dir.file('three.toml', randomPipeline('a', 3) + randomPipeline('b', 5) + randomPipeline('c', 7));
  const node = spawnOwnedNode(t, ['-c', file]);
  await waitFor(() => [3, 5, 7].every((n) => node.out.some((l) => words(l) === n)), 'entries of all three pipelines');
  const pids = await waitFor(async () => {
    const p = await childPids(node.child.pid!);
    return p.length === 3 ? p : undefined;
  }, 'three worker processes');
  t.is(pids.length, 3);
  t.is(await node.stop(), 0);
  t.deepEqual(
    pids.filter((p) => isAlive(p)),
    [],
    'no worker outlives the primary',
  );
});

test.serial('SIGKILL of the primary makes every worker exit within a second', async (t) => {
  const dir = ownedTempDir(t);
  const node = spawnOwnedNode(t, ['-c', dir.file('two.toml', randomPipeline('a', 3) + randomPipeline('b', 5))]);
  const pids = await waitFor(async () => {
    const p = await childPids(node.child.pid!);
    return p.length === 2 ? p : undefined;
  }, 'two workers');
  t.teardown(() => {
    for (const p of pids) if (isAlive(p)) process.kill(p, 'SIGKILL');
  });
  await waitFor(() => node.out.length > 0, 'entries flowing');
  node.signal('SIGKILL');
  await node.exited;
  // The primary is dead by now. The bound is measured by what was seen, not by when the polling
  // loop got to run: the last time a worker was seen alive, however late a poll comes.
  const deadAt = Date.now();
  let lastSeenAlive = deadAt;
  await waitFor(
    () => {
      const now = Date.now();
      if (pids.every((p) => !isAlive(p))) return true;
      lastSeenAlive = now;
      return false;
    },
    'workers gone after the primary died',
    10_000,
  );
  t.true(lastSeenAlive - deadAt <= 1000, `a worker was still alive ${lastSeenAlive - deadAt} ms after the primary died`);
});

test.serial('a sink with an invalid key exits 78 and logs Failed to create pipeline', async (t) => {
  const dir = ownedTempDir(t);
  const file = dir.file(
    'bad.toml',
    `[[pipelines]]
name = "app"
[[pipelines.plugin_sources]]
type = "random"
[[pipelines.plugin_sinks]]
id = "out"
type = "stdout"
config = { target = "nowhere" }
`,
  );
  const node = spawnOwnedNode(t, ['-c', file]);
  const { code } = await node.finish();
  t.is(code, 78);
  const rec = node.records.find((r) => r.msg === 'Failed to create pipeline');
  t.truthy(rec, 'Failed to create pipeline logged');
  t.is(rec?.pipeline, 'app');
  t.is(rec?.error, 'failed to create sink out: target: must be one of "stdout", "stderr", got "nowhere"');
});

const debugRecords = (records: LogRecord[]) => records.filter((r) => r.level === 'debug');

test.serial('LOGGING_LEVEL=debug and --logging.level=debug take effect; LOGRELAY_LOGGING_LEVEL does not', async (t) => {
  const dir = ownedTempDir(t);
  const file = dir.file('d.toml', `status_interval_ms = 200\n${randomPipeline('a', 3)}`);
  for (const [args, env] of [
    [['-c', file], { LOGGING_LEVEL: 'debug' }],
    [['-c', file, '--logging.level=debug'], {}],
    [['-c', file, '--logging.level', 'debug'], {}],
  ] as const) {
    const node = spawnOwnedNode(t, args, { env });
    await waitFor(() => debugRecords(node.records).length > 0, `debug records with ${args.join(' ')} ${JSON.stringify(env)}`);
    t.is(await node.stop(), 0);
  }
  const quiet = spawnOwnedNode(t, ['-c', file], { env: { LOGRELAY_LOGGING_LEVEL: 'debug' } });
  await waitFor(() => quiet.records.some((r) => r.msg === 'Starting pipeline'), 'started');
  await sleep(1000); // five status intervals: a debug level would have logged by now
  t.is(await quiet.stop(), 0);
  t.deepEqual(debugRecords(quiet.records), []);
});

test.serial('quiet is re-applied on reload: the service log (and the workers\' lines) stop, then come back', async (t) => {
  const dir = ownedTempDir(t);
  const file = dir.file('rq.toml', `status_interval_ms = 100\nquiet = false\n${randomPipeline('a', 3)}`);
  const node = spawnOwnedNode(t, ['-c', file, '--logging.level=debug']);
  await waitFor(() => node.records.some((r) => r.msg === 'status report'), 'status reports while not quiet');
  const [oldPid] = await waitFor(async () => {
    const p = await childPids(node.child.pid!);
    return p.length === 1 ? p : undefined;
  }, 'the first generation\'s worker');
  // the quiet generation's entries have four words, so its output tells it from the old one's
  writeFileSync(file, `status_interval_ms = 100\nquiet = true\n${randomPipeline('a', 4)}`);
  node.signal('SIGHUP');
  // the new generation is started after quiet took effect: its worker's records never come; the
  // old worker is gone (its last lines, sent before it exited, are in) and the new one delivers
  await waitFor(async () => {
    const p = await childPids(node.child.pid!);
    return p.length === 1 && p[0] !== oldPid && !isAlive(oldPid!) && node.out.some((l) => words(l) === 4);
  }, 'the old worker gone, the new one delivering');
  const mutedAt = node.records.length;
  const outAt = node.out.length;
  await sleep(1000); // the window in which nothing may be logged: ten status intervals
  t.deepEqual(node.records.slice(mutedAt), [], 'nothing logged while quiet');
  t.true(node.out.length > outAt, 'entries still flow');
  writeFileSync(file, `status_interval_ms = 100\nquiet = false\n${randomPipeline('a', 3)}`);
  node.signal('SIGHUP');
  await waitFor(() => node.records.slice(mutedAt).some((r) => r.msg === 'status report'), 'status reports again');
  t.true(node.records.slice(mutedAt).some((r) => r.msg === 'Created sink instance'), 'the new worker logs again');
  t.is(await node.stop(), 0);
});

test.serial('QUIET=true silences the service log while entries flow; logging.output = "stdout" moves it to stdout', async (t) => {
  const dir = ownedTempDir(t);
  const file = dir.file('q.toml', randomPipeline('a', 3));
  const quiet = spawnOwnedNode(t, ['-c', file], { env: { QUIET: 'true' } });
  await waitFor(() => quiet.out.length >= 5, 'entries still flow');
  t.is(await quiet.stop(), 0);
  t.deepEqual(quiet.records, []);
  t.deepEqual(quiet.errText, []);

  const toStdout = spawnOwnedNode(t, ['-c', file, '--logging.output=stdout']);
  await waitFor(() => toStdout.out.some((l) => l.includes('"msg":"Starting pipeline"')), 'service log on stdout');
  t.is(await toStdout.stop(), 0);
  t.deepEqual(toStdout.records, []);
});

test.serial('usage and configuration faults: exit 2 or 78 with the key or variable named', async (t) => {
  const dir = ownedTempDir(t);
  const ok = dir.file('ok.toml', randomPipeline('a', 3));
  const arr = spawnOwnedNode(t, ['-c', ok, '--pipelines.0.name=x']);
  t.is((await arr.finish()).code, 2);
  t.regex(arr.errText.join('\n'), /pipelines\.0\.name.*cannot be set/);

  const unknown = spawnOwnedNode(t, ['-c', dir.file('u.toml', `[logging]\nflavour = "x"\n${randomPipeline('a', 3)}`)]);
  t.is((await unknown.finish()).code, 78);
  t.regex(unknown.errText.join('\n'), /logging\.flavour: unknown key/);

  const missing = spawnOwnedNode(t, ['-c', dir.file('m.toml', `status_interval_ms = \${RELAY_INTERVAL}\n${randomPipeline('a', 3)}`)], {
    env: { RELAY_INTERVAL: undefined },
  });
  t.is((await missing.finish()).code, 78);
  t.regex(missing.errText.join('\n'), /RELAY_INTERVAL/);

  const badCommand = spawnOwnedNode(t, ['frobnicate']);
  t.is((await badCommand.finish()).code, 2);
});

test.serial('${VAR:-default} works for strings and numbers', async (t) => {
  const dir = ownedTempDir(t);
  const file = dir.file(
    'v.toml',
    `[[pipelines]]
name = "\${PIPE_NAME:-from-default}"
[[pipelines.plugin_sources]]
type = "random"
config = { interval_ms = \${PIPE_INTERVAL:-20}, length = \${PIPE_WORDS:-4} }
[[pipelines.plugin_sinks]]
type = "stdout"
`,
  );
  const node = spawnOwnedNode(t, ['-c', file], { env: { PIPE_WORDS: '6' } });
  await waitFor(() => node.out.length >= 3, 'entries');
  t.true(node.out.every((l) => words(l) === 6));
  t.truthy(node.records.find((r) => r.msg === 'Starting pipeline' && r.pipeline === 'from-default'));
  t.is(await node.stop(), 0, JSON.stringify(node.records.filter((r) => r.level !== 'info')));
});

test.serial('status reports carry every pipeline counter and the counters advance', async (t) => {
  const dir = ownedTempDir(t);
  const file = dir.file('s.toml', `status_interval_ms = 1000\n${randomPipeline('a', 3)}${randomPipeline('b', 4)}`);
  const node = spawnOwnedNode(t, ['-c', file, '--logging.level=debug']);
  // Reports before a worker's first stats message (sent every second) carry only `restarts`.
  const reports = (name: string) =>
    node.records.filter((r) => r.msg === 'status report' && r.pipeline === name && typeof r['flow.total_processed'] === 'number');
  await waitFor(() => reports('a').length >= 3 && reports('b').length >= 3, 'three reports per pipeline', 30_000);
  const summary = node.records.find((r) => r.msg === 'status report' && r.pipeline === undefined);
  t.is(summary?.pipelines, 2);
  t.is(typeof summary?.generation, 'number');
  t.is(typeof summary?.uptime, 'number', 'uptime, in whole seconds');
  for (const name of ['a', 'b']) {
    const rs = reports(name);
    const last = rs.at(-1)!;
    for (const key of ['flow.total_processed', 'flow.total_passed', 'flow.total_dropped', 'sources.random.total_entries', 'sources.random.dropped_entries', 'sinks.out.total_processed', 'total_dropped_by_sink', 'restarts']) {
      t.is(typeof last[key], 'number', `${name}: ${key}`);
    }
    t.true((last['sources.random.total_entries'] as number) > (rs[0]!['sources.random.total_entries'] as number), `${name} counters advance`);
  }
  t.is(await node.stop(), 0, JSON.stringify(node.records.filter((r) => r.level !== 'info')));
});

test.serial('service log to files rotates with pino-roll and stays within max_total_size_mb', async (t) => {
  const dir = ownedTempDir(t);
  const logDir = join(dir.path, 'svc log');
  const file = dir.file(
    'r.toml',
    `status_interval_ms = 100
[logging]
output = "file"
level = "debug"
[logging.file]
directory = "${logDir}"
name = "svc"
max_size_mb = 0.02
max_total_size_mb = 0.1
[[pipelines]]
name = "chatty"
[[pipelines.flow.filters]]
type = "exclude"
patterns = ["never-matches-anything"]
[[pipelines.plugin_sources]]
type = "random"
config = { interval_ms = 10, entries_per_tick = 4, length = 3 }
[[pipelines.plugin_sinks]]
type = "null"
`,
  );
  const node = spawnOwnedNode(t, ['-c', file]);
  const maxTotal = 0.1 * 1024 * 1024;
  const maxFile = 0.02 * 1024 * 1024;
  /** One look at the directory: each numbered file's size, read between `start` and `end`. */
  interface Look {
    readonly start: number;
    readonly end: number;
    readonly sizes: ReadonlyMap<number, number>;
    readonly total: number;
    /** bytes written to the directory so far, as far as the looks up to this one tell */
    readonly written: number;
  }
  const lastSize = new Map<number, number>();
  const look = (): Look => {
    const start = Date.now();
    const sizes = new Map<number, number>();
    for (const f of existsSync(logDir) ? readdirSync(logDir) : []) {
      const m = /^svc\.(\d+)\.log$/.exec(f);
      if (!m) continue;
      try {
        sizes.set(Number(m[1]), statSync(join(logDir, f)).size);
      } catch {
        // pruned since the readdir
      }
    }
    const end = Date.now();
    for (const [n, size] of sizes) lastSize.set(n, size);
    // every file up to the newest at its last seen size; one pruned unseen counts as max_size_mb,
    // the size at which pino-roll moved on from it (a lower bound)
    let written = 0;
    for (let n = Math.min(...lastSize.keys()); n <= Math.max(...lastSize.keys()); n++) written += lastSize.get(n) ?? maxFile;
    return { start, end, sizes, total: [...sizes.values()].reduce((a, b) => a + b, 0), written };
  };
  const looks: Look[] = [];
  await waitFor(
    () => {
      looks.push(look());
      return Math.max(0, ...looks.at(-1)!.sizes.keys()) >= 10;
    },
    'ten rotations',
    40_000,
  );
  const last = looks.at(-1)!;
  t.true(last.sizes.size < 10, `oldest files pruned: ${[...last.sizes.keys()].join(' ')}`);
  // Pruning runs every 500 ms (docs/operations.md): the total may pass max_total_size_mb by what was written
  // since the last prune, so by no more than what the half second before a look wrote (measured:
  // the writes from the last look that ended 500 ms before this one started).
  const PRUNE_INTERVAL_MS = 500;
  const over: string[] = [];
  let worst = 0;
  for (const l of looks) {
    const before = looks.findLast((b) => b.end <= l.start - PRUNE_INTERVAL_MS);
    if (l.total <= maxTotal || !before) continue;
    const allowed = l.written - before.written;
    worst = Math.max(worst, (l.total - maxTotal) / allowed);
    if (l.total - maxTotal > allowed) over.push(`${l.total} bytes at +${l.end - looks[0]!.end} ms, ${l.total - maxTotal} over but ${allowed} written in the ${l.start - before.end} ms before`);
  }
  const rate = (last.written - looks[0]!.written) / ((last.end - looks[0]!.end) / 1000);
  t.log(`${looks.length} looks; ${Math.round(rate)} bytes/s; largest total ${Math.max(...looks.map((l) => l.total))}; worst excess / allowed ${worst.toFixed(2)}`);
  t.deepEqual(over.slice(0, 3), [], `the directory passed ${maxTotal} bytes by more than half a second of writes ${over.length} times`);
  t.is(await node.stop(), 0);
  t.deepEqual(node.errText, []);
});

test.serial('rotated service log files older than retention_hours are removed', async (t) => {
  const dir = ownedTempDir(t);
  const old = join(dir.path, 'svc.1.log');
  writeFileSync(old, '{"msg":"old"}\n');
  const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
  utimesSync(old, twoHoursAgo, twoHoursAgo);
  const fresh = join(dir.path, 'svc.2.log');
  writeFileSync(fresh, '{"msg":"fresh"}\n');
  const file = dir.file(
    'ret.toml',
    `[logging]\noutput = "file"\n[logging.file]\ndirectory = "${dir.path}"\nname = "svc"\nretention_hours = 1.0\n${randomPipeline('a', 3)}`,
  );
  const node = spawnOwnedNode(t, ['-c', file]);
  await waitFor(() => !readdirSync(dir.path).includes('svc.1.log'), 'the old rotated file is deleted');
  t.true(readdirSync(dir.path).includes('svc.2.log'), 'a rotated file within retention is kept');
  t.is(await node.stop(), 0, JSON.stringify(node.records.filter((r) => r.level !== 'info')));
});

test.serial('service log on stdout shares the pipe with stdout sinks without tearing a line, even when the reader stalls', async (t) => {
  const dir = ownedTempDir(t);
  // Every entry passes a filter, so at debug level each adds a forwarded service log line. The
  // drain at stop writes what the stalls queued (up to buffer_size entries, each with its debug
  // line) through the pipe this test reads: on a loaded 2-core machine that took over the default
  // 5 s once (exit 1, entries abandoned), so the deadline here is generous; tearing is the point.
  const file = dir.file(
    'shared.toml',
    `shutdown_timeout_ms = 30000
[[pipelines]]
name = "noisy"
[[pipelines.flow.filters]]
type = "exclude"
patterns = ["NEVER-MATCHES"]
[[pipelines.plugin_sources]]
type = "random"
config = { interval_ms = 1, entries_per_tick = 20, length = 30 }
[[pipelines.plugin_sinks]]
id = "out"
type = "stdout"
config = { buffer_size = 100000, on_full = "block" }
`,
  );
  const node = spawnOwnedNode(t, ['-c', file, '--logging.output=stdout', '--logging.level=debug']);
  await waitFor(() => node.out.some((l) => l.startsWith('{') && l.includes('Starting pipeline')), 'started');
  // A stalled reader fills the pipe, so big writes would be split and interleaved.
  for (let i = 0; i < 3; i++) {
    node.child.stdout!.pause();
    await sleep(700);
    node.child.stdout!.resume();
    await sleep(300);
  }
  // what the node said when it stopped, for a failure's message: one CI run saw exit 1 here once,
  // which 75 runs here (alone, beside other test files, beside busy loops) never did
  const stopAt = Date.now();
  const code = await node.stop(40_000);
  t.log(`stopped in ${Date.now() - stopAt} ms, ${node.out.length} lines on stdout`);
  t.is(code, 0, `exit ${code} after ${Date.now() - stopAt} ms; warnings and errors: ${JSON.stringify(node.out.filter((l) => /"level":"(warn|error|fatal)"/.test(l)).slice(-5))}; stderr: ${node.errText.join('').slice(-1000)}`);
  const records = node.out.filter((l) => l.startsWith('{'));
  const entries = node.out.filter((l) => !l.startsWith('{'));
  t.true(records.length > 1000 && entries.length > 1000, `${records.length} service log lines and ${entries.length} entries`);
  const torn = [...records.filter((l) => {
    try {
      JSON.parse(l);
      return false;
    } catch {
      return true;
    }
  }), ...entries.filter((l) => l.includes('{"'))];
  t.deepEqual(torn.slice(0, 3), [], `${torn.length} torn lines`);
});
