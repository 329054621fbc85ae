// The rsyslog anchors for the chain bench: Debian's rsyslogd (in the foreground, configs in temp
// dirs, loopback only) reads the same input file with imfile (`addMetadata="off"` where the
// issue's like-for-like form says so) and forwards it over TCP; a bare Node receiver counts lines.
// Timed like a logrelay hop: from the rename of the input into place until the counter has every
// line. Two forms:
//   - the hop: two rsyslogd, as a logrelay hop is two nodes. A reads the file and forwards it in
//     RSYSLOG_ForwardFormat; B (imptcp) parses the syslog header and hands the message on to the
//     counter. B starts first and listens before A starts.
//   - one daemon: imfile (its default metadata for a wildcard input) → omfwd → the counter.
// Each run reports the daemons' CPU time (user + system, /proc/<pid>/stat) over the run.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { procAddress } from '../src/syslog/kernel-drops.js';
import { freePort } from '../test/helpers/node.js';
import { peerBinary } from '../test/helpers/peers.js';
import { cpuMs, peakRss, settleDisk, until } from './proc.js';

export interface ForwardResult {
  readonly entriesPerSec: number;
  /** the largest peak RSS of the daemons, bytes */
  readonly peakRss: number;
  /** CPU time of all daemons over the run (user + system), ms */
  readonly cpuMs: number;
}

/** Counts newline-terminated lines arriving on 127.0.0.1:port. */
async function lineCounter(): Promise<{ port: number; count: () => number; close: () => void }> {
  let lines = 0;
  const server = createServer((socket) => {
    socket.on('data', (chunk: Buffer) => {
      for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) lines++;
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, count: () => lines, close: () => server.close() };
}

interface Daemon {
  readonly child: ChildProcess;
  readonly stderr: () => string;
  stop(): Promise<void>;
}

/** `rsyslogd -n` on the configuration `conf`, written as `<work>/<name>.conf` (its work dir `<work>/<name>`). */
function startDaemon(work: string, name: string, conf: string): Daemon {
  mkdirSync(join(work, name), { recursive: true });
  const file = join(work, `${name}.conf`);
  writeFileSync(file, conf);
  const child = spawn(peerBinary('rsyslogd'), ['-n', '-f', file, '-i', join(work, `${name}.pid`)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** True once a socket listens on 127.0.0.1:`port` (read from /proc/net/tcp: no connection made). */
const listening = (port: number): boolean => readFileSync('/proc/net/tcp', 'latin1').includes(` ${procAddress('127.0.0.1', port, 'IPv4')} 00000000:0000 0A `);

/**
 * Renames `input` to `watched`, waits until the counter has `lines` lines (at most `deadlineMs`)
 * and renames it back; the daemons' peak RSS and CPU time are sampled over the run.
 */
async function timeRun(daemons: readonly Daemon[], input: string, watched: string, counter: { count: () => number }, lines: number, deadlineMs: number): Promise<ForwardResult> {
  settleDisk();
  const cpu0 = daemons.map((d) => cpuMs(d.child.pid!));
  const t0 = performance.now();
  renameSync(input, watched);
  try {
    const deadline = Date.now() + deadlineMs;
    let rss = 0;
    while (counter.count() < lines) {
      if (Date.now() > deadline) throw new Error(`rsyslog forwarded ${counter.count()} of ${lines} lines within ${deadlineMs} ms: ${daemons.map((d) => d.stderr()).join('')}`);
      for (const d of daemons) rss = Math.max(rss, peakRss(d.child.pid!));
      await new Promise((r) => setTimeout(r, 2));
    }
    const ms = performance.now() - t0;
    const cpu = daemons.reduce((sum, d, i) => sum + cpuMs(d.child.pid!) - cpu0[i]!, 0);
    return { entriesPerSec: lines / (ms / 1000), peakRss: Math.max(rss, ...daemons.map((d) => peakRss(d.child.pid!))), cpuMs: cpu };
  } finally {
    renameSync(watched, input);
  }
}

/** One daemon: imfile (wildcard, default metadata) → omfwd TCP on `input` (renamed into its watched directory and back). */
export async function rsyslogForward(dir: string, input: string, lines: number, deadlineMs: number): Promise<ForwardResult> {
  // a fresh work directory per run: imfile's state would otherwise remember the input as read
  const work = mkdtempSync(join(dir, 'rsyslog-'));
  const watch = join(work, 'watch');
  mkdirSync(watch, { recursive: true });
  const receiver = await lineCounter();
  const daemon = startDaemon(
    work,
    'state',
    `global(workDirectory="${work}/state" maxMessageSize="8k")
module(load="imfile" mode="inotify")
input(type="imfile" file="${watch}/*.log" tag="app:" ruleset="fwd")
ruleset(name="fwd" queue.type="LinkedList" queue.size="200000") {
  action(type="omfwd" target="127.0.0.1" port="${receiver.port}" protocol="tcp" template="RSYSLOG_ForwardFormat")
}
`,
  );
  try {
    await new Promise((r) => setTimeout(r, 1000)); // imfile sets up its inotify watch
    if (daemon.child.exitCode !== null) throw new Error(`rsyslogd exited at start: ${daemon.stderr()}`);
    return await timeRun([daemon], input, join(watch, 'input.log'), receiver, lines, deadlineMs);
  } finally {
    await daemon.stop();
    receiver.close();
  }
}

/**
 * The hop (issue 43's like-for-like anchor): A (imfile, no metadata → omfwd in
 * RSYSLOG_ForwardFormat) → B (imptcp → omfwd of the message alone) → the counter. B is started
 * and listening before A starts; `input` is renamed into place and back.
 */
export async function rsyslogHop(dir: string, input: string, lines: number, deadlineMs: number): Promise<ForwardResult> {
  const work = mkdtempSync(join(dir, 'rsyslog-hop-'));
  const watch = join(work, 'watch');
  mkdirSync(watch, { recursive: true });
  const watched = join(watch, 'input.log');
  const counter = await lineCounter();
  const hop = await freePort();
  const daemons: Daemon[] = [];
  try {
    const b = startDaemon(
      work,
      'b',
      `global(workDirectory="${work}/b" maxMessageSize="8k")
module(load="imptcp" threads="1")
template(name="msg" type="string" string="%msg%\\n")
input(type="imptcp" address="127.0.0.1" port="${hop}" ruleset="out")
ruleset(name="out") { action(type="omfwd" target="127.0.0.1" port="${counter.port}" protocol="tcp" tcp_framing="traditional" template="msg") }
`,
    );
    daemons.push(b);
    await until(() => listening(hop) || b.child.exitCode !== null, `rsyslogd B listening on ${hop}`, 10_000, 20);
    if (b.child.exitCode !== null) throw new Error(`rsyslogd B exited at start: ${b.stderr()}`);
    const a = startDaemon(
      work,
      'a',
      `global(workDirectory="${work}/a" maxMessageSize="8k")
module(load="imfile" mode="inotify")
input(type="imfile" file="${watched}" tag="bench" freshStartTail="off" addMetadata="off" ruleset="fwd")
ruleset(name="fwd") { action(type="omfwd" target="127.0.0.1" port="${hop}" protocol="tcp" tcp_framing="traditional" template="RSYSLOG_ForwardFormat") }
`,
    );
    daemons.push(a);
    await new Promise((r) => setTimeout(r, 1000)); // imfile sets up its inotify watch
    if (a.child.exitCode !== null) throw new Error(`rsyslogd A exited at start: ${a.stderr()}`);
    return await timeRun(daemons, input, watched, counter, lines, deadlineMs);
  } finally {
    for (const d of daemons.reverse()) await d.stop();
    counter.close();
  }
}
