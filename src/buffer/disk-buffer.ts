// The disk buffer of one source (DESIGN.md §23): a log of segment files with group commit (the
// writer thread's: one fdatasync covers every record that arrived while the previous one ran; see
// writer-thread.ts), read back in order through a window no larger than the pipeline's queues
// (a reader that keeps up gets entries with their write, their senders' answers wait for the
// sync), its acknowledged sequence advancing as the pipeline finishes entries, segments deleted
// once the checkpoint saved a sequence past them.
// Recovery at open (recover.ts) cuts a torn tail; a corrupt record met while reading skips the
// rest of its segment. A failed write or sync marks the buffer failing (full) and is retried until it works.

import { open, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Entry } from '../core/entry.js';
import { errorMessage } from '../core/errors.js';
import { idPrefix } from '../core/ids.js';
import type { Logger } from '../core/log.js';
import type { BufferCounters } from './counters.js';
import { LineEncoder } from '../core/entry-line.js';
import { RecordEncoder } from './encode.js';
import { pollWriter, startWriter, writeDurable, writerBarrier } from './writer.js';
import { type BufferEmit, BufferReader } from './reader.js';
import { recoverDir, syncDir } from './recover.js';
import { type Segment, segmentName } from './record.js';
import { type Write, Writes } from './writes.js';

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
 * Most record bytes waiting for their sync before the source stops taking until fewer wait
 * (default; see `behind`).
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
  private readonly writes = new Writes();
  /** where the next write goes in the segment being written (its `size` is the durable end) */
  private writeEnd = 0;
  /** a new segment is being opened */
  private rolling = false;
  /**
   * Segment deletions under way: close() waits for them, so that whoever opens the directory next
   * never lists a segment that is gone by the time it reads it.
   */
  private readonly removing = new Set<Promise<void>>();
  /**
   * The directory entry of the segment being written is not synced yet: what is written in it
   * becomes durable only once it is (the sync runs beside the first writes, see roll).
   */
  private dirSyncing = false;
  /** that sync failed: the retry does it again */
  private dirUnsynced = false;
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
      idle: () => this.prune(),
    });
  }

  /** Full (max_size_mb reached) or failing: the source stops taking. */
  get full(): boolean {
    return this.failing || this.diskBytes + this.writes.bytes >= this.opts.maxBytes;
  }

  /**
   * More than PENDING_MAX_BYTES of records wait for their sync: a source whose senders wait on no
   * acknowledgement stops taking until fewer wait (see withBuffer). What waits is bounded in
   * memory, and the pause gives the pipeline its turns: without it (at 4 MiB and more) a long
   * burst left the reader behind its cache, reading everything back from the disk. Never a drop:
   * a source that cannot stop (udp) goes on appending.
   */
  get behind(): boolean {
    return this.writes.bytes >= PENDING_MAX_BYTES;
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
    // the thread's start takes tens of milliseconds: under way before the first records come
    startWriter();
    this.opened = true;
    // what the checkpoint says was delivered goes now, not at the next write (see prune)
    this.prune();
    this.post();
    this.count();
  }

  /**
   * Appends entries (an entry without an id gets one, from the sequence); `done` runs once the
   * sync that covers them is over. Synchronous: the records go to the writer thread at once.
   */
  append(entries: Entry[], now: number, done?: () => void): void {
    // what became durable while the source read on is known now, not after its burst of reads
    pollWriter();
    const first = this.nextSeq;
    const chunk = this.encoder.records(entries, first, this.prefix, this.plainPrefix, now, this.opts.pipeline);
    this.nextSeq += entries.length;
    this.writes.add(chunk, entries, first, done);
    this.post();
    this.count();
  }

  /**
   * Hands pending records to the writer thread, each where it goes in the segment being written,
   * and their entries to the reader: the pipeline may have them before their sync (what a sender
   * is told waits for it; see docs/delivery.md). Entries live no longer than the pipeline holds them:
   * kept until their sync, many lived long enough for the garbage collector to promote them, and
   * collecting them cost more than encoding them. A record that does not fit waits until
   * everything before it is durable, then goes to a new segment.
   */
  private post(): void {
    if (!this.opened || this.rolling || (this.failing && !this.retrying)) return;
    if (this.writes.handOn(this.handOne) > 0) this.reader.pump();
  }

  private readonly handOne = (w: Write): boolean => {
    const fh = this.writeFh;
    if (!fh || !this.writeSeg || (this.writeEnd > 0 && this.writeEnd + w.chunk.length > this.opts.segmentBytes)) {
      if (!this.writes.anyPosted) this.startRoll(w.first);
      return false;
    }
    w.at = this.writeEnd;
    this.writeEnd += w.chunk.length;
    writeDurable(fh.fd, [w.chunk], w.at, (err, synced) => this.written(w, err, synced));
    // once only: a write taken back after a failure is written again where it was, and the
    // reader is past it already
    if (w.entries) {
      this.reader.handOver(w.at, w.chunk, w.entries, w.first);
      w.entries = undefined;
    }
    return true;
  };

  private startRoll(firstSeq: number): void {
    this.rolling = true;
    this.roll(firstSeq).then(
      () => {
        this.rolling = false;
        this.post();
        this.count();
      },
      (err: unknown) => {
        this.rolling = false;
        this.fail(err);
        this.count();
      },
    );
  }

  /** The writer's answer for `w`: durable ones are done in order; a failure takes back every write not durable. */
  private written(w: Write, err: Error | undefined, synced: boolean): void {
    if (!w.posted) return;
    if (err) {
      this.takeBack(err);
      return;
    }
    w.durable = true;
    if (synced) this.opts.counters.buffer_syncs++;
    if (this.writes.oldestPosted === w) this.settle();
  }

  /**
   * Kept, in order, for the next attempt: their senders were told nothing yet; whatever of them
   * reached the file is cut off by the retry and written again, where it was.
   */
  private takeBack(err: unknown): void {
    this.writes.takeBack();
    this.fail(err);
    this.count();
  }

  /** The durable writes at the head of `posted` are done: their senders are told, their memory let go. */
  private settle(): void {
    if (this.dirSyncing || !this.writes.oldestPosted?.durable) return;
    if (this.failing) {
      this.failing = this.retrying = false;
      this.opts.counters.buffer_failing = 0;
      this.opts.log.info({ dir: this.opts.dir }, 'Disk buffer write recovered');
    }
    const seg = this.writeSeg!;
    this.writes.settle((d) => {
      seg.size += d.chunk.length;
      this.diskBytes += d.chunk.length;
      d.done?.();
      this.encoder.release([d.chunk]);
    });
    // the reader may read the disk up to the new durable end
    this.reader.pump();
    // a write waiting for a new segment goes once this one's are all durable
    if (!this.writes.anyPosted && this.writes.anyPending) this.post();
    this.count();
  }

  /**
   * Writing goes on in a new segment named by its first sequence. Its directory entry is synced
   * beside the first writes (not before them: that sync took tens of milliseconds at times), and
   * nothing in it counts as durable until both are over.
   */
  private async roll(firstSeq: number): Promise<void> {
    const name = segmentName(firstSeq);
    const fh = await open(join(this.opts.dir, name), 'w');
    if (this.closed) {
      await fh.close();
      return;
    }
    const old = this.writeFh;
    this.writeFh = fh;
    this.writeSeg = { firstSeq, name, size: 0 };
    this.writeEnd = 0;
    this.segments.push(this.writeSeg);
    this.syncEntry();
    // whatever was sent for the old one is written (or not) before its number is let go
    if (old) {
      const closeOld = () => old.close().catch(() => undefined);
      void writerBarrier(old.fd).then(closeOld, closeOld);
    }
    this.prune();
  }

  /** Syncs the directory (the entry of the segment being written); a failure takes back what waits on it. */
  private syncEntry(): void {
    this.dirSyncing = true;
    syncDir(this.opts.dir).then(
      () => {
        this.dirSyncing = false;
        this.settle();
      },
      (err: unknown) => {
        this.dirSyncing = false;
        this.dirUnsynced = true;
        if (this.writes.anyPosted) this.takeBack(err);
        else this.fail(err);
      },
    );
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
      // what a failed write left after the durable end goes first, once the writer is past it
      if (this.writeFh && this.writeSeg) {
        await writerBarrier(this.writeFh.fd);
        await this.writeFh.truncate(this.writeSeg.size);
        this.writeEnd = this.writeSeg.size;
        if (this.dirUnsynced) {
          await syncDir(this.opts.dir);
          this.dirUnsynced = false;
        }
      }
    } catch (err) {
      this.fail(err);
      return;
    }
    this.retrying = true;
    this.post();
    this.count();
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
    // The last segment, wholly saved as acknowledged, goes too (the next write starts a new
    // one): the one being written (one large append may fill a buffer alone, and a full buffer
    // takes nothing more), or one a restart found, delivered since or before (else it would sit
    // on disk, counted in buffer_bytes, until the next write).
    const w = this.segments.length === 1 ? this.segments[0]! : undefined;
    if (w && (w === this.writeSeg || !this.writeSeg) && !this.rolling && !this.writes.anyPosted && !this.writes.anyPending && !this.reader.busy && this.savedSeq >= this.nextSeq - 1) {
      if (w === this.writeSeg) {
        this.writeSeg = undefined;
        const fh = this.writeFh;
        this.writeFh = undefined;
        void fh?.close().catch(() => undefined);
      }
      if (this.reader.segment === w) void this.reader.closeSegment();
      this.segments.pop();
      this.remove(w);
    }
    this.count();
  }

  private remove(seg: Segment): void {
    this.diskBytes -= seg.size;
    const gone = unlink(join(this.opts.dir, seg.name))
      .catch((err: unknown) => this.opts.log.warn({ segment: seg.name, error: errorMessage(err) }, 'Disk buffer segment not deleted'))
      .finally(() => this.removing.delete(gone));
    this.removing.add(gone);
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

  /** Stops reading and writing once what was handed to the writer is durable (or failed), by `deadline`; idempotent. */
  async close(deadline: number): Promise<void> {
    while ((this.rolling || this.writes.anyPosted || (this.writes.anyPending && !this.failing)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    this.closed = true;
    await this.reader.close();
    await Promise.all(this.removing);
    const fh = this.writeFh;
    this.writeFh = undefined;
    if (!fh) return;
    const closeFh = () => fh.close().catch(() => undefined);
    // the writer thread writes to the descriptor's number: closed (and the number given to
    // another file) only once it handled everything sent for it, even past the deadline
    if (this.writes.anyPosted) void writerBarrier(fh.fd).then(closeFh, closeFh);
    else await closeFh();
  }
}
