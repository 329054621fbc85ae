// A real syslog-ng for tests and benches, from the private prefix test/install-peers.sh unpacks
// it into: run in the foreground (-F) with LD_LIBRARY_PATH, on a configuration, persist file,
// pid file and control socket in a temp dir, loopback ports only; never a system service.

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import type { TempDir } from './node.js';
import { syslogNgPaths } from './peers.js';

export interface RunningSyslogNg {
  readonly child: ChildProcess;
  /** what syslog-ng wrote to stdout and stderr */
  readonly output: string[];
  /** `syslog-ng-ctl stats` as `<SourceId>;<Type>` → number (e.g. `d_udp#0;written`); empty when it does not answer */
  stats(): Promise<Map<string, number>>;
  /** SIGTERM, SIGKILL after 5 s; resolves once it exited */
  stop(): Promise<void>;
}

/** Starts `syslog-ng -F` on `body` (its configuration language, after the @version line). The caller stops it (teardown). */
export function startSyslogNg(dir: TempDir, name: string, body: string): RunningSyslogNg {
  const ng = syslogNgPaths();
  const version = ng.moduleDir.split('/').pop()!;
  const conf = dir.file(`${name}.conf`, `@version: ${version}\n${body}\n`);
  const at = (suffix: string) => join(dir.path, `${name}.${suffix}`);
  const child = spawn(
    ng.binary,
    ['-F', '--stderr', '--no-caps', '-f', conf, `--module-path=${ng.moduleDir}`, '-R', at('persist'), '-p', at('pid'), '-c', at('ctl')],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LD_LIBRARY_PATH: ng.libDir } },
  );
  const output: string[] = [];
  child.stdout!.setEncoding('utf8').on('data', (s: string) => output.push(s));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => output.push(s));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    output,
    stats: () =>
      new Promise((resolve) => {
        execFile(join(ng.binary, '../syslog-ng-ctl'), ['stats', '-c', at('ctl')], { env: { ...process.env, LD_LIBRARY_PATH: ng.libDir }, timeout: 5000 }, (err, stdout) => {
          const out = new Map<string, number>();
          if (!err) {
            for (const line of stdout.split('\n')) {
              const cols = line.split(';');
              if (cols.length === 6) out.set(`${cols[1]};${cols[4]}`, Number(cols[5]));
            }
          }
          resolve(out);
        });
      }),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}
