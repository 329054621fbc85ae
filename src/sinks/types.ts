// The sink contract: an input queue owned by the pipeline feeds batches to write().

import type { PluginConfig } from '../config/schema.js';
import type { Counters } from '../core/counters.js';
import type { Entry } from '../core/entry.js';
import type { Logger } from '../core/log.js';

/** An entry with the pipeline's formatted line (without terminator). */
export interface SinkItem {
  readonly entry: Entry;
  readonly line: string;
}

export type OnFull = 'drop' | 'block';

export interface SinkContext {
  readonly pipeline: string;
  readonly log: Logger;
  readonly checkOnly: boolean;
}

export interface Sink {
  readonly id: string;
  readonly type: string;
  /** the type's own counters; the pipeline adds `total_processed` */
  readonly counters: Counters;
  /** input queue bound, entries */
  readonly bufferSize: number;
  readonly onFull: OnFull;
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
