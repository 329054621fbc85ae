// The disk buffer of one source (DESIGN.md §23): a log of segment files with group commit (one
// fdatasync covers every record that arrived while the previous one ran), read back in order
// through a window no larger than the pipeline's queues, its acknowledged sequence advancing as
// the pipeline finishes entries, segments deleted once the checkpoint saved a sequence past them.
// Recovery at open cuts a torn tail; a corrupt record met while reading skips the rest of its
// segment. A failed write or sync marks the buffer failing (full) and is retried until it works.

import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, stat, unlink, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeEntry, encodeEntry } from '../chain/protocol.js';
import { InOrder } from '../core/ack.js';
import type { Entry } from '../core/entry.js';
import { errorMessage } from '../core/errors.js';
import { idPrefix } from '../core/ids.js';
import type { Logger } from '../core/log.js';
import { encodeRecords, HEADER_BYTES, MIN_RECORD, recordAt, scanSegment, segmentName, segmentSeq } from './record.js';

/** The source counters a disk buffer keeps (DESIGN.md §23), in the source's own counters object. */
export interface BufferCounters {
  buffer_bytes: number;
  buffer_entries: number;
  buffer_syncs: number;
  buffer_corrupt_records: number;
  buffer_truncated_bytes: number;
  /** failed writes and syncs (each attempt) */
  buffer_write_errors: number;
  /** 1 while writes fail (readiness says `buffer_error`), else 0 */
  buffer_failing: number;
  /** entries dropped because the buffer was full (reason `buffer_full`) */
  dropped_buffer_full: number;
}

export function bufferCounters(): BufferCounters {
  return { buffer_bytes: 0, buffer_entries: 0, buffer_syncs: 0, buffer_corrupt_records: 0, buffer_truncated_bytes: 0, buffer_write_errors: 0, buffer_failing: 0, dropped_buffer_full: 0 };
}

export interface DiskBufferOptions {
  readonly dir: string;
  readonly segmentBytes: number;
  readonly maxBytes: number;
  readonly log: Logger;
  readonly counters: BufferCounters;
  /** parts of the id prefix of entries stamped here, with the buffer's epoch */
  readonly node: string;
  readonly pipeline: string;
  readonly source: string;
  /** How long a failed write waits before the next attempt, ms. */
  readonly retryMs?: number;
}

interface Segment {
  readonly firstSeq: number;
  readonly name: string;
  /** bytes durable in it (synced, or found at open) */
  size: number;
}

const META_FILE = 'meta.json';
/** Bytes read from a segment at once. */
const READ_CHUNK = 256 * 1024;
/** A failed write's ERROR is repeated at most this often while it keeps failing, ms. */
const ERROR_LOG_INTERVAL_MS = 60_000;
const EMPTY = Buffer.alloc(0);

export type BufferEmit = (entries: Entry[], done: () => void) => void;

export class DiskBuffer {
  private readonly segments: Segment[] = [];
  private writeFh: FileHandle | undefined;
  private writeSeg: Segment | undefined;
  private nextSeq = 1;
  private prefix = '';
  private pending: Buffer[] = [];
  /** the entries of each pending chunk: handed to a reader that is caught up once synced */
  private pendingEntries: Entry[][] = [];
  private pendingBytes = 0;
  private pendingFirstSeq = 0;
  private waiters: (() => void)[] = [];
  private committing = false;
  private failing = false;
  private retrying = false;
  private lastErrorLog = 0;
  private diskBytes = 0;
  private wasFull = false;
  /** recovered and ready to append */
  opened = false;
  private closed = false;
  /** the last sequence every sink finished (DESIGN.md §15) */
  acked = 0;
  /** the last acknowledged sequence the checkpoint saved */
  private savedSeq = 0;
  // reading
  private emit: BufferEmit | undefined;
  private window = 1000;
  private paused = false;
  private outstanding = 0;
  private readLoop = false;
  private readAgain = false;
  private rSeg: Segment | undefined;
  private rFh: FileHandle | undefined;
  private carry: Buffer = EMPTY;
  /** file offset of `carry[0]` */
  private carryAt = 0;
  /** the last sequence read (emitted or skipped) */
  private readSeq = 0;
  /** the current segment was read cleanly so far (a gap after it is a missing segment) */
  private readClean = true;
  private readonly order = new InOrder<number>((seq) => {
    this.acked = seq;
    this.count();
  });
  /** entries synced and kept in memory for a caught-up reader (see handOver) */
  private cache: { seg: Segment; items: Entry[]; sizes: number[]; idx: number; at: number; seq: number; end: number; endSeq: number } | undefined;
  /** Called when `full` changes. */
  onState: (() => void) | undefined;

  constructor(private readonly opts: DiskBufferOptions) {}

  /** Full (max_size_mb reached) or failing: the source stops taking. */
  get full(): boolean {
    return this.failing || this.diskBytes + this.pendingBytes >= this.opts.maxBytes;
  }

  get isFailing(): boolean {
    return this.failing;
  }

  /** Recovers the directory and resumes after `ackedSeq` (the handed acknowledged sequence). */
  async open(ackedSeq: number): Promise<void> {
    const { dir, log, counters } = this.opts;
    await mkdir(dir, { recursive: true });
    this.prefix = idPrefix(this.opts.node, this.opts.pipeline, this.opts.source, await this.epoch());
    for (const name of (await readdir(dir)).sort()) {
      const first = segmentSeq(name);
      if (first === undefined) {
        if (name !== META_FILE && name !== `${META_FILE}.tmp`) log.warn({ file: join(dir, name) }, 'Disk buffer stray file ignored');
        continue;
      }
      this.segments.push({ firstSeq: first, name, size: (await stat(join(dir, name))).size });
    }
    this.segments.sort((a, b) => a.firstSeq - b.firstSeq);
    let lastSeq = 0;
    const last = this.segments.at(-1);
    if (last) {
      const path = join(dir, last.name);
      const bytes = await readFile(path);
      const scan = scanSegment(bytes);
      lastSeq = scan.lastSeq ?? last.firstSeq - 1;
      if (scan.after === 'torn') {
        const cut = bytes.length - scan.validEnd;
        const fh = await open(path, 'r+');
        try {
          await fh.truncate(scan.validEnd);
          await fh.datasync();
        } finally {
          await fh.close();
        }
        last.size = scan.validEnd;
        counters.buffer_truncated_bytes += cut;
        log.warn({ segment: last.name, bytes: cut }, 'Disk buffer tail cut');
      } else if (scan.after === 'corrupt') {
        // the reader reports it when it gets there; sequences the skipped bytes may hold are never reused
        lastSeq += Math.ceil((bytes.length - scan.validEnd) / MIN_RECORD);
      }
      if (last.size === 0) {
        await unlink(path);
        this.segments.pop();
      }
    }
    for (const s of this.segments) this.diskBytes += s.size;
    this.nextSeq = Math.max(lastSeq, ackedSeq, (this.segments.at(-1)?.firstSeq ?? 1) - 1) + 1;
    this.acked = ackedSeq;
    this.readSeq = ackedSeq;
    this.opened = true;
    this.count();
  }

  /** The buffer's epoch: drawn when the directory is first used, part of every id stamped here. */
  private async epoch(): Promise<string> {
    const file = join(this.opts.dir, META_FILE);
    try {
      const meta = JSON.parse(await readFile(file, 'utf8')) as { epoch?: unknown };
      if (typeof meta.epoch === 'string' && meta.epoch !== '') return meta.epoch;
    } catch {
      /* missing or unreadable: a new epoch (ids of a new epoch never equal older ones) */
    }
    const epoch = randomBytes(12).toString('hex');
    await writeFile(`${file}.tmp`, JSON.stringify({ epoch }), { flush: true });
    await rename(`${file}.tmp`, file);
    await syncDir(this.opts.dir);
    return epoch;
  }

  /**
   * Appends entries (an entry without an id gets one, from the sequence); `done` runs once the
   * sync that covers them is over. Synchronous: the write happens in the next group commit.
   */
  append(entries: Entry[], now: number, done?: () => void): void {
    const first = this.nextSeq;
    const payloads = new Array<string>(entries.length);
    const out = { completed: false };
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!;
      if (e.id === undefined) {
        e.id = this.prefix + (first + i).toString(36);
        if (e.raw !== undefined) e.raw = e.rawNodeAt = e.rawIdAt = undefined;
      }
      payloads[i] = encodeEntry(e, now, this.opts.pipeline, out);
    }
    this.nextSeq += entries.length;
    const buf = encodeRecords(payloads, first);
    if (this.pending.length === 0) this.pendingFirstSeq = first;
    this.pending.push(buf);
    this.pendingEntries.push(entries);
    this.pendingBytes += buf.length;
    if (done) this.waiters.push(done);
    this.commit();
    this.count();
  }

  private commit(): void {
    if (this.committing || !this.opened || this.pending.length === 0 || (this.failing && !this.retrying)) return;
    this.committing = true;
    const chunks = this.pending;
    const lists = this.pendingEntries;
    const waiters = this.waiters;
    const bytes = this.pendingBytes;
    const first = this.pendingFirstSeq;
    this.pending = [];
    this.pendingEntries = [];
    this.waiters = [];
    this.pendingBytes = 0;
    this.write(chunks, bytes, first)
      .then(
        (at) => {
          this.opts.counters.buffer_syncs++;
          if (this.failing) {
            this.failing = this.retrying = false;
            this.opts.counters.buffer_failing = 0;
            this.opts.log.info({ dir: this.opts.dir }, 'Disk buffer write recovered');
          }
          for (const w of waiters) w();
          this.handOver(at, chunks, lists, first);
          this.pumpRead();
        },
        (err: unknown) => {
          // kept, in order, for the next attempt: their senders were told nothing yet
          this.pending = chunks.concat(this.pending);
          this.pendingEntries = lists.concat(this.pendingEntries);
          this.waiters = waiters.concat(this.waiters);
          this.pendingBytes += bytes;
          this.pendingFirstSeq = first;
          this.fail(err);
        },
      )
      .finally(() => {
        this.committing = false;
        this.count();
        this.commit();
      });
  }

  /** Writes and syncs; resolves where the chunks begin in the segment being written. */
  private async write(chunks: Buffer[], bytes: number, firstSeq: number): Promise<number> {
    if (!this.writeFh || !this.writeSeg || (this.writeSeg.size > 0 && this.writeSeg.size + bytes > this.opts.segmentBytes)) await this.roll(firstSeq);
    const fh = this.writeFh!;
    const seg = this.writeSeg!;
    const at = seg.size;
    await fh.writev(chunks, at);
    await fh.datasync();
    seg.size += bytes;
    this.diskBytes += bytes;
    return at;
  }

  /**
   * Entries just synced are kept, as they are, for a reader caught up at the end of the segment
   * being written: it takes them from here, up to its window at a time, instead of reading and
   * decoding them again. Bounded by `cacheMax()` entries; what is not kept is read from the disk.
   */
  private handOver(at: number, chunks: readonly Buffer[], lists: readonly Entry[][], first: number): void {
    const seg = this.writeSeg;
    if (!seg || this.closed) return;
    let c = this.cache;
    if (c && (c.seg !== this.rSeg || this.carryAt > c.at)) c = this.cache = undefined; // the reader passed it
    const contiguous = c !== undefined && c.seg === seg && c.end === at && c.endSeq === first - 1;
    if (!contiguous) {
      // a new run starts when none is kept and the reader is in this segment, not far behind
      if (c || this.rSeg !== seg || first - 1 - this.readSeq > this.cacheMax()) return;
      c = this.cache = { seg, items: [], sizes: [], idx: 0, at, seq: first, end: at, endSeq: first - 1 };
    }
    if (c!.items.length - c!.idx >= this.cacheMax()) return;
    for (let k = 0; k < chunks.length; k++) {
      const chunk = chunks[k]!;
      const list = lists[k]!;
      for (let e = 0, p = 0; e < list.length; e++) {
        const size = HEADER_BYTES + chunk.readUInt32LE(p);
        c!.items.push(list[e]!);
        c!.sizes.push(size);
        p += size;
        c!.end += size;
      }
      c!.endSeq += list.length;
    }
  }

  private cacheMax(): number {
    return Math.max(16 * this.window, 16384);
  }

  /** Where reading from the disk stops in the current segment: the start of the cache ahead, or its end. */
  private readLimit(seg: Segment): number {
    const c = this.cache;
    return c && c.seg === seg && c.at >= this.carryAt ? c.at : seg.size;
  }

  /** Hands on entries from the cache when the reader stands where it begins; true when it did. */
  private fromCache(): boolean {
    const c = this.cache;
    if (!c) return false;
    if (this.rSeg !== c.seg || this.carryAt > c.at || (this.carryAt === c.at && this.readSeq !== c.seq - 1)) {
      // the reader is elsewhere (another segment, or past it): the cache is of no use any more
      this.cache = undefined;
      return false;
    }
    if (this.carryAt < c.at) return false;
    // bytes read before the cache began are the same records: the cache serves them
    this.carry = EMPTY;
    const n = Math.min(this.window - this.outstanding, c.items.length - c.idx);
    if (n <= 0) return false;
    const batch = c.items.slice(c.idx, c.idx + n);
    let bytes = 0;
    for (let k = c.idx; k < c.idx + n; k++) bytes += c.sizes[k]!;
    c.idx += n;
    c.at += bytes;
    c.seq += n;
    if (c.idx === c.items.length) this.cache = undefined;
    else if (c.idx > 4096) {
      c.items = c.items.slice(c.idx);
      c.sizes = c.sizes.slice(c.idx);
      c.idx = 0;
    }
    this.carryAt = c.at;
    this.readSeq = c.seq - 1;
    this.handOn(batch, this.readSeq);
    return true;
  }

  /** Writing goes on in a new segment named by its first sequence; the directory entry is synced first. */
  private async roll(firstSeq: number): Promise<void> {
    const name = segmentName(firstSeq);
    const fh = await open(join(this.opts.dir, name), 'w');
    try {
      await syncDir(this.opts.dir);
    } catch (err) {
      await fh.close();
      throw err;
    }
    const old = this.writeFh;
    this.writeFh = fh;
    this.writeSeg = { firstSeq, name, size: 0 };
    this.segments.push(this.writeSeg);
    await old?.close().catch(() => undefined);
    this.prune();
  }

  private fail(err: unknown): void {
    const { counters, log } = this.opts;
    counters.buffer_write_errors++;
    const now = Date.now();
    if (!this.failing || now - this.lastErrorLog >= ERROR_LOG_INTERVAL_MS) {
      this.lastErrorLog = now;
      log.error({ dir: this.opts.dir, error: errorMessage(err) }, 'Disk buffer write failed');
    }
    this.failing = true;
    this.retrying = false;
    counters.buffer_failing = 1;
    setTimeout(() => void this.retry(), this.opts.retryMs ?? 1000);
  }

  private async retry(): Promise<void> {
    if (this.closed) return;
    try {
      // what a failed write left after the durable end goes first
      if (this.writeFh && this.writeSeg) await this.writeFh.truncate(this.writeSeg.size);
    } catch (err) {
      this.fail(err);
      return;
    }
    this.retrying = true;
    this.commit();
  }

  /** Keeps counters and `full` up to date; tells `onState` when `full` changed. */
  private count(): void {
    const c = this.opts.counters;
    c.buffer_bytes = this.diskBytes;
    c.buffer_entries = Math.max(0, this.nextSeq - 1 - this.acked);
    const full = this.full;
    if (full !== this.wasFull) {
      this.wasFull = full;
      this.onState?.();
    }
  }

  /** The checkpoint saved `seq` as acknowledged: segments wholly before it go. */
  saved(seq: number | undefined): void {
    if (seq === undefined || seq <= this.savedSeq) return;
    this.savedSeq = seq;
    this.prune();
  }

  private prune(): void {
    while (this.segments.length > 1) {
      const seg = this.segments[0]!;
      const next = this.segments[1]!;
      if (seg === this.writeSeg || seg === this.rSeg || this.savedSeq < next.firstSeq - 1) break;
      this.segments.shift();
      this.remove(seg);
    }
    // The segment being written, wholly saved as acknowledged, goes too (the next write starts a
    // new one): one large commit may fill a buffer alone, and a full buffer takes nothing more.
    const w = this.writeSeg;
    if (w && this.segments.length === 1 && this.segments[0] === w && !this.committing && this.pending.length === 0 && !this.readLoop && this.savedSeq >= this.nextSeq - 1) {
      this.writeSeg = undefined;
      const fh = this.writeFh;
      this.writeFh = undefined;
      void fh?.close().catch(() => undefined);
      if (this.rSeg === w) void this.closeReader();
      this.segments.pop();
      this.remove(w);
    }
    this.count();
  }

  private remove(seg: Segment): void {
    this.diskBytes -= seg.size;
    unlink(join(this.opts.dir, seg.name)).catch((err: unknown) => this.opts.log.warn({ segment: seg.name, error: errorMessage(err) }, 'Disk buffer segment not deleted'));
  }

  // ── Reading ───────────────────────────────────────────────────────────────────────────────

  /** Starts handing entries to `emit`, at most `window` not yet done at once. */
  startReading(emit: BufferEmit, window: number): void {
    this.emit = emit;
    this.window = Math.max(1, window);
    this.pumpRead();
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.pumpRead();
  }

  /** Entries handed on and not yet done. */
  get inFlight(): number {
    return this.outstanding;
  }

  private canRead(): boolean {
    return this.emit !== undefined && !this.paused && !this.closed && this.outstanding < this.window;
  }

  private pumpRead(): void {
    if (this.readLoop) {
      this.readAgain = true;
      return;
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
        this.opts.log.error({ dir: this.opts.dir, error: errorMessage(err) }, 'Disk buffer read failed');
        await this.closeReader();
        setTimeout(() => this.pumpRead(), this.opts.retryMs ?? 1000);
      } finally {
        this.readLoop = false;
      }
    })();
  }

  /** One step of reading; false when nothing more can be read now. */
  private async readStep(): Promise<boolean> {
    const seg = this.rSeg ?? this.pickSegment();
    if (!seg) return false;
    if (!this.rFh) {
      const fh = await open(join(this.opts.dir, seg.name), 'r');
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
    if (this.fromCache() || this.parse()) return true;
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
    if (seg === this.writeSeg || seg === this.segments.at(-1)) return false;
    if (this.carry.length > 0) this.corrupt(seg, this.carryAt, 'record cut short');
    else await this.nextSegment();
    return true;
  }

  /** The segment holding the next sequence to read (or the first after it). */
  private pickSegment(): Segment | undefined {
    let pick: Segment | undefined;
    for (const s of this.segments) {
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
      const entry = decodeEntry(this.carry.toString('utf8', r.start, r.end), undefined, now, this.opts.pipeline);
      if (entry) batch.push(entry);
      else this.opts.counters.buffer_corrupt_records++;
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
      this.pumpRead();
    });
  }

  /** A record whose length or CRC is wrong: the rest of its segment is skipped. */
  private corrupt(seg: Segment, offset: number, reason: string): void {
    this.opts.counters.buffer_corrupt_records++;
    this.opts.log.error({ segment: seg.name, offset, skipped_bytes: Math.max(0, seg.size - offset), reason }, 'Disk buffer corrupt record');
    this.readClean = false;
    this.carry = EMPTY;
    this.carryAt = seg.size;
  }

  private async nextSegment(): Promise<void> {
    const seg = this.rSeg!;
    const i = this.segments.indexOf(seg);
    const next = this.segments[i + 1];
    await this.closeReader();
    if (!next) return;
    if (this.readClean && next.firstSeq > this.readSeq + 1) {
      this.opts.log.warn({ segment: next.name, from: this.readSeq + 1, to: next.firstSeq - 1 }, 'Disk buffer segment missing');
    }
    // after a corrupt or missing stretch, reading resumes at the next segment's start
    if (next.firstSeq > this.readSeq + 1) this.readSeq = next.firstSeq - 1;
    this.rSeg = next;
    this.prune();
  }

  private async closeReader(): Promise<void> {
    const fh = this.rFh;
    this.rFh = undefined;
    this.rSeg = undefined;
    this.carry = EMPTY;
    await fh?.close().catch(() => undefined);
  }

  /** Stops reading and writing once the commit under way (if any) is over, by `deadline`; idempotent. */
  async close(deadline: number): Promise<void> {
    while ((this.committing || (this.pending.length > 0 && !this.failing)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    this.closed = true;
    this.emit = undefined;
    await this.closeReader();
    const fh = this.writeFh;
    this.writeFh = undefined;
    await fh?.close().catch(() => undefined);
  }
}

async function syncDir(dir: string): Promise<void> {
  const dh = await open(dir, 'r');
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}
