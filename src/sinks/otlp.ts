// `otlp` sink: OTLP/HTTP logs exporter (DESIGN.md §20). Entries become LogRecords grouped by
// resource and scope, in batches closed at max_batch_count, max_batch_bytes or flush_interval_ms
// after a batch's first entry; POSTed (gzip and protobuf by default) over a keep-alive agent,
// up to max_in_flight at once. 429, 502, 503, 504, timeouts and network errors are retried
// while the batch is held (Retry-After honoured); 413 splits the batch; other statuses drop it.

import { Agent as HttpAgent, type IncomingMessage, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { HeldWaiters } from '../net/held-waiters.js';
import { createRequestLinkState } from '../net/link-state.js';
import { type Fields, isPlainObject, type PluginSpec, type Spec } from '../config/spec.js';
import { settle, type Ticket } from '../core/ack.js';
import type { Entry } from '../core/entry.js';
import { Backoff } from '../core/backoff.js';
import { errorMessage, PluginError } from '../core/errors.js';
import { pluginConfig, sinkQueueFields } from '../core/plugin-config.js';
import type { OnFull } from '../core/queue.js';
import { VERSION } from '../core/version.js';
import { startProbe } from '../net/http-probe.js';
import { clientTlsOptions, TLS_FIELDS, type TlsConfig } from '../net/tls.js';
import { encodeRequest } from '../otlp/encode.js';
import { encodeJsonRequest } from '../otlp/json.js';
import { approxSize, groupPlaced, type Placed, placeEntry } from '../otlp/map-out.js';
import { decodeExportResponse, encodingOf, mediaType, type OtlpEncoding } from '../otlp/response.js';
import type { Sink, SinkFactory } from './types.js';

interface OtlpSinkConfig {
  readonly endpoint: string;
  readonly encoding: OtlpEncoding;
  readonly compression: 'gzip' | 'none';
  readonly headers: Readonly<Record<string, unknown>>;
  readonly max_batch_count: number;
  readonly max_batch_bytes: number;
  readonly flush_interval_ms: number;
  readonly max_in_flight: number;
  readonly request_timeout_ms: number;
  readonly backoff_min_ms: number;
  readonly backoff_max_ms: number;
  readonly buffer_size: number;
  /** bound of the queue together with what the sink holds unacknowledged, bytes of formatted lines */
  readonly buffer_max_bytes: number;
  readonly on_full: OnFull;
  readonly tls: TlsConfig;
}

/**
 * The client `tls` table, whose switch is the endpoint's scheme: one rule, so `tls.enabled` only
 * says what the scheme says (set against it, the sink fails to build).
 */
const OTLP_TLS_FIELDS: Fields = {
  tls: {
    ...(TLS_FIELDS.tls as Extract<Spec, { t: 'table' }>),
    doc: 'client TLS of an https:// endpoint (the scheme decides: https:// is TLS, http:// is not): `ca_file`, and `cert_file` + `key_file` for mutual TLS',
    fields: {
      ...(TLS_FIELDS.tls as Extract<Spec, { t: 'table' }>).fields,
      enabled: { t: 'boolean', def: false, doc: 'not needed: the endpoint\'s scheme decides; `true` with http:// or `false` with https:// is refused' },
    },
  },
};

export const OTLP_SINK: PluginSpec = {
  doc: 'exports entries as OpenTelemetry logs over OTLP/HTTP to a Collector or any OTLP backend; retries until the batch is taken',
  fields: {
    endpoint: { t: 'string', required: true, nonEmpty: true, doc: 'the full URL, e.g. `https://collector:4318/v1/logs` (https: TLS)' },
    encoding: {
      t: 'string',
      def: 'protobuf',
      oneOf: ['protobuf', 'json'],
      doc: 'request body encoding',
      values: { protobuf: '`application/x-protobuf`', json: '`application/json`, OTLP JSON (lowerCamelCase keys, hex ids)' },
    },
    compression: { t: 'string', def: 'gzip', oneOf: ['gzip', 'none'], doc: 'request body compression', values: { gzip: '`Content-Encoding: gzip`', none: 'uncompressed' } },
    headers: { t: 'free', doc: 'extra request headers (a table of strings; values may use `${VAR}`)' },
    max_batch_count: { t: 'number', def: 1000, int: true, min: 1, unit: 'entries', doc: 'a batch is sent when it holds this many entries' },
    max_batch_bytes: { t: 'number', def: 4194304, int: true, min: 64, doc: 'a batch is sent when it reaches about this size before compression' },
    flush_interval_ms: { t: 'number', def: 200, int: true, min: 1, doc: 'a batch is sent at most this long after its first entry' },
    max_in_flight: { t: 'number', def: 4, int: true, min: 1, max: 64, unit: 'requests', doc: 'requests under way at once' },
    request_timeout_ms: { t: 'number', def: 10000, int: true, min: 1, doc: 'a request unanswered this long fails (and is retried)' },
    backoff_min_ms: { t: 'number', def: 250, int: true, min: 1, doc: 'first retry delay; doubles per failure, ±20 % jitter' },
    backoff_max_ms: { t: 'number', def: 30000, int: true, min: 1, doc: 'longest retry delay (a longer Retry-After is still honoured)' },
    ...sinkQueueFields('delivers'),
    ...OTLP_TLS_FIELDS,
  },
};

/** Most bytes of a response body read (partial_success, or the start of an error for the log). */
const MAX_RESPONSE_BYTES = 64 * 1024;

const gzipAsync = promisify(gzip);

interface Batch {
  readonly placed: Placed[];
  readonly tickets: (Ticket | undefined)[];
  /** the entries, kept only when the sink has a dead letter sink to hand them to */
  readonly entries?: Entry[];
  /** the encoded (and compressed) body, made once and kept for retries */
  body?: Buffer;
}

/** Statuses an OTLP exporter retries (opentelemetry-proto docs/specification.md). */
const isRetryable = (status: number) => status === 429 || status === 502 || status === 503 || status === 504;

/** Retry-After as ms (delta seconds or an HTTP date); undefined when absent or unreadable. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const s = Number(value);
  if (Number.isFinite(s)) return Math.max(0, s * 1000);
  const t = Date.parse(value);
  return Number.isNaN(t) ? undefined : Math.max(0, t - now);
}

function sinkConfig(plugin: Parameters<SinkFactory>[0]): { cfg: OtlpSinkConfig; url: URL; headers: Record<string, string> } {
  const cfg = pluginConfig<OtlpSinkConfig>('sink', plugin, OTLP_SINK.fields);
  const fail = (key: string, reason: string): never => {
    throw new PluginError('sink', plugin.id, key, reason);
  };
  let url: URL;
  try {
    url = new URL(cfg.endpoint);
  } catch {
    return fail('endpoint', `must be an http:// or https:// URL, got ${JSON.stringify(cfg.endpoint)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail('endpoint', `must be an http:// or https:// URL, got ${JSON.stringify(cfg.endpoint)}`);
  if (url.protocol === 'http:' && cfg.tls.enabled) fail('tls.enabled', 'needs an https:// endpoint');
  // the scheme is the switch: an explicit false would read as "no TLS" where TLS is used
  const rawTls = (plugin.config as Record<string, unknown>).tls;
  if (url.protocol === 'https:' && isPlainObject(rawTls) && rawTls.enabled === false) fail('tls.enabled', 'is false, but an https:// endpoint is TLS (the scheme decides: leave tls.enabled out)');
  if (cfg.backoff_max_ms < cfg.backoff_min_ms) fail('backoff_max_ms', `must be >= backoff_min_ms (${cfg.backoff_min_ms}), got ${cfg.backoff_max_ms}`);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(cfg.headers)) {
    if (typeof value !== 'string') fail(`headers.${name}`, `must be a string, got ${typeof value}`);
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) fail(`headers.${name}`, 'is not a valid header name');
    headers[name] = value as string;
  }
  return { cfg, url, headers };
}

export const createOtlpSink: SinkFactory = (plugin, ctx): Sink => {
  const { cfg, url, headers: extraHeaders } = sinkConfig(plugin);
  const https = url.protocol === 'https:';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const tlsOptions = https ? clientTlsOptions('sink', plugin.id, { ...cfg.tls, enabled: true }, host) : undefined;
  const remote = url.host;
  const backoff = new Backoff({ min_ms: cfg.backoff_min_ms, max_ms: cfg.backoff_max_ms, jitter: 0.2 });
  const counters = { connected: 0, batches_sent: 0, retries: 0, dropped_batches: 0 };
  const log = ctx.log;
  const link = createRequestLinkState(counters, log, remote, 'OTLP export', cfg.backoff_max_ms);
  const headers: Record<string, string> = {
    'User-Agent': `logrelay/${VERSION}`,
    ...extraHeaders,
    'Content-Type': mediaType(cfg.encoding),
    ...(cfg.compression === 'gzip' ? { 'Content-Encoding': 'gzip' } : {}),
  };
  const request = https ? httpsRequest : httpRequest;
  const path = `${url.pathname}${url.search}`;
  const port = url.port ? Number(url.port) : https ? 443 : 80;
  let agent: HttpAgent | undefined;

  let building: Placed[] = [];
  let buildingTickets: (Ticket | undefined)[] = [];
  let buildingEntries: Entry[] = [];
  let buildingBytes = 0;
  let flushTimer: NodeJS.Timeout | undefined;
  const ready: Batch[] = [];
  let readyEntries = 0;
  let inFlight = 0;
  let retryTimer: NodeJS.Timeout | undefined;
  let outageLogged = false;
  let failing = false;
  let closing = false;
  /** the last request found no peer (a network error): `on_full = "auto"` drops meanwhile */
  let down = false;

  const held = () => readyEntries + building.length;
  // a window of max_in_flight full batches may be out while the next fills
  const waiters = new HeldWaiters(held, Math.max(cfg.buffer_size, cfg.max_batch_count * (cfg.max_in_flight + 1)));

  const closeBatch = () => {
    clearTimeout(flushTimer);
    flushTimer = undefined;
    if (building.length === 0) return;
    ready.push({ placed: building, tickets: buildingTickets, ...(ctx.deadLetter ? { entries: buildingEntries } : {}) });
    readyEntries += building.length;
    building = [];
    buildingTickets = [];
    buildingEntries = [];
    buildingBytes = 0;
    send();
  };

  /**
   * The batch's entries go to the dead letter sink instead of being dropped; false when the sink
   * has none (the caller counts the drop).
   */
  const deadLettered = (batch: Batch, reason: string, status?: number): boolean => {
    if (!ctx.deadLetter || !batch.entries) return false;
    ctx.deadLetter(
      batch.entries.map((entry, i) => ({ entry, ticket: batch.tickets[i] })),
      reason,
      status,
    );
    return true;
  };

  /** The batch is over: delivered, or dropped with `dropped` entries counted. */
  const finished = (batch: Batch) => {
    readyEntries -= batch.placed.length;
    for (const ticket of batch.tickets) settle(ticket);
    waiters.wake(closing);
  };

  const retry = (batch: Batch, reason: string, retryAfter: number | undefined) => {
    ready.unshift(batch);
    failing = true;
    counters.retries++;
    const fields = { remote, error: reason, held: held() };
    if (!outageLogged && !closing) {
      outageLogged = true;
      log.warn(fields, 'OTLP export failed, retrying');
    } else {
      log.debug(fields, 'OTLP export attempt failed');
    }
    if (retryTimer) return;
    const base = backoff.next();
    // never sooner than Retry-After; its jitter only adds
    const delay = retryAfter === undefined ? base : Math.max(base, Math.round(retryAfter * (1 + 0.2 * Math.random())));
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      send();
    }, Math.min(delay, 2_147_483_647));
  };

  const send = () => {
    while (inFlight < cfg.max_in_flight && !retryTimer && ready.length > 0 && !ctx.checkOnly) void post(ready.shift()!);
  };

  const encode = async (batch: Batch): Promise<Buffer> => {
    if (batch.body) return batch.body;
    const req = groupPlaced(batch.placed);
    const raw = cfg.encoding === 'json' ? Buffer.from(encodeJsonRequest(req)) : encodeRequest(req);
    batch.body = cfg.compression === 'gzip' ? await gzipAsync(raw) : Buffer.from(raw);
    return batch.body;
  };

  const answered = (batch: Batch, status: number, res: IncomingMessage, body: Buffer) => {
    if (status >= 200 && status < 300) {
      counters.batches_sent++;
      failing = false;
      backoff.reset();
      outageLogged = false;
      const partial = decodeExportResponse(body, encodingOf(res.headers['content-type']) ?? cfg.encoding);
      if (partial.rejected > 0) {
        const rejected = Math.min(partial.rejected, batch.placed.length);
        // OTLP says how many records were refused, not which: with a dead letter sink the whole
        // request goes there (the taken ones too), so none of the refused is lost
        if (!deadLettered(batch, 'partial_success', status)) counters.dropped_batches += rejected;
        log.warn({ remote, rejected, error_message: partial.errorMessage, entries: batch.placed.length }, 'OTLP records rejected');
      }
      finished(batch);
    } else if (isRetryable(status)) {
      retry(batch, `HTTP ${status}`, retryAfterMs(res.headers['retry-after']));
    } else if (status === 413 && batch.placed.length > 1) {
      // two halves, first in line, in order
      const half = batch.placed.length >> 1;
      const entries = batch.entries;
      ready.unshift(
        { placed: batch.placed.slice(0, half), tickets: batch.tickets.slice(0, half), ...(entries ? { entries: entries.slice(0, half) } : {}) },
        { placed: batch.placed.slice(half), tickets: batch.tickets.slice(half), ...(entries ? { entries: entries.slice(half) } : {}) },
      );
      log.debug({ remote, entries: batch.placed.length }, 'OTLP batch too large, split in two');
    } else {
      if (!deadLettered(batch, 'rejected', status)) counters.dropped_batches += batch.placed.length;
      log.error({ remote, status, response: body.toString('utf8', 0, Math.min(body.length, 200)), entries: batch.placed.length }, 'OTLP export rejected');
      finished(batch);
    }
  };

  const agentOf = (): HttpAgent =>
    (agent ??= tlsOptions
      ? new HttpsAgent({ ...tlsOptions, keepAlive: true, maxSockets: cfg.max_in_flight, timeout: 30_000 })
      : new HttpAgent({ keepAlive: true, maxSockets: cfg.max_in_flight, timeout: 30_000 }));
  let probe: { stop(): void } | undefined;

  const post = async (batch: Batch) => {
    inFlight++;
    let body: Buffer;
    try {
      body = await encode(batch);
    } catch (err) {
      // an entry that cannot be encoded (it should not happen): the batch is dropped, counted
      inFlight--;
      if (!deadLettered(batch, 'unencodable')) counters.dropped_batches += batch.placed.length;
      log.error({ remote, error: errorMessage(err), entries: batch.placed.length }, 'OTLP export rejected');
      finished(batch);
      send();
      return;
    }
    agentOf();
    let settled = false;
    const conclude = (fn: () => void) => {
      if (settled) return;
      settled = true;
      inFlight--;
      fn();
      send();
    };
    const req = request({ host, port, path, method: 'POST', agent, headers: { ...headers, 'Content-Length': body.length } });
    req.setTimeout(cfg.request_timeout_ms, () => req.destroy(new Error(`no answer within request_timeout_ms (${cfg.request_timeout_ms} ms)`)));
    req.on('error', (err) => {
      if (!closing) {
        link.failed({ error: errorMessage(err) });
        down = true;
      }
      conclude(() => retry(batch, errorMessage(err), undefined));
    });
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      down = false;
      // up only on success; a retried status counts toward down, other refusals drop their batch
      if (status >= 200 && status < 300) link.succeeded({ status });
      else if (isRetryable(status)) link.failed({ status });
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (size < MAX_RESPONSE_BYTES) chunks.push(chunk);
        size += chunk.length;
      });
      res.on('end', () => conclude(() => answered(batch, status, res, Buffer.concat(chunks))));
      res.on('error', (err) => conclude(() => retry(batch, errorMessage(err), undefined)));
    });
    req.end(body);
  };

  return {
    id: plugin.id,
    type: 'otlp',
    counters,
    bufferSize: cfg.buffer_size,
    bufferMaxBytes: cfg.buffer_max_bytes,
    onFull: cfg.on_full,
    settles: true,
    carriesIds: true,
    linkUp: () => !failing,
    linkDown: () => down,
    async open() {
      // dial at start (DESIGN.md §25): an export request with no records, which a receiver answers
      if (ctx.checkOnly) return;
      const body = await encode({ placed: [], tickets: [] });
      probe = startProbe({
        request: () => request({ host, port, path, method: 'POST', agent: agentOf(), headers: { ...headers, 'Content-Length': body.length } }),
        body,
        timeoutMs: cfg.request_timeout_ms,
        backoff: new Backoff({ min_ms: cfg.backoff_min_ms, max_ms: cfg.backoff_max_ms, jitter: 0.2 }),
        log,
        remote,
        line: 'OTLP export cannot connect, retrying',
        onAnswer: (status) => {
          down = false;
          if (status >= 200 && status < 300) link.succeeded({ status });
          else link.failed({ status });
        },
        onFailure: (error) => {
          down = true;
          if (!closing) link.failed({ error });
        },
      });
    },
    write(items) {
      const now = Date.now();
      for (const item of items) {
        const p = placeEntry(item.entry, ctx.node, now);
        const bytes = 64 + approxSize(item.entry.message) + (item.entry.fields ? approxSize(item.entry.fields) : 0);
        if (building.length > 0 && buildingBytes + bytes > cfg.max_batch_bytes) closeBatch();
        building.push(p);
        buildingTickets.push(item.ticket);
        if (ctx.deadLetter) buildingEntries.push(item.entry);
        buildingBytes += bytes;
        if (building.length >= cfg.max_batch_count || buildingBytes >= cfg.max_batch_bytes) closeBatch();
      }
      // an idle exporter sends at once; while requests are out, the batch fills until its count,
      // bytes or flush_interval_ms
      if (building.length > 0 && inFlight === 0 && !retryTimer && ready.length === 0) closeBatch();
      else if (building.length > 0 && !flushTimer) flushTimer = setTimeout(closeBatch, cfg.flush_interval_ms);
      return waiters.whenRoom(closing);
    },
    held,
    async close(deadline) {
      closing = true;
      probe?.stop();
      closeBatch();
      waiters.wake(closing);
      if (held() > 0 && !ctx.checkOnly) await waiters.emptyBy(deadline);
      clearTimeout(retryTimer);
      retryTimer = undefined;
      clearTimeout(flushTimer);
      link.close();
      agent?.destroy();
    },
  };
};
