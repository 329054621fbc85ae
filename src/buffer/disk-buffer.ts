// The disk buffer of one source (DESIGN.md §23): a log of segment files with group commit (one
// fdatasync covers every record that arrived while the previous one ran), read back in order
// through a window no larger than the pipeline's queues, its acknowledged sequence advancing as
// the pipeline finishes entries, segments deleted once the checkpoint saved a sequence past them.
// Recovery at open (recover.ts) cuts a torn tail; a corrupt record met while reading skips the
// rest of its segment. A failed write or sync marks the buffer failing (full) and is retried until it works.

import { open, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Entry } from '../core/entry.js';
import { errorMessage } from '../core/errors.js';
import { idPrefix } from '../core/ids.js';
import type { Logger } from '../core/log.js';
import type { BufferCounters } from './counters.js';
import { LineEncoder, RecordEncoder } from './encode.js';
import { writeAhead, writeAndSync, writerBarrier } from './writer.js';
import { type BufferEmit, BufferReader } from './reader.js';
import { recoverDir, syncDir } from './recover.js';
import { type Segment, segmentName } from './record.js';

export { type BufferCounters, bufferCounters } from './counters.js';

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
  /** Most record bytes of entries just synced kept in memory for the reader; default 8 MiB. */
  readonly cacheBytes?: number;
}

/**
 * Most record bytes waiting for the next commit while one is under way before the source stops
 * taking until it is over (default; see `behind`).
 */
const PENDING_MAX_BYTES = 512 * 1024;
/** A failed write's ERROR is repeated at most this often while it keeps failing, ms. */
const ERROR_LOG_INTERVAL_MS = 60_000;

export class DiskBuffer {
  private readonly segments: Segment[] = [];
  private writeFh: FileHandle | undefined;
  private writeSeg: Segment | undefined;
  private nextSeq = 1;
  private prefix = '';
  /** the prefix needs no escaping in JSON: an id stamped here is written as it is */
  private plainPrefix = false;
  private readonly encoder = new RecordEncoder();
  private pending: Buffer[] = [];
  /** the entries of each pending chunk: handed to a reader that is caught up once synced */
  private pendingEntries: Entry[][] = [];
  private pendingBytes = 0;
  private pendingFirstSeq = 0;
  private waiters: (() => void)[] = [];
  private committing = false;
  /**
   * Where the commit under way ends in its segment, once that is known (after a roll): pending
   * records are written ahead from there while it syncs, so the next commit is mostly its sync.
   */
  private commitEnd: number | undefined;
  /** how many of `pending` (the first ones) were written ahead, their bytes, and by which writer */
  private aheadCount = 0;
  private aheadBytes = 0;
  private aheadBy: number | undefined;
  /** the commit under way */
  private commitDone: Promise<unknown> | undefined;
  private failing = false;
  private retrying = false;
  private lastErrorLog = 0;
  private diskBytes = 0;
  private wasFull = false;
  private wasBehind = false;
  /** recovered and ready to append */
  opened = false;
  private closed = false;
  /** the last sequence every sink finished (DESIGN.md §15) */
  acked = 0;
  /** the last acknowledged sequence the checkpoint saved */
  private savedSeq = 0;
  private readonly reader: BufferReader;
  /** Called when `full` or `behind` changes. */
  onState: (() => void) | undefined;

  constructor(private readonly opts: DiskBufferOptions) {
    const segments = this.segments;
    this.reader = new BufferReader({
      dir: opts.dir,
      log: opts.log,
      counters: opts.counters,
      pipeline: opts.pipeline,
      retryMs: opts.retryMs ?? 1000,
      cacheBytes: opts.cacheBytes ?? 8 * 1024 * 1024,
      segments,
      writeSeg: () => this.writeSeg,
      acked: (seq) => {
        this.acked = seq;
        this.count();
      },
      moved: () => this.prune(),
    });
  }

  /** Full (max_size_mb reached) or failing: the source stops taking. */
  get full(): boolean {
    return this.failing || this.diskBytes + this.pendingBytes >= this.opts.maxBytes;
  }

  /**
   * Records wait for the commit under way beyond PENDING_MAX_BYTES: a source whose senders wait
   * on no acknowledgement stops taking until it is over (see withBuffer). What waits is bounded in memory, and each commit stays small enough that what it
   * covers reaches the reader within a turn or two of the event loop (entries that live longer
   * are promoted to the old generation: the garbage collector then costs more than the encoding).
   * Never a drop: a source that cannot stop (udp) goes on appending.
   */
  get behind(): boolean {
    return this.committing && this.pendingBytes >= PENDING_MAX_BYTES;
  }

  get isFailing(): boolean {
    return this.failing;
  }

  /** Recovers the directory and resumes after `ackedSeq` (the handed acknowledged sequence). */
  async open(ackedSeq: number): Promise<void> {
    const { dir, log, counters } = this.opts;
    const found = await recoverDir(dir, log, counters);
    this.prefix = idPrefix(this.opts.node, this.opts.pipeline, this.opts.source, found.epoch);
    this.plainPrefix = LineEncoder.isPlain(this.prefix);
    this.segments.push(...found.segments);
    for (const s of this.segments) this.diskBytes += s.size;
    this.nextSeq = Math.max(found.lastSeq, ackedSeq, (this.segments.at(-1)?.firstSeq ?? 1) - 1) + 1;
    this.acked = ackedSeq;
    this.reader.resumeAfter(ackedSeq);
    this.opened = true;
    this.count();
  }

  /**
   * Appends entries (an entry without an id gets one, from the sequence); `done` runs once the
   * sync that covers them is over. Synchronous: the write happens in the next group commit.
   */
  append(entries: Entry[], now: number, done?: () => void): void {
    const first = this.nextSeq;
    const buf = this.encoder.records(entries, first, this.prefix, this.plainPrefix, now, this.opts.pipeline);
    this.nextSeq += entries.length;
    if (this.pending.length === 0) this.pendingFirstSeq = first;
    this.pending.push(buf);
    this.pendingEntries.push(entries);
    this.pendingBytes += buf.length;
    if (done) this.waiters.push(done);
    this.commit();
    this.writeAhead();
    this.count();
  }

  /**
   * While a commit syncs, the records that will be the next one are written where they go (its
   * segment, after it) as they come: CRCs and the write are then done by the time that commit
   * starts, and it is mostly its fdatasync. Only in order (every earlier pending chunk written
   * ahead too), only where they fit in the segment, never while failing. A failed write ahead
   * fails the commit that covers it, which goes the way of any failed commit.
   */
  private writeAhead(): void {
    const end = this.commitEnd;
    const fh = this.writeFh;
    if (end === undefined || !fh || this.failing) return;
    while (this.aheadCount < this.pending.length) {
      const chunk = this.pending[this.aheadCount]!;
      const at = end + this.aheadBytes;
      if (at + chunk.length > this.opts.segmentBytes) return;
      const by = writeAhead(fh.fd, [chunk], at);
      // written by two writers (the first died between): never trusted, the commit fails
      this.aheadBy = this.aheadBy === undefined || this.aheadBy === by ? by : -1;
      this.aheadCount++;
      this.aheadBytes += chunk.length;
    }
  }

  private commit(): void {
    if (this.committing || !this.opened || this.pending.length === 0 || (this.failing && !this.retrying)) return;
    this.committing = true;
    let n = this.pending.length;
    const ahead = this.aheadCount;
    const aheadBytes = this.aheadBytes;
    // records written ahead are in the segment being written: the commit stays in it, so when the
    // rest would not fit, only those are committed now (the rest next, in a new segment)
    if (ahead > 0 && ahead < n && this.writeSeg && this.writeSeg.size + this.pendingBytes > this.opts.segmentBytes) n = ahead;
    const chunks = this.pending.slice(0, n);
    const lists = this.pendingEntries.slice(0, n);
    const waiters = n === this.pending.length ? this.waiters : [];
    let bytes = 0;
    for (const c of chunks) bytes += c.length;
    const first = this.pendingFirstSeq;
    this.pending = this.pending.slice(n);
    this.pendingEntries = this.pendingEntries.slice(n);
    if (waiters === this.waiters) this.waiters = [];
    this.pendingBytes -= bytes;
    let entries = 0;
    for (const list of lists) entries += list.length;
    this.pendingFirstSeq = first + entries;
    this.aheadCount = this.aheadBytes = 0;
    const aheadBy = this.aheadBy;
    this.aheadBy = undefined;
    const written = this.write(chunks, bytes, first, ahead > 0 ? { count: Math.min(ahead, n), bytes: aheadBytes, by: aheadBy! } : undefined);
    this.commitDone = written;
    written
      .then(
        (at) => {
          this.opts.counters.buffer_syncs++;
          if (this.failing) {
            this.failing = this.retrying = false;
            this.opts.counters.buffer_failing = 0;
            this.opts.log.info({ dir: this.opts.dir }, 'Disk buffer write recovered');
          }
          for (const w of waiters) w();
          this.reader.handOver(at, chunks, lists, first);
          this.encoder.release(chunks);
          this.reader.pump();
        },
        (err: unknown) => {
          // kept, in order, for the next attempt: their senders were told nothing yet; whatever
          // was written ahead is cut off by the retry and written again
          this.pending = chunks.concat(this.pending);
          this.pendingEntries = lists.concat(this.pendingEntries);
          this.waiters = waiters.concat(this.waiters);
          this.pendingBytes += bytes;
          this.pendingFirstSeq = first;
          this.aheadCount = this.aheadBytes = 0;
          this.aheadBy = undefined;
          this.fail(err);
        },
      )
      .finally(() => {
        this.committing = false;
        this.commitEnd = undefined;
        this.commit();
        this.count();
      });
  }

  /**
   * Writes and syncs; resolves where the chunks begin in the segment being written. `ahead`: the
   * first of them were written ahead already (by that writer), right where they go.
   */
  private async write(chunks: Uint8Array[], bytes: number, firstSeq: number, ahead?: { count: number; bytes: number; by: number }): Promise<number> {
    if (!ahead && (!this.writeFh || !this.writeSeg || (this.writeSeg.size > 0 && this.writeSeg.size + bytes > this.opts.segmentBytes))) await this.roll(firstSeq);
    const fh = this.writeFh!;
    const seg = this.writeSeg!;
    const at = seg.size;
    this.commitEnd = at + bytes;
    // the next commit's records may be written ahead from here on (see writeAhead)
    this.writeAhead();
    const rest = ahead ? chunks.slice(ahead.count) : chunks;
    await writeAndSync(fh.fd, rest, at + (ahead?.bytes ?? 0), this.retrying, ahead?.by);
    seg.size += bytes;
    this.diskBytes += bytes;
    return at;
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
    // what was written ahead on it is written (or not) before its number is let go
    if (old) await writerBarrier(old.fd).catch(() => undefined);
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
      // what a failed write left after the durable end goes first (and what was written ahead,
      // once the writer is past it)
      if (this.writeFh && this.writeSeg) {
        await writerBarrier(this.writeFh.fd);
        await this.writeFh.truncate(this.writeSeg.size);
      }
    } catch (err) {
      this.fail(err);
      return;
    }
    this.retrying = true;
    this.commit();
  }

  /** Keeps counters, `full` and `behind` up to date; tells `onState` when either changed. */
  private count(): void {
    const c = this.opts.counters;
    c.buffer_bytes = this.diskBytes;
    c.buffer_entries = Math.max(0, this.nextSeq - 1 - this.acked);
    const full = this.full;
    const behind = this.behind;
    if (full !== this.wasFull || behind !== this.wasBehind) {
      this.wasFull = full;
      this.wasBehind = behind;
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
      if (seg === this.writeSeg || seg === this.reader.segment || this.savedSeq < next.firstSeq - 1) break;
      this.segments.shift();
      this.remove(seg);
    }
    // The segment being written, wholly saved as acknowledged, goes too (the next write starts a
    // new one): one large commit may fill a buffer alone, and a full buffer takes nothing more.
    const w = this.writeSeg;
    if (w && this.segments.length === 1 && this.segments[0] === w && !this.committing && this.pending.length === 0 && !this.reader.busy && this.savedSeq >= this.nextSeq - 1) {
      this.writeSeg = undefined;
      const fh = this.writeFh;
      this.writeFh = undefined;
      void fh?.close().catch(() => undefined);
      if (this.reader.segment === w) void this.reader.closeSegment();
      this.segments.pop();
      this.remove(w);
    }
    this.count();
  }

  private remove(seg: Segment): void {
    this.diskBytes -= seg.size;
    unlink(join(this.opts.dir, seg.name)).catch((err: unknown) => this.opts.log.warn({ segment: seg.name, error: errorMessage(err) }, 'Disk buffer segment not deleted'));
  }

  /** Starts handing entries to `emit`, at most `window` not yet done at once. */
  startReading(emit: BufferEmit, window: number): void {
    this.reader.start(emit, window);
  }

  pause(): void {
    this.reader.pause();
  }

  resume(): void {
    this.reader.resume();
  }

  /** Entries handed on and not yet done. */
  get inFlight(): number {
    return this.reader.inFlight;
  }

  /** Stops reading and writing once the commit under way (if any) is over, by `deadline`; idempotent. */
  async close(deadline: number): Promise<void> {
    while ((this.committing || (this.pending.length > 0 && !this.failing)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    this.closed = true;
    await this.reader.close();
    const fh = this.writeFh;
    this.writeFh = undefined;
    if (!fh) return;
    const closeFh = () => fh.close().catch(() => undefined);
    // the writer thread writes to the descriptor's number: closed (and the number given to
    // another file) only once a commit past the deadline is over, and once what was written
    // ahead (queued behind that commit, or never committed) is written or not
    const barrier = () => writerBarrier(fh.fd).then(closeFh, closeFh);
    if (this.committing) void this.commitDone?.then(barrier, barrier);
    else if (this.aheadCount > 0) await barrier();
    else await closeFh();
  }
}
