// The appends of a disk buffer that are not durable yet, in order (disk-buffer.ts): first those
// handed to the writer thread and waiting for their sync (posted), then those not handed on yet
// (pending: while a new segment is opened, or while the buffer is failing).

import type { Entry } from '../core/entry.js';

/** One append's records on their way to the disk. */
export interface Write {
  readonly chunk: Buffer;
  /** the entries, until handed to the reader (then only the bytes wait for the sync) */
  entries: Entry[] | undefined;
  readonly first: number;
  readonly done: (() => void) | undefined;
  /** where it goes in the segment being written, once handed to the writer */
  at: number;
  /** handed to the writer and not taken back (a failure takes every write not durable back) */
  posted: boolean;
  durable: boolean;
}

export class Writes {
  /** handed to the writer, not yet durable, in order */
  private posted: Write[] = [];
  private postedBytes = 0;
  /** appended, not handed to the writer yet */
  private pending: Write[] = [];
  private pendingBytes = 0;

  /** Record bytes appended and not durable yet. */
  get bytes(): number {
    return this.postedBytes + this.pendingBytes;
  }

  /** Some are handed to the writer and not durable yet. */
  get anyPosted(): boolean {
    return this.posted.length > 0;
  }

  get anyPending(): boolean {
    return this.pending.length > 0;
  }

  /** The oldest write handed to the writer that is not durable yet. */
  get oldestPosted(): Write | undefined {
    return this.posted[0];
  }

  add(chunk: Buffer, entries: Entry[], first: number, done: (() => void) | undefined): void {
    this.pending.push({ chunk, entries, first, done, at: 0, posted: false, durable: false });
    this.pendingBytes += chunk.length;
  }

  /**
   * Hands pending writes on, in order, while `hand` takes them (it returns false for the first it
   * cannot take, which stays pending); returns how many went.
   */
  handOn(hand: (w: Write) => boolean): number {
    let n = 0;
    for (; n < this.pending.length; n++) {
      const w = this.pending[n]!;
      if (!hand(w)) break;
      w.posted = true;
      this.pendingBytes -= w.chunk.length;
      this.postedBytes += w.chunk.length;
      this.posted.push(w);
    }
    if (n > 0) this.pending = n === this.pending.length ? [] : this.pending.slice(n);
    return n;
  }

  /**
   * Every write handed on and not durable goes back to the head of the pending ones, in order (a
   * failure: the retry writes them again where they were).
   */
  takeBack(): void {
    for (const p of this.posted) p.posted = false;
    this.pending = this.posted.concat(this.pending);
    this.pendingBytes += this.postedBytes;
    this.posted = [];
    this.postedBytes = 0;
  }

  /** Takes the durable writes at the head of the posted ones, in order, passing each to `done`. */
  settle(done: (w: Write) => void): void {
    let n = 0;
    for (; n < this.posted.length && this.posted[n]!.durable; n++) {
      const d = this.posted[n]!;
      d.posted = false;
      this.postedBytes -= d.chunk.length;
      done(d);
    }
    if (n > 0) this.posted = n === this.posted.length ? [] : this.posted.slice(n);
  }
}
