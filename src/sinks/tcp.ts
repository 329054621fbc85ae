// `tcp` sink: a TCP (or TLS) server writing each formatted line plus `\n` to every connected
// client through its own bounded queue; whatever a client sends is read and ignored.

import { createServer as createNetServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { pluginConfig } from '../core/plugin-config.js';
import type { PluginSpec } from '../config/spec.js';
import { type Admission, admitSocket } from '../net/listener.js';
import {
  addClient,
  closeClients,
  KEEPALIVE_DELAY_MS,
  NET_SINK_FIELDS,
  type NetClient,
  type NetSinkConfig,
  openListener,
} from '../net/sink-server.js';
import { serverSecurity } from '../net/tls.js';
import type { Sink, SinkFactory } from './types.js';

export const TCP_SINK: PluginSpec = {
  doc: 'serves formatted lines, one per `\\n`, to every connected TCP client (what clients send is ignored)',
  fields: NET_SINK_FIELDS,
};

export const createTcpSink: SinkFactory = (plugin, ctx): Sink => {
  const cfg = pluginConfig<NetSinkConfig>('sink', plugin, TCP_SINK.fields);
  const counters = { active_clients: 0, dropped_writes: 0, rejected_conns: 0, tls_handshake_errors: 0, auth_rejected: 0 };
  const { tlsOptions, authorize } = serverSecurity('sink', plugin.id, cfg, ctx, counters);
  const isTls = tlsOptions !== undefined;
  const clients = new Set<NetClient<Socket>>();
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let closing: Promise<void> | undefined;

  const admission: Admission = {
    isStopping: () => closing !== undefined,
    held: () => clients.size,
    maxConnections: cfg.max_connections,
    counters,
    authorize,
    log: ctx.log,
  };

  const accept = (socket: Socket): void => {
    if (!admitSocket(socket, isTls, admission)) return;
    socket.setKeepAlive(true, KEEPALIVE_DELAY_MS);
    socket.setNoDelay(true);
    socket.resume();
    addClient(clients, counters, cfg, socket, () => socket.destroy());
  };

  return {
    id: plugin.id,
    type: 'tcp',
    counters,
    bufferSize: cfg.buffer_size,
    bufferMaxBytes: cfg.buffer_max_bytes,
    onFull: cfg.on_full,
    async open() {
      const srv = tlsOptions ? createTlsServer(tlsOptions) : createNetServer();
      await openListener(srv, { id: plugin.id, host: cfg.host, port: cfg.port, tls: isTls, sockets, counters, onAccept: accept });
      server = srv;
    },
    write(batch) {
      if (clients.size === 0) return;
      const frames = batch.map((item) => `${item.line}\n`);
      for (const c of clients) counters.dropped_writes += c.queue.push(frames);
    },
    close(deadline) {
      closing ??= (async () => {
        // Flush what each client holds, then end it; whoever is still open at the deadline is cut.
        await closeClients(server, clients, sockets, deadline, (socket) => socket.end());
      })();
      return closing;
    },
  };
};
