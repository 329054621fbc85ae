// What every listening plugin (network sinks, chain sources) does alike with its server:
// binding it and counting its failed TLS handshakes.

import type { Server } from 'node:net';
import type { Counters } from '../core/counters.js';
import { errorMessage, type PluginKind, PluginError } from '../core/errors.js';

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
