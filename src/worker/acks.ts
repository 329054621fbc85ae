// Acknowledgement tracking of a pipeline (DESIGN.md §15): a ticket per emitted batch that runs the
// source's `done` once every sink delivered or dropped each of its entries, and the journal of
// dedup ids whose entries are done, shipped to the primary so a successor (reload, crash restart,
// checkpoint) knows them. An id whose entry was not done is never handed on: its resend must pass.

import type { Ticket } from '../core/ack.js';
import { type DedupWindow, dropIds, joinIds, tryJoinIds } from '../core/dedup-window.js';

export class DoneIds {
  /** one part per batch done: its ids joined by `\n` with prefixes (DedupChunk), how many, and when */
  private parts: { ids: string; count: number; at: number }[] = [];
  private count = 0;

  /** @param max the window's `window_entries`: older ids than that would be evicted anyway */
  constructor(private readonly max: number) {}

  add(ids: readonly string[], at: number): void {
    const packed = this.pack(ids);
    if (packed) this.addPacked(packed, at);
  }

  /**
   * `ids` joined into a string of their own (undefined when none is kept): a received id is a
   * slice of its line, or of the whole text its frame was read in, which it would keep alive until
   * the batch is done; one string per batch is cheap to keep.
   */
  pack(ids: readonly string[]): PackedIds | undefined {
    let kept = ids;
    let text = tryJoinIds(ids);
    if (text === undefined) {
      kept = ids.filter((x) => !x.includes('\n')); // such an id is not packed (see DedupChunk)
      text = joinIds(kept);
    }
    return kept.length === 0 ? undefined : { text, count: kept.length };
  }

  /** Ids packed by pack(), done at `at`. */
  addPacked(packed: PackedIds, at: number): void {
    this.parts.push({ ids: packed.text, count: packed.count, at });
    this.count += packed.count;
    while (this.count - this.parts[0]!.count >= this.max) this.count -= this.parts.shift()!.count;
  }

  /** The ids done since the last take, oldest first, packed (at most `max`). */
  take(): DedupWindow | undefined {
    if (this.parts.length === 0) return undefined;
    const parts = this.parts;
    this.parts = [];
    let over = this.count - this.max;
    this.count = 0;
    const texts: string[] = [];
    const runs: number[] = [];
    for (const part of parts) {
      let { ids, count } = part;
      if (over > 0) {
        // the oldest part loses its oldest ids
        ids = dropIds(ids, over, true);
        count -= over;
        over = 0;
      }
      texts.push(ids);
      if (runs.length > 0 && runs[runs.length - 2] === part.at) runs[runs.length - 1]! += count;
      else runs.push(part.at, count);
    }
    return [{ ids: texts.join('\n'), runs, prefixes: 1 }];
  }
}

/** Ids packed for the journal (DoneIds.pack). */
export interface PackedIds {
  readonly text: string;
  readonly count: number;
}

/** The ids of one batch that passed dedup, collected as the batch goes through the flow, then packed (packBatchIds). */
export interface BatchIds {
  ids: string[];
  packed?: PackedIds;
}

/**
 * Packs a batch's ids once the batch went through the flow, before its entries wait on the sinks:
 * the ids let go, the texts they were cut from die young instead of living until the batch is done
 * (a collector's file write), copied by every young collection meanwhile.
 */
export function packBatchIds(journal: DoneIds, batch: BatchIds): void {
  if (batch.ids.length > 0) batch.packed = journal.pack(batch.ids);
  batch.ids = [];
}

/**
 * The ticket of one batch, held once (released by the caller after the fan-out), or undefined
 * when nobody waits for it. `batch` collects the batch's ids that passed dedup, for `journal`,
 * which gets them once the batch is done.
 */
export function openTicket(done: (() => void) | undefined, journal: DoneIds | undefined, batch: BatchIds): Ticket | undefined {
  if (!done && !journal) return undefined;
  const at = Date.now();
  return {
    pending: 1,
    done: () => {
      if (journal) {
        const packed = batch.packed ?? (batch.ids.length > 0 ? journal.pack(batch.ids) : undefined);
        if (packed) journal.addPacked(packed, at);
      }
      done?.();
    },
  };
}
