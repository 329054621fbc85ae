// Syslog bench (DESIGN.md §17), logrelay and rsyslog side by side in one run, all on 127.0.0.1:
//
//   1. logrelay file → syslog sink (RFC 5424, octet counting) → rsyslog imtcp
//   2. rsyslog imfile → omfwd (octet-counted) → rsyslog imtcp          (the same receiver)
//   3. rsyslog imfile → omfwd (octet-counted) → logrelay syslog source → null
//
// 2 is the baseline of both 1 (sender) and 3 (receiver). Input: BENCH_LINES (200,000) lines of
// 200 bytes, written beforehand. The rsyslog receiver writes "x\n" per message, so it is done
// when its file has 2 × lines bytes; logrelay's receiver is done when its null sink counted every
// entry (status every 100 ms). Timed from the moment the sender gets the file (renamed into
// logrelay's watched directory; rsyslogd spawned on it) to the last entry received. Peak RSS is
// VmHWM of the sending and the receiving process (logrelay: the pipeline worker). Every step has
// a deadline.

import { renameSync, mkdirSync, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { freePort, type RunningNode, spawnNode, tempDir, type TempDir, waitFor, waitReady } from '../test/helpers/node.js';
import { accepts, imtcpInput, omfwdAction, type RunningRsyslog, startRsyslog } from '../test/helpers/rsyslog.js';
import { latestStatus } from '../test/helpers/status.js';
import { fileSourceToml, localPluginToml, sinkToml } from '../test/helpers/toml.js';
import { writeInput } from './input.js';
import { childPids, peakRss } from './proc.js';
import { markdownTable, runIfMain } from './report.js';

const LINES = Number(process.env.BENCH_LINES ?? 200_000);
const LINE_BYTES = 200;
const DEADLINE_MS = 180_000;
const MiB = 1024 * 1024;

interface Result {
  readonly title: string;
  readonly ms: number;
  readonly senderRss: number;
  readonly receiverRss: number;
}

/** rsyslog receiving on `port`, writing "x\n" per message to `out`. */
async function rsyslogReceiver(dir: TempDir, port: number, out: string): Promise<RunningRsyslog> {
  const r = startRsyslog(dir, 'recv', `${imtcpInput(port)}template(name="x" type="string" string="x\\n")\naction(type="omfile" file="${out}" template="x")`);
  await waitFor(() => accepts(port), 'rsyslog receiver listens', 20_000);
  return r;
}

/** rsyslog reading `input` whole and forwarding it to `port`. */
const rsyslogSender = (dir: TempDir, input: string, port: number): RunningRsyslog =>
  startRsyslog(dir, 'send', `module(load="imfile")\ninput(type="imfile" file="${input}" tag="bench:" freshStartTail="off")\n${omfwdAction(port)}`);

const receivedAll = (out: string) => () => existsSync(out) && statSync(out).size >= 2 * LINES;

async function workerOf(node: RunningNode): Promise<number> {
  return waitFor(() => childPids(node.child.pid!)[0], 'worker pid', 10_000);
}

async function logrelayToRsyslog(dir: TempDir, input: string): Promise<Result> {
  const port = await freePort();
  const out = join(dir.path, 'recv1.out');
  const recv = await rsyslogReceiver(dir, port, out);
  const watch = join(dir.path, 'watch');
  mkdirSync(watch);
  const toml = `[[pipelines]]\nname = "a"\n${fileSourceToml('f', watch, 'from = "start"\ncheck_interval_ms = 10')}${localPluginToml('sinks', 'sys', 'syslog', port, 'on_full = "block"')}`;
  const node = spawnNode(['-c', dir.file('a.toml', toml)]);
  try {
    await waitReady(node, 'logrelay sender');
    const worker = await workerOf(node);
    const t0 = performance.now();
    renameSync(input, join(watch, 'in.log'));
    await waitFor(receivedAll(out), 'rsyslog received every line', DEADLINE_MS);
    const ms = performance.now() - t0;
    const result = { title: 'logrelay file → syslog sink → rsyslog imtcp', ms, senderRss: peakRss(worker), receiverRss: peakRss(recv.child.pid!) };
    renameSync(join(watch, 'in.log'), input);
    return result;
  } finally {
    await node.stop(5000);
    await recv.stop();
  }
}

async function rsyslogToRsyslog(dir: TempDir, input: string): Promise<Result> {
  const port = await freePort();
  const out = join(dir.path, 'recv2.out');
  const sub = tempDir('logrelay-bench-syslog-rr-');
  const recv = await rsyslogReceiver(sub, port, out);
  let send: RunningRsyslog | undefined;
  try {
    const t0 = performance.now();
    send = rsyslogSender(sub, input, port);
    await waitFor(receivedAll(out), `rsyslog received every line (sender said: ${send.output.join('')})`, DEADLINE_MS);
    const ms = performance.now() - t0;
    return { title: 'rsyslog imfile → omfwd → rsyslog imtcp', ms, senderRss: peakRss(send.child.pid!), receiverRss: peakRss(recv.child.pid!) };
  } finally {
    await send?.stop();
    await recv.stop();
    sub.remove();
  }
}

async function rsyslogToLogrelay(dir: TempDir, input: string): Promise<Result> {
  const port = await freePort();
  const toml = `status_interval_ms = 100\n[[pipelines]]\nname = "b"\n${localPluginToml('sources', 'in', 'syslog', port)}${sinkToml('out', 'null')}`;
  const node = spawnNode(['-c', dir.file('b.toml', toml), '--logging.level=debug']);
  const sub = tempDir('logrelay-bench-syslog-rl-');
  let send: RunningRsyslog | undefined;
  try {
    await waitReady(node, 'logrelay receiver');
    const worker = await workerOf(node);
    const t0 = performance.now();
    send = rsyslogSender(sub, input, port);
    const processed = () => Number(latestStatus(node, 'b')?.['sinks.out.total_processed'] ?? 0);
    await waitFor(() => processed() >= LINES, `logrelay received every line (sender said: ${send!.output.join('')})`, DEADLINE_MS);
    // the report comes every 100 ms: its lag is inside the time, as is rsyslog's file-size poll in 1 and 2
    const ms = performance.now() - t0;
    return { title: 'rsyslog imfile → omfwd → logrelay syslog source → null', ms, senderRss: peakRss(send.child.pid!), receiverRss: peakRss(worker) };
  } finally {
    await send?.stop();
    await node.stop(5000);
    sub.remove();
  }
}

export async function main(): Promise<Result[]> {
  const dir = tempDir('logrelay-bench-syslog-');
  try {
    const input = join(dir.path, 'input.log');
    writeInput(input, LINES, LINE_BYTES);
    const results: Result[] = [];
    for (const run of [logrelayToRsyslog, rsyslogToRsyslog, rsyslogToLogrelay]) {
      process.stderr.write(`running ${run.name} …\n`);
      results.push(await run(dir, input));
    }
    const rows = results.map((r) => [
      r.title,
      String(LINES),
      (r.ms / 1000).toFixed(2),
      Math.round(LINES / (r.ms / 1000)).toLocaleString('en-US'),
      (r.senderRss / MiB).toFixed(1),
      (r.receiverRss / MiB).toFixed(1),
    ]);
    process.stdout.write(
      `\n${markdownTable(['scenario', 'entries', 'seconds', 'entries/s', 'sender peak RSS MiB', 'receiver peak RSS MiB'], rows, true)}\n\nnode ${process.version}, ${LINES} lines of ${LINE_BYTES} bytes\n`,
    );
    return results;
  } finally {
    dir.remove();
  }
}

runIfMain(import.meta.url, main, { exitWhenDone: true });
