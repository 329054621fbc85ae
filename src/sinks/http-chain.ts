// `http_chain` sink: the sending end of an HTTP chain link (DESIGN.md §9). Entries are encoded
// into NDJSON batches, closed at max_batch_count, max_batch_bytes or flush_interval_ms after a
// batch's first entry, and POSTed by the batch poster (net/batch-poster.ts), up to max_in_flight
// at once. Network errors, 403, 408, 429 and 5xx are retried with backoff (at least Retry-After,
// up to backoff_max_ms) while the batch is held; a 413 splits the batch in two.

import type { IncomingMessage } from 'node:http';
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import { COMPRESSIONS, type Compression, zstdMissing } from '../chain/compression.js';
import { HeldWaiters } from '../net/held-waiters.js';
import { createRequestLinkState } from '../net/link-state.js';
import { acceptsEncoding, defaultNode, HEADER_ACCEPT_ENCODING, HEADER_NODE, HEADER_PROTOCOL, NDJSON, PROTOCOL_VERSION, reportPath } from '../chain/protocol.js';
import { type ChainSinkConfig, chainSinkConfig, chainSinkFields } from '../chain/sink-config.js';
import { eachWireRun, encodeWire, type WireItem, wireItems } from '../core/entry-wire.js';
import type { PluginSpec } from '../config/spec.js';
import { settle, type Ticket } from '../core/ack.js';
import type { Entry } from '../core/entry.js';
import { errorMessage, PluginError } from '../core/errors.js';
import type { NodeReport } from '../core/node-report.js';
import { BatchBuilder } from '../net/batch-builder.js';
import { createBatchPoster, type PostBody } from '../net/batch-poster.js';
import { clientTlsOptions } from '../net/tls.js';
import type { Sink, SinkFactory } from './types.js';

interface HttpChainSinkConfig extends ChainSinkConfig {
  readonly compression: Compression;
  readonly path: string;
  readonly flush_interval_ms: number;
  readonly max_batch_count: number;
  readonly max_batch_bytes: number;
  readonly request_timeout_ms: number;
  readonly max_in_flight: number;
}

interface Batch {
  /** the body as the runs of lines that lie together (see `eachWireRun`), sent one after another */
  readonly body: readonly Buffer[];
  /** its NDJSON bytes */
  readonly bytes: number;
  readonly count: number;
  /**
   * The items' tickets, settled on the peer's 204 (or when the batch is dropped, counted). Only
   * these are kept: once its line is in `body` an entry is garbage, so the entries a relay holds
   * while the next node answers never outlive the young generation.
   */
  readonly tickets: (Ticket | undefined)[];
  /** the body compressed (`compression`), made at its first attempt and kept for the retries */
  wire?: Buffer;
  /** the entries, kept only when the sink has a dead letter sink to hand them to */
  readonly entries?: Entry[];
}

const gzipAsync = promisify<Buffer, zlib.ZlibOptions, Buffer>(zlib.gzip);
/** zlib's one-shot zstd, where the runtime has it */
const zstdCompress = (zlib as unknown as { zstdCompress?: (buf: Buffer, cb: (err: Error | null, out: Buffer) => void) => void }).zstdCompress;
const zstdAsync = zstdCompress ? promisify<Buffer, Buffer>(zstdCompress) : undefined;

/** Statuses worth trying again; any other failure drops the batch. 403 is retried too: see below. */
const isRetryable = (status: number) => status === 408 || status === 429 || status >= 500 || status === 403;

export const HTTP_CHAIN_SINK: PluginSpec = {
  doc: "forwards structured entries in NDJSON batches to another node's `http_chain` source; retries a batch until it is acknowledged",
  fields: chainSinkFields({
    compression: {
      t: 'string',
      def: 'none',
      oneOf: COMPRESSIONS,
      doc: 'compress each batch, sent with `Content-Encoding` (the source inflates gzip, deflate and zstd bodies)',
      values: {
        none: 'plain NDJSON bodies',
        gzip: 'gzip bodies',
        zstd: 'zstd bodies; only on a Node.js runtime that has zstd (22.15 or later), else the sink fails to build',
      },
    },
    path: { t: 'string', def: '/ingest', nonEmpty: true, doc: "the peer source's `path`" },
    flush_interval_ms: { t: 'number', def: 1000, int: true, min: 1, doc: 'a batch is sent at most this long after its first entry' },
    max_batch_count: { t: 'number', def: 500, int: true, min: 1, unit: 'entries', doc: 'a batch is sent when it holds this many entries' },
    max_batch_bytes: { t: 'number', def: 1048576, int: true, min: 64, doc: 'a batch is sent when its body reaches this size' },
    request_timeout_ms: { t: 'number', def: 10000, int: true, min: 1, doc: 'a request unanswered this long fails (and is retried)' },
    // the round trip of one batch (the receiver answers once its entries are delivered
    // downstream) no longer caps the link: each is on its own keep-alive connection
    max_in_flight: { t: 'number', def: 4, int: true, min: 1, max: 64, unit: 'requests', doc: 'batches posted at once, each on its own keep-alive connection' },
  }),
};

/**
 * The batch's lines as slices of the Buffers they were written into, one per run that lies
 * together: written to the request in turn, never copied into one body.
 */
function bodyOf(items: readonly WireItem[]): Buffer[] {
  const body: Buffer[] = [];
  eachWireRun(items, 0, items.length, (run) => body.push(run));
  return body;
}

/** A batch refused 413 as two halves (by entries), in order; undefined for a single entry. */
function halves(batch: Batch): [Batch, Batch] | undefined {
  if (batch.count < 2) return undefined;
  const half = batch.count >> 1;
  const all = batch.body.length === 1 ? batch.body[0]! : Buffer.concat(batch.body as Buffer[]);
  // the body's lines end each with \n: the first half ends after the half-th of them
  let cut = -1;
  for (let n = 0; n < half; n++) cut = all.indexOf(10, cut + 1);
  const first = all.subarray(0, cut + 1);
  const second = all.subarray(cut + 1);
  const part = (body: Buffer, from: number, to: number): Batch => ({
    body: [body],
    bytes: body.length,
    count: to - from,
    tickets: batch.tickets.slice(from, to),
    ...(batch.entries ? { entries: batch.entries.slice(from, to) } : {}),
  });
  return [part(first, 0, half), part(second, half, batch.count)];
}

export const createHttpChainSink: SinkFactory = (plugin, ctx): Sink => {
  const cfg = chainSinkConfig<HttpChainSinkConfig>(plugin, HTTP_CHAIN_SINK);
  const tlsOptions = clientTlsOptions('sink', plugin.id, cfg.tls, cfg.host);
  const node = cfg.node ?? ctx.node ?? defaultNode();
  if (cfg.compression === 'zstd' && zstdMissing()) throw new PluginError('sink', plugin.id, 'compression', zstdMissing()!);
  /** `bytes_raw`: NDJSON bodies before compression; `bytes_sent`: bodies as posted */
  const counters = { connected: 0, reconnects: 0, retries: 0, batches_sent: 0, dropped_batches: 0, synthesized: 0, bytes_sent: 0, bytes_raw: 0, reports_sent: 0, reports_dropped: 0 };
  const log = ctx.log;
  const link = createRequestLinkState(counters, log, `${cfg.host}:${cfg.port}`, 'Chain link', cfg.backoff_max_ms);
  const headers = {
    'Content-Type': NDJSON,
    [HEADER_PROTOCOL]: String(PROTOCOL_VERSION),
    [HEADER_NODE]: node,
  };

  /** body bytes of the batches held (`buffer_max_bytes`), the one being filled aside */
  let readyBytes = 0;
  /** the source said (on a 2xx) that it reads our codec; until then bodies go plain */
  let peerInflates = false;
  let declinedTold = false;
  /** A 2xx's word on compression: on, or declined (told once per outage of the word). */
  const onNoContent = (res: Pick<IncomingMessage, 'headers'>) => {
    if (cfg.compression === 'none') return;
    peerInflates = acceptsEncoding(res.headers[HEADER_ACCEPT_ENCODING], cfg.compression);
    if (peerInflates) declinedTold = false;
    else if (!declinedTold) {
      declinedTold = true;
      log.info({ remote: `${cfg.host}:${cfg.port}`, compression: cfg.compression }, 'Chain link compression declined, sending plain');
    }
  };

  /** The body as its runs, or compressed once (kept for the retries) where the peer inflates it. */
  const bodyOfBatch = (batch: Batch): PostBody | Promise<PostBody> => {
    if (batch.wire) return { chunks: [batch.wire], bytes: batch.wire.length, headers: { 'Content-Encoding': cfg.compression } };
    if (cfg.compression === 'none' || !peerInflates) return { chunks: batch.body, bytes: batch.bytes };
    const raw = Buffer.concat(batch.body as Buffer[]);
    const compressing = cfg.compression === 'zstd' && zstdAsync ? zstdAsync(raw) : gzipAsync(raw, { level: 1 });
    return compressing.then((wire) => {
      batch.wire = wire;
      return { chunks: [wire], bytes: wire.length, headers: { 'Content-Encoding': cfg.compression } };
    });
  };

  const poster = createBatchPoster<Batch>({
    target: { host: cfg.host, port: cfg.port, path: cfg.path, tls: tlsOptions, remote: `${cfg.host}:${cfg.port}` },
    headers,
    cfg,
    ctx,
    counters,
    link,
    // a peer's Retry-After is honoured up to backoff_max_ms
    retryAfterCapMs: cfg.backoff_max_ms,
    isRetryable,
    // A refused identity is a configuration fault the operator must see; the batch is kept.
    lines: { retrying: 'Chain batch not delivered, retrying', attemptFailed: 'Chain batch attempt failed', level: (reason) => (reason.startsWith('HTTP 403') ? 'error' : 'warn') },
    body: bodyOfBatch,
    sending(batch, body) {
      counters.bytes_raw += batch.bytes;
      counters.bytes_sent += body.bytes;
    },
    accepted: (_batch, res) => onNoContent(res),
    refused(batch, status) {
      if (ctx.deadLetter && batch.entries) {
        // refused for good: the dead letter sink takes the entries before their tickets are let go
        ctx.deadLetter(
          batch.entries.map((entry, i) => ({ entry, ticket: batch.tickets[i] })),
          'rejected',
          status,
        );
        log.warn({ remote: `${cfg.host}:${cfg.port}`, status, entries: batch.count }, 'Chain batch rejected by peer, sent to the dead letter sink');
      } else {
        counters.dropped_batches++;
        log.error({ remote: `${cfg.host}:${cfg.port}`, status, entries: batch.count }, 'Chain batch rejected by peer, dropped');
      }
    },
    unencodable(batch, err) {
      // it should not happen: the batch is dropped, counted
      counters.dropped_batches++;
      log.error({ remote: `${cfg.host}:${cfg.port}`, error: errorMessage(err), entries: batch.count }, 'Chain batch could not be compressed, dropped');
    },
    split: halves,
    finished(batch) {
      readyBytes -= batch.bytes;
      for (const ticket of batch.tickets) settle(ticket);
      waiters.wake(closing);
    },
  });

  // The batch being filled, then closed batches waiting to be sent, and up to max_in_flight out.
  const builder = new BatchBuilder<WireItem>({
    maxCount: cfg.max_batch_count,
    maxBytes: cfg.max_batch_bytes,
    flushMs: cfg.flush_interval_ms,
    close(items, bytes) {
      const entries = ctx.deadLetter ? items.map((item) => item.entry) : undefined;
      readyBytes += bytes;
      poster.push({ body: bodyOf(items), bytes, count: items.length, tickets: items.map((item) => item.ticket), ...(entries ? { entries } : {}) });
    },
  });
  let closing = false;
  const held = () => poster.held() + builder.length;
  const heldBytes = () => readyBytes + builder.bytes;
  const waiters = new HeldWaiters(held, cfg.buffer_size, heldBytes, cfg.buffer_max_bytes);

  // Node reports: one request at a time to `<path>/report`, the reports as NDJSON; a set given
  // while one is out waits, and a newer set replaces it (counted). Never retried: the next comes.
  let reportOut = false;
  let reportWaiting: readonly NodeReport[] | undefined;
  const postReports = (reports: readonly NodeReport[]) => {
    reportOut = true;
    const body = Buffer.from(reports.map((r) => JSON.stringify(r)).join('\n'));
    let over = false;
    const finish = (ok: boolean) => {
      if (over) return;
      over = true;
      if (ok) counters.reports_sent += reports.length;
      else counters.reports_dropped += reports.length;
      reportOut = false;
      const next = reportWaiting;
      reportWaiting = undefined;
      if (next && !closing) postReports(next);
    };
    const req = poster.request(reportPath(cfg.path), { 'Content-Length': body.length });
    req.setTimeout(cfg.request_timeout_ms, () => req.destroy(new Error('report request timed out')));
    req.on('error', () => finish(false));
    req.on('response', (res) => {
      res.resume();
      const status = res.statusCode ?? 0;
      finish(status >= 200 && status < 300);
    });
    req.end(body);
  };

  return {
    id: plugin.id,
    type: 'http_chain',
    counters,
    bufferSize: cfg.buffer_size,
    bufferMaxBytes: cfg.buffer_max_bytes,
    onFull: cfg.on_full,
    settles: true,
    carriesIds: true,
    sendsWire: true,
    linkUp: () => !poster.failing(),
    linkDown: () => poster.down(),
    open() {
      // dial at start (DESIGN.md §25): an empty batch, which the source answers 204 (0 accepted)
      if (ctx.checkOnly) return Promise.resolve();
      poster.probe({
        line: 'Chain link cannot connect, retrying',
        counters,
        answered: (status, resHeaders) => {
          if (status >= 200 && status < 300) onNoContent({ headers: resHeaders });
        },
      });
      return Promise.resolve();
    },
    write(batch) {
      const items = wireItems(batch);
      counters.synthesized += encodeWire(items, 0, items.length, Date.now(), ctx.pipeline);
      for (const item of items) builder.add(item, item.wireEnd - item.wireAt);
      // an idle link sends at once (latency); while a request is out, the batch fills until its
      // count, bytes or flush_interval_ms
      builder.settle(poster.hasRoom());
      return waiters.whenRoom(closing);
    },
    report(reports) {
      if (!ctx.reports || ctx.checkOnly || closing || reports.length === 0) return;
      if (!reportOut) {
        postReports(reports);
        return;
      }
      if (reportWaiting) counters.reports_dropped += reportWaiting.length;
      reportWaiting = reports;
    },
    held,
    heldBytes,
    async close(deadline) {
      closing = true;
      poster.closing();
      if (reportWaiting) counters.reports_dropped += reportWaiting.length;
      reportWaiting = undefined;
      builder.close();
      waiters.wake(closing);
      if (held() > 0 && !ctx.checkOnly) await waiters.emptyBy(deadline);
      builder.stop();
      link.close();
      poster.close();
    },
  };
};
