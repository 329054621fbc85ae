// `tcp_chain` sink: the sending end of a chain link (DESIGN.md §9). Connects at start, says hello,
// writes each batch as one chunk of JSON lines (or of version 2 frames, when the peer accepted
// them: §25) and keeps every entry until the peer acknowledges it; after a reconnect (exponential
// backoff with jitter) the unacknowledged ones are sent again.

import type { Socket } from 'node:net';
import type { Transform } from 'node:stream';
import type { ConnectionOptions } from 'node:tls';
import { HeldWaiters } from '../net/held-waiters.js';
import { chainBackoff, type ChainSinkConfig, chainSinkConfig, chainSinkFields } from '../chain/sink-config.js';
import type { PluginSpec } from '../config/spec.js';
import { defaultNode, helloLine, LineSplitter, parseServerLine, reportLine } from '../chain/protocol.js';
import { eachRun, encodeFor, type FramedItem, framedItems, PROTOCOL_V2, reportFrame } from '../core/entry-frame.js';
import { restoreEntries } from '../core/frame-reader.js';
import { itemBytes } from '../core/sink-item.js';
import { COMPRESSIONS, type Compression, offeredCodecs, streamCompressor, zstdMissing } from '../chain/compression.js';
import { settleAll } from '../core/ack.js';
import { PluginError } from '../core/errors.js';
import { DialLoop } from '../net/dial-loop.js';
import { clientTlsOptions } from '../net/tls.js';
import { createLinkState } from '../net/link-state.js';
import type { NodeReport } from '../core/node-report.js';
import type { Sink, SinkFactory } from './types.js';

interface TcpChainSinkConfig extends ChainSinkConfig {
  readonly compression: Compression;
  readonly dial_timeout_ms: number;
  readonly write_timeout_ms: number;
  /** the highest chain protocol version offered: 2 (frames), or 1 (JSON lines only) */
  readonly protocol_version: number;
}

export const TCP_CHAIN_SINK: PluginSpec = {
  doc: "forwards structured entries to another node's `tcp_chain` source; keeps unacknowledged ones and resends them after a reconnect",
  fields: chainSinkFields({
    compression: {
      t: 'string',
      def: 'none',
      oneOf: COMPRESSIONS,
      doc: 'compress the link (offered in the hello; a source that does not know it gets plain lines, logged INFO once per connection)',
      values: {
        none: 'plain lines',
        gzip: 'one gzip stream from sink to source, flushed at every write; acks stay plain',
        zstd: 'one zstd stream (gzip offered second); only on a Node.js runtime that has zstd (22.15 or later), else the sink fails to build',
      },
    },
    dial_timeout_ms: { t: 'number', def: 5000, int: true, min: 1, doc: 'a connection attempt that takes longer fails (and backs off)' },
    write_timeout_ms: { t: 'number', def: 5000, int: true, min: 1, doc: 'a link that cannot take a write this long is closed and redialled' },
    protocol_version: {
      t: 'number',
      def: 2,
      int: true,
      min: 1,
      max: 2,
      doc: 'the highest chain protocol version offered in the hello; the link speaks the highest both ends know',
      values: {
        '2': 'binary frames, length-prefixed, the message as read (offered; a source that predates version 2 gets JSON lines)',
        '1': 'JSON lines only, readable on the wire (tcpdump, a plain TCP listener)',
      },
    },
  }),
};

export const createTcpChainSink: SinkFactory = (plugin, ctx): Sink => {
  const cfg = chainSinkConfig<TcpChainSinkConfig>(plugin, TCP_CHAIN_SINK);
  const tlsOptions: ConnectionOptions | undefined = clientTlsOptions('sink', plugin.id, cfg.tls, cfg.host);
  const node = cfg.node ?? ctx.node ?? defaultNode();
  if (cfg.compression === 'zstd' && zstdMissing()) throw new PluginError('sink', plugin.id, 'compression', zstdMissing()!);
  const hello = helloLine(node, { compression: offeredCodecs(cfg.compression), report: ctx.reports ? 1 : undefined, version: cfg.protocol_version >= PROTOCOL_V2 ? PROTOCOL_V2 : undefined });
  const backoff = chainBackoff(cfg);
  /** `bytes_raw`: chain lines before compression; `bytes_sent`: what went on the wire */
  const counters = { connected: 0, reconnects: 0, unacked: 0, synthesized: 0, bytes_sent: 0, bytes_raw: 0, reports_sent: 0, reports_dropped: 0 };
  /** the compressing stream of the current connection, when the source accepted a codec */
  let compressor: Transform | undefined;
  const log = ctx.log;
  const link = createLinkState(counters, log, `${cfg.host}:${cfg.port}`);

  // Entries not yet acknowledged, oldest first: items[head..], each with its chain line (see
  // encodeFor), settled once acknowledged; the first `sent` of them went out on the current connection.
  let items: FramedItem[] = [];
  let head = 0;
  let sent = 0;
  let lastAck = 0;
  const held = () => items.length - head;
  /** the formatted lines' length of the held items (`buffer_max_bytes`) */
  let heldBytes = 0;
  const waiters = new HeldWaiters(held, cfg.buffer_size, () => heldBytes, cfg.buffer_max_bytes);

  let socket: Socket | undefined;
  let closing = false;
  /** the peer accepted node reports in its answer to the hello */
  let reportsAccepted = false;
  /**
   * the chain protocol version of the current link (or of the last one, while down: what the
   * pipeline writes ahead in); before the first link, the one offered (most peers take it)
   */
  let version = cfg.protocol_version >= PROTOCOL_V2 ? PROTOCOL_V2 : 1;
  /** the latest reports given while the link was not ready (a newer set replaces them, counted) */
  let pendingReports: readonly NodeReport[] | undefined;
  /** failed to connect, or lost the link and not reconnected since (`on_full = "auto"` drops meanwhile) */
  let down = false;
  const loop = new DialLoop({
    host: cfg.host,
    port: cfg.port,
    tls: tlsOptions,
    dialTimeoutMs: cfg.dial_timeout_ms,
    writeTimeoutMs: cfg.write_timeout_ms,
    missing: 'no answer',
    backoff,
    counters,
    open: () => openLink(),
  });

  /** Gives `list[from..to)` their encoding in the link's version (lines for version 1: from the entry, decoded from the frame when it was let go). */
  const encode = (list: readonly FramedItem[], from: number, to: number): number => {
    const now = Date.now();
    if (version !== PROTOCOL_V2) restoreEntries(list, from, to, now, ctx.pipeline);
    return encodeFor(version, list, from, to, now, ctx.pipeline);
  };

  const onAck = (n: number) => {
    const delta = Math.min(n - lastAck, sent);
    if (delta <= 0) return;
    lastAck = n;
    settleAll(items, head, head + delta);
    for (let i = head; i < head + delta; i++) heldBytes -= itemBytes(items[i]!);
    head += delta;
    sent -= delta;
    if (head === items.length) {
      items = [];
      head = 0;
    } else if (head > 4096 && head * 2 > items.length) {
      items = items.slice(head);
      head = 0;
    }
    counters.unacked = held();
    waiters.wake(closing);
  };

  const sendPending = () => {
    if (loop.state !== 'ready' || !socket) return;
    const from = head + sent;
    if (from >= items.length) return;
    const s = socket;
    // a link still draining takes no more now: what waits goes out in one write once it drains
    if (s.writableNeedDrain) {
      loop.watchWrite(s);
      return;
    }
    let fits = true;
    // written ahead in the link's version, unless the link changed version since (a resend)
    encode(items, from, items.length);
    const z = compressor;
    if (z) {
      // one write into the compressor, flushed with it (one deflate pass): the source gets every
      // line now, latency does not grow
      const runs: Buffer[] = [];
      eachRun(version, items, from, items.length, (bytes) => {
        counters.bytes_raw += bytes.length;
        runs.push(bytes);
      });
      z.write(runs.length === 1 ? runs[0]! : Buffer.concat(runs));
    } else {
      s.cork();
      eachRun(version, items, from, items.length, (bytes) => {
        counters.bytes_raw += bytes.length;
        counters.bytes_sent += bytes.length;
        fits = s.write(bytes);
      });
      s.uncork();
    }
    sent = held();
    if (!fits || s.writableNeedDrain) loop.watchWrite(s);
  };

  /** Sends the reports waiting, or drops them (counted) when the peer takes none or the link is backed up. */
  const flushReports = () => {
    const r = pendingReports;
    if (!r || loop.state !== 'ready' || !socket) return;
    pendingReports = undefined;
    if (!reportsAccepted || socket.writableNeedDrain) {
      counters.reports_dropped += r.length;
      return;
    }
    // a report goes where the entries go: into the compressed stream when the link has one
    const bytes = version === PROTOCOL_V2 ? Buffer.concat(r.map(reportFrame)) : Buffer.from(r.map(reportLine).join(''));
    counters.bytes_raw += bytes.length;
    const z = compressor;
    if (z) {
      z.write(bytes);
    } else {
      counters.bytes_sent += bytes.length;
      socket.write(bytes);
    }
    counters.reports_sent += r.length;
  };

  const openLink = () => {
    const s = loop.connectStream((failure, wasReady) => onClosed(s, failure, wasReady));
    socket = s;
    s.setEncoding('utf8');
    s.on('drain', () => sendPending());
    s.once(tlsOptions ? 'secureConnect' : 'connect', () => {
      counters.bytes_raw += hello.length;
      counters.bytes_sent += hello.length;
      s.write(hello);
    });
    const splitter = new LineSplitter(64 * 1024);
    s.on('data', (chunk: string) => {
      const fits = splitter.push(chunk, (line) => {
        const msg = parseServerLine(line);
        if (!msg) return;
        if (msg.kind === 'ack') onAck(msg.n);
        else if (msg.kind === 'ok' && loop.state === 'connecting') {
          const codec = msg.accept.compression;
          if (typeof codec === 'string' && offeredCodecs(cfg.compression).includes(codec)) {
            const z = streamCompressor(codec);
            z.on('data', (b: Buffer) => {
              counters.bytes_sent += b.length;
              if (!s.write(b)) loop.watchWrite(s);
            });
            z.on('error', (err) => s.destroy(err));
            compressor = z;
          } else if (cfg.compression !== 'none') {
            log.info({ remote: `${cfg.host}:${cfg.port}`, compression: cfg.compression }, 'Chain link compression declined, sending plain');
          }
          loop.ready();
          down = false;
          sent = 0;
          lastAck = 0;
          reportsAccepted = msg.accept.report === 1;
          version = cfg.protocol_version >= PROTOCOL_V2 && msg.accept.version === PROTOCOL_V2 ? PROTOCOL_V2 : 1;
          link.up({ tls: !!tlsOptions, node, unacked: held(), protocol: version });
          sendPending();
          flushReports();
        } else if (msg.kind === 'error') {
          s.destroy(new Error(`peer refused: ${msg.error}`));
        }
      });
      if (!fits) s.destroy(new Error('peer line too long'));
    });
  };

  const onClosed = (s: Socket, failure: string | undefined, wasReady: boolean) => {
    if (socket !== s) return;
    socket = undefined;
    sent = 0;
    reportsAccepted = false;
    compressor?.destroy();
    compressor = undefined;
    if (!closing) down = true;
    const fields = { remote: `${cfg.host}:${cfg.port}`, error: failure ?? 'connection closed', unacked: held() };
    // A link that was up says so once (WARN `Chain link down`); a planned close says nothing.
    link.down({ error: fields.error, unacked: fields.unacked }, closing);
    if (!wasReady || failure) {
      if (loop.firstOfOutage(closing)) {
        if (!loop.everConnected) log.warn(fields, 'Chain link cannot connect, retrying');
      } else {
        log.debug(fields, 'Chain link attempt failed');
      }
    }
    // fanout = "any": what this broken path holds goes to a live one (DESIGN.md §7)
    if (held() > 0 && !closing && ctx.failover?.(items.slice(head))) {
      items = [];
      head = 0;
      heldBytes = 0;
      counters.unacked = 0;
      waiters.wake(closing);
    }
    if (closing && held() === 0) return;
    // the link is kept up while idle (DESIGN.md §25): an outage shows before data flows, and a
    // redundant path comes back into the rotation
    if (!closing || held() > 0) loop.redial();
  };

  return {
    id: plugin.id,
    type: 'tcp_chain',
    counters,
    bufferSize: cfg.buffer_size,
    bufferMaxBytes: cfg.buffer_max_bytes,
    onFull: cfg.on_full,
    settles: true,
    carriesIds: true,
    sendsWire: true,
    framesSuffice: true,
    wireVersion: () => version,
    linkUp: () => loop.state === 'ready',
    linkDown: () => down,
    open() {
      // dial at start (DESIGN.md §25): an unreachable peer is told before any entry flows
      if (!ctx.checkOnly) loop.dial();
      return Promise.resolve();
    },
    write(batch) {
      const wired = framedItems(batch);
      counters.synthesized += encode(wired, 0, wired.length);
      for (const item of wired) {
        items.push(item);
        heldBytes += itemBytes(item);
      }
      counters.unacked = held();
      if (loop.state === 'ready') sendPending();
      else if (!ctx.checkOnly) loop.dial();
      return waiters.whenRoom(closing);
    },
    report(reports) {
      if (!ctx.reports || ctx.checkOnly || closing || reports.length === 0) return;
      if (pendingReports) counters.reports_dropped += pendingReports.length;
      pendingReports = reports;
      // a link with nothing to send is dialled for the reports alone: an idle edge still reports
      if (loop.state === 'ready') flushReports();
      else loop.dial();
    },
    held,
    heldBytes: () => heldBytes,
    async close(deadline) {
      closing = true;
      if (pendingReports) counters.reports_dropped += pendingReports.length;
      pendingReports = undefined;
      waiters.wake(closing);
      if (held() > 0 && !ctx.checkOnly) {
        loop.dial();
        await waiters.emptyBy(deadline);
      }
      loop.stop();
      const s = socket;
      if (s) {
        s.end();
        const t = setTimeout(() => s.destroy(), Math.max(100, Math.min(1000, deadline - Date.now())));
        await new Promise<void>((resolve) => s.once('close', () => resolve()));
        clearTimeout(t);
      }
    },
  };
};
