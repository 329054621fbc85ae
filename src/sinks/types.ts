// The sink contract: an input queue owned by the pipeline feeds batches to write().

import type { PluginConfig } from '../config/schema.js';
import type { Ticket } from '../core/ack.js';
import type { Counters } from '../core/counters.js';
import type { Entry } from '../core/entry.js';
import type { Logger } from '../core/log.js';
import type { NodeReport } from '../core/node-report.js';
import type { OnFull } from '../core/queue.js';
import type { SinkItem } from '../core/sink-item.js';

// the item is the pipeline's and the chain codec's as much as the sinks'
export type { SinkItem };

export interface SinkContext {
  readonly pipeline: string;
  readonly log: Logger;
  readonly checkOnly: boolean;
  /** this node's name (`node_name`): the default `node` a chain sink announces */
  readonly node: string;
  /** `report_interval_ms` > 0: chain sinks offer node reports to their peer and send what report() gives them */
  readonly reports?: boolean;
  /**
   * `fanout = "any"`: a broken link hands the items it holds unacknowledged to the other live
   * sinks; true when they were taken (the sink forgets them), false when no other sink is live.
   */
  failover?(items: SinkItem[]): boolean;
  /**
   * Present when the sink has `dead_letter` (DESIGN.md §24): hands entries it would drop for good
   * to that sink, with `fields.dead_letter`; their tickets stay owed until that sink delivers, so
   * the sink settles them as it would a drop. `reason`: `rejected`, `partial_success`,
   * `write_failed`, …; `status`: the peer's HTTP status, when there was one.
   */
  deadLetter?(items: readonly DeadLetterItem[], reason: string, status?: number): void;
}

/** An entry a sink gives up on, with the ticket of the delivery it owes. */
export interface DeadLetterItem {
  readonly entry: Entry;
  readonly ticket?: Ticket;
}

export interface Sink {
  readonly id: string;
  readonly type: string;
  /** the type's own counters; the pipeline adds `total_processed` */
  readonly counters: Counters;
  /** input queue bound, entries */
  readonly bufferSize: number;
  /** input queue bound together with heldBytes(), bytes of formatted lines (`buffer_max_bytes`) */
  readonly bufferMaxBytes: number;
  /** bytes of the formatted lines taken by write() but not yet delivered (unacknowledged); 0 when absent */
  heldBytes?(): number;
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
  /** With sendsWire: the chain protocol version it sends in now, 1 (lines, when absent) or 2 (frames, `encodeFrames`). */
  wireVersion?(): number;
  /**
   * With sendsWire: an item framed in version 2 is all the sink needs (its frame, ticket, paths and
   * `lineBytes`; for version 1 it decodes the entry from the frame): a pipeline whose every sink
   * says so lets go of the entries once framed (releaseEntries, core/entry-frame.ts).
   */
  readonly framesSuffice?: boolean;
  /** For `fanout = "any"` and `"balance"`: false while the link is not up (the sink then skips entries). */
  linkUp?(): boolean;
  /**
   * Chain sinks: sends node reports upstream (the node's own and those it forwards), beside the
   * entries and never as one; what cannot be sent is dropped and counted `reports_dropped`.
   */
  report?(reports: readonly NodeReport[]): void;
  /**
   * For `on_full = "auto"` (DESIGN.md §25): true while the link is down, i.e. it failed to connect,
   * or lost its connection and has not reconnected since (not while the first attempt is under way).
   */
  linkDown?(): boolean;
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
