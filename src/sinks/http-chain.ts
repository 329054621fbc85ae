// `http_chain` sink: the sending end of an HTTP chain link (DESIGN.md §9). Entries are encoded
// into batches, closed at max_batch_count, max_batch_bytes or flush_interval_ms after a batch's
// first entry, and POSTed by the batch poster (net/batch-poster.ts), up to max_in_flight at once.
// A batch is NDJSON (chain protocol version 1) until a 204 of the source says it reads version 2
// (`X-Logrelay-Accept-Protocol`), then entry frames (§25, core/entry-frame.ts); a version 2 batch
// refused 400 or 415 (a source that predates it) is sent again at once as NDJSON and the link
// stays at version 1 until a 204 names version 2 again. Network errors, 403, 408, 429 and 5xx are
// retried with backoff (at least Retry-After, up to backoff_max_ms) while the batch is held; a 413
// splits the batch in two.

import type { IncomingMessage } from 'node:http';
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import { COMPRESSIONS, type Compression, GZIP_LEVEL, GZIP_MEM_LEVEL, zstdBody, zstdMissing } from '../chain/compression.js';
import { HeldWaiters } from '../net/held-waiters.js';
import { createRequestLinkState } from '../net/link-state.js';
import { acceptsEncoding, defaultNode, FRAMES, HEADER_ACCEPT_ENCODING, HEADER_ACCEPT_PROTOCOL, HEADER_NODE, HEADER_PROTOCOL, NDJSON, PROTOCOL_VERSION, reportPath } from '../chain/protocol.js';
import { type ChainSinkConfig, chainSinkConfig, chainSinkFields } from '../chain/sink-config.js';
import { eachRun, encodeFor, type FramedItem, framedItems, LENGTH_BYTES, PROTOCOL_V2, readLength } from '../core/entry-frame.js';
import { decodeEntryFrame, FrameReader, restoreEntries } from '../core/frame-reader.js';
import { eachWireRun, encodeWire, type WireItem, wireItem } from '../core/entry-wire.js';
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
  /** the highest chain protocol version posted: 2 (frames, once the source says it reads them), or 1 (NDJSON only) */
  readonly protocol_version: number;
}

interface Batch {
  /** the chain protocol version of the body: 1 (NDJSON lines) or 2 (entry frames) */
  readonly version: number;
  /** the body as the runs of lines or frames that lie together (see `eachRun`), sent one after another */
  readonly body: readonly Buffer[];
  /** its bytes */
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

/** The headers of a version 2 batch (the others go with the NDJSON ones every request has). */
const FRAMES_HEADERS: Readonly<Record<string, string>> = { 'Content-Type': FRAMES, [HEADER_PROTOCOL]: String(PROTOCOL_V2) };

const gzipAsync = promisify<Buffer, zlib.ZlibOptions, Buffer>(zlib.gzip);

/** Statuses worth trying again; any other failure drops the batch. 403 is retried too: see below. */
const isRetryable = (status: number) => status === 408 || status === 429 || status >= 500 || status === 403;

export const HTTP_CHAIN_SINK: PluginSpec = {
  doc: "forwards structured entries in batches (NDJSON, or version 2 frames where the source reads them) to another node's `http_chain` source; retries a batch until it is acknowledged",
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
    protocol_version: {
      t: 'number',
      def: 2,
      int: true,
      min: 1,
      max: 2,
      doc: 'the highest chain protocol version posted; the sink starts with version 1 and posts version 2 once a 204 of the source says it reads it',
      values: {
        '2': 'binary entry frames (`Content-Type: application/x-logrelay-frames`) once the source names version 2 in `X-Logrelay-Accept-Protocol`; NDJSON to a source that predates it',
        '1': 'NDJSON only, readable on the wire (tcpdump, any HTTP server)',
      },
    },
  }),
};

/**
 * The batch's lines or frames (`version`) as slices of the Buffers they were written into, one per
 * run that lies together: written to the request in turn, never copied into one body.
 */
function bodyOf(version: number, items: readonly FramedItem[]): { body: Buffer[]; bytes: number } {
  const body: Buffer[] = [];
  let bytes = 0;
  eachRun(version, items, 0, items.length, (run) => {
    body.push(run);
    bytes += run.length;
  });
  return { body, bytes };
}

/** Where the first `n` lines (version 1) or frames (version 2) of `all` end. */
function endOfFirst(version: number, all: Buffer, n: number): number {
  let cut = 0;
  if (version === PROTOCOL_V2) {
    // each frame: its length, then that many bytes
    for (let i = 0; i < n && cut + LENGTH_BYTES <= all.length; i++) cut += LENGTH_BYTES + readLength(all, cut);
    return cut;
  }
  // each line ends with \n
  for (let i = 0; i < n; i++) cut = all.indexOf(10, cut) + 1;
  return cut;
}

/** A batch refused 413 as two halves (by entries), in order; undefined for a single entry. */
function halves(batch: Batch): [Batch, Batch] | undefined {
  if (batch.count < 2) return undefined;
  const half = batch.count >> 1;
  const all = batch.body.length === 1 ? batch.body[0]! : Buffer.concat(batch.body as Buffer[]);
  const cut = endOfFirst(batch.version, all, half);
  const first = all.subarray(0, cut);
  const second = all.subarray(cut);
  const part = (body: Buffer, from: number, to: number): Batch => ({
    version: batch.version,
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
  /** `bytes_raw`: bodies before compression; `bytes_sent`: bodies as posted */
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
  /**
   * The chain protocol version batches are closed in now: 1 until a 2xx of the source names
   * version 2 (HEADER_ACCEPT_PROTOCOL), back to 1 on a 2xx that does not or a version 2 batch
   * refused 400/415 (a source that predates it, or an older one behind the same address).
   */
  let version = 1;
  /** the fallback to NDJSON was told (INFO, once per run of the sink; later ones at DEBUG) */
  let fallbackTold = false;
  const speak = (next: number, why: string) => {
    if (next === version) return;
    version = next;
    log.debug({ remote: `${cfg.host}:${cfg.port}`, protocol: version, why }, 'Chain link protocol version changed');
  };
  /** A 2xx's word on compression: on, or declined (told once per outage of the word); and on version 2. */
  const onNoContent = (res: Pick<IncomingMessage, 'headers'>) => {
    if (cfg.protocol_version >= PROTOCOL_V2) speak(acceptsEncoding(res.headers[HEADER_ACCEPT_PROTOCOL], String(PROTOCOL_V2)) ? PROTOCOL_V2 : 1, 'the source answered');
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
    const typed = batch.version === PROTOCOL_V2 ? FRAMES_HEADERS : undefined;
    if (batch.wire) return { chunks: [batch.wire], bytes: batch.wire.length, headers: { ...typed, 'Content-Encoding': cfg.compression } };
    if (cfg.compression === 'none' || !peerInflates) return { chunks: batch.body, bytes: batch.bytes, ...(typed ? { headers: typed } : {}) };
    const raw = Buffer.concat(batch.body as Buffer[]);
    const compressing = cfg.compression === 'zstd' && zstdBody ? zstdBody(raw) : gzipAsync(raw, { level: GZIP_LEVEL, memLevel: GZIP_MEM_LEVEL });
    return compressing.then((wire) => {
      batch.wire = wire;
      return { chunks: [wire], bytes: wire.length, headers: { ...typed, 'Content-Encoding': cfg.compression } };
    });
  };

  /**
   * A version 2 batch refused 400 or 415: a source that does not read frames (it predates them).
   * The same entries go again at once as NDJSON, and the link posts NDJSON until a 204 names
   * version 2 again; told at INFO once per run of the sink (something between the nodes that
   * refuses frames but passes the source's 204 headers would otherwise log it for every batch).
   */
  const fallback = (batch: Batch, status: number): Batch | undefined => {
    if (batch.version !== PROTOCOL_V2 || (status !== 400 && status !== 415)) return undefined;
    speak(1, `HTTP ${status} to frames`);
    const fields = { remote: `${cfg.host}:${cfg.port}`, status };
    if (!fallbackTold) log.info(fields, 'Chain link peer does not read protocol version 2, sending NDJSON');
    else log.debug(fields, 'Chain link peer does not read protocol version 2, sending NDJSON');
    fallbackTold = true;
    const lines = linesOf(batch);
    if (!lines) return undefined;
    readyBytes += lines.bytes - batch.bytes;
    return { ...lines, version: 1, count: batch.count, tickets: batch.tickets, ...(batch.entries ? { entries: batch.entries } : {}) };
  };

  /** A version 2 batch's entries as NDJSON, read back from its frames; undefined if one does not read back (it cannot happen). */
  const linesOf = (batch: Batch): { body: Buffer[]; bytes: number } | undefined => {
    const reader = new FrameReader(Number.MAX_SAFE_INTEGER);
    const now = Date.now();
    const items: WireItem[] = [];
    let bad = false;
    for (const chunk of batch.body) {
      reader.push(chunk, (f) => {
        // the frames carry node where the entry had one: none is added here
        const entry = decodeEntryFrame(f, undefined, now, ctx.pipeline);
        if (entry) items.push(wireItem(entry, '', undefined));
        else bad = true;
      });
    }
    if (bad || reader.pending || items.length !== batch.count) return undefined;
    encodeWire(items, 0, items.length, now, ctx.pipeline);
    const body: Buffer[] = [];
    let bytes = 0;
    eachWireRun(items, 0, items.length, (run) => {
      body.push(run);
      bytes += run.length;
    });
    return { body, bytes };
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
    fallback,
    split: halves,
    finished(batch) {
      readyBytes -= batch.bytes;
      for (const ticket of batch.tickets) settle(ticket);
      // the link went idle: what filled meanwhile goes now, whatever its count (see write)
      if (poster.idle()) builder.close();
      waiters.wake(closing);
    },
  });

  /**
   * Gives `list[from..to)` their encoding in the link's version; for version 1 an item the
   * pipeline held as its frame alone (releaseEntries: the link spoke version 2 when it was framed)
   * gets its entry back from the frame first. Returns how many had to be completed (`synthesized`).
   */
  const encode = (list: readonly FramedItem[], from: number, to: number): number => {
    const now = Date.now();
    if (version !== PROTOCOL_V2) restoreEntries(list, from, to, now, ctx.pipeline);
    return encodeFor(version, list, from, to, now, ctx.pipeline);
  };

  // The batch being filled, then closed batches waiting to be sent, and up to max_in_flight out.
  const builder = new BatchBuilder<FramedItem>({
    maxCount: cfg.max_batch_count,
    maxBytes: cfg.max_batch_bytes,
    flushMs: cfg.flush_interval_ms,
    close(items) {
      const entries = ctx.deadLetter ? items.map((item) => item.entry) : undefined;
      // the version may have changed since the items were written (a 2xx meanwhile): made now
      // where missing (counted `synthesized` when written)
      encode(items, 0, items.length);
      const { body, bytes } = bodyOf(version, items);
      readyBytes += bytes;
      poster.push({ version, body, bytes, count: items.length, tickets: items.map((item) => item.ticket), ...(entries ? { entries } : {}) });
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
    // a closed batch keeps its body alone; the NDJSON fallback reads its entries back from the frames
    framesSuffice: true,
    wireVersion: () => version,
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
      const items = framedItems(batch);
      counters.synthesized += encode(items, 0, items.length);
      if (version === PROTOCOL_V2) for (const item of items) builder.add(item, item.frameEnd - item.frameAt);
      else for (const item of items) builder.add(item, item.wireEnd - item.wireAt);
      // an idle link sends at once (latency); while a request is out, the batch fills until its
      // count or bytes (each request costs both ends far more than an entry does), or until the
      // link is idle again (finished), or flush_interval_ms
      builder.settle(poster.idle());
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
