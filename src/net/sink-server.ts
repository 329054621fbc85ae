// What the `tcp` and `http` sinks share (DESIGN.md §7, §10): their common config keys, binding a
// listener in the build step, TLS handshake and authorisation per accepted socket, and closing
// every client under the shutdown deadline.

import type { Server } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Fields } from '../config/spec.js';
import type { Counters } from '../core/counters.js';
import { errorMessage, PluginError } from '../core/errors.js';
import { PORT, SINK_QUEUE_FIELDS } from '../core/plugin-config.js';
import type { OnFull } from '../sinks/types.js';
import { AUTH_FIELDS, type AuthConfig, type AuthResult, TLS_FIELDS, type TlsConfig } from './tls.js';

export interface NetSinkConfig {
  readonly host: string;
  readonly port: number;
  readonly buffer_size: number;
  readonly on_full: OnFull;
  /** per-client queue bound, frames */
  readonly client_buffer_size: number;
  /** 0 = unlimited */
  readonly max_connections: number;
  /** ms; 0 = never disconnect a blocked client */
  readonly write_timeout_ms: number;
  readonly tls: TlsConfig;
  readonly auth?: AuthConfig;
}

export const NET_SINK_FIELDS: Fields = {
  host: { t: 'string', def: '0.0.0.0', nonEmpty: true },
  port: PORT,
  ...SINK_QUEUE_FIELDS,
  client_buffer_size: { t: 'number', def: 256, int: true, min: 1 },
  max_connections: { t: 'number', def: 0, int: true, min: 0 },
  write_timeout_ms: { t: 'number', def: 5000, int: true, min: 0 },
  ...TLS_FIELDS,
  ...AUTH_FIELDS,
};

/** TCP keep-alive probe delay on accepted sockets, ms. */
export const KEEPALIVE_DELAY_MS = 30_000;

/** Binds `server` (through the cluster primary in a worker); a failure names the sink and port. */
export function listen(server: Server, id: string, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(new PluginError('sink', id, 'port', `cannot listen on ${host}:${port}: ${errorMessage(err)}`));
    server.once('error', onError);
    server.listen({ host, port }, () => {
      server.removeListener('error', onError);
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

/** Authorises an accepted socket: TLS sockets through `authorize`, plain ones always pass. */
export function authoriseSocket(socket: unknown, tls: boolean, authorize: (s: TLSSocket) => AuthResult): AuthResult {
  return tls ? authorize(socket as TLSSocket) : { ok: true };
}

/** Waits for all `promises` or until `deadline` (epoch ms), whichever comes first. */
export async function settleBy(promises: readonly Promise<unknown>[], deadline: number): Promise<void> {
  if (promises.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.allSettled(promises),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
    }),
  ]);
  clearTimeout(timer);
}

/** Stops accepting; resolves when the server is closed (connections ended or destroyed). */
export function closeServer(server: Server | undefined): Promise<void> {
  if (!server?.listening) return Promise.resolve();
  return new Promise((resolve) => server.close(() => resolve()));
}
