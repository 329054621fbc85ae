// The source contract: built from its `config` table, started on order, stopped symmetrically.

import type { PluginConfig } from '../config/schema.js';
import type { Counters } from '../core/counters.js';
import type { Entry } from '../core/entry.js';
import type { Logger } from '../core/log.js';

/** A file position: byte offset in the file with this inode. */
export interface FilePosition {
  readonly inode: number;
  readonly offset: number;
  /** a rotated file (renamed away, in its grace), reported under its new name */
  readonly rotated?: true;
}

/** Positions of one source: file path → position. */
export type SourcePositions = Record<string, FilePosition>;

export interface SourceContext {
  readonly pipeline: string;
  /** child logger with `pipeline` and `plugin` bound */
  readonly log: Logger;
  /** true for `check`: validate only, never bind, open or connect */
  readonly checkOnly: boolean;
  /** Hands a batch of entries to the flow stage; synchronous. */
  emit(entries: Entry[]): void;
  /** True while a blocking sink is full; sources that can pause stop reading until resume(). */
  isSaturated(): boolean;
}

export interface Source {
  readonly id: string;
  readonly type: string;
  /** `total_entries`, `dropped_entries` and the type's own */
  readonly counters: Counters;
  /** true when the source can stop reading (file, stdin, chain sources) */
  readonly pausable: boolean;
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
  /** Stop producing and release everything; idempotent. */
  stop(): Promise<void>;
  /** Current file positions, for the stats message. */
  positions?(): SourcePositions;
}

export type SourceFactory = (plugin: PluginConfig, ctx: SourceContext) => Source;
