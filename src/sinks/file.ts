// `file` sink: appends lines to `<name>.<n>.log` in `directory` (the highest n is current): each
// batch taken as bytes at once, those taken while a write is under way written together next,
// rotating at `max_size_mb` and pruning with the service log's rules.

import { type FileHandle, mkdir, open, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '../core/errors.js';
import { pluginConfig, sinkQueueFields } from '../core/plugin-config.js';
import type { PluginSpec } from '../config/spec.js';
import { numberedFiles, pruneRotated } from '../core/prune.js';
import type { OnFull } from '../core/queue.js';
import type { Sink, SinkFactory } from './types.js';
import { linesBuffer } from '../core/lines-buffer.js';
import { settle, type Ticket } from '../core/ack.js';
import type { SinkItem } from '../core/sink-item.js';
import { HeldWaiters } from '../net/held-waiters.js';

/** How often retention is applied besides at each rotation, ms. */
const PRUNE_INTERVAL_MS = 60_000;
/** How often the sink checks that its current file is still there (deleted, or its directory), ms. */
const PATH_CHECK_MS = 1000;
/** Most bytes of pending batches joined into one write. */
const MAX_WRITE_BYTES = 8 * 1024 * 1024;
/**
 * Most entries the sink takes from its queue beyond the write under way (and at most its
 * `buffer_size`): what arrives while the disk works, not a second queue (a stalled disk leaves
 * the rest in the queue, whose bound pauses or drops as `on_full` says).
 */
const HELD_ENTRIES = 8192;

/** A batch taken by write(): its lines as bytes, and the tickets its items owe a delivery on, as runs. */
interface Pending {
  readonly data: Buffer;
  readonly count: number;
  /** tickets[i] is owed runs[i] deliveries (the items of one emitted batch share a ticket) */
  readonly tickets: (Ticket | undefined)[];
  readonly runs: number[];
  /** the items, kept only for a dead letter sink */
  readonly items: SinkItem[] | undefined;
}

/** The tickets of `batch` as runs, so a pending batch holds no item (nor its entry and line). */
function ticketRuns(batch: readonly SinkItem[]): { tickets: (Ticket | undefined)[]; runs: number[] } {
  const tickets: (Ticket | undefined)[] = [];
  const runs: number[] = [];
  let last: Ticket | undefined | null = null;
  for (let i = 0; i < batch.length; i++) {
    const t = batch[i]!.ticket;
    if (t === last) runs[runs.length - 1]!++;
    else {
      tickets.push(t);
      runs.push(1);
      last = t;
    }
  }
  return { tickets, runs };
}

/** Settles every delivery a pending batch owes. */
function settleRuns(b: Pending): void {
  for (let i = 0; i < b.tickets.length; i++) {
    const t = b.tickets[i];
    if (t === undefined) continue;
    for (let k = b.runs[i]!; k > 0; k--) settle(t);
  }
}

interface FileSinkConfig {
  readonly directory: string;
  readonly name: string;
  /** `max_size_mb`, in bytes */
  readonly max_size_bytes: number;
  /** `max_total_size_mb`, in bytes */
  readonly max_total_size_bytes: number;
  /** `retention_hours`, in ms */
  readonly retention_ms: number;
  readonly buffer_size: number;
  /** bound of the queue together with what the sink holds unacknowledged, bytes of formatted lines */
  readonly buffer_max_bytes: number;
  readonly on_full: OnFull;
}

export const FILE_SINK: PluginSpec = {
  doc: 'writes formatted lines to numbered files `<name>.<n>.log` in a directory, rotated by size and pruned',
  fields: {
    directory: { t: 'string', required: true, nonEmpty: true, doc: 'directory of the files; created if missing' },
    name: { t: 'string', required: true, nonEmpty: true, doc: 'file name stem: files are `<name>.<n>.log`, the highest n is current' },
    max_size_mb: { t: 'number', def: 100, min: 0.001, doc: 'rotate the current file at this size' },
    max_total_size_mb: { t: 'number', def: 1000, min: 0.001, doc: 'delete the oldest rotated files beyond this total' },
    retention_hours: { t: 'number', def: 168, min: 0, doc: 'delete rotated files older than this' },
    ...sinkQueueFields('delivers'),
  },
};

export const createFileSink: SinkFactory = (plugin, ctx): Sink => {
  const cfg = pluginConfig<FileSinkConfig>('sink', plugin, FILE_SINK.fields);
  const maxBytes = Math.floor(cfg.max_size_bytes);
  const prune = () =>
    pruneRotated({
      directory: cfg.directory,
      name: cfg.name,
      maxTotalBytes: cfg.max_total_size_bytes,
      retentionMs: cfg.retention_ms,
    }).catch((err: unknown) => {
      ctx.log.warn({ error: errorMessage(err) }, 'Pruning rotated files failed');
      return [];
    });
  const counters = { rotations: 0, bytes_written: 0, dropped_writes: 0 };
  let fh: FileHandle | undefined;
  let n = 1;
  let size = 0;
  /** inode of the open file, to notice it was deleted or replaced */
  let ino = 0;
  /** the open file is no longer at its path: the next write opens it again */
  let reopen = false;
  /** the last write failed: logged once until a write succeeds again */
  let failing = false;
  let pathTimer: NodeJS.Timeout | undefined;
  let pruneTimer: NodeJS.Timeout | undefined;
  let closed = false;

  const currentPath = () => join(cfg.directory, `${cfg.name}.${n}.log`);

  /** Opens the current file (creating the directory again if it went away). */
  const openCurrent = async () => {
    await mkdir(cfg.directory, { recursive: true });
    const next = await open(currentPath(), 'a');
    const st = await next.stat();
    fh = next;
    size = st.size;
    ino = st.ino;
  };

  /** Drops the open file; the next write opens the current path afresh. */
  const release = () => {
    const old = fh;
    fh = undefined;
    size = 0;
    void old?.close().catch(() => undefined);
  };

  const rotate = async () => {
    release();
    n++;
    counters.rotations++;
    await openCurrent();
    await prune();
  };

  /** Appends `parts` (`bytes` in all) to the current file, rotating first when they would take it past max_size_mb. */
  const writeAll = async (parts: readonly Buffer[], bytes: number) => {
    if (reopen) {
      reopen = false;
      release();
    }
    if (size > 0 && size + bytes > maxBytes) await rotate();
    if (!fh) await openCurrent();
    // one write of them all (libuv writes on until every byte is in); what a short one left, one part after the other
    let off = (await fh!.writev(parts as Buffer[])).bytesWritten;
    for (let i = 0, start = 0; i < parts.length && off < bytes; start += parts[i++]!.length) {
      const part = parts[i]!;
      for (let at = Math.max(0, off - start); at < part.length; ) {
        const { bytesWritten } = await fh!.write(part, at, part.length - at);
        at += bytesWritten;
        off += bytesWritten;
      }
    }
    size += bytes;
    counters.bytes_written += bytes;
  };

  /**
   * Batches taken and not yet written, oldest first: their lines as bytes, and what settles them.
   * A batch becomes bytes the moment write() takes it, and the queue moves on while the disk
   * works: lines waiting in the queue for the write before them lived long enough for the
   * garbage collector to copy them, and their entries and the texts those are cut from, twice and
   * then into the old generation (a collector's young collections kept nine tenths of what they
   * found, its worker spent a third of its time on them). Held as bytes they cost it nothing.
   */
  const pending: Pending[] = [];
  /** entries and bytes in `pending`, and in the write under way */
  let heldEntries = 0;
  let heldBytes = 0;
  let draining: Promise<void> | undefined;
  /** close() gave up at its deadline: what is still pending stays unwritten (held(), abandoned) */
  let cutShort = false;
  const waiters = new HeldWaiters(() => heldEntries, Math.min(cfg.buffer_size, HELD_ENTRIES), () => heldBytes, cfg.buffer_max_bytes);

  /** The oldest pending batches that go into the current file together (rotation as for each alone), joined. */
  const nextWrite = (): { parts: Buffer[]; bytes: number; batches: Pending[] } => {
    let bytes = pending[0]!.data.length;
    let n = 1;
    // once the file is found missing the next write opens it afresh: its size no longer counts
    const room = reopen ? maxBytes : maxBytes - size;
    while (n < pending.length && bytes + pending[n]!.data.length <= room && bytes + pending[n]!.data.length <= MAX_WRITE_BYTES) bytes += pending[n++]!.data.length;
    const batches = pending.splice(0, n);
    return { parts: batches.map((b) => b.data), bytes, batches };
  };

  /** Writes what is pending, a file's worth at a time, settling each batch once its bytes are written (or dropped). */
  const drain = async () => {
    // bounded: each turn takes at least one batch off `pending`, and write() adds at most buffer_size entries beyond it
    while (pending.length > 0 && !cutShort) {
      const { parts, bytes, batches } = nextWrite();
      // with a dead letter sink a failed write is tried once more on a freshly opened file, then
      // its entries go there instead of being dropped
      try {
        await (ctx.deadLetter
          ? writeAll(parts, bytes).catch(async () => {
              release();
              await writeAll(parts, bytes);
            })
          : writeAll(parts, bytes));
        if (failing) {
          failing = false;
          ctx.log.info({ pipeline: ctx.pipeline, plugin: plugin.id, file: currentPath() }, 'File sink writing again');
        }
      } catch (err) {
        // A failed write (disk full, permissions, directory gone) drops and counts its entries; the
        // next one opens the file again.
        release();
        const entries = batches.reduce((n, b) => n + b.count, 0);
        if (ctx.deadLetter) {
          for (const b of batches) ctx.deadLetter(b.items!, 'write_failed');
          ctx.log.warn({ pipeline: ctx.pipeline, plugin: plugin.id, error: errorMessage(err), entries }, 'File sink write failed, entries sent to the dead letter sink');
        } else {
          counters.dropped_writes += entries;
          if (!failing) {
            failing = true;
            ctx.log.error({ pipeline: ctx.pipeline, plugin: plugin.id, error: errorMessage(err) }, 'File sink write failed, entries dropped');
          }
        }
      }
      // delivered, dropped with a count, or handed on (a dead letter owes a delivery of its own)
      for (const b of batches) {
        settleRuns(b);
        heldEntries -= b.count;
        heldBytes -= b.data.length;
      }
      waiters.wake(closed);
    }
    draining = undefined;
  };

  return {
    id: plugin.id,
    type: 'file',
    counters,
    bufferSize: cfg.buffer_size,
    bufferMaxBytes: cfg.buffer_max_bytes,
    onFull: cfg.on_full,
    async open() {
      await mkdir(cfg.directory, { recursive: true });
      const files = await numberedFiles(cfg.directory, cfg.name);
      n = files.at(-1)?.n ?? 1;
      await openCurrent();
      await prune();
      pruneTimer = setInterval(() => void prune(), PRUNE_INTERVAL_MS);
      pruneTimer.unref();
      // A deleted file (or directory) would otherwise take writes nobody can read until rotation.
      pathTimer = setInterval(() => {
        if (!fh || reopen) return;
        const was = ino;
        stat(currentPath()).then(
          (st) => {
            if (st.ino !== was && ino === was) reopen = true;
          },
          () => {
            if (ino === was) reopen = true;
          },
        );
      }, PATH_CHECK_MS);
      pathTimer.unref();
    },
    settles: true,
    heldBytes: () => heldBytes,
    write(batch) {
      if (closed) throw new Error('file sink is closed');
      const lines: string[] = new Array<string>(batch.length);
      for (let i = 0; i < batch.length; i++) lines[i] = batch[i]!.line;
      const data = linesBuffer(lines);
      // the items themselves only when a failed write hands their entries to the dead letter sink
      pending.push({ data, count: batch.length, ...ticketRuns(batch), items: ctx.deadLetter ? batch : undefined });
      heldEntries += batch.length;
      heldBytes += data.length;
      draining ??= drain();
      return waiters.whenRoom(false);
    },
    // a write the close deadline cut short may not have reached the file
    held: () => heldEntries,
    async close(deadline) {
      if (closed) return;
      closed = true;
      if (pruneTimer) clearInterval(pruneTimer);
      if (pathTimer) clearInterval(pathTimer);
      waiters.wake(true);
      if (heldEntries > 0) await waiters.emptyBy(deadline);
      cutShort = heldEntries > 0;
      // FileHandle.close() waits for the write under way, so past the deadline it is not awaited
      const closing = fh?.close().catch(() => undefined);
      fh = undefined;
      if (heldEntries === 0) await closing;
    },
  };
};
