// Sessions: a record per accepted connection (network sinks, chain sources), with connect and
// disconnect logged at DEBUG.

import type { Socket } from 'node:net';
import type { Logger } from '../core/log.js';

export interface Session {
  readonly id: number;
  /** "ip:port" */
  readonly remote: string;
  readonly tls: boolean;
  /** RFC 3339 */
  readonly connected_at: string;
  auth_identity?: string;
}

let nextId = 1;

/** "ip:port" of a socket's peer (IPv6 addresses in brackets). */
export function remoteOf(socket: Socket): string {
  const addr = socket.remoteAddress ?? 'unknown';
  const host = addr.includes(':') ? `[${addr}]` : addr;
  return `${host}:${socket.remotePort ?? 0}`;
}

export function openSession(socket: Socket, tls: boolean, log: Logger, identity?: string): Session {
  const session: Session = { id: nextId++, remote: remoteOf(socket), tls, connected_at: new Date().toISOString() };
  if (identity !== undefined) session.auth_identity = identity;
  log.debug({ session }, 'Session connected');
  return session;
}

export function closeSession(session: Session, log: Logger): void {
  log.debug({ session }, 'Session disconnected');
}
