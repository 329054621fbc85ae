// Test helpers for delivery guarantees (DESIGN.md §14, §15): numbered lines appended to files at
// an edge, nodes of a small fleet on 127.0.0.1 (edge → relays → collectors), and a tally of what
// a collector printed, by line number.

import { appendFileSync } from 'node:fs';
import { chainSinkToml, chainSourceToml, QUICK_BACKOFF } from './chain.js';
import { type RunningNode, sleep, waitFor } from './node.js';
import { fileSourceToml, sinkToml } from './toml.js';

/** The text of line `i`. */
export const lineText = (i: number): string => `line ${String(i).padStart(7, '0')}`;

/** Appends lines from ≤ i < to to `path` in one write. */
export function appendLines(path: string, from: number, to: number): void {
  let s = '';
  for (let i = from; i < to; i++) s += `${lineText(i)}\n`;
  appendFileSync(path, s);
}

/** How often each line number was printed by a collector (JSON on stdout), read incrementally. */
export class Tally {
  readonly seen = new Map<number, number>();
  private read = 0;

  constructor(private readonly node: () => RunningNode | undefined) {}

  update(): this {
    const out = this.node()?.out ?? [];
    for (; this.read < out.length; this.read++) {
      const l = out[this.read]!;
      if (!l.startsWith('{')) continue;
      const m = /"message":"line (\d+)"/.exec(l);
      if (m) this.seen.set(Number(m[1]), (this.seen.get(Number(m[1])) ?? 0) + 1);
    }
    return this;
  }

  /** Restarts reading from a new process of the same collector (its stdout starts empty). */
  follow(): void {
    this.read = 0;
  }

  /** Distinct lines seen. */
  get distinct(): number {
    return this.update().seen.size;
  }

  /** Lines of [0, total) never seen. */
  missing(total: number): number[] {
    this.update();
    const out: number[] = [];
    for (let i = 0; i < total; i++) if (!this.seen.has(i)) out.push(i);
    return out;
  }

  /** Copies beyond the first, over all lines. */
  get duplicates(): number {
    let d = 0;
    for (const n of this.update().seen.values()) d += n - 1;
    return d;
  }
}

/** Status every 500 ms (read at debug level), quick to shut down. */
const HEAD = 'status_interval_ms = 500\nshutdown_timeout_ms = 3000\n';

/** A collector: chain source on `port` → stdout as JSON (blocking), dedup on or off. */
export function collectorToml(port: number, dedup: boolean, link: 'tcp_chain' | 'http_chain' = 'tcp_chain'): string {
  return `${HEAD}
[[pipelines]]
name = "collect"
[pipelines.flow.format]
type = "json"
[pipelines.flow.dedup]
enabled = ${dedup}
${chainSourceToml('in', link, port)}${sinkToml('out', 'stdout', 'buffer_size = 5000\non_full = "block"')}`;
}

/** A relay: tcp_chain source on `port` → one blocking chain sink per downstream port. */
export function relayToml(name: string, port: number, downstream: readonly number[], link: 'tcp_chain' | 'http_chain' = 'tcp_chain'): string {
  return `${HEAD}node_name = "${name}"
[[pipelines]]
name = "relay"
${chainSourceToml('in', 'tcp_chain', port, 'buffer_size = 2000\n')}${downstream
    .map((p, i) => chainSinkToml(`out${i}`, link, p, name, `${QUICK_BACKOFF}buffer_size = 2000\non_full = "block"\n`))
    .join('')}`;
}

export interface EdgeOptions {
  readonly fanout?: 'all' | 'any' | 'balance';
  readonly dataDir?: string;
  /** chain sink buffer_size (default 2000) */
  readonly bufferSize?: number;
  readonly extra?: string;
}

/** An edge: a file source on `dir` (`*.log`, from the start) → one tcp_chain sink per port. */
export function edgeToml(dir: string, ports: readonly number[], opts: EdgeOptions = {}): string {
  const sinks = ports.map((p, i) => chainSinkToml(`to${i}`, 'tcp_chain', p, 'edge', `${QUICK_BACKOFF}buffer_size = ${opts.bufferSize ?? 2000}\non_full = "block"\n`)).join('');
  return `${HEAD}node_name = "edge"
${opts.dataDir ? `data_dir = ${JSON.stringify(opts.dataDir)}\ncheckpoint_interval_ms = 200\n` : ''}${opts.extra ?? ''}
[[pipelines]]
name = "app"
fanout = "${opts.fanout ?? 'all'}"
${fileSourceToml('app', dir, 'pattern = "*.log"\nfrom = "start"\ncheck_interval_ms = 200')}${sinks}`;
}

/**
 * Waits until the collector has all `total` lines, failing as soon as a 10 s window brings none
 * (the edge must never stall while a path is alive), or after `timeoutMs`.
 */
export async function waitAllDelivered(tally: Tally, total: number, timeoutMs = 150_000): Promise<void> {
  let last = -1;
  await waitFor(
    async () => {
      const now = tally.distinct;
      if (now === total) return true;
      if (now === last) throw new Error(`no progress for 10 s at ${now} lines (stalled)`);
      last = now;
      await sleep(10_000);
      return false;
    },
    'backlog delivered',
    timeoutMs,
  );
}
