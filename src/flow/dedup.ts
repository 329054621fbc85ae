// Duplicate suppression (DESIGN.md §14): the first flow stage drops an entry whose id was seen
// within the window, the last `window_entries` ids and none older than `window_ms`. A ring of
// ids in arrival order (times in a Float64Array) and a Map for lookup: every step is O(1), and
// memory is the ring plus the Map, about window_entries × 100 bytes for ids of 28 characters.

import type { DedupConfig } from '../config/schema.js';

/**
 * Part of a window as it travels (worker → primary messages, the primary's copy, the checkpoint):
 * `ids` joined by `\n`, oldest first, and `runs`, the time (epoch ms) each was first seen as
 * [time, count, time, count, …] (ids done together share a time). A few strings instead of an
 * array of 100,000: cheap to send, keep and write once a second. Ids with a `\n` are not packed.
 */
export interface DedupChunk {
  readonly ids: string;
  readonly runs: readonly number[];
}

/** A window's ids in chunks, oldest first. */
export type DedupWindow = readonly DedupChunk[];

/** Packs `ids` (each first seen at the time of the same index in `times`) into one chunk. */
export function packChunk(ids: readonly string[], times: readonly number[]): DedupChunk {
  const kept: string[] = [];
  const runs: number[] = [];
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    if (id.includes('\n')) continue;
    kept.push(id);
    const t = times[i]!;
    if (runs.length > 0 && runs[runs.length - 2] === t) runs[runs.length - 1]!++;
    else runs.push(t, 1);
  }
  return { ids: kept.join('\n'), runs };
}

/** Calls `each(id, time)` for every id of `window`, oldest first. */
export function eachId(window: DedupWindow, each: (id: string, time: number) => void): void {
  for (const chunk of window) {
    if (chunk.ids === '') continue;
    const ids = chunk.ids.split('\n');
    let i = 0;
    for (let r = 0; r < chunk.runs.length; r += 2) {
      const time = chunk.runs[r]!;
      for (let end = Math.min(ids.length, i + chunk.runs[r + 1]!); i < end; i++) each(ids[i]!, time);
    }
  }
}

const chunkSize = (c: DedupChunk) => {
  let n = 0;
  for (let r = 1; r < c.runs.length; r += 2) n += c.runs[r]!;
  return n;
};

/**
 * The primary's copy of a pipeline's window: the chunks its workers reported, kept as they came
 * (no per-id work: the workers' DedupSet does the lookups), bounded like the window itself.
 */
export class PackedWindow {
  private chunks: { chunk: DedupChunk; size: number; last: number }[] = [];
  private total = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxMs: number,
  ) {}

  get size(): number {
    return this.total;
  }

  load(window: DedupWindow, now = Date.now()): void {
    for (const chunk of window) {
      const size = chunkSize(chunk);
      if (size === 0) continue;
      this.chunks.push({ chunk, size, last: chunk.runs[chunk.runs.length - 2]! });
      this.total += size;
    }
    this.trim(now);
  }

  snapshot(now = Date.now()): DedupWindow {
    this.trim(now);
    return this.chunks.map((c) => c.chunk);
  }

  /** Drops chunks past window_ms, then the oldest ids past window_entries. */
  private trim(now: number): void {
    while (this.chunks.length > 0 && now - this.chunks[0]!.last > this.maxMs) this.total -= this.chunks.shift()!.size;
    while (this.total > this.maxEntries) {
      const first = this.chunks[0]!;
      const over = this.total - this.maxEntries;
      if (first.size <= over) {
        this.chunks.shift();
        this.total -= first.size;
        continue;
      }
      // the first chunk loses its `over` oldest ids
      let cut = 0;
      for (let k = 0; k < over; k++) cut = first.chunk.ids.indexOf('\n', cut) + 1;
      const runs = [...first.chunk.runs];
      for (let left = over; left > 0; ) {
        const take = Math.min(left, runs[1]!);
        runs[1]! -= take;
        left -= take;
        if (runs[1] === 0) runs.splice(0, 2);
      }
      this.chunks[0] = { chunk: { ids: first.chunk.ids.slice(cut), runs }, size: first.size - over, last: first.last };
      this.total -= over;
    }
  }
}

/**
 * The id in a string of its own. An id read from a chain line is a slice of that line (or of the
 * whole chunk the line came in), and would keep all of it alive for as long as the window holds
 * the id: 100,000 ids kept 38 MB of 300-byte lines instead of 8 MB, each line promoted by the
 * garbage collector. Slicing a concatenation makes V8 copy it into a fresh string first.
 */
export function ownCopy(id: string): string {
  return ` ${id}`.slice(1);
}

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

  /** True when `id` is in the window; remembers nothing (a line read ahead of its decode). */
  has(id: string, now: number): boolean {
    this.expire(now);
    return this.seen.has(id);
  }

  /** Adds ids seen elsewhere (a predecessor's window, a checkpoint), oldest first. */
  load(window: DedupWindow, now = Date.now()): void {
    eachId(window, (id, t) => {
      if (now - t > this.maxMs || this.seen.has(id)) return;
      this.add(id, t);
    });
    this.expire(now);
  }

  private add(received: string, at: number): void {
    if (this.next - this.head === this.maxEntries) this.evictOldest();
    const id = ownCopy(received);
    const slot = this.next % this.maxEntries;
    this.ids[slot] = id;
    this.times[slot] = at;
    this.seen.set(id, this.next++);
  }

  private evictOldest(): void {
    const slot = this.head % this.maxEntries;
    // an id is in the ring once (it is added only when not seen), so its entry is this slot's
    this.seen.delete(this.ids[slot]!);
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
