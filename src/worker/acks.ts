// Acknowledgement tracking of a pipeline (DESIGN.md §15): a ticket per emitted batch that runs the
// source's `done` once every sink delivered or dropped each of its entries, and the journal of
// dedup ids whose entries are done, shipped to the primary so a successor (reload, crash restart,
// checkpoint) knows them. An id whose entry was not done is never handed on: its resend must pass.

import type { Ticket } from '../core/ack.js';
import { type DedupWindow, ownCopy, packChunk } from '../flow/dedup.js';

export class DoneIds {
  private ids: string[] = [];
  private times: number[] = [];

  /** @param max the window's `window_entries`: older ids than that would be evicted anyway */
  constructor(private readonly max: number) {}

  add(ids: readonly string[], at: number): void {
    // own copies: a received id is a slice of its line, which it would keep alive until the take
    for (const id of ids) {
      this.ids.push(ownCopy(id));
      this.times.push(at);
    }
    if (this.ids.length > this.max * 2) {
      this.ids = this.ids.slice(-this.max);
      this.times = this.times.slice(-this.max);
    }
  }

  /** The ids done since the last take, oldest first, packed. */
  take(): DedupWindow | undefined {
    if (this.ids.length === 0) return undefined;
    const out = packChunk(this.ids.slice(-this.max), this.times.slice(-this.max));
    this.ids = [];
    this.times = [];
    return [out];
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
