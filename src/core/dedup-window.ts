// A duplicate-suppression window as it travels and is kept outside the flow (DESIGN.md §14):
// packed chunks in worker -> primary messages, the primary's copy per pipeline, the checkpoint.
// The lookups themselves are flow/dedup.ts's DedupSet, in the workers.

/**
 * Part of a window as it travels (worker → primary messages, the primary's copy, the checkpoint):
 * `ids` joined by `\n`, oldest first, and `runs`, the time (epoch ms) each was first seen as
 * [time, count, time, count, …] (ids done together share a time). A few strings instead of an
 * array of 100,000: cheap to send, keep and write once a second. Ids with a `\n` are not packed.
 * With `prefixes` (every chunk made now; a checkpoint's older chunks have none), an id that shares
 * the one before it up to that one's last `.` is written as `.` and the rest: a file's ids share a
 * 17-character prefix (ids.ts), so its lines' ids take a quarter of the bytes. An id that starts
 * with `.` itself is written with one `.` more; the first id of the text is written whole.
 */
export interface DedupChunk {
  readonly ids: string;
  readonly runs: readonly number[];
  readonly prefixes?: 1;
}

/** `id` as written after `prev` (prefixes, see DedupChunk). */
function packedId(id: string, prev: string | undefined): string {
  if (prev !== undefined) {
    const cut = prev.lastIndexOf('.') + 1;
    if (cut > 0 && id.length >= cut && id.lastIndexOf('.') === cut - 1 && id.startsWith(prev.slice(0, cut))) return `.${id.slice(cut)}`;
  }
  return id.charCodeAt(0) === 0x2e ? `.${id}` : id;
}

/** The id written as `line` after the id `prev` (prefixes). */
function unpackedId(line: string, prev: string | undefined): string {
  if (line.charCodeAt(0) !== 0x2e) return line;
  if (line.charCodeAt(1) === 0x2e) return line.slice(1);
  return prev === undefined ? line.slice(1) : prev.slice(0, prev.lastIndexOf('.') + 1) + line.slice(1);
}

/** `ids` as joinIds writes them, one string per id joined: the way for ids with a character past U+00FF. */
export function joinIdsSlowly(ids: readonly string[]): string {
  const lines = new Array<string>(ids.length);
  for (let i = 0; i < ids.length; i++) lines[i] = packedId(ids[i]!, i === 0 ? undefined : ids[i - 1]);
  return lines.join('\n');
}

/** joinIds' scratch bytes, grown as needed: one Latin-1 text per call is sliced from it. */
let scratch = Buffer.allocUnsafe(64 * 1024) as Buffer & { latin1Slice(start: number, end: number): string };

/**
 * `ids` (none with a `\n`) as a chunk's text with prefixes, the first whole: a string of its own,
 * never a slice of an id's line. Written as Latin-1 bytes and read back as one string: a string per
 * id (its `.` and tail, then the join) was a third of what a collector's journal of done ids cost
 * per line (acks.ts). The shared prefix is compared with the bytes of the last id written whole (a
 * file's ids share it for a whole batch). Same text as joinIdsSlowly.
 */
export function joinIds(ids: readonly string[]): string {
  return tryJoinIds(ids) ?? joinIdsSlowly(ids);
}

/** joinIds, or undefined when an id has a `\n` (such ids are not packed: the caller leaves them out). */
export function tryJoinIds(ids: readonly string[]): string | undefined {
  let need = 0;
  for (let i = 0; i < ids.length; i++) need += ids[i]!.length + 2;
  if (need > scratch.length) scratch = Buffer.allocUnsafe(Math.max(need, scratch.length * 2)) as typeof scratch;
  const buf = scratch;
  let at = 0;
  // the last id written whole starts at buf[prefixAt]; its prefix, up to its last `.`, is `cut` long (0: none)
  let prefixAt = 0;
  let cut = 0;
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    const n = id.length;
    if (i > 0) buf[at++] = 10;
    if (cut > 0 && n >= cut) {
      // most ids share the last whole one's prefix: each character read once, the tail from the end
      // down to its last `.` written where it goes after a `.`, then the prefix compared
      const base = at + 1 - cut;
      let k = n - 1;
      for (; k >= cut; k--) {
        const c = id.charCodeAt(k);
        if (c === 0x2e || c === 10 || c > 0xff) break;
        buf[base + k] = c;
      }
      if (k === cut - 1) {
        let same = true;
        for (let j = 0; j < cut; j++) {
          if (id.charCodeAt(j) !== buf[prefixAt + j]) {
            same = false;
            break;
          }
        }
        if (same) {
          buf[at] = 0x2e;
          at += 1 + n - cut;
          continue;
        }
      }
    }
    // written whole (over whatever the try above left): its prefix is the one the next ids may share
    let dot = n - 1;
    while (dot >= 0 && id.charCodeAt(dot) !== 0x2e) dot--;
    if (n > 0 && id.charCodeAt(0) === 0x2e) buf[at++] = 0x2e;
    prefixAt = at;
    cut = dot + 1;
    for (let k = 0; k < n; k++) {
      const c = id.charCodeAt(k);
      if (c === 10) return undefined;
      if (c > 0xff) return ids.some((x) => x.includes('\n')) ? undefined : joinIdsSlowly(ids);
      buf[at++] = c;
    }
  }
  return buf.latin1Slice(0, at);
}

/** The ids of a chunk's text. */
function splitIds(text: string, prefixes: boolean): string[] {
  const lines = text.split('\n');
  if (!prefixes) return lines;
  let prev: string | undefined;
  for (let i = 0; i < lines.length; i++) prev = lines[i] = unpackedId(lines[i]!, prev);
  return lines;
}

/**
 * A chunk's text without its `count` oldest ids (fewer than it has), the first one left written
 * whole. Nothing is made per id dropped (the primary cuts its copy so once per chunk a worker
 * reports, and a string per id was most of what it spent on a collector's window): a line written
 * with a prefix takes it from the last line written whole before it (the tails hold no `.`), so
 * only that line is read.
 */
export function dropIds(text: string, count: number, prefixes: boolean): string {
  let cut = 0;
  /** where the last line before the cut that was written whole starts (-1: none) */
  let whole = -1;
  for (let k = 0; k < count; k++) {
    if (prefixes && (text.charCodeAt(cut) !== 0x2e || text.charCodeAt(cut + 1) === 0x2e)) whole = cut;
    cut = text.indexOf('\n', cut) + 1;
  }
  if (!prefixes || count === 0) return text.slice(cut);
  const prev = whole < 0 ? undefined : unpackedId(text.slice(whole, text.indexOf('\n', whole)), undefined);
  const end = text.indexOf('\n', cut);
  const first = unpackedId(end < 0 ? text.slice(cut) : text.slice(cut, end), prev);
  return packedId(first, undefined) + (end < 0 ? '' : text.slice(end));
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
  return { ids: joinIds(kept), runs, prefixes: 1 };
}

/** Calls `each(id, time)` for every id of `window`, oldest first. */
export function eachId(window: DedupWindow, each: (id: string, time: number) => void): void {
  for (const chunk of window) {
    // the runs say how many ids there are: text '' is one empty id when they count one, none when none
    const ids = splitIds(chunk.ids, chunk.prefixes === 1);
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
      const prefixes = first.chunk.prefixes === 1;
      const runs = [...first.chunk.runs];
      for (let left = over; left > 0; ) {
        const take = Math.min(left, runs[1]!);
        runs[1]! -= take;
        left -= take;
        if (runs[1] === 0) runs.splice(0, 2);
      }
      const ids = dropIds(first.chunk.ids, over, prefixes);
      this.chunks[0] = { chunk: prefixes ? { ids, runs, prefixes: 1 } : { ids, runs }, size: first.size - over, last: first.last };
      this.total -= over;
    }
  }
}
