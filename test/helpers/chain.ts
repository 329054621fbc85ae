// Test helpers for chain links: numbered entries fed to a sender's stdin and read back at the
// receiver, and the TOML of chain sources, sinks and the usual sender/receiver nodes.

import { type AddressInfo, createServer } from 'node:net';
import type { Writable } from 'node:stream';
import { killWithWorkers, type nodeStarter, type RunningNode, type Teardown, waitFor, waitReady, within } from './node.js';
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

/** `feed`, bounded: rejects when the sender has not taken all `total` entries within 60 s. */
export const feedWithin60s = (stdin: Writable, total: number, chunk: number, pauseMs: number): Promise<void> =>
  within(feed(stdin, total, chunk, pauseMs), 60_000, () => new Error(`the sender took not all ${total} entries within 60 s`));

/** An entry as a receiver with the json format prints it. */
export interface Received {
  node?: string;
  source: string;
  message: string;
}

/** The JSON entries among a node's stdout lines. */
export const parseReceived = (lines: readonly string[]): Received[] => lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Received);

/** Lines of every kind a link carries: UTF-8, quotes, backslashes, tabs, and JSON lines with fields and a level. */
export function linkLine(i: number): string {
  if (i % 5 === 0) return JSON.stringify({ msg: `json ${i} "q" ä`, level: 'warn', user: { id: i, name: 'ä"b\\c' }, tags: ['x', i] });
  return `entry ${String(i).padStart(6, '0')} GET /api?id=${i % 97} msg="ok ${i}" täglich ✓ tab\there back\\slash`;
}

/** What a receiver printed from `node`, without the parts that differ between senders (time, node). */
export function receivedFrom(recv: RunningNode, node: string): unknown[] {
  return parseReceived(recv.out)
    .filter((e) => e.node === node)
    .map((e) => {
      const { time: _time, node: _node, ...rest } = e as unknown as Record<string, unknown>;
      return rest;
    });
}

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

/** What `nodeStarter` returns. */
export type Starter = ReturnType<typeof nodeStarter>;

/**
 * Starts a receiver on `receiverToml` and then a sender on `senderToml` (stdin piped), each
 * waited for (20 s); feeds `total` entries in writes of 10,000 (60 s) and waits until all of
 * them are at the receiver (45 s). Returns the receiver's entries.
 */
export async function relayAll(start: Starter, receiverToml: string, senderToml: string, total: number): Promise<Received[]> {
  const b = start('recv1', receiverToml);
  await waitReady(b, 'receiver');
  const a = start('send1', senderToml, [], true);
  await waitReady(a, 'sender');
  await feedWithin60s(a.child.stdin!, total, 10_000, 0);
  await waitFor(() => b.out.length >= total, `all ${total} entries at the receiver`, 45_000);
  return parseReceived(b.out);
}

export interface KilledReceiver {
  /** the sender */
  readonly a: RunningNode;
  /** the first receiver, SIGKILLed, and the second, on the same config */
  readonly b1: RunningNode;
  readonly b2: RunningNode;
  /** how many lines the first receiver had printed when it was killed */
  readonly firstRun: number;
  /** how often each numbered entry arrived, over both receivers */
  readonly seen: ReadonlyMap<number, number>;
}

export interface KillOptions {
  /** entries fed, 500 every 15 ms */
  readonly total: number;
  /** entries at the first receiver before it is killed (waited for up to 30 s) */
  readonly firstBatch: number;
  /** the sender has noticed the loss (waited for up to 20 s), named by `noticeWhat` */
  readonly senderNoticed: (sender: RunningNode) => boolean;
  readonly noticeWhat: string;
}

/**
 * A receiver and a sender (debug, stdin piped); while `total` entries are fed, the receiver is
 * SIGKILLed with its workers once it has `firstBatch`, and restarted on the same config after the
 * sender noticed. Returns once the sender took the whole feed (60 s) and every entry arrived at
 * least once (45 s).
 */
export async function killReceiverMidStream(start: Starter, receiverToml: string, senderToml: string, opts: KillOptions): Promise<KilledReceiver> {
  const { total, firstBatch } = opts;
  const b1 = start('recv2', receiverToml);
  await waitReady(b1, 'receiver');
  const a = start('send2', senderToml, ['--logging.level=debug'], true);
  await waitReady(a, 'sender');
  const feeding = feed(a.child.stdin!, total, 500, 15);
  await waitFor(() => b1.out.length >= firstBatch, `first receiver has ${firstBatch.toLocaleString('en-US')} entries`, 30_000);
  await killWithWorkers(b1);
  const firstRun = b1.out.length;
  await waitFor(() => opts.senderNoticed(a), opts.noticeWhat, 20_000);
  const b2 = start('recv2', receiverToml);
  await within(feeding, 60_000, () => new Error(`the sender took not all ${total} entries within 60 s`));
  const seen = new Map<number, number>();
  await waitFor(() => countNumbered(seen, [b1.out, b2.out]) >= total, `every entry at least once of ${total}`, 45_000);
  return { a, b1, b2, firstRun, seen };
}

/**
 * A chain peer on 127.0.0.1 that answers `{"ok":1}` to every hello, reads everything and never
 * acknowledges an entry (a sender then holds what it sent); closed in the test's teardown. Its port.
 */
export async function mutePeer(t: Teardown): Promise<number> {
  const server = createServer((socket) => {
    socket.once('data', () => socket.write('{"ok":1}\n'));
    socket.on('error', () => undefined);
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.close();
  });
  return (server.address() as AddressInfo).port;
}
