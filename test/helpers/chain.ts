// Test helpers for chain links: numbered entries fed to a sender's stdin and read back at the
// receiver, and the TOML of chain sources, sinks and the usual sender/receiver nodes.

import type { Writable } from 'node:stream';
import { localPluginToml } from './toml.js';

export type ChainLink = 'tcp_chain' | 'http_chain';

/** Lines `entry 000000` … for from ≤ i < to, each with `\n`. */
export const numbered = (from: number, to: number): string => {
  let s = '';
  for (let i = from; i < to; i++) s += `entry ${String(i).padStart(6, '0')}\n`;
  return s;
};

/** Writes `total` numbered lines in writes of `chunk` lines, honouring drain, `pauseMs` between writes; ends stdin unless `end` is false. */
export async function feed(stdin: Writable, total: number, chunk: number, pauseMs: number, end = true): Promise<void> {
  for (let i = 0; i < total; i += chunk) {
    if (!stdin.write(numbered(i, Math.min(total, i + chunk)))) await new Promise((r) => stdin.once('drain', r));
    if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
  }
  if (end) stdin.end();
}

/** An entry as a receiver with the json format prints it. */
export interface Received {
  node?: string;
  source: string;
  message: string;
}

/** The JSON entries among a node's stdout lines. */
export const parseReceived = (lines: readonly string[]): Received[] => lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Received);

/** The number of a numbered entry. */
export const numberOf = (e: Received): number => Number(e.message.slice(6));

/** Fills `seen` with how often each numbered entry is in `outputs` (stdout lines); returns how many differ. */
export function countNumbered(seen: Map<number, number>, outputs: readonly (readonly string[])[]): number {
  seen.clear();
  for (const e of outputs.flatMap(parseReceived)) seen.set(numberOf(e), (seen.get(numberOf(e)) ?? 0) + 1);
  return seen.size;
}

/** Entries seen more than once, counted beyond the first. */
export function duplicatesIn(seen: ReadonlyMap<number, number>): number {
  let duplicates = 0;
  for (const n of seen.values()) duplicates += n - 1;
  return duplicates;
}

/** A `[<prefix>.tls]` table with `enabled = true` and `keys` as strings. */
export const tlsBlock = (prefix: string, keys: Record<string, string>): string =>
  `[${prefix}.tls]\nenabled = true\n${Object.entries(keys)
    .map(([k, v]) => `${k} = ${JSON.stringify(v)}`)
    .join('\n')}\n`;

/** A chain source table listening on 127.0.0.1:`port`; `config` lines follow in its config table. */
export const chainSourceToml = (id: string, link: ChainLink, port: number, config = ''): string => localPluginToml('sources', id, link, port, config);

/** A chain sink table dialling 127.0.0.1:`port` as `node`; `config` lines follow in its config table. */
export const chainSinkToml = (id: string, link: ChainLink, port: number, node: string, config = ''): string =>
  localPluginToml('sinks', id, link, port, `node = "${node}"\n${config}`);

/** The head of a receiving node: status every second, pipeline `recv` printing JSON. */
export const RECEIVER_HEAD = `
status_interval_ms = 1000
[[pipelines]]
name = "recv"
[pipelines.flow.format]
type = "json"
`;

/** The head of a sending node: status every second, pipeline `send` reading stdin. */
export const SENDER_HEAD = `
status_interval_ms = 1000
[[pipelines]]
name = "send"
[[pipelines.plugin_sources]]
type = "stdin"
`;

/** Pipeline `recv`: chain source `link` on `port` → stdout (JSON, blocking, 5000 entries). */
export const chainReceiverToml = (link: ChainLink, port: number): string => `
[[pipelines]]
name = "recv"
[pipelines.flow.format]
type = "json"
${chainSourceToml('link', link, port)}[[pipelines.plugin_sinks]]
type = "stdout"
[pipelines.plugin_sinks.config]
buffer_size = 5000
on_full = "block"
`;

/** Chain sink keys for a quick retry: backoff from 100 ms to 1 s. */
export const QUICK_BACKOFF = 'backoff_min_ms = 100\nbackoff_max_ms = 1000\n';

/** Pipeline `send`: stdin → chain sink `link` to `port` as `node` with QUICK_BACKOFF; `config` lines added. */
export const chainSenderToml = (link: ChainLink, port: number, node: string, config = ''): string =>
  `${SENDER_HEAD}${chainSinkToml('link', link, port, node, `${QUICK_BACKOFF}${config}\n`)}`;
