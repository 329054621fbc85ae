// `file` sink: appends lines to `<name>.<n>.log` in `directory` (the highest n is current), one
// write per batch, rotating at `max_size_mb` and pruning with the service log's rules.

import { type FileHandle, mkdir, open, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '../core/errors.js';
import { pluginConfig, sinkQueueFields } from '../core/plugin-config.js';
import type { PluginSpec } from '../config/spec.js';
import { numberedFiles, pruneRotated } from '../core/prune.js';
import type { OnFull } from '../core/queue.js';
import type { Sink, SinkFactory } from './types.js';
import { linesBuffer } from '../core/lines-buffer.js';

/** How often retention is applied besides at each rotation, ms. */
const PRUNE_INTERVAL_MS = 60_000;
/** How often the sink checks that its current file is still there (deleted, or its directory), ms. */
const PATH_CHECK_MS = 1000;

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
  let writing: Promise<void> | undefined;
  /** entries of the write under way */
  let inFlight = 0;
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

  const writeAll = async (data: Buffer) => {
    if (reopen) {
      reopen = false;
      release();
    }
    if (size > 0 && size + data.length > maxBytes) await rotate();
    if (!fh) await openCurrent();
    let off = 0;
    while (off < data.length) {
      const { bytesWritten } = await fh!.write(data, off, data.length - off);
      off += bytesWritten;
    }
    size += data.length;
    counters.bytes_written += data.length;
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
    write(batch) {
      if (closed) throw new Error('file sink is closed');
      const lines: string[] = new Array<string>(batch.length);
      for (let i = 0; i < batch.length; i++) lines[i] = batch[i]!.line;
      // A failed write (disk full, permissions, directory gone) drops and counts the batch; the
      // next one opens the file again.
      const data = linesBuffer(lines);
      // with a dead letter sink a failed write is tried once more on a freshly opened file, then
      // its entries go there instead of being dropped
      const attempt = ctx.deadLetter
        ? writeAll(data).catch(async () => {
            release();
            await writeAll(data);
          })
        : writeAll(data);
      const p = attempt.then(
        () => {
          if (!failing) return;
          failing = false;
          ctx.log.info({ pipeline: ctx.pipeline, plugin: plugin.id, file: currentPath() }, 'File sink writing again');
        },
        (err: unknown) => {
          release();
          if (ctx.deadLetter) {
            ctx.deadLetter(batch, 'write_failed');
            ctx.log.warn({ pipeline: ctx.pipeline, plugin: plugin.id, error: errorMessage(err), entries: batch.length }, 'File sink write failed, entries sent to the dead letter sink');
            return;
          }
          counters.dropped_writes += batch.length;
          if (failing) return;
          failing = true;
          ctx.log.error({ pipeline: ctx.pipeline, plugin: plugin.id, error: errorMessage(err) }, 'File sink write failed, entries dropped');
        },
      );
      inFlight = batch.length;
      writing = p.then(() => {
        inFlight = 0;
      });
      return writing;
    },
    // a write the close deadline cut short may not have reached the file
    held: () => inFlight,
    async close(deadline) {
      if (closed) return;
      closed = true;
      if (pruneTimer) clearInterval(pruneTimer);
      if (pathTimer) clearInterval(pathTimer);
      if (writing) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([writing, new Promise<void>((r) => (timer = setTimeout(r, Math.max(0, deadline - Date.now()))))]);
        clearTimeout(timer);
      }
      // FileHandle.close() waits for the write under way, so past the deadline it is not awaited
      const closing = fh?.close().catch(() => undefined);
      fh = undefined;
      if (inFlight === 0) await closing;
    },
  };
};
