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
    // Joined at once, into a string of their own: a received id is a slice of its line, which it
    // would keep alive until the take (a second away), and one string per batch is cheap to keep.
    let kept = ids;
    let text = tryJoinIds(ids);
    if (text === undefined) {
      kept = ids.filter((x) => !x.includes('\n')); // such an id is not packed (see DedupChunk)
      text = joinIds(kept);
    }
    if (kept.length === 0) return;
    this.parts.push({ ids: text, count: kept.length, at });
    this.count += kept.length;
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

/**
 * The ticket of one batch, held once (released by the caller after the fan-out), or undefined
 * when nobody waits for it. `ids` collects the batch's ids that passed dedup, for `journal`.
 */
export function openTicket(done: (() => void) | undefined, journal: DoneIds | undefined, ids: string[]): Ticket | undefined {
  if (!done && !journal) return undefined;
  const at = Date.now();
  return {
    pending: 1,
    done: () => {
      if (journal && ids.length > 0) journal.add(ids, at);
      done?.();
    },
  };
}
