// The sink input queue: FIFO with a bound the caller enforces (`full`), batch take, O(1) amortised.
// `push` never refuses, so a blocking sink can accept the rest of a read that was already under way
// while its sources pause; dropping sinks check `full` first and count the drop.

export class BoundedQueue<T> {
  private items: T[] = [];
  private head = 0;

  /** @param capacity the bound, in items */
  constructor(readonly capacity: number) {}

  get length(): number {
    return this.items.length - this.head;
  }

  get full(): boolean {
    return this.length >= this.capacity;
  }

  push(item: T): void {
    this.items.push(item);
  }

  /** Removes and returns up to `max` items from the front. */
  take(max: number): T[] {
    const end = Math.min(this.items.length, this.head + max);
    const out = this.items.slice(this.head, end);
    this.head = end;
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head > 4096 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return out;
  }

  /** Empties the queue; returns how many items it held. */
  clear(): number {
    const n = this.length;
    this.items = [];
    this.head = 0;
    return n;
  }
}

/**
 * What a sink does when its input queue is full (DESIGN.md §7, §25): `auto` blocks, except while
 * the sink's link is down and another sink of the pipeline is live (then it drops, `link_down`).
 */
export type OnFull = 'drop' | 'block' | 'auto';
