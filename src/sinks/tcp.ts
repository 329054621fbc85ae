// `tcp` sink: a TCP (or TLS) server writing each formatted line plus `\n` to every connected
// client through its own bounded queue; whatever a client sends is read and ignored.

import { createServer as createNetServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { pluginConfig } from '../core/plugin-config.js';
import { ClientQueue } from '../net/client-queue.js';
import { closeSession, openSession, type Session } from '../net/session.js';
import {
  authoriseSocket,
  closeServer,
  countHandshakeErrors,
  KEEPALIVE_DELAY_MS,
  listen,
  NET_SINK_FIELDS,
  type NetSinkConfig,
  settleBy,
} from '../net/sink-server.js';
import { checkAuthConfig, createAuthorizer, serverTlsOptions } from '../net/tls.js';
import type { Sink, SinkFactory } from './types.js';

interface TcpClient {
  readonly socket: Socket;
  readonly queue: ClientQueue;
  readonly session: Session;
  readonly closed: Promise<void>;
}

export const createTcpSink: SinkFactory = (plugin, ctx): Sink => {
  const cfg = pluginConfig<NetSinkConfig>('sink', plugin, NET_SINK_FIELDS);
  checkAuthConfig('sink', plugin.id, cfg.tls, cfg.auth);
  const tlsOptions = serverTlsOptions('sink', plugin.id, cfg.tls);
  const counters = { active_clients: 0, dropped_writes: 0, rejected_conns: 0, tls_handshake_errors: 0, auth_rejected: 0 };
  const authorize = createAuthorizer({ auth: cfg.auth, log: ctx.log, pipeline: ctx.pipeline, plugin: plugin.id, counters });
  const isTls = tlsOptions !== undefined;
  const clients = new Set<TcpClient>();
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let closing: Promise<void> | undefined;

  const accept = (socket: Socket): void => {
    socket.on('error', () => {});
    if (closing) {
      socket.destroy();
      return;
    }
    if (cfg.max_connections > 0 && clients.size >= cfg.max_connections) {
      counters.rejected_conns++;
      socket.destroy();
      return;
    }
    const auth = authoriseSocket(socket, isTls, authorize);
    if (!auth.ok) {
      socket.destroy();
      return;
    }
    socket.setKeepAlive(true, KEEPALIVE_DELAY_MS);
    socket.setNoDelay(true);
    socket.resume();
    const session = openSession(socket, isTls, ctx.log, auth.identity);
    const queue = new ClientQueue(socket, {
      capacity: cfg.client_buffer_size,
      writeTimeoutMs: cfg.write_timeout_ms,
      onTimeout: () => socket.destroy(),
    });
    const closed = new Promise<void>((resolve) =>
      socket.once('close', () => {
        queue.close();
        clients.delete(client);
        counters.active_clients = clients.size;
        closeSession(session, ctx.log);
        resolve();
      }),
    );
    const client: TcpClient = { socket, queue, session, closed };
    clients.add(client);
    counters.active_clients = clients.size;
  };

  return {
    id: plugin.id,
    type: 'tcp',
    counters,
    bufferSize: cfg.buffer_size,
    onFull: cfg.on_full,
    async open() {
      const srv = tlsOptions ? createTlsServer(tlsOptions) : createNetServer();
      srv.on('connection', (socket: Socket) => {
        sockets.add(socket);
        socket.once('close', () => sockets.delete(socket));
      });
      srv.on(isTls ? 'secureConnection' : 'connection', accept);
      if (isTls) countHandshakeErrors(srv, counters);
      await listen(srv, plugin.id, cfg.host, cfg.port);
      server = srv;
    },
    write(batch) {
      if (clients.size === 0) return;
      const frames = batch.map((item) => `${item.line}\n`);
      for (const c of clients) counters.dropped_writes += c.queue.push(frames);
    },
    close(deadline) {
      closing ??= (async () => {
        const stopped = closeServer(server);
        // Flush what each client holds, then end it; whoever is still open at the deadline is cut.
        await settleBy(
          [...clients].map(async (c) => {
            await c.queue.flushed();
            c.socket.end();
            await c.closed;
          }),
          deadline,
        );
        for (const s of sockets) s.destroy();
        await settleBy([stopped], deadline);
      })();
      return closing;
    },
  };
};
