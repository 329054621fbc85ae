// `logrelay top [URL]`: a live terminal view of a node from its admin endpoint's `/status`
// (DESIGN.md §2, §16): one row per pipeline and component with rates per second, drops by reason,
// link states and restarts, redrawn every second; `q` quits. `--once`, or a stdout that is not a
// terminal, prints one plain snapshot (two samples a second apart, for the rates) and exits.
// `logrelay top --fleet URL`: the fleet view of that node's `/fleet` instead (DESIGN.md §26), one
// row per node, silent ones first.

import { readFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
import { errorMessage, UsageError } from './core/errors.js';
import type { FleetNode } from './primary/fleet.js';
import type { NodeStatus } from './primary/node-status.js';

const REFRESH_MS = 1000;
const REQUEST_TIMEOUT_MS = 5000;

export interface TopOptions {
  readonly url: string;
  readonly once: boolean;
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  /** show the node's fleet view (`/fleet`) rather than its own status */
  readonly fleet?: boolean;
}

/** Checks the URL now (a usage error, exit 2); returns its `/status` (or `/fleet`) address. */
export function statusUrl(url: string, path = '/status'): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`top: not a URL: ${url}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError(`top: URL must be http or https, got ${url}`);
  parsed.pathname = `${parsed.pathname.replace(/\/+$/, '')}${path}`;
  return parsed;
}

function fetchJson<T>(url: URL, tls: { ca?: Buffer; cert?: Buffer; key?: Buffer }): Promise<T> {
  return new Promise((resolve, reject) => {
    const get = url.protocol === 'https:' ? httpsGet : httpGet;
    const req = get(url, { ...tls, timeout: REQUEST_TIMEOUT_MS, headers: { Accept: 'application/json' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`${url.href}: HTTP ${res.statusCode}`));
        else {
          try {
            resolve(JSON.parse(body) as T);
          } catch (err) {
            reject(new Error(`${url.href}: ${errorMessage(err)}`));
          }
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${url.href}: no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    req.on('error', reject);
  });
}

const fetchStatus = (url: URL, tls: { ca?: Buffer; cert?: Buffer; key?: Buffer }) => fetchJson<NodeStatus>(url, tls);

const FLEET_HEAD = ['NODE', 'STATE', 'LAST SEEN', 'VIA', 'VERSION', 'PIPELINES', 'IN', 'OUT', 'DROPPED', 'LAG BYTES', 'LINKS DOWN'];
/** silent and gone nodes first: what an operator looks for */
const STATE_ORDER: Readonly<Record<string, number>> = { silent: 0, gone: 1, live: 2 };

/** A fleet view's table (`/fleet`'s nodes), at `now`; plain text, names without control characters. */
export function renderFleet(nodes: readonly FleetNode[], now: number, url = ''): string {
  const clean = (s: string) => s.replace(/[\u0000-\u001f\u007f]/g, '?');
  const sorted = [...nodes].sort((a, b) => (STATE_ORDER[a.state] ?? 3) - (STATE_ORDER[b.state] ?? 3) || a.node.localeCompare(b.node));
  const sum = (n: FleetNode, f: (p: FleetNode['report']['pipelines'][number]) => number) => n.report.pipelines.reduce((x, p) => x + (Number(f(p)) || 0), 0);
  const rows: string[][] = [FLEET_HEAD];
  const counts: Record<string, number> = {};
  for (const n of sorted) {
    counts[n.state] = (counts[n.state] ?? 0) + 1;
    const ago = Math.max(0, Math.round((now - Date.parse(n.last_seen)) / 1000));
    rows.push([
      clean(n.node),
      n.state,
      `${ago}s ago`,
      clean(n.via.join('>')) || '-',
      clean(String(n.report.version ?? '')),
      String(n.report.pipelines.length),
      String(sum(n, (p) => p.entries_in)),
      String(sum(n, (p) => p.entries_out)),
      String(sum(n, (p) => Object.values(p.dropped ?? {}).reduce((x, v) => x + v, 0))),
      String(sum(n, (p) => p.lag_bytes)),
      String(sum(n, (p) => Object.values(p.links ?? {}).filter((l) => l !== 'up').length)),
    ]);
  }
  const widths = FLEET_HEAD.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const lines = rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd());
  const title = `logrelay fleet${url ? ` (${url})` : ''}  ${nodes.length} nodes: ${counts.live ?? 0} live, ${counts.silent ?? 0} silent, ${counts.gone ?? 0} gone`;
  return `${title}\n\n${lines.join('\n')}\n`;
}

const HEAD = ['PIPELINE', 'COMPONENT', 'KIND', 'TYPE', 'STATE', 'TOTAL', 'RATE/s', 'DROPS', 'LINK', 'RESTARTS'];

const rate = (now: number, before: number | undefined, seconds: number): string =>
  before === undefined || seconds <= 0 ? '-' : String(Math.max(0, Math.round((now - before) / seconds)));

/** The table for `cur`, with rates against `prev` (taken `seconds` earlier); plain text, no escapes. */
export function renderTop(cur: NodeStatus, prev: NodeStatus | undefined, seconds: number, url = ''): string {
  const rows: string[][] = [HEAD];
  for (const [name, p] of Object.entries(cur.pipelines)) {
    const before = prev?.pipelines[name];
    const drops = (component?: string) =>
      p.drops
        .filter((d) => d.count > 0 && (component === undefined || d.component === component))
        .map((d) => `${d.reason}=${d.count}`)
        .join(' ') || '0';
    const flow = p.counters.flow.total_processed ?? 0;
    rows.push([name, '', 'pipeline', '', p.state, String(flow), rate(flow, before?.counters.flow.total_processed, seconds), drops(), '', String(p.restarts)]);
    for (const kind of ['sources', 'sinks'] as const) {
      const key = kind === 'sources' ? 'total_entries' : 'total_processed';
      for (const [id, c] of Object.entries(p.counters[kind])) {
        const total = c[key] ?? 0;
        rows.push(['', id, kind.slice(0, -1), p.types[kind][id] ?? '', '', String(total), rate(total, before?.counters[kind][id]?.[key], seconds), drops(id), p.links[id] ?? '', '']);
      }
    }
  }
  const widths = HEAD.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const lines = rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd());
  const title = `logrelay ${cur.version} node ${cur.node}${url ? ` (${url})` : ''}  generation ${cur.generation}  uptime ${cur.uptime_seconds}s  ${cur.ready ? 'ready' : 'NOT READY'}`;
  return `${title}\n\n${lines.join('\n')}\n`;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Redraws `screen()` every second until `q`; resolves the exit code. */
async function liveScreen(screen: () => Promise<string>): Promise<number> {
  const out = process.stdout;
  let quit!: () => void;
  const quitting = new Promise<void>((resolve) => (quit = resolve));
  const stdin = process.stdin;
  if (stdin.isTTY) stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  stdin.on('data', (key: string) => {
    if (key === 'q' || key === 'Q' || key === '\u0003') quit();
  });
  stdin.resume();
  out.write('\x1b[?1049h\x1b[?25l');
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      let text: string;
      try {
        text = await screen();
      } catch (err) {
        text = `logrelay top: ${errorMessage(err)} (retrying)\n`;
      }
      if (stopped) break;
      out.write(`\x1b[H\x1b[2J${text}\nq quits\n`);
      await Promise.race([sleep(REFRESH_MS), quitting]);
    }
  })();
  await quitting;
  stopped = true;
  await loop;
  out.write('\x1b[?25h\x1b[?1049l');
  if (stdin.isTTY) stdin.setRawMode(false);
  stdin.pause();
  return 0;
}

/** `top --fleet URL`: the node's fleet view, once or live. */
async function runFleetTop(opts: TopOptions, tls: { ca?: Buffer; cert?: Buffer; key?: Buffer }): Promise<number> {
  const url = statusUrl(opts.url, '/fleet');
  const screen = async () => renderFleet((await fetchJson<{ nodes: FleetNode[] }>(url, tls)).nodes, Date.now(), opts.url);
  if (opts.once || !process.stdout.isTTY) {
    process.stdout.write(await screen());
    return 0;
  }
  return liveScreen(screen);
}

/** Runs the view until `q` (or one snapshot); resolves the exit code. */
export async function runTop(opts: TopOptions): Promise<number> {
  const url = statusUrl(opts.url);
  const tls = {
    ...(opts.ca ? { ca: readFileSync(opts.ca) } : {}),
    ...(opts.cert ? { cert: readFileSync(opts.cert) } : {}),
    ...(opts.key ? { key: readFileSync(opts.key) } : {}),
  };
  const shown = opts.url;
  if (opts.fleet) return runFleetTop(opts, tls);
  if (opts.once || !process.stdout.isTTY) {
    const first = await fetchStatus(url, tls);
    const t0 = Date.now();
    await sleep(REFRESH_MS);
    const second = await fetchStatus(url, tls);
    process.stdout.write(renderTop(second, first, (Date.now() - t0) / 1000, shown));
    return 0;
  }

  let prev: { status: NodeStatus; at: number } | undefined;
  return liveScreen(async () => {
    const status = await fetchStatus(url, tls);
    const at = Date.now();
    const text = renderTop(status, prev?.status, prev ? (at - prev.at) / 1000 : 0, shown);
    prev = { status, at };
    return text;
  });
}
