// `otlp` source: an OTLP/HTTP logs receiver (DESIGN.md §20). `POST <path>` with protobuf or JSON,
// gzip or deflate; the request's records become entries, emitted in batches of buffer_size and
// answered 200 once every one of them is done (§15), so an exporter's retry never loses what it
// was told was taken. Errors carry a google.rpc.Status in the request's encoding.

import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { CHAIN_SOURCE_BUFFER_SIZE, type ChainSourceConfig, chainSourceConfig, chainSourceFields } from '../net/source-config.js';
import type { PluginSpec } from '../config/spec.js';
import { doneBy } from '../core/ack.js';
import type { Entry } from '../core/entry.js';
import { errorMessage } from '../core/errors.js';
import { closeHttpListener, createHttpListener } from '../net/http-server.js';
import { bind, countHandshakeErrors } from '../net/listener.js';
import { closeSession, openSession, type Session } from '../net/session.js';
import { serverSecurity } from '../net/tls.js';
import { type BodyFault, inflateLimited, readLimitedBody } from '../net/http-body.js';
import { decodeRequest } from '../otlp/decode.js';
import { decodeJsonRequest } from '../otlp/json.js';
import { mapRequest } from '../otlp/map-in.js';
import type { OtlpRequest } from '../otlp/model.js';
import { encodeExportResponse, encodeStatus, encodingOf, mediaType, type OtlpEncoding } from '../otlp/response.js';
import type { Source, SourceFactory } from './types.js';

interface OtlpSourceConfig extends ChainSourceConfig {
  readonly path: string;
  readonly max_body_bytes: number;
  readonly max_line_bytes: number;
  readonly max_connections: number;
  readonly read_timeout_ms: number;
}

/** Seconds an exporter is asked to wait when the pipeline is saturated (503). */
const RETRY_AFTER_S = 1;

/**
 * Body bytes all requests under way may hold together, in `max_body_bytes`: past it a request is
 * answered 503, so many slow or concurrent uploads cannot grow memory without bound.
 */
const BODIES_IN_MEMORY = 4;

export const OTLP_SOURCE: PluginSpec = {
  doc: 'receives OpenTelemetry logs over OTLP/HTTP (protobuf or JSON, gzip or deflate) from SDKs and Collectors; answers once the entries are delivered',
  fields: chainSourceFields({
    path: { t: 'string', def: '/v1/logs', nonEmpty: true, doc: 'request path exporters POST to' },
    max_body_bytes: {
      t: 'number',
      def: 20971520,
      int: true,
      min: 1,
      doc: 'a larger request body, as received or once decompressed, is answered 413',
    },
    max_line_bytes: {
      t: 'number',
      def: 1048576,
      int: true,
      min: 64,
      doc: 'the most one mapped entry may take as JSON; larger records are counted in `parse_errors` and reported in partial_success',
    },
    max_connections: { t: 'number', def: 0, int: true, min: 0, unit: 'connections', doc: 'connections beyond this are refused (`rejected_conns`); 0 = unlimited' },
    read_timeout_ms: { t: 'number', def: 30000, int: true, min: 0, doc: 'time allowed to receive a whole request (headers within 10 s at most); 0 = none' },
    buffer_size: CHAIN_SOURCE_BUFFER_SIZE,
  }),
};

interface Peer {
  readonly session: Session;
  readonly allowed: boolean;
}

export const createOtlpSource: SourceFactory = (plugin, ctx): Source => {
  const cfg = chainSourceConfig<OtlpSourceConfig>(plugin, OTLP_SOURCE);
  const counters = {
    total_entries: 0,
    dropped_entries: 0,
    total_requests: 0,
    rejected_requests: 0,
    parse_errors: 0,
    active_connections: 0,
    rejected_conns: 0,
    tls_handshake_errors: 0,
    auth_rejected: 0,
  };
  const { tlsOptions, authorize } = serverSecurity('source', plugin.id, cfg, ctx, counters);
  const peers = new WeakMap<Socket, Peer>();
  let server: Server | undefined;
  let started = false;
  let paused = false;
  let stopping = false;
  const bodies = { held: 0, bound: cfg.max_body_bytes * BODIES_IN_MEMORY };
  /** requests whose entries are not all done yet; a stopping source waits for them */
  let answering = 0;
  let drained: (() => void) | undefined;

  const answer = (res: ServerResponse, status: number, body: Buffer, encoding: OtlpEncoding, headers: Record<string, string> = {}) => {
    if (status >= 400) counters.rejected_requests++;
    if (res.headersSent || res.destroyed) return;
    res.writeHead(status, { 'Content-Type': mediaType(encoding), 'Content-Length': body.length, ...headers });
    res.end(body);
  };
  const fault = (res: ServerResponse, status: number, message: string, encoding: OtlpEncoding, headers: Record<string, string> = {}) =>
    answer(res, status, encodeStatus(status, message, encoding), encoding, headers);
  const busy = (res: ServerResponse, encoding: OtlpEncoding) =>
    fault(res, 503, stopping ? 'shutting down' : `${ctx.saturationReason?.() ?? 'pipeline saturated'}, retry later`, encoding, { 'Retry-After': String(RETRY_AFTER_S) });
  const saturated = () => stopping || !started || paused || ctx.isSaturated();

  const onConnection = (socket: Socket, tls: boolean) => {
    let identity: string | undefined;
    let allowed = true;
    if (tls) {
      const verdict = authorize(socket as TLSSocket);
      allowed = verdict.ok;
      if (verdict.ok) identity = verdict.identity;
    }
    const session = openSession(socket, tls, ctx.log, identity);
    peers.set(socket, { session, allowed });
    counters.active_connections++;
    socket.once('close', () => {
      counters.active_connections--;
      closeSession(session, ctx.log);
    });
  };

  /** Emits the entries in batches of buffer_size; answers 200 once all are done. */
  const ingest = (res: ServerResponse, entries: Entry[], rejected: number, encoding: OtlpEncoding) => {
    const ok = () => answer(res, 200, encodeExportResponse(rejected, rejected > 0 ? `${rejected} log records over max_line_bytes (${cfg.max_line_bytes}) once mapped` : '', encoding), encoding);
    counters.total_entries += entries.length;
    if (entries.length === 0) {
      ok();
      return;
    }
    // +1 holds the answer until every batch was emitted (a batch may be done at once)
    let owed = 1;
    answering++;
    const batchDone = () => {
      if (--owed > 0) return;
      answering--;
      ok();
      if (answering === 0) drained?.();
    };
    for (let at = 0; at < entries.length; at += cfg.buffer_size) {
      owed++;
      ctx.emit(at === 0 && entries.length <= cfg.buffer_size ? entries : entries.slice(at, at + cfg.buffer_size), batchDone);
    }
    batchDone();
  };

  const received = async (res: ServerResponse, raw: Buffer, encoding: OtlpEncoding, contentEncoding: string) => {
    let body: Buffer;
    try {
      body = contentEncoding === '' ? raw : await inflateLimited(raw, contentEncoding, cfg.max_body_bytes);
    } catch (err) {
      const f = err as BodyFault;
      counters.parse_errors++;
      if (f.tooLarge) fault(res, 413, `body over max_body_bytes (${cfg.max_body_bytes}) once decompressed`, encoding, { Connection: 'close' });
      else fault(res, 400, `body does not decompress as ${contentEncoding}: ${errorMessage(err)}`, encoding);
      return;
    }
    let request: OtlpRequest;
    try {
      request = encoding === 'json' ? decodeJsonRequest(body.toString('utf8')) : decodeRequest(body);
    } catch (err) {
      counters.parse_errors++;
      fault(res, 400, `${encoding === 'json' ? 'JSON' : 'protobuf'} body does not decode as an ExportLogsServiceRequest: ${errorMessage(err)}`, encoding);
      return;
    }
    // the body took time to arrive: the pipeline may have filled meanwhile
    if (saturated()) {
      busy(res, encoding);
      return;
    }
    const { entries, rejected } = mapRequest(request, Date.now(), cfg.max_line_bytes, encoding === 'json' ? body.length : 0);
    counters.parse_errors += rejected;
    ingest(res, entries, rejected, encoding);
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    counters.total_requests++;
    const peer = peers.get(req.socket);
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const encoding = encodingOf(req.headers['content-type']);
    const replyIn = encoding ?? 'json';
    if (peer && !peer.allowed) {
      req.resume();
      fault(res, 403, 'client identity not allowed', replyIn, { Connection: 'close' });
      return;
    }
    if (path !== cfg.path) {
      req.resume();
      fault(res, 404, `not found: logs are POSTed to ${cfg.path}`, replyIn);
      return;
    }
    if (req.method !== 'POST') {
      req.resume();
      fault(res, 405, `method ${req.method ?? ''} not allowed: use POST`, replyIn, { Allow: 'POST' });
      return;
    }
    if (encoding === undefined) {
      req.resume();
      fault(res, 415, `unsupported Content-Type ${JSON.stringify(req.headers['content-type'] ?? '')}: use application/x-protobuf or application/json`, replyIn);
      return;
    }
    const contentEncoding = (req.headers['content-encoding'] ?? '').trim().toLowerCase();
    if (contentEncoding !== '' && contentEncoding !== 'identity' && contentEncoding !== 'gzip' && contentEncoding !== 'deflate') {
      req.resume();
      fault(res, 400, `unsupported Content-Encoding ${JSON.stringify(contentEncoding)}: use gzip, deflate or none`, encoding);
      return;
    }
    if (saturated()) {
      req.resume();
      busy(res, encoding);
      return;
    }
    readLimitedBody(req, cfg.max_body_bytes, bodies, (outcome) => {
      if (outcome === 'too_large') {
        fault(res, 413, `body over max_body_bytes (${cfg.max_body_bytes})`, encoding, { Connection: 'close' });
      } else if (outcome === 'busy') {
        busy(res, encoding);
      } else if (outcome !== 'aborted') {
        received(res, outcome, encoding, contentEncoding === 'identity' ? '' : contentEncoding).catch((err: unknown) => {
          // not expected: the request is refused rather than the worker lost
          ctx.log.error({ error: errorMessage(err) }, 'OTLP request failed');
          fault(res, 500, `internal error: ${errorMessage(err)}`, encoding);
        });
      }
    });
  };

  return {
    id: plugin.id,
    type: 'otlp',
    counters,
    pausable: true,
    acksUpstream: true,
    async open() {
      if (ctx.checkOnly) return;
      // the headers within a few seconds, the whole request within read_timeout_ms (net/http-server.ts)
      const srv = createHttpListener(tlsOptions, { requestTimeoutMs: cfg.read_timeout_ms, keepAliveTimeoutMs: 65_000 }, handle);
      // connections past max_connections are refused before any TLS handshake (cluster workers
      // get their sockets from the primary, so the server's own maxConnections does not apply)
      let open = 0;
      srv.on('connection', (s: Socket) => {
        if (cfg.max_connections > 0 && open >= cfg.max_connections) {
          counters.rejected_conns++;
          s.destroy();
          return;
        }
        open++;
        s.once('close', () => open--);
        if (!tlsOptions) onConnection(s, false);
      });
      if (tlsOptions) {
        srv.on('secureConnection', (s: TLSSocket) => onConnection(s, true));
        countHandshakeErrors(srv, counters);
      }
      await bind(srv, 'source', plugin.id, cfg.host, cfg.port);
      server = srv;
    },
    start() {
      started = true;
    },
    pause() {
      paused = true;
    },
    resume() {
      paused = false;
    },
    async stop(deadline = Date.now()) {
      if (stopping) return;
      stopping = true;
      const srv = server;
      if (!srv) return;
      // requests under way are answered once their entries are done, until the deadline
      await closeHttpListener(srv, answering > 0 ? () => doneBy(deadline, (wake) => (drained = wake)) : undefined);
    },
  };
};
