// `data_dir` (DESIGN.md §15): the lock that keeps a second node off the directory, and the
// checkpoint file with every pipeline's acknowledged file positions, run starts and dedup
// windows, written atomically (temporary file, fsync, rename, fsync of the directory) at most
// once per `checkpoint_interval_ms` and at shutdown. A fault here never stops the node.

import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { type DedupChunk, type DedupWindow, packChunk } from '../core/dedup-window.js';
import type { PipelinePositions } from '../ipc/messages.js';

export const CHECKPOINT_FILE = 'checkpoint.json';
const LOCK_FILE = 'lock';
/** A failed write is logged at ERROR at most this often, ms. */
const ERROR_LOG_INTERVAL_MS = 60_000;

export interface PipelineCheckpoint {
  readonly positions: PipelinePositions;
  /** when the pipeline last reported its positions, epoch ms (for `checkpoint_ttl_hours`) */
  readonly seen_at: number;
  readonly since: Readonly<Record<string, { readonly at: number; readonly config: string }>>;
  readonly dedup?: DedupWindow;
}

export interface CheckpointState {
  readonly version: 1;
  readonly pipelines: Readonly<Record<string, PipelineCheckpoint>>;
}

/** Another live node holds the directory. */
export class DataDirInUse extends Error {
  constructor(
    readonly dir: string,
    readonly pid: number,
  ) {
    super(`data_dir is in use: ${dir} is locked by pid ${pid}`);
    this.name = 'DataDirInUse';
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Creates `dir` if missing and takes its lock: a file holding this process's id, created
 * exclusively. A lock whose process is gone (a node killed with SIGKILL) is taken over.
 * Returns the release function. Throws DataDirInUse, or the file system's error.
 */
export function lockDataDir(dir: string): () => void {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, LOCK_FILE);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o644);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      return () => {
        try {
          if (Number.parseInt(readFileSync(path, 'utf8'), 10) === process.pid) unlinkSync(path);
        } catch {
          /* gone already */
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let pid = Number.NaN;
    try {
      pid = Number.parseInt(readFileSync(path, 'utf8'), 10);
    } catch {
      /* removed meanwhile, or unreadable: try again */
    }
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) throw new DataDirInUse(dir, pid);
    try {
      unlinkSync(path);
    } catch {
      /* another starter took it over first: the next attempt sees its pid */
    }
  }
  throw new Error(`cannot take the lock ${path}`);
}

function isCheckpoint(v: unknown): v is CheckpointState {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as { version?: unknown; pipelines?: unknown };
  if (o.version !== 1 || typeof o.pipelines !== 'object' || o.pipelines === null) return false;
  for (const p of Object.values(o.pipelines as Record<string, unknown>)) {
    if (typeof p !== 'object' || p === null) return false;
    const q = p as Record<string, unknown>;
    if (typeof q.positions !== 'object' || q.positions === null || typeof q.seen_at !== 'number' || typeof q.since !== 'object') return false;
    if (q.dedup === undefined) continue;
    const d = q.dedup as { ids?: unknown; times?: unknown };
    // the first layout (one array of ids, one of times) is read into the packed one
    if (Array.isArray(d.ids) && Array.isArray(d.times) && d.ids.every((id) => typeof id === 'string') && d.times.every(isFiniteNumber)) {
      q.dedup = [packChunk(d.ids as string[], d.times as number[])];
    } else if (!Array.isArray(q.dedup) || !q.dedup.every(isChunk)) {
      return false;
    }
  }
  return true;
}

const isFiniteNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

function isChunk(v: unknown): v is DedupChunk {
  const c = v as { ids?: unknown; runs?: unknown; prefixes?: unknown } | null;
  return typeof c === 'object' && c !== null && typeof c.ids === 'string' && (c.prefixes === undefined || c.prefixes === 1) && Array.isArray(c.runs) && c.runs.length % 2 === 0 && c.runs.every(isFiniteNumber);
}

/**
 * Reads the checkpoint of `dir`, dropping pipelines not seen for `ttlMs`. A missing file is no
 * checkpoint; an unreadable or corrupt one logs ERROR and is none either.
 */
export function readCheckpoint(dir: string, ttlMs: number, log: Logger, now = Date.now()): CheckpointState | undefined {
  const file = join(dir, CHECKPOINT_FILE);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    log.error({ file, error: errorMessage(err) }, 'Checkpoint unreadable, starting without it');
    return undefined;
  }
  let state: unknown;
  try {
    state = JSON.parse(text);
  } catch (err) {
    log.error({ file, error: errorMessage(err) }, 'Checkpoint unreadable, starting without it');
    return undefined;
  }
  if (!isCheckpoint(state)) {
    log.error({ file, error: 'not a logrelay checkpoint (version 1)' }, 'Checkpoint unreadable, starting without it');
    return undefined;
  }
  const pipelines: Record<string, PipelineCheckpoint> = {};
  for (const [name, p] of Object.entries(state.pipelines)) if (now - p.seen_at <= ttlMs) pipelines[name] = p;
  return { version: 1, pipelines };
}

export interface Checkpointer {
  /** `checkpoint_writes`, `checkpoint_errors` */
  readonly counters: { checkpoint_writes: number; checkpoint_errors: number };
  /** Writes now (at shutdown, after the drain); resolves when written or failed. */
  flush(): Promise<void>;
  stop(): void;
}

/** Each dedup chunk's JSON as bytes, made once: a chunk stays in the window for many checkpoints. */
const chunkJson = new WeakMap<DedupChunk, Buffer>();

function chunkBytes(chunk: DedupChunk): Buffer {
  let bytes = chunkJson.get(chunk);
  if (bytes === undefined) {
    bytes = Buffer.from(JSON.stringify(chunk));
    chunkJson.set(chunk, bytes);
  }
  return bytes;
}

/**
 * The checkpoint file's JSON in parts, in order: the text around the dedup windows, and each
 * window chunk's bytes (made once per chunk). A window of 100,000 ids is a few MB: written as one
 * JSON text every second, and that text kept to see whether the next one changed, it was the
 * primary's largest garbage; its parts are compared by reference instead and written as they are.
 */
export function checkpointParts(state: CheckpointState): (string | Buffer)[] {
  const parts: (string | Buffer)[] = [];
  let text = '{"version":1,"pipelines":{';
  let first = true;
  for (const [name, p] of Object.entries(state.pipelines)) {
    const { dedup, ...rest } = p;
    const head = JSON.stringify(rest);
    text += `${first ? '' : ','}${JSON.stringify(name)}:${head.slice(0, -1)}`;
    first = false;
    if (dedup !== undefined) {
      text += `${head === '{}' ? '' : ','}"dedup":[`;
      dedup.forEach((chunk, i) => {
        parts.push(i === 0 ? text : `${text},`);
        text = '';
        parts.push(chunkBytes(chunk));
      });
      text += ']';
    }
    text += '}';
  }
  parts.push(`${text}}}`);
  return parts;
}

/** Same parts: strings by value, chunks' bytes by reference (a chunk's bytes are made once). */
function sameParts(a: readonly (string | Buffer)[], b: readonly (string | Buffer)[]): boolean {
  return a.length === b.length && a.every((part, i) => part === b[i]);
}

/** Writes `snapshot()` to `dir` every `intervalMs` when it changed; `written` learns each state once it is durable. */
export function startCheckpointer(dir: string, intervalMs: number, log: Logger, snapshot: () => CheckpointState, written?: (state: CheckpointState) => void): Checkpointer {
  const file = join(dir, CHECKPOINT_FILE);
  const tmp = `${file}.tmp`;
  const counters = { checkpoint_writes: 0, checkpoint_errors: 0 };
  let last: readonly (string | Buffer)[] = [];
  let lastErrorLog = 0;
  let writing: Promise<void> | undefined;

  const writeOnce = async (parts: readonly (string | Buffer)[]) => {
    const fh = await open(tmp, 'w', 0o644);
    try {
      await fh.writev(parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : part)));
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, file);
    const dh = await open(dir, 'r');
    try {
      await dh.sync();
    } finally {
      await dh.close();
    }
  };

  const write = (): Promise<void> => {
    if (writing) return writing.then(write);
    const state = snapshot();
    const parts = checkpointParts(state);
    if (sameParts(parts, last)) return Promise.resolve();
    writing = writeOnce(parts)
      .then(
        () => {
          last = parts;
          counters.checkpoint_writes++;
          written?.(state);
        },
        (err: unknown) => {
          counters.checkpoint_errors++;
          const now = Date.now();
          if (now - lastErrorLog >= ERROR_LOG_INTERVAL_MS) {
            lastErrorLog = now;
            log.error({ file, error: errorMessage(err) }, 'Checkpoint write failed');
          }
        },
      )
      .finally(() => {
        writing = undefined;
      });
    return writing;
  };

  const timer = setInterval(() => void write(), intervalMs);
  timer.unref();
  return {
    counters,
    flush: write,
    stop: () => clearInterval(timer),
  };
}
