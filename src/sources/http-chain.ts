// `http_chain` source: the receiving end of an HTTP chain link (DESIGN.md §9). Each
// `POST <path>` carries an NDJSON batch; its entries are emitted as one batch and answered with
// 204 once queued (and handed on where the sinks have room), or 503 with Retry-After while the
// pipeline is saturated or too many bodies are being received at once.

import { StringDecoder } from 'node:string_decoder';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { HEADER_ACCEPT_ENCODING, HEADER_ACCEPTED, HEADER_NODE, HEADER_PROTOCOL, LineSplitter, PROTOCOL_VERSION, reportPath, RETRY_AFTER_S } from '../chain/protocol.js';
import { decodeEntry, trailingIdOf } from '../core/entry-line.js';
import { reportSourceCounters, takeReport } from '../chain/reports.js';
import { parseJsonText } from '../core/entry.js';
import { CHAIN_SOURCE_BUFFER_SIZE, type ChainSourceConfig, chainSourceConfig, chainSourceFields } from '../net/source-config.js';
import type { PluginSpec } from '../config/spec.js';
import { doneBy } from '../core/ack.js';
import type { Entry } from '../core/entry.js';
import { type BodyFault, INFLATABLE, inflateLimited, readLimitedChunks } from '../net/http-body.js';
import { closeHttpListener, createHttpListener } from '../net/http-server.js';
import { bind, countHandshakeErrors } from '../net/listener.js';
import { closeSession, openSession, type Session } from '../net/session.js';
import { serverSecurity } from '../net/tls.js';
import type { Source, SourceFactory } from './types.js';

interface HttpChainSourceConfig extends ChainSourceConfig {
  readonly path: string;
  readonly max_body_bytes: number;
  /** time allowed to receive a whole request, ms; 0 = none */
  readonly read_timeout_ms: number;
}

interface Peer {
  readonly session: Session;
  /** false when the client's identity is not allowed */
  readonly allowed: boolean;
}

/**
 * Body bytes all requests under way may hold together, in `max_body_bytes`: past it a request is
 * answered 503 (Retry-After), so many slow or concurrent uploads cannot grow memory without bound.
 */
const BODIES_IN_MEMORY = 4;

const json = (res: ServerResponse, status: number, body: object, headers: Record<string, string> = {}) => {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
};

/** What this node's http_chain source inflates, as HEADER_ACCEPT_ENCODING says it. */
const ACCEPT_ENCODING = [...INFLATABLE].join(', ');

export const HTTP_CHAIN_SOURCE: PluginSpec = {
  doc: 'receives NDJSON batches from other nodes\' `http_chain` sinks (chain protocol v1 over HTTP)',
  fields: chainSourceFields({
    path: { t: 'string', def: '/ingest', nonEmpty: true, doc: 'request path batches are POSTed to' },
    max_body_bytes: { t: 'number', def: 8388608, int: true, min: 1, doc: 'a larger request body is answered 413' },
    buffer_size: CHAIN_SOURCE_BUFFER_SIZE,
    read_timeout_ms: { t: 'number', def: 30000, int: true, min: 0, doc: 'time allowed to receive a whole request; 0 = none' },
  }),
};

export const createHttpChainSource: SourceFactory = (plugin, ctx): Source => {
  const cfg = chainSourceConfig<HttpChainSourceConfig>(plugin, HTTP_CHAIN_SOURCE);
  const counters = {
    total_entries: 0,
    dropped_entries: 0,
    total_requests: 0,
    active_connections: 0,
    parse_errors: 0,
    tls_handshake_errors: 0,
    auth_rejected: 0,
    ...reportSourceCounters(),
    /** request body bytes as received (compressed or not) */
    bytes_received: 0,
  };
  const reportsAt = reportPath(cfg.path);
  const { tlsOptions, authorize } = serverSecurity('source', plugin.id, cfg, ctx, counters);
  const peers = new WeakMap<Socket, Peer>();
  let server: Server | undefined;
  let started = false;
  let paused = false;
  let stopping = false;
  const bodies = { held: 0, bound: cfg.max_body_bytes * BODIES_IN_MEMORY };
  const busy = (res: ServerResponse) => json(res, 503, { error: stopping ? 'shutting down' : 'busy' }, { 'Retry-After': String(RETRY_AFTER_S) });

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

  /** requests whose entries are not all done yet; a stopping source waits for them */
  let answering = 0;
  let drained: (() => void) | undefined;

  const ingest = (req: IncomingMessage, res: ServerResponse, peer: Peer | undefined, body: readonly Buffer[]) => {
    const node = peer?.session.auth_identity ?? (headerValue(req.headers[HEADER_NODE]) || undefined);
    const now = Date.now();
    let accepted = 0;
    // the 204 goes out once every batch of the body is done (DESIGN.md §15); +1 holds it until
    // the whole body was emitted
    let owed = 1;
    answering++;
    const batchDone = () => {
      if (--owed > 0) return;
      answering--;
      if (!res.destroyed) {
        res.writeHead(204, { [HEADER_ACCEPTED]: String(accepted), [HEADER_ACCEPT_ENCODING]: ACCEPT_ENCODING });
        res.end();
      }
      if (answering === 0) drained?.();
    };
    let batch: Entry[] = [];
    const { duplicate } = ctx;
    const onLine = (line: string) => {
      if (line.length === 0) return;
      if (duplicate) {
        // a copy the dedup window already has (the other relay's) is dropped before its decode
        const id = trailingIdOf(line);
        if (id !== undefined && duplicate(id, now)) {
          accepted++;
          counters.total_entries++;
          return;
        }
      }
      const entry = decodeEntry(line, node, now, ctx.pipeline);
      if (!entry) {
        counters.parse_errors++;
        return;
      }
      batch.push(entry);
      if (batch.length >= cfg.buffer_size) {
        accepted += batch.length;
        counters.total_entries += batch.length;
        owed++;
        ctx.emit(batch, batchDone);
        batch = [];
      }
    };
    // each chunk decoded as it arrived (lines split across two are joined): a string per line
    // decoded from the bytes cost a native call each, the body made whole a copy of it
    const decoder = new StringDecoder('utf8');
    const lines = new LineSplitter(Number.POSITIVE_INFINITY);
    for (const chunk of body) lines.push(decoder.write(chunk), onLine);
    lines.push(decoder.end(), onLine);
    lines.end(onLine);
    if (batch.length > 0) {
      accepted += batch.length;
      counters.total_entries += batch.length;
      owed++;
      ctx.emit(batch, batchDone);
    }
    batchDone();
  };

  /** `POST <path>/report`: node reports, one JSON object per line; never entries, answered 204 even while the pipeline is saturated. */
  const takeReports = (req: IncomingMessage, res: ServerResponse, peer: Peer | undefined) => {
    readLimitedChunks(req, cfg.max_body_bytes, bodies, (outcome) => {
      if (outcome === 'too_large') {
        json(res, 413, { error: `body over max_body_bytes (${cfg.max_body_bytes})` }, { Connection: 'close' });
      } else if (outcome === 'busy') {
        busy(res);
      } else if (outcome !== 'aborted') {
        const identity = peer?.session.auth_identity;
        let accepted = 0;
        let rejected = 0;
        for (const line of Buffer.concat(outcome).toString('utf8').split('\n')) {
          if (line.trim() === '') continue;
          if (takeReport(parseJsonText(line), identity, counters, ctx.report)) accepted++;
          else rejected++;
        }
        // refused (403) only when nothing in it was taken: the sender counts the whole request
        res.writeHead(rejected > 0 && accepted === 0 ? 403 : 204);
        res.end();
      }
    });
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    counters.total_requests++;
    const peer = peers.get(req.socket);
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (peer && !peer.allowed) {
      req.resume();
      json(res, 403, { error: 'forbidden' }, { Connection: 'close' });
      return;
    }
    if (path === reportsAt && req.method === 'POST' && headerValue(req.headers[HEADER_PROTOCOL]) === String(PROTOCOL_VERSION) && !stopping) {
      takeReports(req, res, peer);
      return;
    }
    if (path !== cfg.path) {
      req.resume();
      json(res, 404, { error: 'not found' });
      return;
    }
    if (req.method !== 'POST') {
      req.resume();
      json(res, 405, { error: 'method not allowed' }, { Allow: 'POST' });
      return;
    }
    const version = headerValue(req.headers[HEADER_PROTOCOL]);
    if (version !== String(PROTOCOL_VERSION)) {
      counters.parse_errors++;
      req.resume();
      json(res, 400, { error: version ? `unsupported protocol version ${JSON.stringify(version)}, want 1` : `missing X-Logrelay-Protocol header` });
      return;
    }
    // a compressed batch (DESIGN.md §25): gzip, deflate, zstd where the runtime has it; others 415
    const encoding = (headerValue(req.headers['content-encoding']) ?? '').trim().toLowerCase();
    if (encoding !== '' && encoding !== 'identity' && !INFLATABLE.has(encoding)) {
      req.resume();
      json(res, 415, { error: `unsupported Content-Encoding ${JSON.stringify(encoding)} (this node takes ${[...INFLATABLE].join(', ')})` });
      return;
    }
    if (stopping || !started || paused || ctx.isSaturated()) {
      req.resume();
      busy(res);
      return;
    }
    const tooLarge = () => json(res, 413, { error: `body over max_body_bytes (${cfg.max_body_bytes})` }, { Connection: 'close' });
    readLimitedChunks(req, cfg.max_body_bytes, bodies, (outcome) => {
      if (outcome === 'too_large') {
        tooLarge();
      } else if (outcome === 'busy') {
        busy(res);
      } else if (outcome !== 'aborted') {
        for (const chunk of outcome) counters.bytes_received += chunk.length;
        if (encoding === '' || encoding === 'identity') {
          ingest(req, res, peer, outcome);
          return;
        }
        // inflated with a cap: a bomb stops at max_body_bytes, never inflated whole
        inflateLimited(outcome.length === 1 ? outcome[0]! : Buffer.concat(outcome), encoding, cfg.max_body_bytes).then(
          (body) => ingest(req, res, peer, [body]),
          (err: BodyFault) => {
            if (err.tooLarge) tooLarge();
            else {
              counters.parse_errors++;
              json(res, 400, { error: `body does not inflate as ${encoding}` });
            }
          },
        );
      }
    });
  };

  return {
    id: plugin.id,
    type: 'http_chain',
    counters,
    pausable: true,
    acksUpstream: true,
    async open() {
      if (ctx.checkOnly) return;
      const srv = createHttpListener(tlsOptions, { requestTimeoutMs: cfg.read_timeout_ms, keepAliveTimeoutMs: 65_000 }, handle);
      if (tlsOptions) {
        srv.on('secureConnection', (s: TLSSocket) => onConnection(s, true));
        countHandshakeErrors(srv, counters);
      } else {
        srv.on('connection', (s: Socket) => onConnection(s, false));
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
      // Requests under way are answered once their entries are done (the pipeline drains on
      // meanwhile), until the deadline; then everyone goes.
      await closeHttpListener(srv, answering > 0 ? () => doneBy(deadline, (wake) => (drained = wake)) : undefined);
    },
  };
};

function headerValue(v: string | string[] | undefined): string {
  return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
}
