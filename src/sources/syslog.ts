// `syslog` source (DESIGN.md §17): RFC 5424 and RFC 3164 messages over TCP (RFC 6587 framing,
// TLS and auth as on chain sources) or UDP (one message per datagram). Each read is decoded
// and parsed synchronously and handed on as one batch; a saturated pipeline pauses TCP reads.
// UDP cannot pause: a large receive buffer rides out bursts, and what the kernel still drops is
// read from /proc once a second into `kernel_drops` (Linux).

import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { isIP, type Server, type Socket } from 'node:net';
import { CHAIN_SOURCE_BUFFER_SIZE, type ChainSourceConfig, chainSourceConfig, chainSourceCounters, chainSourceFields } from '../net/source-config.js';
import type { PluginSpec } from '../config/spec.js';
import type { Entry } from '../core/entry.js';
import { PluginError } from '../core/errors.js';
import { bindError, listenStream } from '../net/listener.js';
import { serverSecurity } from '../net/tls.js';
import { FrameDecoder, type SourceFraming, trimFrameEnd } from '../syslog/framing.js';
import { kernelDrops, kernelDropsCounted } from '../syslog/kernel-drops.js';
import { parseSyslog } from '../syslog/parse.js';
import type { Source, SourceFactory } from './types.js';

interface SyslogSourceConfig extends ChainSourceConfig {
  readonly mode: 'tcp' | 'udp';
  readonly framing: SourceFraming;
  /** longest message kept, bytes; the rest of a longer frame is cut */
  readonly max_message_bytes: number;
  /** 0 = unlimited (tcp) */
  readonly max_connections: number;
  /** 0 = none (tcp) */
  readonly read_timeout_ms: number;
  /** SO_RCVBUF asked for (udp), bytes; the kernel may grant less */
  readonly receive_buffer_bytes: number;
}

/** How often the kernel's drop count of a UDP socket is read, ms (the counters ship once a second). */
const KERNEL_DROPS_INTERVAL_MS = 1000;
/** Linux reports twice the SO_RCVBUF asked for (the doubled value is what it books, overhead included). */
const RCVBUF_FACTOR = process.platform === 'linux' ? 2 : 1;

export const SYSLOG_SOURCE: PluginSpec = {
  doc: 'receives syslog messages (RFC 5424 and 3164) over TCP or UDP from rsyslog, syslog-ng, devices and `logger`; no acknowledgement exists in syslog',
  fields: chainSourceFields({
    mode: { t: 'string', def: 'tcp', oneOf: ['tcp', 'udp'], doc: 'transport', values: { tcp: 'streams (TLS and auth possible)', udp: 'one message per datagram' } },
    framing: {
      t: 'string',
      def: 'auto',
      oneOf: ['auto', 'octet_counting', 'newline', 'nul'],
      doc: 'TCP framing; a trailing NUL, CR or LF is never part of a message (UDP too)',
      values: {
        auto: 'octet counted when a frame starts with digits and a space, else to the next newline or NUL byte (Python `SysLogHandler`, Java and Go appenders end messages with NUL)',
        octet_counting: 'RFC 6587 octet counting only',
        newline: 'to the newline only',
        nul: 'to the NUL byte only (messages may hold newlines)',
      },
    },
    max_message_bytes: { t: 'number', def: 65536, int: true, min: 64, doc: 'a longer frame is cut and counted in `truncated_messages`' },
    max_connections: { t: 'number', def: 0, int: true, min: 0, unit: 'connections', doc: 'connections beyond this are refused (`rejected_conns`); 0 = unlimited' },
    read_timeout_ms: { t: 'number', def: 0, int: true, min: 0, doc: 'a TCP connection silent this long is closed; 0 = none' },
    receive_buffer_bytes: {
      t: 'number',
      def: 4 * 1024 * 1024,
      int: true,
      min: 4096,
      max: 1024 * 1024 * 1024,
      doc: 'UDP: the socket receive buffer asked for, which rides out bursts while the worker is busy; Linux grants at most `net.core.rmem_max` (logged INFO `UDP receive buffer capped` with the size granted); datagrams that still find it full are counted in `kernel_drops`',
    },
    buffer_size: CHAIN_SOURCE_BUFFER_SIZE,
  }),
};

export const createSyslogSource: SourceFactory = (plugin, ctx): Source => {
  const cfg = chainSourceConfig<SyslogSourceConfig>(plugin, SYSLOG_SOURCE);
  if (cfg.mode === 'udp' && (cfg.tls.enabled || cfg.auth)) throw new PluginError('source', plugin.id, cfg.tls.enabled ? 'tls' : 'auth', 'applies to mode "tcp" only');
  if (cfg.mode === 'tcp' && plugin.config.receive_buffer_bytes !== undefined) throw new PluginError('source', plugin.id, 'receive_buffer_bytes', 'applies to mode "udp" only');
  /** `kernel_drops` only where the kernel counts them (udp on Linux) */
  const counters: ReturnType<typeof chainSourceCounters> & { truncated_messages: number; kernel_drops?: number } = { ...chainSourceCounters(), truncated_messages: 0 };
  if (cfg.mode === 'udp' && kernelDropsCounted()) counters.kernel_drops = 0;
  const { tlsOptions, authorize } = serverSecurity('source', plugin.id, cfg, ctx, counters);
  const connections = new Set<Socket>();
  /** connections accepted before start(): they wait, unread */
  const waiting: Socket[] = [];
  let server: Server | undefined;
  let udp: UdpSocket | undefined;
  let dropsTimer: NodeJS.Timeout | undefined;
  let started = false;
  let stopping = false;
  /** stop() handed on the last batch */
  let stopped = false;
  let paused = false;

  let batch: Entry[] = [];
  const flush = () => {
    if (batch.length === 0) return;
    const b = batch;
    batch = [];
    counters.total_entries += b.length;
    ctx.emit(b);
  };
  /** Parses one message into the batch; the caller flushes. Before start() (UDP) the batch only fills. */
  const take = (frame: Buffer, truncated: boolean, now: number) => {
    if (truncated) counters.truncated_messages++;
    const parsed = parseSyslog(frame.toString('utf8'), now, plugin.id);
    if (!parsed.ok) counters.parse_errors++;
    batch.push(parsed.entry);
    if (batch.length >= cfg.buffer_size && started) flush();
  };

  const begin = (socket: Socket) => {
    const decoder = new FrameDecoder(cfg.framing, cfg.max_message_bytes);
    let now = 0;
    const onFrame = (frame: Buffer, truncated: boolean) => take(frame, truncated, now);
    if (cfg.read_timeout_ms > 0) {
      socket.setTimeout(cfg.read_timeout_ms, () => {
        if (!paused) socket.destroy();
      });
    }
    socket.on('data', (chunk: Buffer) => {
      now = Date.now();
      const fits = decoder.push(chunk, onFrame);
      flush();
      if (!fits) {
        // strict octet counting lost the frame boundary: nothing after it can be trusted
        counters.parse_errors++;
        socket.destroy();
        return;
      }
      if (ctx.isSaturated()) socket.pause();
    });
    socket.on('end', () => {
      now = Date.now();
      decoder.finish(onFrame);
      flush();
    });
    if (!paused) socket.resume();
  };

  const admit = (socket: Socket) => {
    connections.add(socket);
    counters.active_connections = connections.size;
    socket.on('close', () => {
      connections.delete(socket);
      counters.active_connections = connections.size;
    });
    if (started) begin(socket);
    else waiting.push(socket);
  };

  // Datagrams come one per event (libuv reads up to 32 per turn of the loop): each read only
  // keeps the datagram, and the batch of one turn is parsed and handed on at once after it, so
  // the socket is drained before any parsing and the time is read once per batch.
  let datagrams: Buffer[] = [];
  let scheduled = false;
  const takeDatagrams = () => {
    scheduled = false;
    if (datagrams.length === 0) return;
    const list = datagrams;
    datagrams = [];
    const now = Date.now();
    for (const msg of list) {
      const cut = msg.length > cfg.max_message_bytes;
      take(trimFrameEnd(cut ? msg.subarray(0, cfg.max_message_bytes) : msg), cut, now);
    }
    if (started && !stopped) flush();
  };

  const openUdp = async () => {
    const sock = createSocket(isIP(cfg.host) === 6 || cfg.host === '::' ? 'udp6' : 'udp4');
    sock.on('message', (msg: Buffer) => {
      if (stopping) return;
      // A new generation shares the port from its build on and the kernel hands each datagram
      // to one reader: what it reads before start() waits in the batch, up to buffer_size.
      if (!started && batch.length + datagrams.length >= cfg.buffer_size) {
        counters.dropped_entries++;
        return;
      }
      datagrams.push(msg);
      if (datagrams.length >= cfg.buffer_size) takeDatagrams();
      else if (!scheduled) {
        scheduled = true;
        setImmediate(takeDatagrams);
      }
    });
    await new Promise<void>((resolve, reject) => {
      sock.once('error', (err) => reject(bindError('source', plugin.id, cfg.host, cfg.port, err)));
      sock.bind({ address: cfg.host, port: cfg.port }, () => {
        sock.removeAllListeners('error');
        sock.on('error', () => {});
        resolve();
      });
    });
    udp = sock;
    sizeReceiveBuffer(sock);
    const drops = kernelDrops(sock);
    if (drops) {
      await drops.poll(); // the count before this source read anything: its own run starts here
      let polling = false;
      dropsTimer = setInterval(() => {
        if (polling) return;
        polling = true;
        void drops.poll().then((n) => {
          polling = false;
          if (n !== undefined) counters.kernel_drops = n;
        });
      }, KERNEL_DROPS_INTERVAL_MS);
      dropsTimer.unref();
    }
  };

  /** Asks for receive_buffer_bytes; the kernel caps it (net.core.rmem_max), which is told once, at INFO. */
  const sizeReceiveBuffer = (sock: UdpSocket) => {
    try {
      sock.setRecvBufferSize(cfg.receive_buffer_bytes);
    } catch (err) {
      ctx.log.warn({ err, receive_buffer_bytes: cfg.receive_buffer_bytes }, 'UDP receive buffer not set');
      return;
    }
    const granted = Math.floor(sock.getRecvBufferSize() / RCVBUF_FACTOR);
    if (granted < cfg.receive_buffer_bytes) {
      ctx.log.info({ receive_buffer_bytes: cfg.receive_buffer_bytes, granted_bytes: granted }, 'UDP receive buffer capped');
    }
  };

  return {
    id: plugin.id,
    type: 'syslog',
    counters,
    pausable: cfg.mode === 'tcp',
    async open() {
      if (ctx.checkOnly) return;
      if (cfg.mode === 'udp') {
        await openUdp();
        return;
      }
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
        held: () => connections.size,
        onAdmit: admit,
      });
    },
    start() {
      if (started) return;
      started = true;
      flush();
      for (const socket of waiting.splice(0)) if (!socket.destroyed) begin(socket);
    },
    pause() {
      paused = true;
      for (const socket of connections) socket.pause();
    },
    resume() {
      paused = false;
      if (stopping || !started) return;
      for (const socket of connections) if (!socket.destroyed) socket.resume();
    },
    async stop() {
      if (stopping) return;
      stopping = true;
      // datagrams read in this turn of the loop go with the last batch; nothing is emitted after stop()
      takeDatagrams();
      if (started) flush();
      stopped = true;
      if (dropsTimer) clearInterval(dropsTimer);
      if (udp) {
        const u = udp;
        await new Promise<void>((resolve) => u.close(() => resolve()));
      }
      const closing = server ? new Promise<void>((resolve) => server!.close(() => resolve())) : Promise.resolve();
      // Syslog has no acknowledgement: what the peers sent and we did not read yet is theirs to lose.
      for (const socket of connections) socket.destroy();
      await closing;
    },
  };
};
