// Input and failures that must not take a worker down: JSON nested deeper than it can be written
// again, a stdout reader that goes away, a file sink whose directory disappears or cannot be
// written. Each is counted and logged, and the pipeline keeps going.

import { spawnSync } from 'node:child_process';
import { constants, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, Socket } from 'node:net';
import { join } from 'node:path';
import test from 'ava';
import { adminRequest, parseExposition, sampleValue } from '../helpers/admin.js';
import { chainSourceToml } from '../helpers/chain.js';
import { childPids, freePort, ownedTempDir, sleep, spawnNode, startOwnedNode, waitFor, waitReady } from '../helpers/node.js';
import { latestCounter, latestStatus } from '../helpers/status.js';
import { randomSourceToml } from '../helpers/toml.js';

const crashed = (records: readonly { msg: string }[]) => records.some((r) => r.msg === 'Pipeline process exited unexpectedly');

test.serial('a chain entry nested deeper than JSON.stringify can write is a parse error; the link and the worker go on', async (t) => {
  const port = await freePort();
  const node = startOwnedNode(
    t,
    `status_interval_ms = 200
[[pipelines]]
name = "recv"
${chainSourceToml('link', 'tcp_chain', port)}[[pipelines.plugin_sinks]]
id = "out"
type = "stdout"
`,
    ['--logging.level=debug'],
  );
  await waitReady(node, 'receiver');
  const socket = connect({ host: '127.0.0.1', port });
  t.teardown(() => socket.destroy());
  socket.on('error', () => {});
  const acks: string[] = [];
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => acks.push(chunk));
  const line = (message: unknown) => `${JSON.stringify({ source: 'peer', message })}\n`;
  const deep = `{"source":"peer","message":${'['.repeat(20_000)}${']'.repeat(20_000)}}\n`;
  const deepFields = `{"source":"peer","message":"x","fields":{"a":${'{"b":'.repeat(20_000)}1${'}'.repeat(20_000)}}}\n`;
  socket.write(`{"logrelay":1,"node":"edge"}\n${line('before')}${deep}${line('between')}${deepFields}${line('after')}`);
  await waitFor(() => node.out.includes('after'), 'the entry after the deep ones arrives');
  t.deepEqual(node.out, ['before', 'between', 'after']);
  await waitFor(() => latestCounter(node, 'recv', 'sources.link.parse_errors') === 2, 'two parse errors counted');
  await waitFor(() => acks.join('').includes('{"ack":3}'), 'the three valid entries acknowledged on the same connection');
  t.false(crashed(node.records), 'no worker crashed');
});

test.serial('a stdout reader that goes away: the sink counts its drops, the worker and the other sink go on', async (t) => {
  const dir = ownedTempDir(t);
  const node = startOwnedNode(
    t,
    `status_interval_ms = 200
[[pipelines]]
name = "p"
${randomSourceToml('interval_ms = 10\nlength = 3')}[[pipelines.plugin_sinks]]
id = "out"
type = "stdout"
[[pipelines.plugin_sinks]]
id = "keep"
type = "file"
config = { directory = ${JSON.stringify(dir.path)}, name = "keep" }
`,
    ['--logging.level=debug'],
  );
  await waitFor(() => node.out.length > 5, 'output flows');
  node.child.stdout!.destroy(); // the reader goes away: the next writes get EPIPE
  const rec = await waitFor(() => node.records.find((r) => r.msg === 'Sink output closed, entries dropped'), 'the sink reports its output closed');
  t.is(rec.level, 'error');
  t.is(rec.plugin, 'out');
  t.is(rec.error, 'EPIPE');
  const first = await waitFor(() => {
    const n = latestCounter(node, 'p', 'sinks.out.dropped_writes');
    return n !== undefined && n > 0 ? n : undefined;
  }, 'drops counted');
  await waitFor(() => (latestCounter(node, 'p', 'sinks.out.dropped_writes') ?? 0) > first + 20, 'drops keep being counted');
  const kept = readFileSync(join(dir.path, 'keep.1.log'), 'utf8').split('\n').length;
  await waitFor(() => readFileSync(join(dir.path, 'keep.1.log'), 'utf8').split('\n').length > kept + 20, 'the file sink keeps writing');
  t.is(latestStatus(node, 'p')?.restarts, 0);
  t.false(crashed(node.records), 'no worker crashed');
});

test.serial('a file sink whose directory is removed or unwritable counts its drops, logs once, and writes again when it can', async (t) => {
  const dir = ownedTempDir(t);
  const out = join(dir.path, 'out');
  const adminPort = await freePort();
  const node = startOwnedNode(
    t,
    `status_interval_ms = 200
[admin]
port = ${adminPort}
[[pipelines]]
name = "p"
${randomSourceToml('interval_ms = 10\nlength = 3')}[[pipelines.plugin_sinks]]
id = "file"
type = "file"
config = { directory = ${JSON.stringify(out)}, name = "app" }
`,
    ['--logging.level=debug'],
  );
  const file = join(out, 'app.1.log');
  const lines = () => {
    try {
      return readFileSync(file, 'utf8').split('\n').length - 1;
    } catch {
      return 0;
    }
  };
  await waitFor(() => lines() > 5, 'the sink writes');

  // Removed: the sink notices within a second and creates directory and file again.
  rmSync(out, { recursive: true });
  await waitFor(() => lines() > 5, 'the file is written again after its directory was removed');

  // A file where the directory should be: writes fail, are counted, and logged once.
  rmSync(out, { recursive: true });
  writeFileSync(out, 'not a directory');
  const failed = await waitFor(() => node.records.find((r) => r.msg === 'File sink write failed, entries dropped'), 'the failure is logged');
  t.is(failed.level, 'error');
  t.is(failed.plugin, 'file');
  const dropped = await waitFor(() => {
    const n = latestCounter(node, 'p', 'sinks.file.dropped_writes');
    return n !== undefined && n > 20 ? n : undefined;
  }, 'drops counted');
  t.true(dropped > 20);
  t.is(node.records.filter((r) => r.msg === 'File sink write failed, entries dropped').length, 1, 'one record per outage');
  // the loss reaches the one drops metric an alert watches, with its own reason
  const metric = await waitFor(async () => {
    const v = sampleValue(parseExposition((await adminRequest(adminPort, '/metrics')).body), 'logrelay_dropped_entries_total', { pipeline: 'p', component: 'file', reason: 'write_failed' });
    return v !== undefined && v > 20 ? v : undefined;
  }, 'logrelay_dropped_entries_total{reason="write_failed"} counts the failed writes');
  t.true(metric > 20);
  await waitFor(() => node.records.find((r) => r.msg === 'Entries dropped' && r.reason === 'write_failed' && r.plugin === 'file'), 'WARN Entries dropped names write_failed');
  rmSync(out);
  // the sink's next write may create the directory before this does: either way it is back
  mkdirSync(out, { recursive: true });
  await waitFor(() => node.records.some((r) => r.msg === 'File sink writing again'), 'recovery logged');
  await waitFor(() => lines() > 5, 'entries reach the file again');
  const status = latestStatus(node, 'p');
  t.is(status?.total_dropped_by_sink, 0, 'nothing was dropped for a full queue');
  t.false(crashed(node.records), 'no worker crashed');
});

test.serial('a SIGHUP while the first generation is still building reloads after the start, never beside it', async (t) => {
  const dir = ownedTempDir(t);
  const out = join(dir.path, 'out');
  mkdirSync(out);
  // The file sink's current file is a FIFO: its open, and so the build, waits for a reader.
  const fifo = join(out, 'app.1.log');
  const mk = spawnSync('mkfifo', [fifo]);
  t.is(mk.status, 0, 'mkfifo');
  const head = `[[pipelines]]
name = "p"
${randomSourceToml('interval_ms = 50\nlength = 3')}`;
  const cfgFile = dir.file('node.toml', `${head}[[pipelines.plugin_sinks]]
id = "file"
type = "file"
config = { directory = ${JSON.stringify(out)}, name = "app" }
`);
  const node = spawnNode(['-c', cfgFile]);
  t.teardown(() => node.signal('SIGKILL'));
  await waitFor(() => node.records.some((r) => r.msg === 'Created sink instance'), 'the first generation is building');
  t.false(node.records.some((r) => r.msg === 'Starting pipeline'), 'not started yet');
  // the new configuration builds at once, so it would be ready before the first generation
  writeFileSync(cfgFile, `${head}[[pipelines.plugin_sinks]]\ntype = "null"\n`);
  node.signal('SIGHUP');
  // Time for a primary that does not wait to fork a second generation beside the first; the
  // assertions below wait for events, not for this.
  await sleep(500);
  // A non-blocking read end, read through libuv's poll (a blocking read would hold a pool thread).
  const drain = new Socket({ fd: openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK), readable: true, writable: false });
  drain.on('data', () => {});
  drain.on('error', () => {});
  t.teardown(() => drain.destroy());
  await waitFor(() => node.records.some((r) => r.msg === 'Configuration reloaded'), 'the reload ran after the start');
  const starts = node.records.filter((r) => r.msg === 'Starting pipeline').map((r) => r.generation);
  t.deepEqual(starts, [1, 2], 'generation 1 started, then the reload started generation 2');
  await waitFor(async () => (await childPids(node.child.pid!)).length === 1, 'one worker: the first generation was stopped', 10_000);
  t.is(await node.stop(), 0);
});

test.serial('a primary that falls behind on the service log makes workers drop and count log lines, not queue them', async (t) => {
  // Every entry passes a filter, so at debug level each adds a service log line.
  const node = startOwnedNode(
    t,
    `[[pipelines]]
name = "noisy"
[[pipelines.flow.filters]]
type = "exclude"
patterns = ["NEVER-MATCHES"]
${randomSourceToml('interval_ms = 1\nentries_per_tick = 20\nlength = 5')}[[pipelines.plugin_sinks]]
type = "null"
`,
    ['--logging.level=debug'],
  );
  await waitReady(node, 'node');
  // Nobody reads the primary's stderr: its writes block, and so does its reading of the workers.
  node.child.stderr!.pause();
  await sleep(3000);
  node.child.stderr!.resume();
  const rec = await waitFor(() => node.records.find((r) => r.msg === 'Service log lines dropped, the primary fell behind'), 'the drop reported');
  t.is(rec.level, 'warn');
  t.true(Number(rec.dropped) > 0, `${String(rec.dropped)} lines dropped`);
  t.false(crashed(node.records), 'no worker crashed');
});

test.serial('an http_chain source holds at most four max_body_bytes of bodies at once; past that it answers 503', async (t) => {
  const port = await freePort();
  const node = startOwnedNode(
    t,
    `[[pipelines]]
name = "recv"
${chainSourceToml('link', 'http_chain', port, 'max_body_bytes = 65536\n')}[[pipelines.plugin_sinks]]
type = "null"
`,
    ['--logging.level=debug', '--status_interval_ms=100'],
  );
  await waitReady(node, 'receiver');
  let body = '';
  for (let i = 0; body.length < 60_000; i++) body += `${JSON.stringify({ source: 'peer', message: `entry ${i} ${'x'.repeat(100)}` })}\n`;
  const head = `POST /ingest HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Logrelay-Protocol: 1\r\nX-Logrelay-Node: edge\r\nContent-Type: application/x-ndjson\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
  /** A raw request whose body stops short of its end until finish() is called. */
  const upload = async () => {
    const socket = connect({ host: '127.0.0.1', port });
    t.teardown(() => socket.destroy());
    socket.on('error', () => {});
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (answer += c));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(head + body.slice(0, -100));
    return { finish: () => socket.write(body.slice(-100)), status: () => (answer.startsWith('HTTP/1.1 ') ? Number(answer.slice(9, 12)) : 0) };
  };
  const held = [await upload(), await upload(), await upload(), await upload()];
  // their declared lengths are reserved as soon as the server has read their headers
  await waitFor(() => latestCounter(node, 'recv', 'sources.link.total_requests') === 4, 'four requests under way');
  t.true(held.every((u) => u.status() === 0), 'the four uploads under way are not answered yet');
  const fifth = await upload();
  t.is(await waitFor(() => fifth.status(), 'the fifth upload is answered', 10_000), 503, 'a fifth body would pass the bound');
  held[0]!.finish();
  t.is(await waitFor(() => held[0]!.status(), 'the finished upload is answered', 10_000), 204);
  const sixth = await upload();
  sixth.finish();
  t.is(await waitFor(() => sixth.status(), 'a new upload is answered', 10_000), 204, 'room again once a body was taken');
  t.false(crashed(node.records), 'no worker crashed');
});
