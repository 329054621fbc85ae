// The http sink's replay ring (DESIGN.md §8): the last `replay_size` entries with their event
// ids, so a stream client that reconnects with `Last-Event-ID` first gets what it missed.

/** A bounded ring of items with increasing numeric ids; the oldest is overwritten when full. */
export class ReplayRing<T> {
  private readonly ids: number[];
  private readonly items: (T | undefined)[];
  private head = 0;
  private size = 0;

  /** `capacity` items at most; 0 keeps nothing. */
  constructor(private readonly capacity: number) {
    this.ids = new Array<number>(capacity).fill(0);
    this.items = new Array<T | undefined>(capacity);
  }

  get length(): number {
    return this.size;
  }

  /** Keeps `item` under `id` (ids must increase), dropping the oldest when full. */
  push(id: number, item: T): void {
    const cap = this.capacity;
    if (cap === 0) return;
    const tail = (this.head + this.size) % cap;
    this.ids[tail] = id;
    this.items[tail] = item;
    if (this.size < cap) this.size++;
    else this.head = this.head + 1 === cap ? 0 : this.head + 1;
  }

  /** Calls `fn` for every held item whose id is above `afterId`, oldest first. */
  forEachAfter(afterId: number, fn: (id: number, item: T) => void): void {
    const cap = this.capacity;
    for (let i = 0; i < this.size; i++) {
      const at = (this.head + i) % cap;
      const id = this.ids[at]!;
      if (id > afterId) fn(id, this.items[at]!);
    }
  }
}
