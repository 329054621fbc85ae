// Test helpers for nodes with a disk buffer (DESIGN.md §23): a relay whose source has one and
// whose http_chain sink dials a collector, the collector (dedup on, JSON to stdout), and a
// sender speaking http_chain that knows which of its entries were answered 204.

import { request } from 'node:http';
import { QUICK_BACKOFF } from './chain.js';
import { localPluginToml, sinkToml } from './toml.js';

export interface RelayOptions {
  readonly dataDir: string;
  /** the source's type and its port */
  readonly source: 'http_chain' | 'tcp_chain' | 'syslog';
  readonly port: number;
  /** the collector's port the relay's http_chain sink dials */
  readonly sinkPort: number;
  /** lines of the `buffer` table beyond `type = "disk"` */
  readonly buffer?: string;
  /** lines of the source's config table */
  readonly sourceConfig?: string;
  readonly adminPort?: number;
  readonly checkpointMs?: number;
}

/** A relay node: pipeline `relay`, source `in` with a disk buffer → http_chain sink `out`. */
export const relayToml = (o: RelayOptions): string => `
data_dir = ${JSON.stringify(o.dataDir)}
checkpoint_interval_ms = ${o.checkpointMs ?? 100}
status_interval_ms = 200
shutdown_timeout_ms = 2000
${o.adminPort ? `[admin]\nhost = "127.0.0.1"\nport = ${o.adminPort}\n` : ''}
[[pipelines]]
name = "relay"
${localPluginToml('sources', 'in', o.source, o.port, o.sourceConfig ?? '')}
[pipelines.plugin_sources.config.buffer]
type = "disk"
${o.buffer ?? ''}
${localPluginToml('sinks', 'out', 'http_chain', o.sinkPort, `node = "relay"\nflush_interval_ms = 50\n${QUICK_BACKOFF}`)}
`;

/** A collector: http_chain source on `port`, dedup on, every entry as JSON on stdout. */
export const collectorToml = (port: number): string => `
status_interval_ms = 200
[[pipelines]]
name = "coll"
[pipelines.flow.dedup]
enabled = true
[pipelines.flow.format]
type = "json"
${localPluginToml('sources', 'in', 'http_chain', port)}
${sinkToml('print', 'stdout', 'buffer_size = 10000\non_full = "block"')}`;

/** An entry line with a unique id, as an upstream node would send it. */
export const idLine = (prefix: string, i: number): string =>
  JSON.stringify({ time: '2026-11-25T10:00:00.000Z', source: 't', message: `${prefix} ${String(i).padStart(6, '0')}`, id: `${prefix}-${i}` });

/** POSTs NDJSON lines to an http_chain source; resolves the status, or 0 on a network error. */
export function postLines(port: number, lines: readonly string[], timeoutMs = 5000): Promise<{ status: number; retryAfter?: string }> {
  const body = `${lines.join('\n')}\n`;
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/ingest',
        method: 'POST',
        agent: false,
        headers: { 'Content-Type': 'application/x-ndjson', 'X-Logrelay-Protocol': '1', 'X-Logrelay-Node': 'edge', 'Content-Length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string | undefined }));
        res.on('error', () => resolve({ status: 0 }));
        res.on('close', () => resolve({ status: res.complete ? (res.statusCode ?? 0) : 0 }));
      },
    );
    // a whole-exchange deadline: a peer killed mid-exchange may leave neither an error nor a response
    const timer = setTimeout(() => {
      req.destroy();
      resolve({ status: 0 });
    }, timeoutMs);
    req.on('error', () => resolve({ status: 0 }));
    req.on('close', () => {
      clearTimeout(timer);
      setImmediate(() => resolve({ status: 0 }));
    });
    req.end(body);
  });
}

/** Messages printed by a JSON stdout sink, with how often each was printed. */
export function printedCounts(outputs: readonly (readonly string[])[]): Map<string, number> {
  const seen = new Map<string, number>();
  for (const out of outputs) {
    for (const l of out) {
      if (!l.startsWith('{')) continue;
      const m = (JSON.parse(l) as { message: string }).message;
      seen.set(m, (seen.get(m) ?? 0) + 1);
    }
  }
  return seen;
}
