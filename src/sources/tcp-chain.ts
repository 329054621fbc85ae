// `tcp_chain` source: the receiving end of a chain link (DESIGN.md §9). Each connection sends a
// hello, then one JSON entry per line, or, when its hello offered version 2 (§25), one binary frame
// per entry (core/frame-reader.ts), carried on undecoded where the pipeline needs no entry (a
// relay: ctx.frames); entries are emitted one batch per read and acknowledged once they are done (every sink delivered them or dropped them with a count, DESIGN.md §15), in
// order. A saturated pipeline pauses every connection (TCP backpressure).

import type { Server, Socket } from 'node:net';
import { StringDecoder } from 'node:string_decoder';
import type { Transform } from 'node:stream';
import { STREAM_CODECS, streamDecompressor } from '../chain/compression.js';
import { acceptFor, ackLine, errorLine, isReportLine, LineSplitter, okLine, parseHello, reportOfLine } from '../chain/protocol.js';
import { decodeEntry, trailingIdOf } from '../core/entry-line.js';
import { reportSourceCounters, takeReport } from '../chain/reports.js';
import { CHAIN_SOURCE_BUFFER_SIZE, type ChainSourceConfig, chainSourceConfig, chainSourceCounters, chainSourceFields } from '../net/source-config.js';
import { FRAME_REPORT, PROTOCOL_V2 } from '../core/entry-frame.js';
import { passFrame, type PassedItem } from '../core/frame-pass.js';
import { decodeEntryFrame, type Frame, frameIdOf, FrameReader, reportOfFrame } from '../core/frame-reader.js';
import type { PluginSpec } from '../config/spec.js';
import { doneBy, InOrder } from '../core/ack.js';
import type { Entry } from '../core/entry.js';
import { listenStream, type Refusal } from '../net/listener.js';
import type { Session } from '../net/session.js';
import { serverSecurity } from '../net/tls.js';
import type { Source, SourceFactory } from './types.js';

interface TcpChainSourceConfig extends ChainSourceConfig {
  /** 0 = unlimited */
  readonly max_connections: number;
  readonly hello_timeout_ms: number;
  /** 0 = none */
  readonly read_timeout_ms: number;
  readonly max_line_bytes: number;
}

interface Link {
  readonly socket: Socket;
  session?: Session;
  /** hello accepted */
  ready: boolean;
  /** the hello offered reports and this source accepted them: `{"report":…}` lines are control lines */
  reports: boolean;
  node: string | undefined;
  /** entries handed to the pipeline on this connection */
  received: number;
  /** of those, the count done in order (what the next ack says) */
  done: number;
  readonly order: InOrder<number>;
  acked: number;
  helloTimer?: NodeJS.Timeout;
  ackScheduled: boolean;
  closed: boolean;
  /** emits the batch read so far (see begin: reads are gathered until the loop's check phase) */
  flush?: () => void;
  /** the inflating stream of a compressed link: paused and resumed with the socket */
  inflate?: Transform;
}

export const TCP_CHAIN_SOURCE: PluginSpec = {
  doc: 'receives entries from other nodes\' `tcp_chain` sinks (chain protocol over TCP: NDJSON, or version 2 frames when the sink offers them; acks)',
  fields: chainSourceFields({
    max_connections: { t: 'number', def: 0, int: true, min: 0, unit: 'connections', doc: 'links beyond this are refused (`rejected_conns`); 0 = unlimited' },
    buffer_size: CHAIN_SOURCE_BUFFER_SIZE,
    hello_timeout_ms: { t: 'number', def: 10000, int: true, min: 1, doc: 'a link that sends no hello this long is closed (`parse_errors`)' },
    read_timeout_ms: { t: 'number', def: 0, int: true, min: 0, doc: 'a link silent this long is closed; 0 = none' },
    max_line_bytes: { t: 'number', def: 1048576, int: true, min: 64, doc: 'a longer line (or version 2 frame) counts `parse_errors` and ends the link' },
  }),
};

export const createTcpChainSource: SourceFactory = (plugin, ctx): Source => {
  const cfg = chainSourceConfig<TcpChainSourceConfig>(plugin, TCP_CHAIN_SOURCE);
  /** `bytes_received`: bytes read off the links as they came (compressed or not); `carried_entries`: of total_entries, those sent on as their frames (ctx.frames) */
  const counters = { ...chainSourceCounters(), ...reportSourceCounters(), bytes_received: 0, carried_entries: 0 };
  const { tlsOptions, authorize } = serverSecurity('source', plugin.id, cfg, ctx, counters);
  const links = new Set<Link>();
  /** connections accepted before start(): they wait, unread */
  const waiting: Link[] = [];
  let server: Server | undefined;
  let started = false;
  let stopping = false;
  let paused = false;

  /** links whose entries are all done: a stopping source waits for them to drain */
  let drained: (() => void) | undefined;
  const outstanding = () => [...links].some((l) => l.ready && l.order.outstanding > 0);

  const sendAck = (link: Link) => {
    link.ackScheduled = false;
    if (link.socket.destroyed || link.done === link.acked) return;
    link.acked = link.done;
    link.socket.write(ackLine(link.done));
  };

  const scheduleAck = (link: Link) => {
    if (link.ackScheduled) return;
    link.ackScheduled = true;
    // Acks go out as soon as the entries are done (the sender's window waits on them), coalesced
    // over the task that completed them (a sink write settles hundreds at once) into one small write.
    queueMicrotask(() => sendAck(link));
  };

  const refuse = (link: Link, reason: string) => {
    link.socket.end(errorLine(reason));
    link.socket.destroySoon();
  };

  const begin = (link: Link) => {
    const { socket } = link;
    const splitter = new LineSplitter(cfg.max_line_bytes);
    link.helloTimer = setTimeout(() => {
      counters.parse_errors++;
      refuse(link, `no hello within ${cfg.hello_timeout_ms} ms`);
    }, cfg.hello_timeout_ms);
    if (cfg.read_timeout_ms > 0) {
      socket.setTimeout(cfg.read_timeout_ms, () => {
        if (!paused) socket.destroy();
      });
    }
    let batch: Entry[] = [];
    /** version 2 frames carried on undecoded (ctx.frames): a batch of its own, never beside `batch` */
    let carried: PassedItem[] = [];
    /** the frames read now are carried on (ctx.frames was active when the read came) */
    let carrying = false;
    /** a flush is set for the check phase of this turn of the loop */
    let flushing = false;
    /** lines of this batch dropped as duplicates before their decode: acknowledged with it */
    let skipped = 0;
    const flush = () => {
      flushing = false;
      const n = batch.length + carried.length + skipped;
      if (n === 0) return;
      counters.total_entries += n;
      link.received += n;
      skipped = 0;
      const done = link.order.add(link.received);
      if (carried.length > 0) {
        const c = carried;
        carried = [];
        counters.carried_entries += c.length;
        ctx.frames!.emit(c, done);
        return;
      }
      const b = batch;
      batch = [];
      ctx.emit(b, done);
    };
    /** Takes the hello line; the codec the sink's stream then uses and whether it is frames, or undefined (refused). */
    const onHello = (line: string): { codec?: string; frames: boolean } | undefined => {
      const hello = parseHello(line);
      clearTimeout(link.helloTimer);
      if (!hello.ok) {
        counters.parse_errors++;
        refuse(link, hello.error);
        link.closed = true;
        return undefined;
      }
      link.ready = true;
      link.node = link.session?.auth_identity ?? (hello.node || undefined);
      // offered features this source does not know are ignored (DESIGN.md §25)
      const accept = acceptFor(hello.offer, { compression: STREAM_CODECS, report: [1], version: [PROTOCOL_V2] });
      link.reports = accept.report !== undefined;
      socket.write(okLine(accept));
      return { codec: typeof accept.compression === 'string' ? accept.compression : undefined, frames: accept.version === PROTOCOL_V2 };
    };
    /** when the read being taken apart came: the time of its entries that have none */
    let now = 0;
    /** A copy the dedup window already has, dropped before its decode: acknowledged with the batch. */
    const skipDuplicate = () => {
      if (batch.length + carried.length + ++skipped >= cfg.buffer_size) flush();
    };
    /** A decoded entry into the batch; undefined (the line or frame was no entry) is a parse error. */
    const take = (entry: Entry | undefined) => {
      if (!entry) {
        counters.parse_errors++;
        return;
      }
      batch.push(entry);
      if (batch.length + skipped >= cfg.buffer_size) flush();
    };
    /** A frame carried on into the batch; undefined (the frame was no entry) is a parse error. */
    const carry = (item: PassedItem | undefined) => {
      if (!item) {
        counters.parse_errors++;
        return;
      }
      carried.push(item);
      if (carried.length + skipped >= cfg.buffer_size) flush();
    };
    const onLine = (line: string) => {
      if (link.closed) return;
      if (line.length === 0) return;
      if (link.reports && isReportLine(line)) {
        takeReport(reportOfLine(line), link.session?.auth_identity, counters, ctx.report);
        return;
      }
      if (ctx.duplicate) {
        const id = trailingIdOf(line);
        if (id !== undefined && ctx.duplicate(id, now)) return skipDuplicate();
      }
      take(decodeEntry(line, link.node, now, ctx.pipeline));
    };
    /** version 2: one frame (core/frame-reader.ts) */
    const onFrame = (f: Frame) => {
      if (link.closed) return;
      if (f.buf[f.at] === FRAME_REPORT) {
        if (link.reports) takeReport(reportOfFrame(f), link.session?.auth_identity, counters, ctx.report);
        else counters.parse_errors++;
        return;
      }
      if (carrying) {
        // the id as a string only for the dedup window
        const id = ctx.duplicate ? frameIdOf(f) : undefined;
        if (id !== undefined && ctx.duplicate!(id, now)) return skipDuplicate();
        return carry(passFrame(f, link.node, now, ctx.pipeline, ctx.frames!.nextId, id));
      }
      const id = frameIdOf(f);
      if (ctx.duplicate && id !== undefined && ctx.duplicate(id, now)) return skipDuplicate();
      take(decodeEntryFrame(f, link.node, now, ctx.pipeline, id));
    };
    /**
     * The reads of one turn of the event loop go to the pipeline as one batch, emitted in its check
     * phase (setImmediate): TLS hands its plaintext over in 16 KiB reads and an inflating stream in
     * its chunks, and a batch per read made the pipeline's per-batch work (queue, acks) run four to
     * eight times per 64 KiB. A full batch (buffer_size) goes at once.
     */
    const emitSoon = () => {
      if (flushing) return;
      flushing = true;
      setImmediate(() => {
        if (!flushing) return;
        flush();
        if (!link.closed && ctx.isSaturated()) {
          socket.pause();
          link.inflate?.pause();
        }
      });
    };
    link.flush = flush;
    /** After a read was taken apart: its batch emitted soon; a line or frame over max_line_bytes ends the link. */
    const afterRead = (fits: boolean, what: string) => {
      if (!fits) {
        flush();
        counters.parse_errors++;
        link.closed = true;
        if (link.done !== link.acked) socket.write(ackLine(link.done));
        refuse(link, `${what} over max_line_bytes (${cfg.max_line_bytes})`);
        return;
      }
      emitSoon();
    };
    const decoder = new StringDecoder('utf8');
    /** the lines of the stream after the hello, as text (inflated first when compressed) */
    const onText = (text: string) => {
      if (link.closed) return;
      now = Date.now();
      afterRead(splitter.push(text, onLine), 'line');
    };
    const frames = new FrameReader(cfg.max_line_bytes);
    /** version 2: the frames of the stream after the hello (inflated first when compressed) */
    const onFrames = (bytes: Buffer) => {
      if (link.closed) return;
      now = Date.now();
      // carried on or decoded, as the pipeline's sinks speak now; a batch is of one kind
      const carry = ctx.frames?.active() === true;
      if (carry !== carrying) {
        if (batch.length + carried.length > 0) flush();
        carrying = carry;
      }
      afterRead(frames.push(bytes, onFrame), 'frame');
    };
    const readLines = (bytes: Buffer) => onText(decoder.write(bytes));
    /** the stream after the hello, in the version the hello chose (inflated first when compressed) */
    let feed = readLines;
    /** bytes of the hello line read so far (it ends at the first \n; the stream follows it) */
    let helloBytes: Buffer[] | undefined = [];
    let helloSize = 0;
    socket.on('data', (chunk: Buffer) => {
      counters.bytes_received += chunk.length;
      if (link.closed) return;
      if (helloBytes) {
        const nl = chunk.indexOf(10);
        if (nl < 0) {
          helloBytes.push(chunk);
          helloSize += chunk.length;
          if (helloSize > cfg.max_line_bytes) {
            clearTimeout(link.helloTimer);
            counters.parse_errors++;
            link.closed = true;
            refuse(link, `hello over max_line_bytes (${cfg.max_line_bytes})`);
          }
          return;
        }
        helloBytes.push(chunk.subarray(0, nl));
        const line = Buffer.concat(helloBytes).toString('utf8').replace(/\r$/, '');
        helloBytes = undefined;
        const chosen = onHello(line);
        if (!chosen) return;
        const read = chosen.frames ? onFrames : readLines;
        feed = read;
        if (chosen.codec) {
          const inflate = streamDecompressor(chosen.codec);
          inflate.on('data', read);
          inflate.on('error', () => {
            counters.parse_errors++;
            link.closed = true;
            socket.destroy();
          });
          socket.once('close', () => inflate.destroy());
          link.inflate = inflate;
          // What was read waits compressed, not inflated: the socket is read no further while the
          // stream holds more than its high-water mark, and the stream's output stops while the
          // pipeline is saturated (emitSoon), so a link of well-compressing entries (or a bomb)
          // never inflates past the pipeline's bound.
          feed = (bytes) => {
            if (inflate.write(bytes)) return;
            socket.pause();
            inflate.once('drain', () => {
              if (!paused && !stopping && !link.closed && !ctx.isSaturated()) socket.resume();
            });
          };
        }
        chunk = chunk.subarray(nl + 1);
        if (chunk.length === 0) return;
      }
      feed(chunk);
      if (ctx.isSaturated()) socket.pause();
    });
    if (!paused) socket.resume();
  };

  const admit = (socket: Socket, session: Session) => {
    const link: Link = {
      socket,
      ready: false,
      reports: false,
      node: undefined,
      received: 0,
      done: 0,
      acked: 0,
      ackScheduled: false,
      closed: false,
      order: new InOrder((n) => {
        link.done = n;
        scheduleAck(link);
        if (drained && !outstanding()) drained();
      }),
    };
    link.session = session;
    links.add(link);
    counters.active_connections = links.size;
    socket.setNoDelay(true);
    socket.on('close', () => {
      link.closed = true;
      clearTimeout(link.helloTimer);
      links.delete(link);
      counters.active_connections = links.size;
    });
    if (started) begin(link);
    else waiting.push(link);
  };

  return {
    id: plugin.id,
    type: 'tcp_chain',
    counters,
    pausable: true,
    acksUpstream: true,
    async open() {
      if (ctx.checkOnly) return;
      server = await listenStream({
        kind: 'source',
        id: plugin.id,
        host: cfg.host,
        port: cfg.port,
        tls: tlsOptions,
        counters,
        maxConnections: cfg.max_connections,
        authorize,
        log: ctx.log,
        isStopping: () => stopping,
        held: () => links.size,
        // the sender reads why before the connection closes
        refuse: (socket: Socket, why: Refusal) => {
          socket.end(errorLine(why === 'forbidden' ? 'forbidden' : 'too many connections'));
          socket.destroySoon();
        },
        onAdmit: admit,
      });
    },
    start() {
      if (started) return;
      started = true;
      for (const link of waiting.splice(0)) if (!link.closed) begin(link);
    },
    pause() {
      paused = true;
      for (const link of links) {
        link.socket.pause();
        link.inflate?.pause();
      }
    },
    resume() {
      paused = false;
      if (stopping) return;
      for (const link of links) {
        if (!started || link.closed) continue;
        link.inflate?.resume();
        if (!link.inflate?.writableNeedDrain) link.socket.resume();
      }
    },
    async stop(deadline = Date.now()) {
      if (stopping) return;
      stopping = true;
      const closing = server ? new Promise<void>((resolve) => server!.close(() => resolve())) : Promise.resolve();
      // Reading stops; what was emitted drains on (the pipeline pumps meanwhile) and is acknowledged
      // as it is done, until the deadline: the sender then need not send it again.
      for (const link of links) {
        link.socket.pause();
        // what was read goes to the pipeline now, to be acknowledged within the deadline
        link.flush?.();
      }
      if (outstanding()) {
        await doneBy(deadline, (wake) => (drained = wake));
        drained = undefined;
      }
      for (const link of links) {
        if (!link.closed && link.ready && link.done !== link.acked) link.socket.write(ackLine(link.done));
        link.closed = true;
        link.socket.end();
        link.socket.destroySoon();
      }
      const timer = setTimeout(() => {
        for (const link of links) link.socket.destroy();
      }, 1000);
      await closing;
      clearTimeout(timer);
    },
  };
};
