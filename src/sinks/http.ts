// `http` sink: server-sent events on `stream_path`, this sink's status document on `status_path`
// and the live view page on `/` (DESIGN.md §8, §18), over HTTP or HTTPS. Each stream client has its
// own bounded queue; an entry is framed once per encoding and the frame shared by every client.
// Event ids start from the wall clock and the last `replay_size` entries are kept, so a client
// reconnecting with `Last-Event-ID` resumes where it was, across reloads and restarts too.

import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { pluginConfig } from '../core/plugin-config.js';
import type { PluginSpec } from '../config/spec.js';
import { formatJson } from '../flow/format.js';
import { createHttpListener } from '../net/http-server.js';
import { ReplayRing } from '../net/replay-ring.js';
import { closeSession, openSession, type Session } from '../net/session.js';
import {
  addClient,
  authoriseSocket,
  closeClients,
  KEEPALIVE_DELAY_MS,
  NET_SINK_FIELDS,
  type NetClient,
  type NetSinkConfig,
  openListener,
} from '../net/sink-server.js';
import { serverSecurity } from '../net/tls.js';
import { liveViewPage } from '../ui/live-view.js';
import type { Sink, SinkFactory, SinkItem } from './types.js';

interface HttpSinkConfig extends NetSinkConfig {
  readonly stream_path: string;
  readonly status_path: string;
  /** ms between `: ping` comments */
  readonly heartbeat_interval_ms: number;
  /** entries kept for clients that reconnect with `Last-Event-ID`; 0 = none */
  readonly replay_size: number;
  /** serve the live view page on `/` and `/index.html` */
  readonly ui: boolean;
}

/**
 * What a stream client gets per entry: the pipeline's formatted line, or (`?format=json`, what
 * the live view asks for) the entry encoded by the json formatter whatever the pipeline's format.
 */
type StreamFormat = 'line' | 'json';

const PAGE_PATHS = new Set(['/', '/index.html']);

/** What a connection is: an open session, or refused by the allow list (every request gets 403). */
type Connection = { readonly session: Session } | { readonly forbidden: true };

const VERSION = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const RETRY_MS = 2000;
/** The sink's requests are GETs without a body: 10 s for all of one (the stream it answers is not bounded). */
const REQUEST_TIMEOUT_MS = 10_000;
const PING = ': ping\n\n';
const DISCONNECT = 'event: disconnect\ndata: {"reason":"closing"}\n\n';
const LINE_BREAK = /\r\n|\r|\n/;

/** One SSE event for an entry: `id:`, one `data:` line per line of the text (CR, LF, CRLF all split), blank line. */
export function sseFrame(id: number, text: string): string {
  if (text.indexOf('\n') < 0 && text.indexOf('\r') < 0) return `id: ${id}\ndata: ${text}\n\n`;
  let frame = `id: ${id}\n`;
  for (const line of text.split(LINE_BREAK)) frame += `data: ${line}\n`;
  return `${frame}\n`;
}

function pathOf(url: string | undefined): string {
  if (!url) return '/';
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/** The stream options of a request: its format, and the last event id it saw (header, or `last_event_id` in the query for clients that cannot set headers). */
function streamOptions(req: IncomingMessage): { format: StreamFormat; lastEventId: number | undefined } {
  const query = new URLSearchParams(req.url?.includes('?') ? req.url.slice(req.url.indexOf('?') + 1) : '');
  const header = req.headers['last-event-id'];
  const last = (typeof header === 'string' ? header : undefined) ?? query.get('last_event_id') ?? '';
  return {
    format: query.get('format') === 'json' ? 'json' : 'line',
    // 15 digits stay exact as a number; ids are 13-digit milliseconds for centuries yet
    lastEventId: /^\d{1,15}$/.test(last.trim()) ? Number(last.trim()) : undefined,
  };
}

function frameFor(format: StreamFormat, id: number, item: SinkItem): string {
  return sseFrame(id, format === 'json' ? formatJson(item.entry) : item.line);
}

export const HTTP_SINK: PluginSpec = {
  doc: 'serves formatted lines as a Server-Sent Events stream, and a status document, over HTTP',
  fields: {
    ...NET_SINK_FIELDS,
    stream_path: { t: 'string', def: '/stream', nonEmpty: true, doc: 'path of the event stream' },
    status_path: { t: 'string', def: '/status', nonEmpty: true, doc: "path of the sink's status document" },
    heartbeat_interval_ms: { t: 'number', def: 15000, int: true, min: 1, doc: 'a `: ping` comment is sent this often' },
    replay_size: { t: 'number', def: 1000, int: true, min: 0, doc: 'entries kept for a client that reconnects with `Last-Event-ID` (0: none)' },
    ui: { t: 'boolean', def: true, doc: 'serve the live view page at `/` and `/index.html`' },
  },
};

export const createHttpSink: SinkFactory = (plugin, ctx): Sink => {
  const cfg = pluginConfig<HttpSinkConfig>('sink', plugin, HTTP_SINK.fields);
  const counters = { active_clients: 0, dropped_writes: 0, rejected_clients: 0, tls_handshake_errors: 0, auth_rejected: 0 };
  const { tlsOptions, authorize } = serverSecurity('sink', plugin.id, cfg, ctx, counters);
  const isTls = tlsOptions !== undefined;
  const baseHeaders: Record<string, string> = cfg.auth ? {} : { 'Access-Control-Allow-Origin': '*' };
  const connections = new WeakMap<Socket, Connection>();
  const clients = new Set<NetClient<ServerResponse>>();
  const formats = new WeakMap<NetClient<ServerResponse>, StreamFormat>();
  let jsonClients = 0;
  const ring = new ReplayRing<SinkItem>(cfg.replay_size);
  const page = cfg.ui ? liveViewPage(cfg.stream_path) : undefined;
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  let openedAt = Date.now();
  let processed = 0;
  /** the last event id given; set from the wall clock (ms) when the sink opens */
  let sequence = 0;
  let closing: Promise<void> | undefined;

  const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      ...baseHeaders,
      ...headers,
      'Content-Type': 'application/json',
      'Content-Length': String(Buffer.byteLength(text)),
    });
    res.end(text);
  };

  const statusDocument = () => ({
    service: 'logrelay',
    version: VERSION,
    instance_id: plugin.id,
    server: {
      type: 'http',
      host: cfg.host,
      port: cfg.port,
      tls: isTls,
      active_clients: clients.size,
      buffer_size: cfg.buffer_size,
      client_buffer_size: cfg.client_buffer_size,
      max_connections: cfg.max_connections,
      write_timeout_ms: cfg.write_timeout_ms,
      uptime_seconds: Math.floor((Date.now() - openedAt) / 1000),
    },
    endpoints: { stream: cfg.stream_path, status: cfg.status_path },
    statistics: {
      total_processed: processed,
      dropped_writes: counters.dropped_writes,
      rejected_clients: counters.rejected_clients,
      auth_rejected: counters.auth_rejected,
    },
  });

  const framesOf = (format: StreamFormat, first: number, batch: readonly SinkItem[]): string[] => {
    const frames = new Array<string>(batch.length);
    for (let i = 0; i < batch.length; i++) frames[i] = frameFor(format, first + i, batch[i]!);
    return frames;
  };

  const onConnection = (socket: Socket): void => {
    socket.setKeepAlive(true, KEEPALIVE_DELAY_MS);
    const auth = authoriseSocket(socket, isTls, authorize);
    if (!auth.ok) {
      connections.set(socket, { forbidden: true });
      return;
    }
    const session = openSession(socket, isTls, ctx.log, auth.identity);
    connections.set(socket, { session });
    socket.once('close', () => closeSession(session, ctx.log));
  };

  const openStream = (req: IncomingMessage, res: ServerResponse, session: Session): void => {
    if (closing) {
      sendJson(res, 503, { error: 'shutting down' }, { Connection: 'close' });
      return;
    }
    if (cfg.max_connections > 0 && clients.size >= cfg.max_connections) {
      counters.rejected_clients++;
      sendJson(res, 503, { error: 'too many clients' });
      return;
    }
    res.writeHead(200, {
      ...baseHeaders,
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache',
      'X-Accel-Buffering': 'no',
    });
    const { format, lastEventId } = streamOptions(req);
    let hello = `retry: ${RETRY_MS}\n\nevent: connected\ndata: ${JSON.stringify({ client_id: session.id, instance_id: plugin.id })}\n\n`;
    if (lastEventId !== undefined) {
      ring.forEachAfter(lastEventId, (id, item) => {
        hello += frameFor(format, id, item);
      });
      // A client coming from a generation whose ids ran ahead of the clock: later ids must still be above what it saw.
      if (lastEventId > sequence) sequence = lastEventId;
    }
    res.write(hello);
    if (format === 'json') jsonClients++;
    const client = addClient(clients, counters, cfg, res, () => res.destroy(), () => {
      if (format === 'json') jsonClients--;
    });
    formats.set(client, format);
  };

  const sendPage = (res: ServerResponse, body: { readonly html: string; readonly csp: string }): void => {
    res.writeHead(200, {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Length': String(Buffer.byteLength(body.html)),
      'Content-Security-Policy': body.csp,
      'Cache-Control': 'no-cache',
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
    });
    res.end(body.html);
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const conn = connections.get(req.socket);
    if (!conn || 'forbidden' in conn) {
      sendJson(res, 403, { error: 'forbidden' }, { Connection: 'close' });
      return;
    }
    const path = pathOf(req.url);
    const isPage = page !== undefined && PAGE_PATHS.has(path) && path !== cfg.stream_path && path !== cfg.status_path;
    if (path !== cfg.stream_path && path !== cfg.status_path && !isPage) {
      sendJson(res, 404, { error: 'not found' });
      return;
    }
    if (req.method !== 'GET') {
      sendJson(res, 405, { error: 'method not allowed' }, { Allow: 'GET' });
      return;
    }
    if (isPage) sendPage(res, page);
    else if (path === cfg.status_path) sendJson(res, 200, statusDocument());
    else openStream(req, res, conn.session);
  };

  return {
    id: plugin.id,
    type: 'http',
    counters,
    bufferSize: cfg.buffer_size,
    bufferMaxBytes: cfg.buffer_max_bytes,
    onFull: cfg.on_full,
    async open() {
      const srv = createHttpListener(tlsOptions, { requestTimeoutMs: REQUEST_TIMEOUT_MS }, onRequest);
      await openListener(srv, { id: plugin.id, host: cfg.host, port: cfg.port, tls: isTls, sockets, counters, onAccept: onConnection });
      server = srv;
      openedAt = Date.now();
      sequence = Math.max(sequence, openedAt);
      heartbeat = setInterval(() => {
        for (const c of clients) c.queue.ping(PING);
      }, cfg.heartbeat_interval_ms);
      heartbeat.unref();
    },
    write(batch) {
      processed += batch.length;
      const first = sequence + 1;
      sequence += batch.length;
      for (let i = 0; i < batch.length; i++) ring.push(first + i, batch[i]!);
      if (clients.size === 0) return;
      const lines = jsonClients < clients.size ? framesOf('line', first, batch) : undefined;
      const json = jsonClients > 0 ? framesOf('json', first, batch) : undefined;
      for (const c of clients) counters.dropped_writes += c.queue.push((formats.get(c) === 'json' ? json : lines)!);
    },
    close(deadline) {
      closing ??= (async () => {
        if (heartbeat) clearInterval(heartbeat);
        // Flush each stream, announce the close, end it; whoever is still open at the deadline is cut.
        await closeClients(server, clients, sockets, deadline, (res) => {
          const socket = res.socket;
          res.end(DISCONNECT, () => socket?.end());
        });
      })();
      return closing;
    },
  };
};
