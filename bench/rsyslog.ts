// The rsyslog anchor for the chain bench: Debian's rsyslogd (in the foreground, a config in a
// temp dir, loopback only) reads the same input file with imfile and forwards it with omfwd over
// TCP to a bare Node receiver that counts lines. Timed like a logrelay hop: from the rename of the
// input into the watched directory until the receiver has every line.

import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { peerBinary } from '../test/helpers/peers.js';
import { peakRss } from './proc.js';

export interface ForwardResult {
  readonly entriesPerSec: number;
  readonly peakRss: number;
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

/** rsyslog imfile → omfwd TCP on `input` (renamed into its watched directory and back). */
export async function rsyslogForward(dir: string, input: string, lines: number, deadlineMs: number): Promise<ForwardResult> {
  // a fresh work directory per run: imfile's state would otherwise remember the input as read
  const work = mkdtempSync(join(dir, 'rsyslog-'));
  const watch = join(work, 'watch');
  mkdirSync(join(work, 'state'), { recursive: true });
  mkdirSync(watch, { recursive: true });
  const receiver = await lineCounter();
  const conf = join(work, 'rsyslog.conf');
  writeFileSync(
    conf,
    `global(workDirectory="${work}/state" maxMessageSize="8k")
module(load="imfile" mode="inotify")
input(type="imfile" file="${watch}/*.log" tag="app:" ruleset="fwd")
ruleset(name="fwd" queue.type="LinkedList" queue.size="200000") {
  action(type="omfwd" target="127.0.0.1" port="${receiver.port}" protocol="tcp" template="RSYSLOG_ForwardFormat")
}
`,
  );
  const child = spawn(peerBinary('rsyslogd'), ['-n', '-f', conf, '-i', join(work, 'rsyslogd.pid')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const watched = join(watch, 'input.log');
  let moved = false;
  try {
    await new Promise((r) => setTimeout(r, 1000)); // imfile sets up its inotify watch
    if (child.exitCode !== null) throw new Error(`rsyslogd exited at start: ${stderr}`);
    const t0 = performance.now();
    renameSync(input, watched);
    moved = true;
    const deadline = Date.now() + deadlineMs;
    let rss = 0;
    while (receiver.count() < lines) {
      if (Date.now() > deadline) throw new Error(`rsyslog forwarded ${receiver.count()} of ${lines} lines within ${deadlineMs} ms: ${stderr}`);
      rss = Math.max(rss, peakRss(child.pid!));
      await new Promise((r) => setTimeout(r, 2));
    }
    const ms = performance.now() - t0;
    return { entriesPerSec: lines / (ms / 1000), peakRss: Math.max(rss, peakRss(child.pid!)) };
  } finally {
    child.kill('SIGTERM');
    await exited;
    receiver.close();
    if (moved) renameSync(watched, input);
  }
}
