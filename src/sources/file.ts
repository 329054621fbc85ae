// `file` source: discovers files with fast-glob every `check_interval_ms`, tails open files by
// polling every 100 ms, follows rename rotation and truncation, and reports positions by path and
// inode so a reload or a restarted worker resumes without loss or duplicates (DESIGN.md §6).

import { stat as statCb } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { basename, join } from 'node:path';
import fg from 'fast-glob';
import type { Entry } from '../core/entry.js';
import { parseLine } from '../core/entry.js';
import { errorMessage, PluginError } from '../core/errors.js';
import { pluginConfig } from '../core/plugin-config.js';
import type { FilePosition, Source, SourceFactory, SourcePositions } from './types.js';

/** Tail polling period, ms (fixed by the contract). */
const TAIL_INTERVAL_MS = 100;
/**
 * File times come from the kernel's coarse clock, a tick (up to ~10 ms) behind Date.now(): a file
 * born this close before the start counts as born after it.
 */
const BIRTH_CLOCK_SLACK_MS = 20;
/** Bytes per read; one read yields one batch. */
const READ_CHUNK = 64 * 1024;

interface FileSourceConfig {
  readonly directory: string;
  readonly pattern: string;
  readonly from: 'end' | 'start';
  readonly check_interval_ms: number;
  readonly raw: boolean;
  readonly max_line_bytes: number;
}

/**
 * Splits a byte stream into lines (without `\n` or `\r\n`), holding a trailing partial line until
 * its newline and cutting lines longer than `maxLineBytes` (the rest of such a line is skipped).
 * Empty lines are skipped. Chunks passed to push() may be reused by the caller afterwards.
 */
export class LineSplitter {
  /** lines cut at `maxLineBytes` so far */
  truncated = 0;
  private parts: Buffer[] = [];
  private partLen = 0;
  /** inside an over-long line whose head was already emitted */
  private skipping = false;

  constructor(private readonly maxLineBytes: number) {}

  /** bytes of the held partial line */
  get pendingBytes(): number {
    return this.partLen;
  }

  /** Appends the complete lines in `chunk` to `out`. */
  push(chunk: Buffer, out: string[]): void {
    let start = 0;
    if (this.skipping) {
      const nl = chunk.indexOf(10);
      if (nl < 0) return;
      this.skipping = false;
      start = nl + 1;
    }
    const last = chunk.lastIndexOf(10);
    if (last < start) {
      this.hold(chunk.subarray(start), out);
      return;
    }
    if (this.partLen > 0) {
      const nl = chunk.indexOf(10, start);
      this.parts.push(chunk.subarray(start, nl));
      const whole = Buffer.concat(this.parts, this.partLen + nl - start);
      this.parts = [];
      this.partLen = 0;
      this.line(whole.toString('utf8'), out);
      start = nl + 1;
    }
    if (start <= last) {
      const text = chunk.toString('utf8', start, last);
      const max = this.maxLineBytes;
      let from = 0;
      for (let nl = text.indexOf('\n'); ; nl = text.indexOf('\n', from)) {
        const end = nl < 0 ? text.length : nl;
        if (end > from) {
          let line = text.slice(from, end);
          if (line.charCodeAt(line.length - 1) === 13) line = line.slice(0, -1);
          if (line.length * 3 <= max) {
            if (line.length > 0) out.push(line);
          } else this.line(line, out);
        }
        if (nl < 0) break;
        from = nl + 1;
      }
    }
    if (last + 1 < chunk.length) this.hold(chunk.subarray(last + 1), out);
  }

  /** Emits the held partial line, if any (its file was rotated away or input ended). */
  flush(out: string[]): void {
    this.skipping = false;
    if (this.partLen === 0) return;
    const whole = Buffer.concat(this.parts, this.partLen);
    this.parts = [];
    this.partLen = 0;
    this.line(whole.toString('utf8'), out);
  }

  /** Drops the held partial line and any skip state. */
  reset(): void {
    this.parts = [];
    this.partLen = 0;
    this.skipping = false;
  }

  private hold(bytes: Buffer, out: string[]): void {
    if (bytes.length === 0) return;
    this.parts.push(Buffer.from(bytes));
    this.partLen += bytes.length;
    if (this.partLen > this.maxLineBytes) {
      const whole = Buffer.concat(this.parts, this.partLen);
      this.parts = [];
      this.partLen = 0;
      out.push(this.cut(whole));
      this.skipping = true;
    }
  }

  private line(line: string, out: string[]): void {
    if (line.charCodeAt(line.length - 1) === 13) line = line.slice(0, -1);
    if (line.length === 0) return;
    if (line.length * 3 > this.maxLineBytes && Buffer.byteLength(line) > this.maxLineBytes) line = this.cut(Buffer.from(line));
    out.push(line);
  }

  /** The first `maxLineBytes` bytes, backed off to a character boundary. */
  private cut(bytes: Buffer): string {
    this.truncated++;
    let end = this.maxLineBytes;
    while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
    return bytes.toString('utf8', 0, end);
  }
}

interface Tail {
  path: string;
  readonly name: string;
  readonly inode: number;
  readonly fh: FileHandle;
  readonly lines: LineSplitter;
  /** next byte to read */
  offset: number;
  /** the path no longer names this file (renamed or deleted); read to its end, then closed */
  detached: boolean;
  /** the file has no name left at all */
  deleted: boolean;
}

function statPath(path: string): Promise<{ ino: number; size: number; birthtimeMs: number } | undefined> {
  return new Promise((resolve) =>
    statCb(path, (err, st) => resolve(err ? undefined : { ino: st.ino, size: st.size, birthtimeMs: st.birthtimeMs })),
  );
}

/**
 * The fast-glob pattern for a file-name `pattern`: only `*` and `?` are special, everything else is
 * escaped. The directory is never part of a glob: it goes in as `cwd`, so no character in its name
 * (brackets, braces, `!`) can be misread, which escaping alone does not guarantee.
 */
export function fileGlob(pattern: string): string {
  return pattern
    .split(/([*?])/)
    .map((part) => (part === '*' || part === '?' || part === '' ? part : fg.escapePath(part)))
    .join('');
}

export const createFileSource: SourceFactory = (plugin, ctx): Source => {
  const cfg = pluginConfig<FileSourceConfig>('source', plugin, {
    directory: { t: 'string', required: true, nonEmpty: true },
    pattern: { t: 'string', def: '*', nonEmpty: true },
    from: { t: 'string', def: 'end', oneOf: ['end', 'start'] },
    check_interval_ms: { t: 'number', def: 1000, int: true, min: 10 },
    raw: { t: 'boolean', def: false },
    max_line_bytes: { t: 'number', def: 1048576, int: true, min: 1 },
  });
  if (cfg.pattern.includes('/')) throw new PluginError('source', plugin.id, 'pattern', 'must not contain "/" (the source is not recursive)');
  const glob = fileGlob(cfg.pattern);
  const counters = {
    total_entries: 0,
    dropped_entries: 0,
    active_watchers: 0,
    rotations: 0,
    bytes_read: 0,
    truncations: 0,
    truncated_lines: 0,
  };
  /** open files by inode */
  const tails = new Map<number, Tail>();
  const buf = Buffer.allocUnsafe(READ_CHUNK);
  let resumeFrom: SourcePositions = {};
  let firstScan = true;
  /** when the start was ordered, epoch ms: files born after it are new */
  /** when this source's run began, in this worker or a predecessor (see Source.start) */
  let since = Number.POSITIVE_INFINITY;
  let running = false;
  let paused = false;
  let stopped = false;
  let busy: Promise<void> | undefined;
  let again = false;
  let discoverDue = true;
  let tailTimer: NodeJS.Timeout | undefined;
  let discoverTimer: NodeJS.Timeout | undefined;

  const emitLines = (tail: Tail, lines: string[]) => {
    if (lines.length === 0) return;
    const now = Date.now();
    const batch: Entry[] = new Array(lines.length);
    for (let i = 0; i < lines.length; i++) batch[i] = parseLine(lines[i]!, tail.name, now, cfg.raw);
    counters.total_entries += batch.length;
    ctx.emit(batch);
  };

  const closeTail = async (tail: Tail) => {
    tails.delete(tail.inode);
    counters.active_watchers = tails.size;
    await tail.fh.close().catch(() => undefined);
  };

  /** Reads `tail` up to its current end (or until paused/stopped); returns false when paused. */
  const readTail = async (tail: Tail): Promise<boolean> => {
    const st = await tail.fh.stat();
    if (st.size < tail.offset) {
      counters.truncations++;
      const out: string[] = [];
      tail.lines.flush(out);
      emitLines(tail, out);
      tail.offset = 0;
    }
    let size = st.size;
    while (tail.offset < size) {
      if (paused || stopped) return false;
      const { bytesRead } = await tail.fh.read(buf, 0, Math.min(READ_CHUNK, size - tail.offset), tail.offset);
      if (bytesRead === 0) {
        size = (await tail.fh.stat()).size;
        if (size <= tail.offset) break;
        continue;
      }
      tail.offset += bytesRead;
      counters.bytes_read += bytesRead;
      const out: string[] = [];
      const before = tail.lines.truncated;
      tail.lines.push(buf.subarray(0, bytesRead), out);
      counters.truncated_lines += tail.lines.truncated - before;
      emitLines(tail, out);
    }
    return true;
  };

  const openTail = async (path: string, inode: number, offset: number): Promise<Tail | undefined> => {
    let fh: FileHandle;
    try {
      fh = await open(path, 'r');
    } catch {
      return undefined;
    }
    const st = await fh.stat();
    if (st.ino !== inode) {
      // replaced between the scan and the open: it is newer still, read from its start
      offset = 0;
      inode = st.ino;
      const existing = tails.get(inode);
      if (existing) {
        await fh.close();
        return existing;
      }
    }
    if (offset > st.size) offset = 0;
    const tail: Tail = { path, name: basename(path), inode, fh, lines: new LineSplitter(cfg.max_line_bytes), offset, detached: false, deleted: false };
    tails.set(inode, tail);
    counters.active_watchers = tails.size;
    return tail;
  };

  const positionFor = (path: string, inode: number): FilePosition | undefined => {
    const same = resumeFrom[path];
    if (same && same.inode === inode) return same;
    for (const p of Object.values(resumeFrom)) if (p.inode === inode) return p;
    return undefined;
  };

  /** Finds matching files; new ones are opened (from their start unless they were there at start). */
  const discover = async () => {
    let paths: string[];
    try {
      const names = await fg(glob, { cwd: cfg.directory, onlyFiles: true, dot: false, deep: 1, followSymbolicLinks: true, suppressErrors: true });
      paths = names.map((name) => join(cfg.directory, name));
    } catch (err) {
      ctx.log.warn({ error: errorMessage(err) }, 'File discovery failed');
      return;
    }
    const seen = new Set<number>();
    for (const path of paths.sort()) {
      const st = await statPath(path);
      if (!st) continue;
      seen.add(st.ino);
      const known = tails.get(st.ino);
      if (known) {
        // a rotated file that still matches the pattern keeps being tailed under its new name
        if (known.detached && !known.deleted) {
          known.path = path;
          known.detached = false;
        }
        continue;
      }
      // a new file under an open file's name: that one was rotated away (a rename since checkNames)
      for (const tail of [...tails.values()]) if (!tail.detached && tail.path === path) await detach(tail);
      let offset = 0;
      if (firstScan) {
        const pos = positionFor(path, st.ino);
        // a path the predecessor knew under another inode was replaced since: all of it is new;
        // so is a file born since the run began that no predecessor reported (born during a
        // handover, or after its last scan) and that this first scan happens to see
        const bornSince = st.birthtimeMs > 0 && st.birthtimeMs >= since - BIRTH_CLOCK_SLACK_MS;
        offset = pos ? pos.offset : resumeFrom[path] || cfg.from === 'start' || bornSince ? 0 : st.size;
      }
      await openTail(path, st.ino, offset);
    }
    firstScan = false;
    for (const tail of [...tails.values()]) if (tail.detached && !seen.has(tail.inode)) tail.deleted = true;
  };

  /** Its name no longer leads to it: renamed away (rotation) or gone (deleted). */
  const detach = async (tail: Tail) => {
    tail.detached = true;
    const own = await tail.fh.stat();
    if (own.nlink === 0) tail.deleted = true;
    else counters.rotations++;
  };

  /** Checks each open file's name: renamed away or replaced means rotation, gone means deleted. */
  const checkNames = async () => {
    let rotated = false;
    for (const tail of tails.values()) {
      if (tail.detached) continue;
      const st = await statPath(tail.path);
      if (st && st.ino === tail.inode) continue;
      await detach(tail);
      rotated = true;
    }
    return rotated;
  };

  const cycle = async () => {
    // Rotation is noticed before anything is read, so a renamed-away file is finished (to its end,
    // then its held partial line) before its successor under the old name is read.
    if (await checkNames()) discoverDue = true;
    if (discoverDue) {
      discoverDue = false;
      await discover();
    }
    // insertion order: a rotated file is read before its successor
    for (const tail of [...tails.values()]) {
      if (stopped) return;
      try {
        if (!(await readTail(tail))) return;
        if (tail.detached) {
          const out: string[] = [];
          tail.lines.flush(out);
          emitLines(tail, out);
        }
      } catch (err) {
        ctx.log.warn({ path: tail.path, error: errorMessage(err) }, 'File read failed');
        await closeTail(tail);
      }
    }
    for (const tail of [...tails.values()]) if (tail.deleted) await closeTail(tail);
  };

  const run = () => {
    if (stopped || paused) return;
    if (busy) {
      again = true;
      return;
    }
    busy = cycle()
      .catch((err: unknown) => ctx.log.warn({ error: errorMessage(err) }, 'File source cycle failed'))
      .finally(() => {
        busy = undefined;
        if (again) {
          again = false;
          run();
        }
      });
  };

  return {
    id: plugin.id,
    type: 'file',
    counters,
    pausable: true,
    start(positions, runSince) {
      if (running || stopped) return;
      running = true;
      since = runSince;
      resumeFrom = positions;
      run();
      tailTimer = setInterval(run, TAIL_INTERVAL_MS);
      discoverTimer = setInterval(() => {
        discoverDue = true;
        run();
      }, cfg.check_interval_ms);
    },
    pause() {
      paused = true;
    },
    resume() {
      if (!paused) return;
      paused = false;
      run();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      if (tailTimer) clearInterval(tailTimer);
      if (discoverTimer) clearInterval(discoverTimer);
      await busy;
      // positions stay readable after stop: the final stats carry them
      for (const tail of tails.values()) await tail.fh.close().catch(() => undefined);
    },
    positions() {
      const out: SourcePositions = {};
      for (const tail of tails.values()) {
        if (tail.detached && out[tail.path]) continue;
        out[tail.path] = { inode: tail.inode, offset: tail.offset - tail.lines.pendingBytes };
      }
      return out;
    },
  };
};
