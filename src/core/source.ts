// The source contract: built from its `config` table, started on order, stopped symmetrically.
// On the ground floor: the sources implement it, the worker assembles it, and a disk buffer
// (buffer/) wraps a source through it.

import type { Counters } from './counters.js';
import type { Entry } from './entry.js';
import type { PassedItem } from './frame-pass.js';
import type { Logger } from './log.js';
import type { NodeReport } from './node-report.js';
import type { PluginConfig } from './plugin-config.js';
import type { FilePosition, SourcePositions } from './positions.js';

export type { FilePosition, SourcePositions };

export interface SourceContext {
  readonly pipeline: string;
  /** child logger with `pipeline` and `plugin` bound */
  readonly log: Logger;
  /** true for `check`: validate only, never bind, open or connect */
  readonly checkOnly: boolean;
  /**
   * Hands a batch of entries to the flow stage; synchronous. `done` runs (once, possibly before
   * emit returns) when every sink delivered or dropped with a count each of its entries.
   */
  emit(entries: Entry[], done?: () => void): void;
  /** Set when the pipeline stamps ids (it has a chain sink): the node name for their prefix. */
  readonly idNode: string | undefined;
  /** `node_name`, for sources that name the node an entry was produced on (container logs); absent in tests that build a source alone */
  readonly node?: string;
  /**
   * Set when the pipeline's flow has dedup: true when `id` is already in its window, counted as a
   * duplicate dropped. A chain source asks with the id a line ends with (`trailingIdOf`) and skips
   * the line undecoded; what it does emit still passes the window as usual.
   */
  readonly duplicate?: (id: string, now: number) => boolean;
  /**
   * Set when the pipeline can carry an entry a chain source received as a version 2 frame on as
   * that frame, without decoding it and encoding it again (a relay): see FrameCarrier. Never set
   * for a source behind a disk buffer (which keeps entries).
   */
  readonly frames?: FrameCarrier;
  /** True while a blocking sink is full; sources that can pause stop reading until resume(). */
  isSaturated(): boolean;
  /**
   * Hands on a node report a chain source received (the fleet view): it goes to the primary,
   * never into the pipeline. Absent where nothing takes reports (`check`).
   */
  readonly report?: (report: NodeReport) => void;
  /**
   * Why the source must stop taking when it is not the pipeline's queues (a full disk buffer):
   * what a source that answers its senders (503) tells them; undefined otherwise.
   */
  readonly saturationReason?: () => string | undefined;
}

/**
 * What a pipeline offers a chain source for frames it need not decode (DESIGN.md §25): it has no
 * flow stage but dedup that looks at an entry, no routes, the `raw` format, and every sink is a
 * chain sink that needs no more of an entry than its frame (Sink.framesSuffice).
 */
export interface FrameCarrier {
  /**
   * True while every sink sends version 2 frames: what the source reads now may go on as frames
   * (passFrame, core/frame-reader.ts). A link that turns to version 1 later decodes what it holds.
   */
  active(): boolean;
  /** Set when the pipeline stamps ids (DESIGN.md §14): the id for a frame that has none. */
  readonly nextId: (() => string) | undefined;
  /** As emit, for frames passFrame carried on: counted by the flow, offered to the sinks. */
  emit(items: PassedItem[], done?: () => void): void;
}

export interface Source {
  readonly id: string;
  readonly type: string;
  /** `total_entries`, `dropped_entries` and the type's own */
  readonly counters: Counters;
  /** true when the source can stop reading (file, stdin, chain sources) */
  readonly pausable: boolean;
  /** its sender waits on the acknowledgement of what it emits (chain and nats sources) */
  readonly acksUpstream?: boolean;
  /** Build step: bind listeners, read certificates. Not called by `check`. */
  open?(): Promise<void>;
  /** Begin producing, resuming from the positions handed over (file sources). */
  /**
   * `since`: when this source's run began (epoch ms), carried over reloads and restarts; files
   * born after it that it holds no position for count as new.
   */
  start(positions: SourcePositions, since: number): void;
  pause?(): void;
  resume?(): void;
  /**
   * Stop producing and release everything; idempotent. Sources that acknowledge upstream may
   * wait, until `deadline` (epoch ms), for what they emitted to be done first.
   */
  stop(deadline?: number): Promise<void>;
  /** Current file positions, for the stats message. */
  positions?(): SourcePositions;
  /**
   * Entries emitted and not yet done that a drain cut short does not lose (a disk buffer keeps
   * them and sends them again after the next start): not counted as abandoned.
   */
  kept?(): number;
  /** The checkpoint saved these positions of this source (a disk buffer deletes what they passed). */
  checkpointed?(positions: SourcePositions): void;
}

export type SourceFactory = (plugin: PluginConfig, ctx: SourceContext) => Source;
