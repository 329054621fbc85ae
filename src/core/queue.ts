// The sink input queue: FIFO with a bound the caller enforces (`full`), batch take, O(1) amortised.
// `push` never refuses, so a blocking sink can accept the rest of a read that was already under way
// while its sources pause; dropping sinks check `full` first and count the drop.

export class BoundedQueue<T> {
  private items: T[] = [];
  private head = 0;
  /** the sizes of the items queued, by `sizeOf` (0 without it) */
  bytes = 0;

  /**
   * @param capacity the bound, in items
   * @param maxBytes the bound in bytes, by `sizeOf`, together with `extraBytes()` (what the
   *   consumer holds of what it took); none without `sizeOf`
   */
  constructor(
    readonly capacity: number,
    readonly maxBytes = Number.POSITIVE_INFINITY,
    private readonly sizeOf?: (item: T) => number,
    private readonly extraBytes?: () => number,
  ) {}

  get length(): number {
    return this.items.length - this.head;
  }

  /** bytes queued plus what the consumer holds */
  get heldBytes(): number {
    return this.bytes + (this.extraBytes?.() ?? 0);
  }

  get full(): boolean {
    return this.length >= this.capacity || (this.sizeOf !== undefined && this.heldBytes >= this.maxBytes);
  }

  /** Below half of both bounds: a paused pipeline resumes. */
  get belowHalf(): boolean {
    return this.length < this.capacity / 2 && (this.sizeOf === undefined || this.heldBytes < this.maxBytes / 2);
  }

  push(item: T): void {
    this.items.push(item);
    if (this.sizeOf) this.bytes += this.sizeOf(item);
  }

  /** Removes and returns up to `max` items from the front. */
  take(max: number): T[] {
    const end = Math.min(this.items.length, this.head + max);
    const out = this.items.slice(this.head, end);
    this.head = end;
    if (this.sizeOf) {
      for (const item of out) this.bytes -= this.sizeOf(item);
      if (this.head === this.items.length) this.bytes = 0;
    }
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
    this.bytes = 0;
    return n;
  }
}

/**
 * What a sink does when its input queue is full (DESIGN.md §7, §25): `auto` blocks, except while
 * the sink's link is down and another sink of the pipeline is live (then it drops, `link_down`).
 */
export type OnFull = 'drop' | 'block' | 'auto';
