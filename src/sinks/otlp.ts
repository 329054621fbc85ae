// `otlp` sink: OTLP/HTTP logs exporter (DESIGN.md §20). Entries become LogRecords grouped by
// resource and scope, in batches closed at max_batch_count, max_batch_bytes or flush_interval_ms
// after a batch's first entry; POSTed (gzip and protobuf by default) by the batch poster
// (net/batch-poster.ts), up to max_in_flight at once. 429, 502, 503, 504, timeouts and network
// errors are retried while the batch is held (Retry-After honoured); 413 splits the batch; other
// statuses drop it.

import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { HeldWaiters } from '../net/held-waiters.js';
import { createRequestLinkState } from '../net/link-state.js';
import { type Fields, isPlainObject, type PluginSpec, type Spec } from '../config/spec.js';
import { settle, type Ticket } from '../core/ack.js';
import type { Entry } from '../core/entry.js';
import { errorMessage, PluginError } from '../core/errors.js';
import { pluginConfig, sinkQueueFields } from '../core/plugin-config.js';
import type { OnFull } from '../core/queue.js';
import type { SinkItem } from '../core/sink-item.js';
import { VERSION } from '../core/version.js';
import { BatchBuilder } from '../net/batch-builder.js';
import { createBatchPoster } from '../net/batch-poster.js';
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

const gzipAsync = promisify(gzip);

interface Batch {
  readonly placed: Placed[];
  /** entries in it */
  readonly count: number;
  readonly tickets: (Ticket | undefined)[];
  /** the entries, kept only when the sink has a dead letter sink to hand them to */
  readonly entries?: Entry[];
  /** the encoded (and compressed) body, made once and kept for retries */
  body?: Buffer;
}

/** Statuses an OTLP exporter retries (opentelemetry-proto docs/specification.md). */
const isRetryable = (status: number) => status === 429 || status === 502 || status === 503 || status === 504;

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
  const counters = { connected: 0, batches_sent: 0, retries: 0, dropped_batches: 0 };
  const log = ctx.log;
  const link = createRequestLinkState(counters, log, remote, 'OTLP export', cfg.backoff_max_ms);
  const headers: Record<string, string> = {
    'User-Agent': `logrelay/${VERSION}`,
    ...extraHeaders,
    'Content-Type': mediaType(cfg.encoding),
    ...(cfg.compression === 'gzip' ? { 'Content-Encoding': 'gzip' } : {}),
  };
  const path = `${url.pathname}${url.search}`;
  const port = url.port ? Number(url.port) : https ? 443 : 80;

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

  /** The encoded (and compressed) body, made once and kept for the retries. */
  const encode = async (batch: Batch): Promise<Buffer> => {
    if (batch.body) return batch.body;
    const req = groupPlaced(batch.placed);
    const raw = cfg.encoding === 'json' ? Buffer.from(encodeJsonRequest(req)) : encodeRequest(req);
    batch.body = cfg.compression === 'gzip' ? await gzipAsync(raw) : Buffer.from(raw);
    return batch.body;
  };

  /** A batch of `placed` and their items' tickets (and entries, for a dead letter sink). */
  const batchOf = (placed: Placed[], tickets: (Ticket | undefined)[], entries: Entry[] | undefined): Batch => ({
    placed,
    count: placed.length,
    tickets,
    ...(entries ? { entries } : {}),
  });

  const poster = createBatchPoster<Batch>({
    target: { host, port, path, tls: tlsOptions, remote },
    headers,
    cfg,
    ctx,
    counters,
    link,
    // a longer Retry-After than backoff_max_ms is still honoured
    retryAfterCapMs: Number.POSITIVE_INFINITY,
    isRetryable,
    lines: { retrying: 'OTLP export failed, retrying', attemptFailed: 'OTLP export attempt failed' },
    body: async (batch) => {
      const body = await encode(batch);
      return { chunks: [body], bytes: body.length };
    },
    accepted(batch, res, body) {
      const partial = decodeExportResponse(body, encodingOf(res.headers['content-type']) ?? cfg.encoding);
      if (partial.rejected > 0) {
        const rejected = Math.min(partial.rejected, batch.count);
        // OTLP says how many records were refused, not which: with a dead letter sink the whole
        // request goes there (the taken ones too), so none of the refused is lost
        if (!deadLettered(batch, 'partial_success', res.statusCode)) counters.dropped_batches += rejected;
        log.warn({ remote, rejected, error_message: partial.errorMessage, entries: batch.count }, 'OTLP records rejected');
      }
    },
    refused(batch, status, body) {
      if (!deadLettered(batch, 'rejected', status)) counters.dropped_batches += batch.count;
      log.error({ remote, status, response: body.toString('utf8', 0, Math.min(body.length, 200)), entries: batch.count }, 'OTLP export rejected');
    },
    unencodable(batch, err) {
      // an entry that cannot be encoded (it should not happen): the batch is dropped, counted
      if (!deadLettered(batch, 'unencodable')) counters.dropped_batches += batch.count;
      log.error({ remote, error: errorMessage(err), entries: batch.count }, 'OTLP export rejected');
    },
    split(batch) {
      if (batch.count < 2) return undefined;
      const half = batch.count >> 1;
      const entries = batch.entries;
      return [
        batchOf(batch.placed.slice(0, half), batch.tickets.slice(0, half), entries?.slice(0, half)),
        batchOf(batch.placed.slice(half), batch.tickets.slice(half), entries?.slice(half)),
      ];
    },
    finished(batch) {
      for (const ticket of batch.tickets) settle(ticket);
      waiters.wake(closing);
    },
  });

  // entries are placed (resource, scope, record) as they are written, their observed time then;
  // `building` holds the records of the batch being filled, in step with the builder's items
  let building: Placed[] = [];
  const builder = new BatchBuilder<SinkItem>({
    maxCount: cfg.max_batch_count,
    maxBytes: cfg.max_batch_bytes,
    flushMs: cfg.flush_interval_ms,
    close(items) {
      const placed = building;
      building = [];
      poster.push(batchOf(placed, items.map((item) => item.ticket), ctx.deadLetter ? items.map((item) => item.entry) : undefined));
    },
  });
  let closing = false;
  const held = () => poster.held() + builder.length;
  // a window of max_in_flight full batches may be out while the next fills
  const waiters = new HeldWaiters(held, Math.max(cfg.buffer_size, cfg.max_batch_count * (cfg.max_in_flight + 1)));

  return {
    id: plugin.id,
    type: 'otlp',
    counters,
    bufferSize: cfg.buffer_size,
    bufferMaxBytes: cfg.buffer_max_bytes,
    onFull: cfg.on_full,
    settles: true,
    carriesIds: true,
    linkUp: () => !poster.failing(),
    linkDown: () => poster.down(),
    async open() {
      // dial at start (DESIGN.md §25): an export request with no records, which a receiver answers
      if (ctx.checkOnly) return;
      const body = await encode(batchOf([], [], undefined));
      poster.probe({ body, line: 'OTLP export cannot connect, retrying' });
    },
    write(items) {
      const now = Date.now();
      for (const item of items) {
        const bytes = 64 + approxSize(item.entry.message) + (item.entry.fields ? approxSize(item.entry.fields) : 0);
        // the batch closes before a record that would take it past max_batch_bytes, so that the
        // record goes with the next one
        if (builder.length > 0 && builder.bytes + bytes > cfg.max_batch_bytes) builder.close();
        building.push(placeEntry(item.entry, ctx.node, now));
        builder.add(item, bytes);
      }
      // an idle exporter sends at once; while requests are out, the batch fills until its count,
      // bytes or flush_interval_ms
      builder.settle(poster.idle());
      return waiters.whenRoom(closing);
    },
    held,
    async close(deadline) {
      closing = true;
      poster.closing();
      builder.close();
      waiters.wake(closing);
      if (held() > 0 && !ctx.checkOnly) await waiters.emptyBy(deadline);
      builder.stop();
      link.close();
      poster.close();
    },
  };
};
