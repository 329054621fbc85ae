// A duplicate-suppression window as it travels and is kept outside the flow (DESIGN.md §14):
// packed chunks in worker -> primary messages, the primary's copy per pipeline, the checkpoint.
// The lookups themselves are flow/dedup.ts's DedupSet, in the workers.

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
