// What the `tcp` and `http` sinks share (DESIGN.md §7, §10): their common config keys, binding a
// listener in the build step, TLS handshake and authorisation per accepted socket, and closing
// every client under the shutdown deadline.

import type { Server, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Fields } from '../config/spec.js';
import type { Counters } from '../core/counters.js';
import { PORT, sinkQueueFields } from '../core/plugin-config.js';
import type { OnFull } from '../core/queue.js';
import { ClientQueue, type FrameWriter } from './client-queue.js';
import { bind, countHandshakeErrors } from './listener.js';
import { AUTH_FIELDS, type AuthConfig, type AuthResult, TLS_FIELDS, type TlsConfig } from './tls.js';

export interface NetSinkConfig {
  readonly host: string;
  readonly port: number;
  readonly buffer_size: number;
  /** bound of the queue together with what the sink holds unacknowledged, bytes of formatted lines */
  readonly buffer_max_bytes: number;
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
  host: { t: 'string', def: '0.0.0.0', nonEmpty: true, doc: 'address to listen on' },
  port: { ...PORT, doc: 'port to listen on' },
  ...sinkQueueFields('shows'),
  client_buffer_size: {
    t: 'number',
    def: 256,
    int: true,
    min: 1,
    unit: 'entries',
    doc: "bound of each client's own queue; what a burst puts beyond it is dropped for that client (`dropped_writes`)",
  },
  max_connections: { t: 'number', def: 0, int: true, min: 0, unit: 'clients', doc: 'clients beyond this are refused at once; 0 = unlimited' },
  write_timeout_ms: { t: 'number', def: 5000, int: true, min: 0, doc: 'a client that cannot take a write this long is disconnected' },
  ...TLS_FIELDS,
  ...AUTH_FIELDS,
};

/** TCP keep-alive probe delay on accepted sockets, ms. */
export const KEEPALIVE_DELAY_MS = 30_000;

/** A connected client of a network sink: where its frames go, its queue, and when it has closed. */
export interface NetClient<W extends FrameWriter> {
  readonly out: W;
  readonly queue: ClientQueue;
  readonly closed: Promise<void>;
}

/** What opening a sink's listener needs beyond the server itself. */
export interface SinkListenerOptions {
  readonly id: string;
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
  /** every raw socket, TLS handshakes included, until it closes: what close() destroys */
  readonly sockets: Set<Socket>;
  /** gets `tls_handshake_errors` */
  readonly counters: Counters;
  /** called per accepted socket (on TLS, once its handshake is done) */
  readonly onAccept: (socket: Socket) => void;
}

/** Wires a sink's server (socket tracking, accepted sockets, handshake errors) and binds it. */
export function openListener(server: Server, opts: SinkListenerOptions): Promise<void> {
  server.on('connection', (socket: Socket) => {
    opts.sockets.add(socket);
    socket.once('close', () => opts.sockets.delete(socket));
  });
  server.on(opts.tls ? 'secureConnection' : 'connection', opts.onAccept);
  if (opts.tls) countHandshakeErrors(server, opts.counters);
  return bind(server, 'sink', opts.id, opts.host, opts.port);
}

/**
 * Gives `out` a bounded queue and adds it to `clients` (kept in `active_clients`) until 'close',
 * when the queue is closed (what it still held counts in `dropped_writes`), the client removed
 * and `onClose` called. `onTimeout` cuts a client whose writes have blocked for `write_timeout_ms`.
 */
export function addClient<W extends FrameWriter & { once(event: 'close', listener: () => void): unknown }>(
  clients: Set<NetClient<W>>,
  counters: Counters,
  cfg: NetSinkConfig,
  out: W,
  onTimeout: () => void,
  onClose?: () => void,
): NetClient<W> {
  const queue = new ClientQueue(out, { capacity: cfg.client_buffer_size, writeTimeoutMs: cfg.write_timeout_ms, onTimeout });
  const closed = new Promise<void>((resolve) =>
    out.once('close', () => {
      counters.dropped_writes = (counters.dropped_writes ?? 0) + queue.close();
      clients.delete(client);
      counters.active_clients = clients.size;
      onClose?.();
      resolve();
    }),
  );
  const client: NetClient<W> = { out, queue, closed };
  clients.add(client);
  counters.active_clients = clients.size;
  return client;
}

/**
 * Stops accepting, flushes each client's queue and ends it with `end`; whoever is still open at
 * `deadline` (epoch ms) is cut, with every socket left (unfinished TLS handshakes included).
 */
export async function closeClients<W extends FrameWriter>(
  server: Server | undefined,
  clients: Set<NetClient<W>>,
  sockets: Set<Socket>,
  deadline: number,
  end: (out: W) => void,
): Promise<void> {
  const stopped = closeServer(server);
  await settleBy(
    [...clients].map(async (c) => {
      await c.queue.flushed();
      end(c.out);
      await c.closed;
    }),
    deadline,
  );
  for (const socket of sockets) socket.destroy();
  await settleBy([stopped], deadline);
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
