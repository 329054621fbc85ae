// A real rsyslogd for tests and benches: run in the foreground (-n) on a configuration written
// into a temp dir, with its work directory and pid file there and only loopback ports; never
// the system's daemon, never port 514.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import type { TempDir } from './node.js';
import { peerBinary } from './peers.js';

export interface RunningRsyslog {
  readonly child: ChildProcess;
  /** what rsyslogd wrote to stdout and stderr */
  readonly output: string[];
  /** SIGTERM, SIGKILL after 5 s; resolves once it exited */
  stop(): Promise<void>;
}

/**
 * Starts `rsyslogd -n` on `body` (RainerScript), after a global() that puts its work directory
 * under `dir`. The caller stops it (teardown).
 */
export function startRsyslog(dir: TempDir, name: string, body: string): RunningRsyslog {
  const work = join(dir.path, `${name}-work`);
  mkdirSync(work, { recursive: true });
  const conf = dir.file(`${name}.conf`, `global(workDirectory="${work}")\n${body}\n`);
  const child = spawn(peerBinary('rsyslogd'), ['-n', '-f', conf, '-i', join(dir.path, `${name}.pid`)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  child.stdout!.setEncoding('utf8').on('data', (s: string) => output.push(s));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => output.push(s));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** An imtcp input on 127.0.0.1:`port` (octet counting and newline framing both accepted). */
export const imtcpInput = (port: number): string => `module(load="imtcp")\ninput(type="imtcp" address="127.0.0.1" port="${port}")\n`;

/** An omfwd action to 127.0.0.1:`port` over TCP with octet counting, retrying every second for ever. */
export const omfwdAction = (port: number, template = ''): string =>
  `action(type="omfwd" target="127.0.0.1" port="${port}" protocol="tcp" TCP_Framing="octet-counted"${template ? ` template="${template}"` : ''} action.resumeRetryCount="-1" action.resumeInterval="1")\n`;

/** True once something accepts TCP connections on 127.0.0.1:`port`. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}
