// Real peers from Debian packages (rsyslog, logger, chromium, nats-server, tmux,
// prometheus/promtool): where each
// binary lives, and a clear failure naming the package when it is not installed. No test is
// skipped because a peer is absent.

import { accessSync, constants } from 'node:fs';

const PACKAGES = {
  rsyslogd: 'rsyslog',
  logger: 'bsdutils',
  chromium: 'chromium',
  'nats-server': 'nats-server',
  tmux: 'tmux',
  promtool: 'prometheus',
  prometheus: 'prometheus',
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
