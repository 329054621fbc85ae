// Real peers from Debian packages (rsyslog, logger, chromium, nats-server, tmux,
// prometheus/promtool, python3, and syslog-ng unpacked beside rsyslog): where each
// binary lives, and a clear failure naming the package when it is not installed. No test is
// skipped because a peer is absent.

import { accessSync, constants, readdirSync } from 'node:fs';
import { join } from 'node:path';

const PACKAGES = {
  rsyslogd: 'rsyslog',
  logger: 'bsdutils',
  chromium: 'chromium',
  'nats-server': 'nats-server',
  tmux: 'tmux',
  promtool: 'prometheus',
  prometheus: 'prometheus',
  python3: 'python3',
} as const;

export type Peer = keyof typeof PACKAGES;

/** Absolute path of a peer's binary; throws naming the Debian package when it is missing. */
export function peerBinary(peer: Peer): string {
  for (const dir of (process.env.PATH ?? '').split(':').concat(['/usr/sbin', '/usr/bin', '/sbin', '/bin'])) {
    if (!dir) continue;
    const path = `${dir}/${peer}`;
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      /* next */
    }
  }
  throw new Error(`${peer} is not installed: apt-get install ${PACKAGES[peer]} (npm test installs it when run as root)`);
}

/** Where test/install-peers.sh unpacks Debian's syslog-ng-core (it conflicts with rsyslog as a package). */
export const SYSLOG_NG_PREFIX = process.env.LOGRELAY_SYSLOG_NG_PREFIX ?? '/opt/logrelay-peers/syslog-ng';

export interface SyslogNgPaths {
  readonly binary: string;
  /** its shared libraries (LD_LIBRARY_PATH) */
  readonly libDir: string;
  /** its modules (`--module-path`): the versioned directory under libDir */
  readonly moduleDir: string;
}

/** The unpacked syslog-ng; throws naming the package and how to unpack it when it is absent. */
export function syslogNgPaths(): SyslogNgPaths {
  const binary = join(SYSLOG_NG_PREFIX, 'usr/sbin/syslog-ng');
  const libDir = join(SYSLOG_NG_PREFIX, 'usr/lib/syslog-ng');
  try {
    accessSync(binary, constants.X_OK);
    const version = readdirSync(libDir).find((d) => /^\d+\.\d+$/.test(d));
    if (!version) throw new Error('no module directory');
    return { binary, libDir, moduleDir: join(libDir, version) };
  } catch {
    throw new Error(
      `syslog-ng is not unpacked in ${SYSLOG_NG_PREFIX}: Debian package syslog-ng-core (apt-get download + dpkg -x; runtime libraries libivykis0 libjson-c5 libnet1 libpcre3 libwrap0 libglib2.0-0 libcap2): run test/install-peers.sh as root`,
    );
  }
}
