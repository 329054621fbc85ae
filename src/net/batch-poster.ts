// The batch poster of the HTTP sinks that deliver (http_chain, otlp): batches closed by a
// `BatchBuilder` (batch-builder.ts) are POSTed over a keep-alive agent, up to max_in_flight at
// once, a failed one retried with backoff (never sooner than the peer's Retry-After) while it is
// held, one refused 413 split in two, and the ones refused for good handed back to the sink to
// count or hand to its dead letter sink.

import { Agent as HttpAgent, type ClientRequest, type IncomingHttpHeaders, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { ConnectionOptions } from 'node:tls';
import type { Ticket } from '../core/ack.js';
import { Backoff } from '../core/backoff.js';
import type { Entry } from '../core/entry.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { startProbe } from './http-probe.js';
import { type PostAnswer, PostClient } from './post-client.js';

/**
 * A `Retry-After` header as ms: delta seconds (`120`, `0.5`) or an HTTP date, counted from `now`;
 * undefined when absent or unreadable. A date in the past is 0.
 */
export function retryAfterMs(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  const s = Number(v);
  if (Number.isFinite(s)) return Math.max(0, s * 1000);
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, t - now);
}

/** The longest a timer can wait (setTimeout takes a signed 32-bit delay). */
const MAX_TIMER_MS = 2_147_483_647;

/** Spread added to a Retry-After so that many senders told the same do not come back at once. */
const RETRY_AFTER_JITTER = 0.2;

/**
 * The wait before a retry: the backoff's next delay, and never less than the peer's Retry-After
 * (with up to 20 % added), itself capped at `capMs`.
 */
export function retryDelayMs(backoffMs: number, retryAfter: number | undefined, capMs: number): number {
  const asked = retryAfter === undefined ? 0 : Math.min(capMs, Math.round(retryAfter * (1 + RETRY_AFTER_JITTER * Math.random())));
  return Math.min(Math.max(backoffMs, asked), MAX_TIMER_MS);
}

/** What the poster needs of a batch. */
export interface PostBatch {
  /** entries in it */
  readonly count: number;
  /** the entries' tickets, settled by the sink once the batch is over */
  readonly tickets: readonly (Ticket | undefined)[];
  /** the entries, kept only when the sink has a dead letter sink to hand them to */
  readonly entries?: readonly Entry[];
}

/** A request body: its pieces, written in turn, and the headers it goes with. */
export interface PostBody {
  readonly chunks: readonly Buffer[];
  readonly bytes: number;
  readonly headers?: Readonly<Record<string, string | number>>;
}

/** The counters the poster keeps; `reconnects`, where a sink has it, counts the same failures. */
export interface PosterCounters {
  batches_sent: number;
  retries: number;
  reconnects?: number;
}

/** The keys of a posting sink the poster reads. */
export interface PosterConfig {
  /** requests under way at once; also the agent's sockets */
  readonly max_in_flight: number;
  /** a request unanswered this long fails and is retried, ms */
  readonly request_timeout_ms: number;
  /** first retry delay, ms; doubles per failure up to backoff_max_ms, ±20 % jitter */
  readonly backoff_min_ms: number;
  readonly backoff_max_ms: number;
}

export interface BatchPosterOptions<B extends PostBatch> {
  /** where batches go; `remote` names it in the log; `tls` undefined = plain HTTP */
  readonly target: { readonly host: string; readonly port: number; readonly path: string; readonly tls: ConnectionOptions | undefined; readonly remote: string };
  /** headers of every request */
  readonly headers: Readonly<Record<string, string | number>>;
  readonly cfg: PosterConfig;
  /** `checkOnly` (for `check`): nothing is posted */
  readonly ctx: { readonly log: Logger; readonly checkOnly: boolean };
  readonly counters: PosterCounters;
  /** the link state the outcomes feed (`connected`) */
  readonly link: { succeeded(fields?: Record<string, unknown>): void; failed(fields?: Record<string, unknown>): void };
  /** the longest wait a Retry-After is honoured for, ms (Infinity: whole) */
  readonly retryAfterCapMs: number;
  /** statuses sent again; any other non-2xx (but a splittable 413) is refused for good */
  isRetryable(status: number): boolean;
  /** the log lines of a failed attempt: the first of an outage (WARN, or `level`), the others (DEBUG) */
  readonly lines: { readonly retrying: string; readonly attemptFailed: string; readonly level?: (reason: string) => 'warn' | 'error' };
  /** The batch's body: made once by the sink and kept for its retries; a rejection drops the batch (`unencodable`). */
  body(batch: B): PostBody | Promise<PostBody>;
  /** Every attempt's body as it goes out (bytes counters). */
  sending?(batch: B, body: PostBody): void;
  /** A 2xx: what the sink reads from the answer (partial success, the peer's encodings). */
  accepted?(batch: B, res: PostAnswer, body: Buffer): void;
  /** A status refused for good: the sink counts the drop or hands the entries to its dead letter sink. */
  refused(batch: B, status: number, body: Buffer): void;
  /** The body could not be made (it should not happen): the sink counts the drop. */
  unencodable(batch: B, err: unknown): void;
  /**
   * A status a batch would be refused for good: the same entries in a form the peer may take
   * instead (an http_chain batch in an older protocol version), first in line; undefined: refused.
   */
  fallback?(batch: B, status: number): B | undefined;
  /** Two halves of a batch refused 413, in order; undefined when it cannot be split (one entry). */
  split(batch: B): [B, B] | undefined;
  /** The batch is over (delivered, refused or dropped): the sink settles its tickets. */
  finished(batch: B): void;
}

export interface BatchPoster<B extends PostBatch> {
  /** Queues a closed batch and posts what the window has room for. */
  push(batch: B): void;
  /** requests under way (a body being compressed counts) */
  inFlight(): number;
  /** a request could go now: room in the window, nothing waiting, no retry pending */
  hasRoom(): boolean;
  /** nothing out, nothing waiting, no retry pending */
  idle(): boolean;
  /** entries of the batches queued or out */
  held(): number;
  /** the last attempt failed: a redundant path (fanout = "any") skips this sink meanwhile */
  failing(): boolean;
  /** the last request found no peer (a network error): `on_full = "auto"` drops meanwhile */
  down(): boolean;
  /** A request on the poster's agent, not ended (node reports, the probe). */
  request(path: string, headers: Readonly<Record<string, string | number>>): ClientRequest;
  /** Dials at start: an empty request repeated with backoff until the peer answers at all. */
  probe(o: { readonly body?: Buffer; readonly line: string; readonly counters?: { reconnects: number }; answered?(status: number, headers: IncomingHttpHeaders): void }): void;
  /** closing: failures are no longer logged as an outage or counted as the link's */
  closing(): void;
  /** Stops the retry timer and the probe, closes the agent's sockets. */
  close(): void;
}

/** Most bytes of a response body read (partial_success, or the start of an error for the log). */
const MAX_RESPONSE_BYTES = 64 * 1024;

/** How long an idle kept-alive socket is kept, ms. */
const AGENT_IDLE_MS = 30_000;

export function createBatchPoster<B extends PostBatch>(o: BatchPosterOptions<B>): BatchPoster<B> {
  const { counters, cfg, target } = o;
  const { log } = o.ctx;
  const { remote } = target;
  const backoffOf = () => new Backoff({ min_ms: cfg.backoff_min_ms, max_ms: cfg.backoff_max_ms, jitter: 0.2 });
  const backoff = backoffOf();
  const send = target.tls ? httpsRequest : httpRequest;
  const agent: HttpAgent = target.tls
    ? new HttpsAgent({ ...target.tls, keepAlive: true, maxSockets: cfg.max_in_flight, timeout: AGENT_IDLE_MS })
    : new HttpAgent({ keepAlive: true, maxSockets: cfg.max_in_flight, timeout: AGENT_IDLE_MS });
  // batches go by the lean client (post-client.ts); node reports and the probe by the agent
  const client = new PostClient({ host: target.host, port: target.port, tls: target.tls, maxSockets: cfg.max_in_flight, idleMs: AGENT_IDLE_MS, headers: o.headers, maxBody: MAX_RESPONSE_BYTES });
  const ready: B[] = [];
  let readyEntries = 0;
  let inFlight = 0;
  let retryTimer: NodeJS.Timeout | undefined;
  let outageLogged = false;
  let failing = false;
  let down = false;
  let closing = false;
  let probe: { stop(): void } | undefined;

  const request = (path: string, headers: Readonly<Record<string, string | number>>) => send({ host: target.host, port: target.port, path, method: 'POST', agent, headers: { ...o.headers, ...headers } });

  const over = (batch: B) => {
    readyEntries -= batch.count;
    o.finished(batch);
  };

  const retry = (batch: B, reason: string, retryAfter?: number) => {
    // first in line again; the others out meanwhile come back the same way if they fail too
    ready.unshift(batch);
    failing = true;
    counters.retries++;
    if (counters.reconnects !== undefined) counters.reconnects++;
    const fields = { remote, error: reason, held: readyEntries };
    if (!outageLogged && !closing) {
      outageLogged = true;
      log[o.lines.level?.(reason) ?? 'warn'](fields, o.lines.retrying);
    } else {
      log.debug(fields, o.lines.attemptFailed);
    }
    if (retryTimer) return;
    retryTimer = setTimeout(
      () => {
        retryTimer = undefined;
        pump();
      },
      retryDelayMs(backoff.next(), retryAfter, o.retryAfterCapMs),
    );
  };

  const answered = (batch: B, status: number, res: PostAnswer, body: Buffer) => {
    if (status >= 200 && status < 300) {
      counters.batches_sent++;
      failing = false;
      backoff.reset();
      outageLogged = false;
      o.accepted?.(batch, res, body);
      over(batch);
      return;
    }
    if (o.isRetryable(status)) {
      retry(batch, `HTTP ${status}`, retryAfterMs(res.headers['retry-after']));
      return;
    }
    const instead = o.fallback?.(batch, status);
    if (instead) {
      // the same entries again at once, in the form the peer takes: not a failure of the link
      ready.unshift(instead);
      return;
    }
    const halves = status === 413 ? o.split(batch) : undefined;
    if (halves) {
      // two halves, first in line, in order
      ready.unshift(...halves);
      log.debug({ remote, entries: batch.count }, 'Batch too large for the peer (413), split in two');
    } else {
      o.refused(batch, status, body);
      over(batch);
    }
  };

  const postBody = (batch: B, body: PostBody) => {
    o.sending?.(batch, body);
    client.post(target.path, body.headers, body.chunks, body.bytes, cfg.request_timeout_ms, (err, res) => {
      inFlight--;
      if (err || !res) {
        const error = errorMessage(err);
        if (!closing) {
          o.link.failed({ error });
          down = true;
        }
        retry(batch, error);
      } else {
        const status = res.statusCode;
        down = false;
        // up only on success (a peer answering 503 to everything is not an up link); a retried
        // status counts toward down, other refusals drop their batch
        if (status >= 200 && status < 300) o.link.succeeded({ status });
        else if (o.isRetryable(status)) o.link.failed({ status });
        answered(batch, status, res, res.body);
      }
      pump();
    });
  };

  const unencodable = (batch: B, err: unknown) => {
    inFlight--;
    o.unencodable(batch, err);
    over(batch);
    pump();
  };

  const post = (batch: B) => {
    inFlight++;
    let body: PostBody | Promise<PostBody>;
    try {
      body = o.body(batch);
    } catch (err) {
      unencodable(batch, err);
      return;
    }
    // a body made at once (no compression) goes without a promise
    if (body instanceof Promise) body.then((b) => postBody(batch, b), (err: unknown) => unencodable(batch, err));
    else postBody(batch, body);
  };

  const pump = () => {
    while (inFlight < cfg.max_in_flight && !retryTimer && ready.length > 0 && !o.ctx.checkOnly) post(ready.shift()!);
  };

  return {
    push(batch) {
      ready.push(batch);
      readyEntries += batch.count;
      pump();
    },
    inFlight: () => inFlight,
    hasRoom: () => inFlight < cfg.max_in_flight && !retryTimer && ready.length === 0,
    idle: () => inFlight === 0 && !retryTimer && ready.length === 0,
    held: () => readyEntries,
    failing: () => failing,
    down: () => down,
    request,
    probe(p) {
      probe = startProbe({
        request: () => request(target.path, { 'Content-Length': p.body?.length ?? 0 }),
        ...(p.body ? { body: p.body } : {}),
        timeoutMs: cfg.request_timeout_ms,
        backoff: backoffOf(),
        log,
        remote,
        line: p.line,
        ...(p.counters ? { counters: p.counters } : {}),
        onAnswer: (status, headers) => {
          down = false;
          if (status >= 200 && status < 300) o.link.succeeded({ status });
          else o.link.failed({ status });
          p.answered?.(status, headers);
        },
        onFailure: (error) => {
          down = true;
          if (!closing) o.link.failed({ error });
        },
      });
    },
    closing() {
      closing = true;
      probe?.stop();
    },
    close() {
      closing = true;
      probe?.stop();
      clearTimeout(retryTimer);
      retryTimer = undefined;
      agent.destroy();
      client.destroy();
    },
  };
}
