// `http_chain` sink: the sending end of an HTTP chain link (DESIGN.md §9). Entries are encoded
// into NDJSON batches, closed at max_batch_count, max_batch_bytes or flush_interval_ms after a
// batch's first entry, and POSTed one at a time over a keep-alive agent. Network errors, 408,
// 429 and 5xx are retried with backoff (at least Retry-After) while the batch is held.

import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { HeldWaiters } from '../net/held-waiters.js';
import { chainBackoff, type ChainSinkConfig, chainSinkConfig, chainSinkFields } from '../chain/sink-config.js';
import type { PluginSpec } from '../config/spec.js';
import { acceptsEncoding, defaultNode, HEADER_ACCEPT_ENCODING, HEADER_NODE, HEADER_PROTOCOL, NDJSON, PROTOCOL_VERSION, reportPath } from '../chain/protocol.js';
import type { NodeReport } from '../core/node-report.js';
import { eachWireRun, encodeWire, type WireItem, wireItems } from '../core/entry-wire.js';
import { settle, type Ticket } from '../core/ack.js';
import type { Entry } from '../core/entry.js';
import { errorMessage } from '../core/errors.js';
import { startProbe } from '../net/http-probe.js';
import { clientTlsOptions } from '../net/tls.js';
import { COMPRESSIONS, type Compression, zstdMissing } from '../chain/compression.js';
import { PluginError } from '../core/errors.js';
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import { createRequestLinkState } from '../net/link-state.js';
import type { Sink, SinkFactory } from './types.js';

interface HttpChainSinkConfig extends ChainSinkConfig {
  readonly compression: Compression;
  readonly path: string;
  readonly flush_interval_ms: number;
  readonly max_batch_count: number;
  readonly max_batch_bytes: number;
  readonly request_timeout_ms: number;
}

interface Batch {
  /** the body as the runs of lines that lie together (see `eachWireRun`), sent one after another */
  readonly body: readonly Buffer[];
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

/**
 * Batches posted at once, each on its own keep-alive connection: the round trip of one (the
 * receiver answers once its entries are delivered downstream) no longer caps the link.
 */
const MAX_IN_FLIGHT = 4;

/** Statuses worth trying again; any other failure drops the batch. 403 is retried too: see below. */
const isRetryable = (status: number) => status === 408 || status === 429 || status >= 500 || status === 403;

/** Retry-After as ms (delta seconds or an HTTP date); undefined when absent or unreadable. */
function retryAfterMs(res: IncomingMessage): number | undefined {
  const v = res.headers['retry-after'];
  if (!v) return undefined;
  const s = Number(v);
  if (Number.isFinite(s)) return Math.max(0, s * 1000);
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, t - Date.now());
}

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
  }),
};

/**
 * The batch's lines as slices of the Buffers they were written into, one per run that lies
 * together: written to the request in turn, never copied into one body.
 */
function bodyOf(items: readonly WireItem[]): { body: Buffer[]; bytes: number } {
  const body: Buffer[] = [];
  let bytes = 0;
  eachWireRun(items, 0, items.length, (run) => {
    body.push(run);
    bytes += run.length;
  });
  return { body, bytes };
}

export const createHttpChainSink: SinkFactory = (plugin, ctx): Sink => {
  const cfg = chainSinkConfig<HttpChainSinkConfig>(plugin, HTTP_CHAIN_SINK);
  const tlsOptions = clientTlsOptions('sink', plugin.id, cfg.tls, cfg.host);
  const node = cfg.node ?? ctx.node ?? defaultNode();
  const backoff = chainBackoff(cfg);
  if (cfg.compression === 'zstd' && zstdMissing()) throw new PluginError('sink', plugin.id, 'compression', zstdMissing()!);
  /** `bytes_raw`: NDJSON bodies before compression; `bytes_sent`: bodies as posted */
  const counters = { connected: 0, reconnects: 0, batches_sent: 0, dropped_batches: 0, synthesized: 0, bytes_sent: 0, bytes_raw: 0, reports_sent: 0, reports_dropped: 0 };
  const log = ctx.log;
  const link = createRequestLinkState(counters, log, `${cfg.host}:${cfg.port}`, 'Chain link', cfg.backoff_max_ms);
  const headers = {
    'Content-Type': NDJSON,
    [HEADER_PROTOCOL]: String(PROTOCOL_VERSION),
    [HEADER_NODE]: node,
  };
  const request = tlsOptions ? httpsRequest : httpRequest;
  let agent: HttpAgent | undefined;

  // The batch being filled, then closed batches waiting to be sent, and up to MAX_IN_FLIGHT out.
  let building: WireItem[] = [];
  /** the last attempt failed: a redundant path (fanout = "any") skips this sink meanwhile */
  let failing = false;
  let buildingBytes = 0;
  let flushTimer: NodeJS.Timeout | undefined;
  const ready: Batch[] = [];
  let readyEntries = 0;
  let inFlight = 0;
  let retryTimer: NodeJS.Timeout | undefined;
  let outageLogged = false;
  let closing = false;
  /** the last request found no peer (a network error): `on_full = "auto"` drops meanwhile */
  let down = false;

  const held = () => readyEntries + building.length;
  /** body bytes of the batches held and of the one being filled (`buffer_max_bytes`) */
  let readyBytes = 0;
  const heldBytes = () => readyBytes + buildingBytes;
  const waiters = new HeldWaiters(held, cfg.buffer_size, heldBytes, cfg.buffer_max_bytes);

  const closeBatch = () => {
    clearTimeout(flushTimer);
    flushTimer = undefined;
    if (building.length === 0) return;
    const entries = ctx.deadLetter ? building.map((item) => item.entry) : undefined;
    const batch = { ...bodyOf(building), count: building.length, tickets: building.map((item) => item.ticket), ...(entries ? { entries } : {}) };
    ready.push(batch);
    readyEntries += building.length;
    readyBytes += batch.bytes;
    building = [];
    buildingBytes = 0;
    send();
  };

  const done = (batch: Batch) => {
    inFlight--;
    readyEntries -= batch.count;
    readyBytes -= batch.bytes;
    for (const ticket of batch.tickets) settle(ticket);
    waiters.wake(closing);
    send();
  };

  const retry = (batch: Batch, reason: string, atLeastMs = 0) => {
    inFlight--;
    // first in line again; the others out meanwhile come back the same way if they fail too
    ready.unshift(batch);
    failing = true;
    counters.reconnects++;
    const fields = { remote: `${cfg.host}:${cfg.port}`, error: reason, held: held() };
    if (!outageLogged && !closing) {
      outageLogged = true;
      // A refused identity is a configuration fault the operator must see; the batch is kept.
      log[reason.startsWith('HTTP 403') ? 'error' : 'warn'](fields, 'Chain batch not delivered, retrying');
    } else {
      log.debug(fields, 'Chain batch attempt failed');
    }
    if (retryTimer) return;
    const delay = Math.max(backoff.next(), Math.min(atLeastMs, cfg.backoff_max_ms));
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      send();
    }, delay);
  };

  const send = () => {
    while (inFlight < MAX_IN_FLIGHT && !retryTimer && ready.length > 0 && !ctx.checkOnly) post(ready.shift()!);
  };

  const agentOf = (): HttpAgent =>
    (agent ??= tlsOptions
      ? new HttpsAgent({ ...tlsOptions, keepAlive: true, maxSockets: MAX_IN_FLIGHT, timeout: 30_000 })
      : new HttpAgent({ keepAlive: true, maxSockets: MAX_IN_FLIGHT, timeout: 30_000 }));
  let probe: { stop(): void } | undefined;

  /** Compresses the batch's body once (kept for its retries), then posts it. */
  /** the source said (on a 204) that it reads our codec; until then bodies go plain */
  let peerInflates = false;
  let declinedTold = false;
  /** A 204's word on compression: on, or declined (told once per outage of the word). */
  const onNoContent = (res: Pick<IncomingMessage, 'headers'>) => {
    if (cfg.compression === 'none') return;
    peerInflates = acceptsEncoding(res.headers[HEADER_ACCEPT_ENCODING], cfg.compression);
    if (peerInflates) declinedTold = false;
    else if (!declinedTold) {
      declinedTold = true;
      log.info({ remote: `${cfg.host}:${cfg.port}`, compression: cfg.compression }, 'Chain link compression declined, sending plain');
    }
  };

  const post = (batch: Batch) => {
    if (cfg.compression === 'none' || batch.wire || !peerInflates) {
      postNow(batch);
      return;
    }
    inFlight++;
    const raw = Buffer.concat(batch.body as Buffer[]);
    const compressing = cfg.compression === 'zstd' && zstdAsync ? zstdAsync(raw) : gzipAsync(raw, { level: 1 });
    compressing.then(
      (wire) => {
        batch.wire = wire;
        inFlight--;
        postNow(batch);
      },
      (err: unknown) => {
        // it should not happen: the batch is dropped, counted
        inFlight--;
        counters.dropped_batches++;
        log.error({ remote: `${cfg.host}:${cfg.port}`, error: errorMessage(err), entries: batch.count }, 'Chain batch could not be compressed, dropped');
        inFlight++;
        done(batch);
      },
    );
  };

  const postNow = (batch: Batch) => {
    inFlight++;
    agentOf();
    let settled = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      fn();
    };
    const req = request({
      host: cfg.host,
      port: cfg.port,
      path: cfg.path,
      method: 'POST',
      agent,
      headers: batch.wire ? { ...headers, 'Content-Encoding': cfg.compression, 'Content-Length': batch.wire.length } : { ...headers, 'Content-Length': batch.bytes },
    });
    req.setTimeout(cfg.request_timeout_ms, () => req.destroy(new Error(`no answer within request_timeout_ms (${cfg.request_timeout_ms} ms)`)));
    req.on('error', (err) => {
      if (!closing) {
        link.failed({ error: errorMessage(err) });
        down = true;
      }
      settle(() => retry(batch, errorMessage(err)));
    });
    req.on('response', (res) => {
      res.resume();
      const status = res.statusCode ?? 0;
      down = false;
      // up only on success (a relay answering 503 to everything is not an up link)
      if (status >= 200 && status < 300) link.succeeded({ status });
      else if (isRetryable(status)) link.failed({ status });
      settle(() => {
        if (status >= 200 && status < 300) {
          onNoContent(res);
          counters.batches_sent++;
          failing = false;
          backoff.reset();
          outageLogged = false;
          done(batch);
        } else if (isRetryable(status)) {
          retry(batch, `HTTP ${status}`, retryAfterMs(res));
        } else if (ctx.deadLetter && batch.entries) {
          // refused for good: the dead letter sink takes the entries before their tickets are let go
          ctx.deadLetter(
            batch.entries.map((entry, i) => ({ entry, ticket: batch.tickets[i] })),
            'rejected',
            status,
          );
          log.warn({ remote: `${cfg.host}:${cfg.port}`, status, entries: batch.count }, 'Chain batch rejected by peer, sent to the dead letter sink');
          done(batch);
        } else {
          counters.dropped_batches++;
          log.error({ remote: `${cfg.host}:${cfg.port}`, status, entries: batch.count }, 'Chain batch rejected by peer, dropped');
          done(batch);
        }
      });
    });
    counters.bytes_raw += batch.bytes;
    if (batch.wire) {
      counters.bytes_sent += batch.wire.length;
      req.end(batch.wire);
      return;
    }
    counters.bytes_sent += batch.bytes;
    const last = batch.body.length - 1;
    for (let i = 0; i < last; i++) req.write(batch.body[i]);
    req.end(batch.body[last]);
  };

  // Node reports: one request at a time to `<path>/report`, the reports as NDJSON; a set given
  // while one is out waits, and a newer set replaces it (counted). Never retried: the next comes.
  let reportOut = false;
  let reportWaiting: readonly NodeReport[] | undefined;
  const postReports = (reports: readonly NodeReport[]) => {
    reportOut = true;
    agent ??= tlsOptions
      ? new HttpsAgent({ ...tlsOptions, keepAlive: true, maxSockets: MAX_IN_FLIGHT, timeout: 30_000 })
      : new HttpAgent({ keepAlive: true, maxSockets: MAX_IN_FLIGHT, timeout: 30_000 });
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
    const req = request({
      host: cfg.host,
      port: cfg.port,
      path: reportPath(cfg.path),
      method: 'POST',
      agent,
      headers: { ...headers, 'Content-Length': body.length },
    });
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
    linkUp: () => !failing,
    linkDown: () => down,
    open() {
      // dial at start (DESIGN.md §25): an empty batch, which the source answers 204 (0 accepted)
      if (ctx.checkOnly) return Promise.resolve();
      probe = startProbe({
        request: () => request({ host: cfg.host, port: cfg.port, path: cfg.path, method: 'POST', agent: agentOf(), headers: { ...headers, 'Content-Length': 0 } }),
        timeoutMs: cfg.request_timeout_ms,
        backoff: chainBackoff(cfg),
        log,
        remote: `${cfg.host}:${cfg.port}`,
        line: 'Chain link cannot connect, retrying',
        counters,
        onAnswer: (status, resHeaders) => {
          down = false;
          if (status >= 200 && status < 300) link.succeeded({ status });
          else link.failed({ status });
          if (status >= 200 && status < 300) onNoContent({ headers: resHeaders });
        },
        onFailure: (error) => {
          down = true;
          if (!closing) link.failed({ error });
        },
      });
      return Promise.resolve();
    },
    write(batch) {
      const items = wireItems(batch);
      counters.synthesized += encodeWire(items, 0, items.length, Date.now(), ctx.pipeline);
      for (const item of items) {
        // Close the batch before this line would take it past the byte cap.
        const bytes = item.wireEnd - item.wireAt;
        if (building.length > 0 && buildingBytes + bytes > cfg.max_batch_bytes) closeBatch();
        building.push(item);
        buildingBytes += bytes;
        if (building.length >= cfg.max_batch_count || buildingBytes >= cfg.max_batch_bytes) closeBatch();
      }
      // an idle link sends at once (latency); while a request is out, the batch fills until its
      // count, bytes or flush_interval_ms
      if (building.length > 0 && inFlight < MAX_IN_FLIGHT && !retryTimer && ready.length === 0) closeBatch();
      else if (building.length > 0 && !flushTimer) flushTimer = setTimeout(closeBatch, cfg.flush_interval_ms);
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
      if (reportWaiting) counters.reports_dropped += reportWaiting.length;
      reportWaiting = undefined;
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
