// The node as a process: workers per pipeline, signals, exit codes, overrides, status report,
// service log rotation (issue 2).

import { existsSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { childPids, isAlive, type LogRecord, sleep, spawnNode, tempDir, waitFor } from '../helpers/node.js';

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
  const dir = tempDir();
  t.teardown(() => dir.remove());
  const file = dir.file('three.toml', randomPipeline('a', 3) + randomPipeline('b', 5) + randomPipeline('c', 7));
  const node = spawnNode(['-c', file]);
  t.teardown(() => node.signal('SIGKILL'));
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
  const dir = tempDir();
  t.teardown(() => dir.remove());
  const node = spawnNode(['-c', dir.file('two.toml', randomPipeline('a', 3) + randomPipeline('b', 5))]);
  const pids = await waitFor(async () => {
    const p = await childPids(node.child.pid!);
    return p.length === 2 ? p : undefined;
  }, 'two workers');
  await waitFor(() => node.out.length > 0, 'entries flowing');
  node.signal('SIGKILL');
  await node.exited;
  const killedAt = Date.now();
  await waitFor(() => pids.every((p) => !isAlive(p)), 'workers gone after the primary died', 1000);
  t.true(Date.now() - killedAt <= 1000);
});

test.serial('a sink with an invalid key exits 78 and logs Failed to create pipeline', async (t) => {
  const dir = tempDir();
  t.teardown(() => dir.remove());
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
  const node = spawnNode(['-c', file]);
  const { code } = await node.exited;
  t.is(code, 78);
  const rec = node.records.find((r) => r.msg === 'Failed to create pipeline');
  t.truthy(rec, 'Failed to create pipeline logged');
  t.is(rec?.pipeline, 'app');
  t.is(rec?.error, 'failed to create sink out: target: must be one of "stdout", "stderr", got "nowhere"');
});

const debugRecords = (records: LogRecord[]) => records.filter((r) => r.level === 'debug');

test.serial('LOGGING_LEVEL=debug and --logging.level=debug take effect; LOGRELAY_LOGGING_LEVEL does not', async (t) => {
  const dir = tempDir();
  t.teardown(() => dir.remove());
  const file = dir.file('d.toml', `status_interval_ms = 200\n${randomPipeline('a', 3)}`);
  for (const [args, env] of [
    [['-c', file], { LOGGING_LEVEL: 'debug' }],
    [['-c', file, '--logging.level=debug'], {}],
    [['-c', file, '--logging.level', 'debug'], {}],
  ] as const) {
    const node = spawnNode(args, { env });
    await waitFor(() => debugRecords(node.records).length > 0, `debug records with ${args.join(' ')} ${JSON.stringify(env)}`);
    t.is(await node.stop(), 0);
  }
  const quiet = spawnNode(['-c', file], { env: { LOGRELAY_LOGGING_LEVEL: 'debug' } });
  await waitFor(() => quiet.records.some((r) => r.msg === 'Starting pipeline'), 'started');
  await sleep(1000); // five status intervals: a debug level would have logged by now
  t.is(await quiet.stop(), 0);
  t.deepEqual(debugRecords(quiet.records), []);
});

test.serial('quiet is re-applied on reload: the service log (and the workers\' lines) stop, then come back', async (t) => {
  const dir = tempDir();
  t.teardown(() => dir.remove());
  const file = dir.file('rq.toml', `status_interval_ms = 100\nquiet = false\n${randomPipeline('a', 3)}`);
  const node = spawnNode(['-c', file, '--logging.level=debug']);
  t.teardown(() => node.signal('SIGKILL'));
  await waitFor(() => node.records.some((r) => r.msg === 'status report'), 'status reports while not quiet');
  writeFileSync(file, `status_interval_ms = 100\nquiet = true\n${randomPipeline('a', 3)}`);
  node.signal('SIGHUP');
  // the new generation is started after quiet took effect: its worker's records never come
  await waitFor(async () => (await childPids(node.child.pid!)).length === 1 && node.out.length > 0, 'one worker after the reload');
  await sleep(1500); // the old generation's last lines may still come
  const mutedAt = node.records.length;
  const outAt = node.out.length;
  await sleep(1000); // ten status intervals
  t.is(node.records.length, mutedAt, 'nothing logged while quiet');
  t.true(node.out.length > outAt, 'entries still flow');
  writeFileSync(file, `status_interval_ms = 100\nquiet = false\n${randomPipeline('a', 3)}`);
  node.signal('SIGHUP');
  await waitFor(() => node.records.slice(mutedAt).some((r) => r.msg === 'status report'), 'status reports again');
  t.true(node.records.slice(mutedAt).some((r) => r.msg === 'Created sink instance'), 'the new worker logs again');
  t.is(await node.stop(), 0);
});

test.serial('QUIET=true silences the service log while entries flow; logging.output = "stdout" moves it to stdout', async (t) => {
  const dir = tempDir();
  t.teardown(() => dir.remove());
  const file = dir.file('q.toml', randomPipeline('a', 3));
  const quiet = spawnNode(['-c', file], { env: { QUIET: 'true' } });
  await waitFor(() => quiet.out.length >= 5, 'entries still flow');
  t.is(await quiet.stop(), 0);
  t.deepEqual(quiet.records, []);
  t.deepEqual(quiet.errText, []);

  const toStdout = spawnNode(['-c', file, '--logging.output=stdout']);
  await waitFor(() => toStdout.out.some((l) => l.includes('"msg":"Starting pipeline"')), 'service log on stdout');
  t.is(await toStdout.stop(), 0);
  t.deepEqual(toStdout.records, []);
});

test.serial('usage and configuration faults: exit 2 or 78 with the key or variable named', async (t) => {
  const dir = tempDir();
  t.teardown(() => dir.remove());
  const ok = dir.file('ok.toml', randomPipeline('a', 3));
  const arr = spawnNode(['-c', ok, '--pipelines.0.name=x']);
  t.is((await arr.exited).code, 2);
  t.regex(arr.errText.join('\n'), /pipelines\.0\.name.*cannot be set/);

  const unknown = spawnNode(['-c', dir.file('u.toml', `[logging]\nflavour = "x"\n${randomPipeline('a', 3)}`)]);
  t.is((await unknown.exited).code, 78);
  t.regex(unknown.errText.join('\n'), /logging\.flavour: unknown key/);

  const missing = spawnNode(['-c', dir.file('m.toml', `status_interval_ms = \${RELAY_INTERVAL}\n${randomPipeline('a', 3)}`)], {
    env: { RELAY_INTERVAL: undefined },
  });
  t.is((await missing.exited).code, 78);
  t.regex(missing.errText.join('\n'), /RELAY_INTERVAL/);

  const badCommand = spawnNode(['frobnicate']);
  t.is((await badCommand.exited).code, 2);
});

test.serial('${VAR:-default} works for strings and numbers', async (t) => {
  const dir = tempDir();
  t.teardown(() => dir.remove());
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
  const node = spawnNode(['-c', file], { env: { PIPE_WORDS: '6' } });
  await waitFor(() => node.out.length >= 3, 'entries');
  t.true(node.out.every((l) => words(l) === 6));
  t.truthy(node.records.find((r) => r.msg === 'Starting pipeline' && r.pipeline === 'from-default'));
  t.is(await node.stop(), 0, JSON.stringify(node.records.filter((r) => r.level !== 'info')));
});

test.serial('status reports carry every pipeline counter and the counters advance', async (t) => {
  const dir = tempDir();
  t.teardown(() => dir.remove());
  const file = dir.file('s.toml', `status_interval_ms = 1000\n${randomPipeline('a', 3)}${randomPipeline('b', 4)}`);
  const node = spawnNode(['-c', file, '--logging.level=debug']);
  t.teardown(() => node.signal('SIGKILL'));
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
  const dir = tempDir();
  t.teardown(() => dir.remove());
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
  const node = spawnNode(['-c', file]);
  t.teardown(() => node.signal('SIGKILL'));
  const files = () => (existsSync(logDir) ? readdirSync(logDir) : []).filter((f) => /^svc\.\d+\.log$/.test(f));
  const total = () => files().reduce((sum, f) => sum + statSync(join(logDir, f)).size, 0);
  const maxTotal = 0.1 * 1024 * 1024;
  const maxFile = 0.02 * 1024 * 1024;
  // Rotation happens; pruning (every 500 ms) removes the oldest once the total passes the bound,
  // so between two prunes the total may pass it by what half a second writes (here < 2 files).
  const sizes: number[] = [];
  await waitFor(
    () => {
      sizes.push(total());
      return Math.max(0, ...files().map((f) => Number(f.split('.')[1]))) >= 10;
    },
    'ten rotations',
    40_000,
  );
  t.true(files().length < 10, `oldest files pruned: ${files().join(' ')}`);
  t.true(Math.max(...sizes) <= maxTotal + 3 * maxFile, `directory total ${Math.max(...sizes)} within ${maxTotal} + 3 files`);
  t.is(await node.stop(), 0);
  t.deepEqual(node.errText, []);
});

test.serial('rotated service log files older than retention_hours are removed', async (t) => {
  const dir = tempDir();
  t.teardown(() => dir.remove());
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
  const node = spawnNode(['-c', file]);
  t.teardown(() => node.signal('SIGKILL'));
  await waitFor(() => !readdirSync(dir.path).includes('svc.1.log'), 'the old rotated file is deleted');
  t.true(readdirSync(dir.path).includes('svc.2.log'), 'a rotated file within retention is kept');
  t.is(await node.stop(), 0, JSON.stringify(node.records.filter((r) => r.level !== 'info')));
});

test.serial('service log on stdout shares the pipe with stdout sinks without tearing a line, even when the reader stalls', async (t) => {
  const dir = tempDir();
  t.teardown(() => dir.remove());
  // Every entry passes a filter, so at debug level each adds a forwarded service log line.
  const file = dir.file(
    'shared.toml',
    `[[pipelines]]
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
  const node = spawnNode(['-c', file, '--logging.output=stdout', '--logging.level=debug']);
  t.teardown(() => node.signal('SIGKILL'));
  await waitFor(() => node.out.some((l) => l.startsWith('{') && l.includes('Starting pipeline')), 'started');
  // A stalled reader fills the pipe, so big writes would be split and interleaved.
  for (let i = 0; i < 3; i++) {
    node.child.stdout!.pause();
    await sleep(700);
    node.child.stdout!.resume();
    await sleep(300);
  }
  t.is(await node.stop(), 0);
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
