// Batching for the sinks that send entries in batches (http_chain, otlp, nats): items collect
// into a batch closed at a count, a size, or flush_interval_ms after its first item, and at once
// when the sink says its link is idle (latency first).

export interface BatchBuilderOptions<I> {
  /** a batch closes when it holds this many items */
  readonly maxCount: number;
  /** a batch closes when it reaches this many bytes; an item that would take it past goes into the next */
  readonly maxBytes: number;
  /** a batch closes at most this long after its first item, ms */
  readonly flushMs: number;
  /** takes a closed batch: its items and their bytes */
  close(items: I[], bytes: number): void;
  /** after a batch closed on flush_interval_ms */
  flushed?(): void;
}

/** Items collected into batches: closed at a count, a size, or flush_interval_ms after the first. */
export class BatchBuilder<I> {
  private items: I[] = [];
  private size = 0;
  private timer: NodeJS.Timeout | undefined;
  constructor(private readonly o: BatchBuilderOptions<I>) {}

  /** items in the batch being filled */
  get length(): number {
    return this.items.length;
  }

  /** bytes of the batch being filled */
  get bytes(): number {
    return this.size;
  }

  /** Adds an item of `bytes`; the batch closes before it when it would pass maxBytes, after it when full. */
  add(item: I, bytes: number): void {
    if (this.items.length > 0 && this.size + bytes > this.o.maxBytes) this.close();
    this.items.push(item);
    this.size += bytes;
    if (this.items.length >= this.o.maxCount || this.size >= this.o.maxBytes) this.close();
  }

  /**
   * After a write: the batch goes at once when `now` (an idle link: latency first), else it fills
   * until its count, bytes or flush_interval_ms (the timer armed unless `arm` is false).
   */
  settle(now: boolean, arm = true): void {
    if (this.items.length === 0) return;
    if (now) this.close();
    else if (this.timer === undefined && arm) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.close();
        this.o.flushed?.();
      }, this.o.flushMs);
    }
  }

  /** Closes the batch being filled (none when empty). */
  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.items.length === 0) return;
    const items = this.items;
    const bytes = this.size;
    this.items = [];
    this.size = 0;
    this.o.close(items, bytes);
  }

  /** Stops the flush timer (the batch being filled stays). */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
