// Duplicate suppression (DESIGN.md §14): the first flow stage drops an entry whose id was seen
// within the window, the last `window_entries` ids and none older than `window_ms`. A ring of
// ids in arrival order (times in a Float64Array) and a Map for lookup: every step is O(1), and
// memory is the ring plus the Map, about window_entries × 100 bytes for ids of 28 characters.

import type { DedupConfig } from '../config/schema.js';

/** A window's ids, oldest first, with the time (epoch ms) each was first seen. */
export interface DedupWindow {
  readonly ids: readonly string[];
  readonly times: readonly number[];
}

export const EMPTY_WINDOW: DedupWindow = { ids: [], times: [] };

export class DedupSet {
  /** id → its sequence number: slot `seq % capacity` of the ring holds its time */
  private readonly seen = new Map<string, number>();
  private readonly ids: (string | undefined)[];
  private readonly times: Float64Array;
  /** sequence numbers of the oldest slot still held and of the next one */
  private head = 0;
  private next = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxMs: number,
  ) {
    this.ids = new Array<string | undefined>(maxEntries);
    this.times = new Float64Array(maxEntries);
  }

  get size(): number {
    return this.seen.size;
  }

  /** True when `id` is in the window (a duplicate); otherwise remembers it as seen at `now`. */
  check(id: string, now: number): boolean {
    this.expire(now);
    const seq = this.seen.get(id);
    if (seq !== undefined) return true;
    this.add(id, now);
    return false;
  }

  /** Adds ids seen elsewhere (a predecessor's window, a checkpoint), oldest first. */
  load(window: DedupWindow, now = Date.now()): void {
    const { ids, times } = window;
    for (let i = 0; i < ids.length; i++) {
      const t = times[i] ?? now;
      if (now - t > this.maxMs || this.seen.has(ids[i]!)) continue;
      this.add(ids[i]!, t);
    }
    this.expire(now);
  }

  snapshot(now = Date.now()): DedupWindow {
    this.expire(now);
    const ids: string[] = [];
    const times: number[] = [];
    for (let seq = this.head; seq < this.next; seq++) {
      const slot = seq % this.maxEntries;
      const id = this.ids[slot]!;
      if (this.seen.get(id) !== seq) continue;
      ids.push(id);
      times.push(this.times[slot]!);
    }
    return { ids, times };
  }

  private add(id: string, at: number): void {
    if (this.next - this.head === this.maxEntries) this.evictOldest();
    const slot = this.next % this.maxEntries;
    this.ids[slot] = id;
    this.times[slot] = at;
    this.seen.set(id, this.next++);
  }

  private evictOldest(): void {
    const slot = this.head % this.maxEntries;
    const id = this.ids[slot]!;
    if (this.seen.get(id) === this.head) this.seen.delete(id);
    this.ids[slot] = undefined;
    this.head++;
  }

  /** Forgets ids older than window_ms (the ring is in time order, oldest at head). */
  private expire(now: number): void {
    while (this.head < this.next && now - this.times[this.head % this.maxEntries]! > this.maxMs) this.evictOldest();
  }
}

export function createDedup(cfg: DedupConfig | undefined): DedupSet | undefined {
  return cfg?.enabled ? new DedupSet(cfg.window_entries, cfg.window_ms) : undefined;
}
