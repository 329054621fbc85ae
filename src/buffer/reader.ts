// The disk buffer's reader (DESIGN.md §23): records in order from the segments, never more than
// `window` entries handed on and not yet done; entries just synced come from a bounded cache
// instead of the disk while the reader keeps up. A record whose length or CRC is wrong skips the
// rest of its segment; a gap between segments is a missing one. The log (disk-buffer.ts) owns the
// segments and deletes them; the reader tells it where it stands.

import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { InOrder } from '../core/ack.js';
import type { Entry } from '../core/entry.js';
import { decodeEntry } from '../core/entry-line.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import type { BufferCounters } from './counters.js';
import { HEADER_BYTES, recordAt, type Segment } from './record.js';

/** Bytes read from a segment at once. */
const READ_CHUNK = 256 * 1024;
const EMPTY = Buffer.alloc(0);

/** One append's entries, kept as they were handed to the writer (see handOver). */
interface CachedRun {
  readonly seg: Segment;
  /** where its records begin in `seg` */
  readonly start: number;
  /** where its first record not yet taken begins */
  at: number;
  /** the sequence of that record */
  seq: number;
  readonly entries: Entry[];
  /** where each record ends, from `start` */
  readonly ends: Float64Array;
  /** entries taken */
  idx: number;
}

export type BufferEmit = (entries: Entry[], done: () => void) => void;

/** What the reader needs of the log. */
export interface ReaderHost {
  readonly dir: string;
  readonly log: Logger;
  readonly counters: BufferCounters;
  readonly pipeline: string;
  /** how long a failed read waits before the next attempt, ms */
  readonly retryMs: number;
  /** most record bytes the cache of synced entries holds (see handOver) */
  readonly cacheBytes: number;
  /** the log's segments, oldest first (the log adds and deletes them) */
  readonly segments: readonly Segment[];
  /** the segment being written */
  writeSeg(): Segment | undefined;
  /** every record up to `seq` is done */
  acked(seq: number): void;
  /** the reader moved on to another segment (the log may delete what it left) */
  moved(): void;
  /** a read ended: a segment the log kept because it was being read may go now */
  idle(): void;
}

export class BufferReader {
  private emit: BufferEmit | undefined;
  private window = 1000;
  private paused = false;
  private closed = false;
  private outstanding = 0;
  private readLoop = false;
  private readAgain = false;
  /** pump() is handing on entries from the cache (a pump it causes only asks for more) */
  private taking = false;
  private rSeg: Segment | undefined;
  private rFh: FileHandle | undefined;
  private carry: Buffer = EMPTY;
  /** file offset of `carry[0]` */
  private carryAt = 0;
  /** the last sequence read (emitted or skipped) */
  private readSeq = 0;
  /** the current segment was read cleanly so far (a gap after it is a missing segment) */
  private readClean = true;
  private readonly order: InOrder<number>;
  /** appends just written, oldest first, kept for a reader that keeps up (see handOver) */
  private runs: CachedRun[] = [];
  /** entries and record bytes the runs hold, not yet taken */
  private cachedEntries = 0;
  private cachedBytes = 0;

  constructor(private readonly host: ReaderHost) {
    this.order = new InOrder<number>((seq) => host.acked(seq));
  }

  /** Reading resumes after `seq` (the acknowledged sequence handed at start). */
  resumeAfter(seq: number): void {
    this.readSeq = seq;
  }

  /** the segment being read */
  get segment(): Segment | undefined {
    return this.rSeg;
  }

  /** a read is under way */
  get busy(): boolean {
    return this.readLoop;
  }

  /**
   * The entries of an append just handed to the writer are kept, as they are, for the reader (it
   * may hand them on before their sync; see DiskBuffer.post): when it gets to
   * where they begin it takes them from here, up to its window at a time, instead of reading and
   * decoding them again. The cache is the tail of the log: bounded by `cacheBytes` record bytes
   * and `cacheMax()` entries, the oldest appends make way; a reader behind them reads the disk
   * (up to the durable end only).
   * Nothing is kept for a reader further behind than that.
   */
  handOver(at: number, chunk: Buffer, entries: Entry[], first: number): void {
    const seg = this.host.writeSeg();
    const n = entries.length;
    if (!seg || this.closed || n === 0) return;
    // A reader further behind than the cache holds would find these gone (newer appends push them
    // out) before it got to them: kept meanwhile, they would only fill the old generation.
    const lag = first - 1 - this.readSeq;
    const maxEntries = this.cacheMax();
    if (lag > maxEntries || (lag * chunk.length) / n > this.host.cacheBytes) return;
    const ends = new Float64Array(n);
    for (let i = 0, p = 0; p < chunk.length; i++) {
      p += HEADER_BYTES + chunk.readUInt32LE(p);
      ends[i] = p;
    }
    this.runs.push({ seg, start: at, at, seq: first, entries, ends, idx: 0 });
    this.cachedEntries += n;
    this.cachedBytes += chunk.length;
    while (this.runs.length > 0 && (this.cachedEntries > maxEntries || this.cachedBytes > this.host.cacheBytes)) this.dropRun();
  }

  private cacheMax(): number {
    return Math.max(16 * this.window, 32768);
  }

  /** The oldest run goes (taken, passed, or making way for newer ones). */
  private dropRun(): void {
    const r = this.runs.shift()!;
    this.cachedEntries -= r.entries.length - r.idx;
    this.cachedBytes -= r.start + r.ends[r.ends.length - 1]! - r.at;
  }

  /** The run the reader gets to next, once the runs it passed went; undefined when none is kept. */
  private nextRun(seg: Segment): CachedRun | undefined {
    for (let r = this.runs[0]; r; r = this.runs[0]) {
      // a run in an older segment, or behind the reader in this one: of no use any more
      if (r.seg.firstSeq < seg.firstSeq || (r.seg === seg && (r.at < this.carryAt || (r.at === this.carryAt && r.seq <= this.readSeq)))) this.dropRun();
      else return r;
    }
    return undefined;
  }

  /** Where reading from the disk stops in the current segment: the start of the cache ahead, or its end. */
  private readLimit(seg: Segment): number {
    const r = this.runs[0];
    return r && r.seg === seg && r.at >= this.carryAt ? r.at : seg.size;
  }

  /** Hands on entries from the cache when the reader stands where a run goes on; true when it did. */
  private fromCache(seg: Segment): boolean {
    const r = this.nextRun(seg);
    if (!r || r.seg !== seg || r.at !== this.carryAt) return false;
    const n = Math.min(this.window - this.outstanding, r.entries.length - r.idx);
    if (n <= 0) return false;
    const batch = n === r.entries.length ? r.entries : r.entries.slice(r.idx, r.idx + n);
    r.idx += n;
    const at = r.start + r.ends[r.idx - 1]!;
    this.cachedEntries -= n;
    this.cachedBytes -= at - r.at;
    r.at = at;
    r.seq += n;
    if (r.idx === r.entries.length) this.runs.shift();
    // bytes read before the run was kept are the same records: the cache serves them
    this.carry = EMPTY;
    this.carryAt = at;
    this.readSeq = r.seq - 1;
    this.handOn(batch, this.readSeq);
    return true;
  }

  /** Starts handing entries to `emit`, at most `window` not yet done at once. */
  start(emit: BufferEmit, window: number): void {
    this.emit = emit;
    this.window = Math.max(1, window);
    this.pump();
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.pump();
  }

  /** Entries handed on and not yet done. */
  get inFlight(): number {
    return this.outstanding;
  }

  private canRead(): boolean {
    return this.emit !== undefined && !this.paused && !this.closed && this.outstanding < this.window;
  }

  pump(): void {
    if (this.readLoop || this.taking) {
      this.readAgain = true;
      return;
    }
    const seg = this.rSeg;
    if (seg && this.rFh) {
      // Entries kept from appends are handed on now, without a promise a step (a pump per append
      // made the async loop's promises cost more than the reading). The loop below reads the disk.
      this.taking = true;
      try {
        while (this.canRead() && this.fromCache(seg));
      } catch (err) {
        this.host.log.error({ dir: this.host.dir, error: errorMessage(err) }, 'Disk buffer read failed');
        setTimeout(() => this.pump(), this.host.retryMs);
        return;
      } finally {
        this.taking = false;
      }
      if (this.waiting(seg)) return;
    }
    if (!this.canRead()) return;
    this.readLoop = true;
    void (async () => {
      try {
        do {
          this.readAgain = false;
          while (this.canRead() && (await this.readStep()));
        } while (this.readAgain && this.canRead());
      } catch (err) {
        this.host.log.error({ dir: this.host.dir, error: errorMessage(err) }, 'Disk buffer read failed');
        await this.closeSegment();
        setTimeout(() => this.pump(), this.host.retryMs);
      } finally {
        this.readLoop = false;
        this.host.idle();
      }
    })();
  }

  /** In `seg`, nothing is there to read until more is written, synced or kept (readStep would say false). */
  private waiting(seg: Segment): boolean {
    return this.carry.length === 0 && this.carryAt >= this.readLimit(seg) && (seg === this.host.writeSeg() || seg === this.host.segments.at(-1));
  }

  /** One step of reading; false when nothing more can be read now. */
  private async readStep(): Promise<boolean> {
    const seg = this.rSeg ?? this.pickSegment();
    if (!seg) return false;
    if (!this.rFh) {
      const fh = await open(join(this.host.dir, seg.name), 'r');
      if (this.closed) {
        await fh.close();
        return false;
      }
      this.rSeg = seg;
      this.rFh = fh;
      this.carry = EMPTY;
      this.carryAt = 0;
      this.readClean = true;
    }
    if (this.fromCache(seg) || this.parse()) return true;
    const from = this.carryAt + this.carry.length;
    const limit = this.readLimit(seg);
    if (from < limit) {
      const chunk = Buffer.allocUnsafe(Math.min(READ_CHUNK, limit - from));
      const { bytesRead } = await this.rFh.read(chunk, 0, chunk.length, from);
      if (bytesRead === 0) {
        this.corrupt(seg, from, 'segment shorter than recorded');
        return true;
      }
      this.carry = this.carry.length === 0 ? chunk.subarray(0, bytesRead) : Buffer.concat([this.carry, chunk.subarray(0, bytesRead)]);
      return true;
    }
    if (seg === this.host.writeSeg() || seg === this.host.segments.at(-1)) return false;
    if (this.carry.length > 0) this.corrupt(seg, this.carryAt, 'record cut short');
    else await this.nextSegment();
    return true;
  }

  /** The segment holding the next sequence to read (or the first after it). */
  private pickSegment(): Segment | undefined {
    let pick: Segment | undefined;
    for (const s of this.host.segments) {
      if (s.firstSeq <= this.readSeq + 1) pick = s;
      else return pick ?? s;
    }
    return pick;
  }

  /** Emits the whole records of `carry`, up to the window; true when it emitted or skipped any. */
  private parse(): boolean {
    const room = this.window - this.outstanding;
    const now = Date.now();
    const batch: Entry[] = [];
    let at = 0;
    let seq = this.readSeq;
    // the records up to a cache ahead are parsed; from there on, the cache serves
    const end = Math.min(this.carry.length, this.readLimit(this.rSeg!) - this.carryAt);
    while (batch.length < room && at < end) {
      const r = recordAt(this.carry, at);
      if (r.kind === 'short') break;
      if (r.kind === 'bad') {
        if (batch.length > 0) break; // what came before goes out first
        this.corrupt(this.rSeg!, this.carryAt + at, 'bad length or CRC');
        return true;
      }
      at = r.end;
      if (r.seq <= seq) continue; // acknowledged before a restart
      seq = r.seq;
      const entry = decodeEntry(this.carry.toString('utf8', r.start, r.end), undefined, now, this.host.pipeline);
      if (entry) batch.push(entry);
      else this.host.counters.buffer_corrupt_records++;
    }
    if (at === 0) return false;
    this.carry = this.carry.subarray(at);
    this.carryAt += at;
    this.readSeq = seq;
    if (this.carry.length === 0) this.carry = EMPTY;
    this.handOn(batch, seq);
    return true;
  }

  /** Emits `batch`, the records up to `seq` read; `seq` is acknowledged once its batch (and every one before) is done. */
  private handOn(batch: Entry[], seq: number): void {
    const complete = this.order.add(seq);
    if (batch.length === 0) {
      complete();
      return;
    }
    this.outstanding += batch.length;
    const n = batch.length;
    this.emit!(batch, () => {
      this.outstanding -= n;
      complete();
      this.pump();
    });
  }

  /** A record whose length or CRC is wrong: the rest of its segment is skipped. */
  private corrupt(seg: Segment, offset: number, reason: string): void {
    this.host.counters.buffer_corrupt_records++;
    this.host.log.error({ segment: seg.name, offset, skipped_bytes: Math.max(0, seg.size - offset), reason }, 'Disk buffer corrupt record');
    this.readClean = false;
    this.carry = EMPTY;
    this.carryAt = seg.size;
  }

  private async nextSegment(): Promise<void> {
    const seg = this.rSeg!;
    const i = this.host.segments.indexOf(seg);
    const next = this.host.segments[i + 1];
    await this.closeSegment();
    if (!next) return;
    if (this.readClean && next.firstSeq > this.readSeq + 1) {
      this.host.log.warn({ segment: next.name, from: this.readSeq + 1, to: next.firstSeq - 1 }, 'Disk buffer segment missing');
    }
    // after a corrupt or missing stretch, reading resumes at the next segment's start
    if (next.firstSeq > this.readSeq + 1) this.readSeq = next.firstSeq - 1;
    this.rSeg = next;
    this.host.moved();
  }

  async closeSegment(): Promise<void> {
    const fh = this.rFh;
    this.rFh = undefined;
    this.rSeg = undefined;
    this.carry = EMPTY;
    await fh?.close().catch(() => undefined);
  }

  /** Stops reading; idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    this.emit = undefined;
    this.runs = [];
    this.cachedEntries = this.cachedBytes = 0;
    await this.closeSegment();
  }
}
