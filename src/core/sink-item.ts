// What a sink's input queue holds: shared by the pipeline, the sinks and the chain codec.

import type { Ticket } from './ack.js';
import type { Entry } from './entry.js';

/**
 * An entry with the pipeline's formatted line (without terminator), and the ticket of the batch
 * it came in: one delivery is owed on it per sink that took the item (DESIGN.md §15).
 */
export interface SinkItem {
  readonly entry: Entry;
  readonly line: string;
  readonly ticket?: Ticket;
  /**
   * `fanout = "any"`: one bit per sink of the pipeline that took this item (bit i = the i-th
   * sink, up to 31), so a broken link's items fail over only to a path that does not hold them.
   */
  paths: number;
  /**
   * The formatted line's length (UTF-16 units), kept by an item whose line and entry were let go
   * once its chain frame was written (releaseEntries, entry-frame.ts); absent: `line.length`.
   */
  readonly lineBytes?: number;
}

/** What an item weighs against `buffer_max_bytes`: its formatted line's length (UTF-16 units, bytes for ASCII). */
export const itemBytes = (item: SinkItem): number => item.lineBytes ?? item.line.length;
