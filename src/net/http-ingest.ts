// The HTTP ingest skeleton every listening HTTP source uses (http_chain, otlp): the listener with
// its timeouts, `max_connections` refused before any TLS handshake, a session per connection and
// its client identity, the requests refused before their body (403, 404, 405, 503 + Retry-After
// while the pipeline is saturated or the source stopping), bodies read within max_body_bytes and
// a shared bound, and the answer held until every batch emitted from a body is done (§15), which
// a stopping source waits for until its deadline.

import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { doneBy } from '../core/ack.js';
import type { Counters } from '../core/counters.js';
import type { Entry } from '../core/entry.js';
import type { SourceContext } from '../core/source.js';
import { type BodyBudget, readLimitedChunks } from './http-body.js';
import { closeHttpListener, createHttpListener } from './http-server.js';
import { bind, countHandshakeErrors } from './listener.js';
import { closeSession, openSession, type Session } from './session.js';
import { type AuthConfig, serverSecurity, type TlsConfig } from './tls.js';

/** Seconds a sender is asked to wait when the pipeline is saturated or the source stopping (503). */
export const BUSY_RETRY_AFTER_S = 1;

/**
 * Body bytes all requests under way may hold together, in `max_body_bytes`: past it a request is
 * answered 503 (Retry-After), so many slow or concurrent uploads cannot grow memory without bound.
 */
const BODIES_IN_MEMORY = 4;

/** How long an idle kept-alive connection stays open, ms (longer than a sender's agent keeps it). */
const KEEP_ALIVE_MS = 65_000;

/** A connection's peer: its session (identity, remote) and whether its identity is allowed. */
export interface IngestPeer {
  readonly session: Session;
  /** false when the client's identity is not allowed: every request is answered 403 */
  readonly allowed: boolean;
}

/** The listening keys every HTTP source has. */
export interface HttpIngestConfig {
  readonly host: string;
  readonly port: number;
  readonly path: string;
  readonly max_body_bytes: number;
  /** connections held at once; more are refused (`rejected_conns`); 0 = unlimited */
  readonly max_connections: number;
  /** time allowed to receive a whole request, ms; 0 = none */
  readonly read_timeout_ms: number;
  readonly tls: TlsConfig;
  /** the identities allowed (mutual TLS) */
  readonly auth?: AuthConfig;
}

export interface HttpIngestOptions {
  /** the source's id */
  readonly id: string;
  readonly cfg: HttpIngestConfig;
  readonly ctx: SourceContext;
  /** `active_connections`, `rejected_conns`, `tls_handshake_errors`, `auth_rejected`, `total_requests` are counted here */
  readonly counters: Counters;
  /** Writes an answer in the source's own form (a JSON error, a google.rpc.Status…). */
  readonly reply: (res: ServerResponse, status: number, message: string, headers?: Record<string, string>) => void;
  /** The messages of the refusals made here, by status (403, 404, 405) and of a saturated 503. */
  readonly messages: { readonly forbidden: string; readonly notFound: string; readonly notPost: (method: string) => string; readonly busy: () => string };
  /** A request on another path than `cfg.path` it takes (true) before the 404 (e.g. node reports). */
  readonly otherPath?: (req: IncomingMessage, res: ServerResponse, peer: IngestPeer | undefined, path: string) => boolean;
  /** A `POST <path>` from an allowed peer: the source checks its headers and calls `receive`. */
  readonly onPost: (req: IncomingMessage, res: ServerResponse, peer: IngestPeer | undefined) => void;
}

/** Emits the batches of one request; the answer goes once all of them are done. */
export interface AnswerHold {
  /** emits `entries` (one batch), owed before the answer */
  emit(entries: Entry[]): void;
  /** every batch was emitted: the answer goes once they are done (at once when none is left) */
  release(): void;
}

export interface HttpIngest {
  /** true while a request is answered 503: stopping, not started, paused or the pipeline saturated */
  saturated(): boolean;
  /** The 503 + Retry-After answer. */
  busy(res: ServerResponse): void;
  /** Drains the request and answers it (a refusal before the body). */
  refuse(req: IncomingMessage, res: ServerResponse, status: number, message: string, headers?: Record<string, string>): void;
  /**
   * Reads the body within max_body_bytes and the shared bound (413, 503 answered here); `got`
   * takes the chunks as they arrived. Refused with 503 at once while saturated.
   */
  receive(req: IncomingMessage, res: ServerResponse, got: (chunks: Buffer[]) => void): void;
  /** Reads a body without the saturation check (node reports are taken while saturated). */
  readBody(res: ServerResponse, req: IncomingMessage, got: (chunks: Buffer[]) => void): void;
  /** The 413 for a body over max_body_bytes (received, or once inflated). */
  tooLarge(res: ServerResponse, message?: string): void;
  /** Holds `answer` until the batches emitted through the hold are done. */
  hold(answer: () => void): AnswerHold;
  /** the Source lifecycle: open binds, stop waits for the answers owed until `deadline` */
  open(): Promise<void>;
  start(): void;
  pause(): void;
  resume(): void;
  stop(deadline?: number): Promise<void>;
  readonly stopping: boolean;
}

export function createHttpIngest(o: HttpIngestOptions): HttpIngest {
  const { cfg, ctx, counters } = o;
  const { tlsOptions, authorize } = serverSecurity('source', o.id, cfg, ctx, counters);
  const peers = new WeakMap<Socket, IngestPeer>();
  const bodies: BodyBudget = { held: 0, bound: cfg.max_body_bytes * BODIES_IN_MEMORY };
  let server: Server | undefined;
  let started = false;
  let paused = false;
  let stopping = false;
  /** requests whose entries are not all done yet; a stopping source waits for them */
  let answering = 0;
  let drained: (() => void) | undefined;

  const saturated = () => stopping || !started || paused || ctx.isSaturated();
  const busy = (res: ServerResponse) => o.reply(res, 503, stopping ? 'shutting down' : o.messages.busy(), { 'Retry-After': String(BUSY_RETRY_AFTER_S) });
  const refuse = (req: IncomingMessage, res: ServerResponse, status: number, message: string, headers?: Record<string, string>) => {
    req.resume();
    o.reply(res, status, message, headers);
  };
  const tooLarge = (res: ServerResponse, message = `body over max_body_bytes (${cfg.max_body_bytes})`) => o.reply(res, 413, message, { Connection: 'close' });
  const readBody = (res: ServerResponse, req: IncomingMessage, got: (chunks: Buffer[]) => void) =>
    readLimitedChunks(req, cfg.max_body_bytes, bodies, (outcome) => {
      if (outcome === 'too_large') tooLarge(res);
      else if (outcome === 'busy') busy(res);
      else if (outcome !== 'aborted') got(outcome);
    });

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
    counters.active_connections = (counters.active_connections ?? 0) + 1;
    socket.once('close', () => {
      counters.active_connections = (counters.active_connections ?? 1) - 1;
      closeSession(session, ctx.log);
    });
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    counters.total_requests = (counters.total_requests ?? 0) + 1;
    const peer = peers.get(req.socket);
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (peer && !peer.allowed) refuse(req, res, 403, o.messages.forbidden, { Connection: 'close' });
    else if (path !== cfg.path && o.otherPath?.(req, res, peer, path)) return;
    else if (path !== cfg.path) refuse(req, res, 404, o.messages.notFound);
    else if (req.method !== 'POST') refuse(req, res, 405, o.messages.notPost(req.method ?? ''), { Allow: 'POST' });
    else o.onPost(req, res, peer);
  };

  return {
    saturated,
    busy,
    refuse,
    tooLarge,
    readBody,
    receive(req, res, got) {
      if (saturated()) {
        req.resume();
        busy(res);
        return;
      }
      readBody(res, req, got);
    },
    hold(answer) {
      // +1 holds the answer until every batch was emitted (a batch may be done at once)
      let owed = 1;
      answering++;
      const batchDone = () => {
        if (--owed > 0) return;
        answering--;
        answer();
        if (answering === 0) drained?.();
      };
      return {
        emit(entries) {
          owed++;
          ctx.emit(entries, batchDone);
        },
        release: batchDone,
      };
    },
    async open() {
      if (ctx.checkOnly) return;
      // the headers within a few seconds, the whole request within read_timeout_ms (http-server.ts)
      const srv = createHttpListener(tlsOptions, { requestTimeoutMs: cfg.read_timeout_ms, keepAliveTimeoutMs: KEEP_ALIVE_MS }, handle);
      // connections past max_connections are refused before any TLS handshake (cluster workers
      // get their sockets from the primary, so the server's own maxConnections does not apply)
      let open = 0;
      srv.on('connection', (s: Socket) => {
        if (cfg.max_connections > 0 && open >= cfg.max_connections) {
          counters.rejected_conns = (counters.rejected_conns ?? 0) + 1;
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
      await bind(srv, 'source', o.id, cfg.host, cfg.port);
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
    get stopping() {
      return stopping;
    },
  };
}
