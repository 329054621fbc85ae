// What every listening plugin (network sinks, chain sources) does alike with its server:
// binding it and counting its failed TLS handshakes.

import type { Server } from 'node:net';
import type { Counters } from '../core/counters.js';

/** Binds `server` (through the cluster primary in a worker); rejects with the server's error. */
export function bind(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.removeListener('error', reject);
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
