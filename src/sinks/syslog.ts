// `syslog` sink (DESIGN.md §17): a client of a syslog receiver (rsyslog, syslog-ng, a SIEM) over
// TCP (RFC 6587 octet counting or newline framing, TLS optional) or UDP (a datagram per entry).
// It dials like a chain sink (backoff with jitter) and keeps the link up. Syslog has no
// acknowledgement: an entry handed to the socket counts as delivered.

import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { isIP, type Socket } from 'node:net';
import type { ConnectionOptions } from 'node:tls';
import { dialerBackoff, type DialerSinkConfig, dialerSinkConfig, dialerSinkFields } from '../net/dialer-config.js';
import type { PluginSpec } from '../config/spec.js';
import { errorMessage, PluginError } from '../core/errors.js';
import { DialLoop } from '../net/dial-loop.js';
import { clientTlsOptions } from '../net/tls.js';
import { formatSyslog, type HeaderOptions, type SyslogFormat } from '../syslog/format.js';
import { encodeFrame, type SinkFraming } from '../syslog/framing.js';
import type { Sink, SinkFactory, SinkItem } from './types.js';

interface SyslogSinkConfig extends DialerSinkConfig {
  readonly mode: 'tcp' | 'udp';
  readonly framing: SinkFraming;
  readonly format: SyslogFormat | 'line';
  readonly app_name: string;
  /** 0–23, default 16 (local0) */
  readonly facility: number;
  readonly dial_timeout_ms: number;
  readonly write_timeout_ms: number;
}

/** The transport under the link: a TCP (or TLS) stream or a connected UDP socket. */
type Conn = { readonly kind: 'tcp'; readonly socket: Socket } | { readonly kind: 'udp'; readonly socket: UdpSocket };

export const SYSLOG_SINK: PluginSpec = {
  doc: 'sends entries as syslog messages to rsyslog, syslog-ng or a SIEM; an entry written to the socket counts as delivered',
  fields: dialerSinkFields({
    mode: { t: 'string', def: 'tcp', oneOf: ['tcp', 'udp'], doc: 'transport', values: { tcp: 'a stream (TLS possible)', udp: 'one datagram per entry' } },
    framing: {
      t: 'string',
      def: 'octet_counting',
      oneOf: ['octet_counting', 'newline'],
      doc: 'TCP framing',
      values: { octet_counting: 'RFC 6587 octet counting', newline: 'a newline after each message (CR and LF in it escaped)' },
    },
    format: {
      t: 'string',
      def: 'rfc5424',
      oneOf: ['rfc5424', 'rfc3164', 'line'],
      doc: 'message format',
      values: { rfc5424: 'RFC 5424', rfc3164: 'BSD syslog (RFC 3164)', line: "the pipeline's formatted line, no syslog header" },
    },
    app_name: { t: 'string', def: 'logrelay', nonEmpty: true, doc: "APP-NAME when the entry's source has no printable character" },
    facility: { t: 'number', def: 16, int: true, min: 0, max: 23, doc: 'facility of the PRI (16 = local0)' },
    dial_timeout_ms: { t: 'number', def: 5000, int: true, min: 1, doc: 'a connection not up within this is given up and retried' },
    write_timeout_ms: { t: 'number', def: 5000, int: true, min: 1, doc: 'a connection that takes no write within this is closed and redialled' },
  }),
};

export const createSyslogSink: SinkFactory = (plugin, ctx): Sink => {
  const cfg = dialerSinkConfig<SyslogSinkConfig>(plugin, SYSLOG_SINK);
  if (cfg.mode === 'udp' && cfg.tls.enabled) throw new PluginError('sink', plugin.id, 'tls', 'applies to mode "tcp" only');
  const tlsOptions: ConnectionOptions | undefined = clientTlsOptions('sink', plugin.id, cfg.tls, cfg.host);
  const header: HeaderOptions = { facility: cfg.facility, hostname: ctx.node, appName: cfg.app_name };
  const backoff = dialerBackoff(cfg);
  const counters = { connected: 0, reconnects: 0 };
  const log = ctx.log;
  const remote = `${cfg.host}:${cfg.port}`;
  const framing: SinkFraming | undefined = cfg.mode === 'tcp' ? cfg.framing : undefined;

  /** One message per entry, framed for TCP. */
  const encode = (item: SinkItem, now: number): string => {
    const payload = cfg.format === 'line' ? item.line : formatSyslog(item.entry, cfg.format, header, now);
    return framing ? encodeFrame(payload, framing) : payload;
  };

  let conn: Conn | undefined;
  /** messages of the batch that waits for the link, and the write() waiting on them */
  let pending: string[] | undefined;
  let wakeWriter: (() => void) | undefined;
  let closing = false;
  /** failed to connect, or lost the link and not reconnected since (`on_full = "auto"` drops meanwhile) */
  let down = false;
  const loop = new DialLoop({
    host: cfg.host,
    port: cfg.port,
    tls: tlsOptions,
    dialTimeoutMs: cfg.dial_timeout_ms,
    writeTimeoutMs: cfg.write_timeout_ms,
    missing: 'no connection',
    backoff,
    counters,
    open: () => (cfg.mode === 'udp' ? dialUdp() : dialTcp()),
  });

  const release = () => {
    const w = wakeWriter;
    wakeWriter = undefined;
    w?.();
  };

  /**
   * Hands `messages` to the connection; true when that is done now, false when the writer must
   * wait for release() (TCP 'drain', the UDP send callback, or the link closing).
   */
  const send = (c: Conn, messages: string[]): boolean => {
    if (c.kind === 'udp') {
      // One callback per batch: the next batch waits until the kernel took this one, so the
      // dgram send queue stays bounded.
      const last = messages.length - 1;
      for (let i = 0; i < last; i++) c.socket.send(messages[i]!);
      c.socket.send(messages[last]!, release);
      return false;
    }
    if (c.socket.write(messages.join(''))) return true;
    loop.watchWrite(c.socket);
    return false;
  };

  /** The writer's wait, woken by release(). */
  const waitForRelease = () => new Promise<void>((resolve) => (wakeWriter = resolve));

  const onReady = (c: Conn) => {
    loop.ready();
    down = false;
    counters.connected = 1;
    log.debug({ remote, mode: cfg.mode, tls: !!tlsOptions }, 'Syslog link connected');
    const messages = pending;
    pending = undefined;
    if (!messages) return;
    if (send(c, messages)) release();
  };

  const onClosed = (c: Conn, failure: string | undefined, wasReady: boolean) => {
    if (conn !== c) return;
    conn = undefined;
    counters.connected = 0;
    if (!closing) down = true;
    // what was handed to the socket counts as delivered: a writer waiting for 'drain' goes on
    if (!pending) release();
    const fields = { remote, error: failure ?? 'connection closed', pending: pending?.length ?? 0 };
    if (wasReady && !failure) log.debug(fields, 'Syslog link disconnected');
    else if (loop.firstOfOutage(closing)) {
      log.warn(fields, loop.everConnected ? 'Syslog link lost, reconnecting' : 'Syslog link cannot connect, retrying');
    } else log.debug(fields, 'Syslog link attempt failed');
    if (closing && !pending) return;
    loop.redial();
  };

  const dialTcp = () => {
    const s = loop.connectStream((failure, wasReady) => onClosed(c, failure, wasReady));
    const c: Conn = { kind: 'tcp', socket: s };
    conn = c;
    s.once(tlsOptions ? 'secureConnect' : 'connect', () => onReady(c));
    // a receiver says nothing; whatever it sends is read and ignored
    s.resume();
    s.on('drain', release);
  };

  const dialUdp = () => {
    const s = createSocket(isIP(cfg.host) === 6 ? 'udp6' : 'udp4');
    const c: Conn = { kind: 'udp', socket: s };
    conn = c;
    let failure: string | undefined;
    // ICMP errors (port unreachable) arrive here; UDP has no delivery to lose them from
    s.on('error', (err) => {
      failure ??= errorMessage(err);
      if (loop.state !== 'ready') s.close();
    });
    s.on('close', () => onClosed(c, failure, loop.closed()));
    s.connect(cfg.port, cfg.host, () => onReady(c));
  };

  const dial = () => {
    if (!ctx.checkOnly) loop.dial();
  };

  return {
    id: plugin.id,
    type: 'syslog',
    counters,
    bufferSize: cfg.buffer_size,
    bufferMaxBytes: cfg.buffer_max_bytes,
    onFull: cfg.on_full,
    linkDown: () => down,
    write(batch) {
      if (batch.length === 0) return undefined;
      const now = Date.now();
      const messages = batch.map((item) => encode(item, now));
      if (loop.state === 'ready' && conn) return send(conn, messages) ? undefined : waitForRelease();
      pending = messages;
      dial();
      return waitForRelease();
    },
    held: () => pending?.length ?? 0,
    async close(deadline) {
      closing = true;
      if (pending && !ctx.checkOnly) {
        dial();
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, Math.max(0, deadline - Date.now()));
          const prev = wakeWriter;
          wakeWriter = () => {
            clearTimeout(t);
            prev?.();
            resolve();
          };
        });
      }
      loop.stop();
      const c = conn;
      if (!c) {
        release();
        return;
      }
      const closed = new Promise<void>((resolve) => (c.kind === 'tcp' ? c.socket : c.socket).once('close', () => resolve()));
      let t: NodeJS.Timeout | undefined;
      if (c.kind === 'tcp') {
        // end() sends what Node still buffers, then FIN; past the deadline the socket is cut
        c.socket.end();
        t = setTimeout(() => c.socket.destroy(), Math.max(100, deadline - Date.now()));
      } else {
        c.socket.close();
      }
      await closed;
      clearTimeout(t);
      release();
    },
  };
};
