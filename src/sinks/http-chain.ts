// `http_chain` sink: the sending end of an HTTP chain link (DESIGN.md §9). Entries are encoded
// into NDJSON batches, closed at max_batch_count, max_batch_bytes or flush_interval_ms after a
// batch's first entry, and POSTed one at a time over a keep-alive agent. Network errors, 408,
// 429 and 5xx are retried with backoff (at least Retry-After) while the batch is held.

import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { HeldWaiters } from '../chain/held-waiters.js';
import { chainBackoff, type ChainSinkConfig, chainSinkConfig, chainSinkFields } from '../chain/sink-config.js';
import type { PluginSpec } from '../config/spec.js';
import { defaultNode, HEADER_NODE, HEADER_PROTOCOL, NDJSON, PROTOCOL_VERSION } from '../chain/protocol.js';
import { eachWireRun, encodeWire, type WireItem, wireItems } from '../chain/wire.js';
import { settle, type Ticket } from '../core/ack.js';
import { errorMessage } from '../core/errors.js';
import { clientTlsOptions } from '../net/tls.js';
import { createRequestLinkState } from '../chain/link-state.js';
import type { Sink, SinkFactory } from './types.js';

interface HttpChainSinkConfig extends ChainSinkConfig {
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
}

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
  const counters = { connected: 0, reconnects: 0, batches_sent: 0, dropped_batches: 0, synthesized: 0 };
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

  const held = () => readyEntries + building.length;
  const waiters = new HeldWaiters(held, cfg.buffer_size);

  const closeBatch = () => {
    clearTimeout(flushTimer);
    flushTimer = undefined;
    if (building.length === 0) return;
    ready.push({ ...bodyOf(building), count: building.length, tickets: building.map((item) => item.ticket) });
    readyEntries += building.length;
    building = [];
    buildingBytes = 0;
    send();
  };

  const done = (batch: Batch) => {
    inFlight--;
    readyEntries -= batch.count;
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

  const post = (batch: Batch) => {
    inFlight++;
    agent ??= tlsOptions
      ? new HttpsAgent({ ...tlsOptions, keepAlive: true, maxSockets: MAX_IN_FLIGHT, timeout: 30_000 })
      : new HttpAgent({ keepAlive: true, maxSockets: MAX_IN_FLIGHT, timeout: 30_000 });
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
      headers: { ...headers, 'Content-Length': batch.bytes },
    });
    req.setTimeout(cfg.request_timeout_ms, () => req.destroy(new Error(`no answer within request_timeout_ms (${cfg.request_timeout_ms} ms)`)));
    req.on('error', (err) => {
      if (!closing) link.failed({ error: errorMessage(err) });
      settle(() => retry(batch, errorMessage(err)));
    });
    req.on('response', (res) => {
      res.resume();
      const status = res.statusCode ?? 0;
      // up only on success (a relay answering 503 to everything is not an up link)
      if (status >= 200 && status < 300) link.succeeded({ status });
      else if (isRetryable(status)) link.failed({ status });
      settle(() => {
        if (status >= 200 && status < 300) {
          counters.batches_sent++;
          failing = false;
          backoff.reset();
          outageLogged = false;
          done(batch);
        } else if (isRetryable(status)) {
          retry(batch, `HTTP ${status}`, retryAfterMs(res));
        } else {
          counters.dropped_batches++;
          log.error({ remote: `${cfg.host}:${cfg.port}`, status, entries: batch.count }, 'Chain batch rejected by peer, dropped');
          done(batch);
        }
      });
    });
    const last = batch.body.length - 1;
    for (let i = 0; i < last; i++) req.write(batch.body[i]);
    req.end(batch.body[last]);
  };

  return {
    id: plugin.id,
    type: 'http_chain',
    counters,
    bufferSize: cfg.buffer_size,
    onFull: cfg.on_full,
    settles: true,
    carriesIds: true,
    sendsWire: true,
    linkUp: () => !failing,
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
    held,
    async close(deadline) {
      closing = true;
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
