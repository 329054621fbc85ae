// What every listening plugin (network sinks, chain and syslog sources) does alike with its
// server: binding it, counting its failed TLS handshakes, and admitting or refusing each
// connection (stopping, max_connections, the allow list) with a session for the admitted.

import { createServer as createNetServer, type Server, type Socket } from 'node:net';
import type { TLSSocket, TlsOptions } from 'node:tls';
import type { Counters } from '../core/counters.js';
import { errorMessage, type PluginKind, PluginError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { closeSession, openSession, type Session } from './session.js';
import type { AuthResult } from './tls.js';

/** Bind failures that are the machine's state, not the configuration's fault (exit 69 at start). */
const UNAVAILABLE: Readonly<Record<string, string>> = {
  EADDRINUSE: 'address already in use',
  EADDRNOTAVAIL: 'address not available on this host',
  EACCES: 'permission denied',
};

/** A failed bind as the plugin's `port` error, marked unavailable when the machine's state is why. */
export function bindError(kind: PluginKind, id: string, host: string, port: number, err: NodeJS.ErrnoException): PluginError {
  const known = err.code === undefined ? undefined : UNAVAILABLE[err.code];
  return new PluginError(kind, id, 'port', `cannot listen on ${host}:${port}: ${known ?? errorMessage(err)}`, known !== undefined);
}

/**
 * Binds `server` (through the cluster primary in a worker); a failure is the plugin's
 * `port: cannot listen on <host>:<port>: <reason>`, marked unavailable when the address is taken.
 */
export function bind(server: Server, kind: PluginKind, id: string, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const fail = (err: NodeJS.ErrnoException) => reject(bindError(kind, id, host, port, err));
    server.once('error', fail);
    server.listen({ host, port }, () => {
      server.removeListener('error', fail);
      resolve();
    });
  });
}

/** Counts failed handshakes in `tls_handshake_errors` (the server's 'tlsClientError'). */
export function countHandshakeErrors(server: Server, counters: Counters): void {
  server.on('tlsClientError', () => {
    counters.tls_handshake_errors = (counters.tls_handshake_errors ?? 0) + 1;
  });
}

/** Why a connection was turned away. */
export type Refusal = 'max_connections' | 'forbidden';

export interface Admission {
  /** true once the plugin stops: new connections are destroyed */
  readonly isStopping: () => boolean;
  /** connections the plugin holds now */
  readonly held: () => number;
  /** more than this are refused and counted in `rejected_conns`; 0 = no limit */
  readonly maxConnections: number;
  readonly counters: Counters;
  /** the allow list, for TLS connections */
  readonly authorize: (socket: TLSSocket) => AuthResult;
  readonly log: Logger;
  /** how a refused connection is turned away (a protocol may say why first); default destroyed */
  readonly refuse?: (socket: Socket, why: Refusal) => void;
}

/**
 * Admits an accepted connection, paused: its session (logged, and closed with the socket), or
 * undefined when it was refused (while stopping, past max_connections, not on the allow list).
 */
export function admitSocket(socket: Socket, tls: boolean, a: Admission): Session | undefined {
  socket.pause();
  socket.on('error', () => {});
  if (a.isStopping()) {
    socket.destroy();
    return undefined;
  }
  const refuse = (why: Refusal) => (a.refuse ? a.refuse(socket, why) : socket.destroy());
  if (a.maxConnections > 0 && a.held() >= a.maxConnections) {
    a.counters.rejected_conns = (a.counters.rejected_conns ?? 0) + 1;
    refuse('max_connections');
    return undefined;
  }
  let identity: string | undefined;
  if (tls) {
    const verdict = a.authorize(socket as TLSSocket);
    if (!verdict.ok) {
      refuse('forbidden');
      return undefined;
    }
    identity = verdict.identity;
  }
  const session = openSession(socket, tls, a.log, identity);
  socket.once('close', () => closeSession(session, a.log));
  return session;
}

export interface StreamListener extends Admission {
  readonly kind: PluginKind;
  readonly id: string;
  readonly host: string;
  readonly port: number;
  /** TLS server options; plain TCP when undefined */
  readonly tls: TlsOptions | undefined;
  /** an admitted connection, paused, with its session */
  readonly onAdmit: (socket: Socket, session: Session) => void;
}

/** Binds the TCP (or TLS) listener of a stream source; every connection goes through admitSocket. */
export async function listenStream(l: StreamListener): Promise<Server> {
  const accept = (socket: Socket, tls: boolean) => {
    const session = admitSocket(socket, tls, l);
    if (session) l.onAdmit(socket, session);
  };
  // node:tls only for a TLS listener: a plain one's worker never holds it (~1.8 MiB of RSS)
  const srv = l.tls ? process.getBuiltinModule('node:tls').createServer(l.tls, (s) => accept(s, true)) : createNetServer({ pauseOnConnect: true }, (s) => accept(s, false));
  if (l.tls) countHandshakeErrors(srv, l.counters);
  await bind(srv, l.kind, l.id, l.host, l.port);
  return srv;
}
