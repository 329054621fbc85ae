// The sink contract: an input queue owned by the pipeline feeds batches to write().

import type { PluginConfig } from '../config/schema.js';
import type { Ticket } from '../core/ack.js';
import type { Counters } from '../core/counters.js';
import type { Entry } from '../core/entry.js';
import type { Logger } from '../core/log.js';

import type { OnFull } from '../core/queue.js';

/**
 * An entry with the pipeline's formatted line (without terminator), and the ticket of the batch
 * it came in: one delivery is owed on it per sink that took the item (DESIGN.md §15).
 */
export interface SinkItem {
  readonly entry: Entry;
  readonly line: string;
  readonly ticket?: Ticket;
  /**
   * The entry as a chain line (`\n` included) in `wireBuf[wireAt..wireEnd)`, written by the first
   * chain sink that sends it and kept for the others (an edge's two links send the same bytes):
   * see `encodeWire`. `wireCompleted`: the line had to be completed (no time or source).
   */
  wireBuf: Buffer | undefined;
  wireAt: number;
  wireEnd: number;
  wireCompleted: boolean;
  /**
   * `fanout = "any"`: one bit per sink of the pipeline that took this item (bit i = the i-th
   * sink, up to 31), so a broken link's items fail over only to a path that does not hold them.
   */
  paths: number;
}

export interface SinkContext {
  readonly pipeline: string;
  readonly log: Logger;
  readonly checkOnly: boolean;
  /** this node's name (`node_name`): the default `node` a chain sink announces */
  readonly node: string;
  /**
   * `fanout = "any"`: a broken link hands the items it holds unacknowledged to the other live
   * sinks; true when they were taken (the sink forgets them), false when no other sink is live.
   */
  failover?(items: SinkItem[]): boolean;
}

export interface Sink {
  readonly id: string;
  readonly type: string;
  /** the type's own counters; the pipeline adds `total_processed` */
  readonly counters: Counters;
  /** input queue bound, entries */
  readonly bufferSize: number;
  readonly onFull: OnFull;
  /**
   * The sink settles its items itself (core/ack.ts settle) once the peer acknowledged them
   * (chain sinks); otherwise an item is delivered when write() returned and its promise resolved.
   */
  readonly settles?: boolean;
  /** The sink forwards entries to another node: the pipeline stamps ids (DESIGN.md §14). */
  readonly carriesIds?: boolean;
  /** The sink sends items as chain lines (`encodeWire`): the pipeline may write them ahead. */
  readonly sendsWire?: boolean;
  /** For `fanout = "any"`: false while the link is down (the sink then skips entries). */
  linkUp?(): boolean;
  /** Build step: bind listeners, open files. Not called by `check`. */
  open?(): Promise<void>;
  /** Takes a batch; the returned promise (if any) resolves when the sink can take the next one. */
  write(batch: SinkItem[]): Promise<void> | void;
  /** Entries taken by write() but not yet delivered (e.g. unacknowledged); counted as abandoned at a cut drain. */
  held?(): number;
  /** Flush what it holds and close, giving up at `deadline` (epoch ms); idempotent. */
  close(deadline: number): Promise<void>;
}

export type SinkFactory = (plugin: PluginConfig, ctx: SinkContext) => Sink;
