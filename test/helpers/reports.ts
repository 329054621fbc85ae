// Test peers for node reports (the fleet view): a raw chain link that says its own hello and sends
// report lines, a raw old-style chain source, reports made up by name, and reading /fleet.

import { connect as netConnect, createServer, type Server, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { sleep, waitFor } from './node.js';

/** A report as a node of that name would send it (`via`: the path it came by). */
export function syntheticReport(node: string, via: readonly string[] = [], intervalMs = 1000): Record<string, unknown> {
  const now = new Date().toISOString();
  return {
    node,
    version: 'test',
    started_at: now,
    generation: 1,
    interval_ms: intervalMs,
    pipelines: [{ name: 'p', state: 'running', restarts: 0, entries_in: 1, entries_out: 1, dropped: {}, lag_bytes: 7, buffer_bytes: 0, links: {} }],
    sent_at: now,
    via,
  };
}

export interface RawLink {
  readonly socket: Socket;
  readonly lines: string[];
  send(text: string): Promise<void>;
  waitLine(match: (l: string) => boolean, what: string): Promise<string>;
  close(): void;
}

/** Dials a tcp_chain source (TLS when `tls` is given) and collects the lines it says. */
export async function rawLink(port: number, tls?: ConnectionOptions): Promise<RawLink> {
  const socket = tls ? tlsConnect({ ...tls, host: '127.0.0.1', port }) : netConnect({ host: '127.0.0.1', port });
  const lines: string[] = [];
  let rest = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    rest += chunk;
    for (let i = rest.indexOf('\n'); i >= 0; i = rest.indexOf('\n')) {
      lines.push(rest.slice(0, i));
      rest = rest.slice(i + 1);
    }
  });
  socket.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    socket.once(tls ? 'secureConnect' : 'connect', resolve);
    socket.once('error', reject);
  });
  return {
    socket,
    lines,
    send: (text) =>
      new Promise<void>((resolve) => {
        if (socket.write(text)) resolve();
        else socket.once('drain', () => resolve());
      }),
    waitLine: (match, what) => waitFor(() => lines.find(match), what, 10_000),
    close: () => socket.destroy(),
  };
}

/** Sends report lines for `reports` over a link that accepted reports, in chunks. */
export async function sendReports(link: RawLink, reports: readonly Record<string, unknown>[], chunk = 500): Promise<void> {
  for (let i = 0; i < reports.length; i += chunk) {
    await link.send(
      reports
        .slice(i, i + chunk)
        .map((r) => `${JSON.stringify({ report: r })}\n`)
        .join(''),
    );
    await sleep(1);
  }
}

/**
 * A chain source as a node before reports existed: answers any hello `{"ok":1}` (ignoring an
 * offer), acknowledges every line as an entry, and keeps what it was sent after the hello.
 * Listens on `port` (default: a free one).
 */
export async function oldChainSource(port = 0): Promise<{ server: Server; port: number; hellos: string[]; lines: string[]; close(): Promise<void> }> {
  const hellos: string[] = [];
  const lines: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.setEncoding('utf8');
    let rest = '';
    let hello = false;
    let n = 0;
    socket.on('data', (chunk: string) => {
      rest += chunk;
      let acked = false;
      for (let i = rest.indexOf('\n'); i >= 0; i = rest.indexOf('\n')) {
        const line = rest.slice(0, i);
        rest = rest.slice(i + 1);
        if (!hello) {
          hello = true;
          hellos.push(line);
          socket.write('{"ok":1}\n');
          continue;
        }
        lines.push(line);
        n++;
        acked = true;
      }
      if (acked) socket.write(`{"ack":${n}}\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const address = server.address();
  return {
    server,
    port: typeof address === 'object' && address ? address.port : 0,
    hellos,
    lines,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

export interface FleetRow {
  node: string;
  state: string;
  last_seen: string;
  via: string[];
  report: Record<string, unknown>;
}

/** A node's /fleet as JSON. */
export async function fetchFleet(adminPort: number): Promise<{ nodes: FleetRow[]; forgotten: Record<string, number> }> {
  const res = await fetch(`http://127.0.0.1:${adminPort}/fleet`, { headers: { Accept: 'application/json' } });
  if (res.status !== 200) throw new Error(`/fleet answered ${res.status}`);
  return (await res.json()) as { nodes: FleetRow[]; forgotten: Record<string, number> };
}
