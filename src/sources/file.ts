// `file` source: discovers files with fast-glob every `check_interval_ms`, tails open files by
// polling every 100 ms, follows rename rotation and truncation, and reports positions by path and
// inode so a reload or a restarted worker resumes without loss or duplicates (DESIGN.md §6).

import { lstat as lstatCb, stat as statCb } from 'node:fs';
import { type FileHandle, open, readdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import fg from 'fast-glob';
import type { Entry } from '../core/entry.js';
import { parseLine } from '../core/entry.js';
import { errorMessage, PluginError } from '../core/errors.js';
import { pluginConfig } from '../core/plugin-config.js';
import type { PluginSpec } from '../config/spec.js';
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
/**
 * How long a rotated file (renamed away, still linked) is tailed after it last grew, ms: the
 * application may write to its old descriptor until it reopens its log (logrotate's `create`
 * mode), as Fluent Bit's `rotate_wait`.
 */
const ROTATE_WAIT_MS = 5000;

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

  /** Skips input up to the next newline: reading starts inside a line whose head was handled. */
  skipLine(): void {
    this.skipping = true;
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
  /**
   * the path no longer names this file: renamed away (rotated: tailed until idle for
   * ROTATE_WAIT_MS) or deleted; read to its end, then closed
   */
  detached: boolean;
  /** the file has no name left at all (nlink 0) */
  deleted: boolean;
  /** a rotated file's name in the directory now, when found: its positions go under it */
  renamedTo: string | undefined;
  /** when the file last grew (or was detached), epoch ms */
  grewAt: number;
}

function statPath(path: string): Promise<{ ino: number; size: number; birthtimeMs: number } | undefined> {
  return new Promise((resolve) =>
    statCb(path, (err, st) => resolve(err ? undefined : { ino: st.ino, size: st.size, birthtimeMs: st.birthtimeMs })),
  );
}

/** Whether `path` is a directory (following a symlink); false when it is missing or unreadable. */
function isDirectory(path: string): Promise<boolean> {
  return new Promise((resolve) => statCb(path, (err, st) => resolve(!err && st.isDirectory())));
}

/** The inode of the regular file at `path` itself (a symlink is not followed). */
function fileInode(path: string): Promise<number | undefined> {
  return new Promise((resolve) => lstatCb(path, (err, st) => resolve(err || !st.isFile() ? undefined : st.ino)));
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

export const FILE_SOURCE: PluginSpec = {
  doc: 'tails the files of one directory that match a pattern, following rotation and truncation',
  fields: {
    directory: { t: 'string', required: true, nonEmpty: true, doc: 'directory whose files are read (not recursive); may appear after the start' },
    pattern: { t: 'string', def: '*', nonEmpty: true, doc: 'file name pattern: `*` and `?` only, dot files excluded' },
    from: {
      t: 'string',
      def: 'end',
      oneOf: ['end', 'start'],
      doc: 'where files present at start are read from (files that appear later are read whole)',
      values: { end: 'only lines written after the start', start: 'the whole file' },
    },
    check_interval_ms: { t: 'number', def: 1000, int: true, min: 10, doc: 'how soon a new file (or the directory) is noticed; tailing polls every 100 ms regardless' },
    raw: { t: 'boolean', def: false, doc: 'take every line as plain text, never parse JSON lines' },
    max_line_bytes: { t: 'number', def: 1048576, int: true, min: 1, doc: 'longer lines are cut and counted in `truncated_lines`' },
  },
};

export const createFileSource: SourceFactory = (plugin, ctx): Source => {
  const cfg = pluginConfig<FileSourceConfig>('source', plugin, FILE_SOURCE.fields);
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
  /** open files by inode; insertion order is read order, so a rotated file comes before its successor */
  const tails = new Map<number, Tail>();
  /** the detached tails among them */
  const rotated = new Set<Tail>();
  /** paths that could not be opened, with the inode already warned about */
  const unopenable = new Map<string, number>();
  const buf = Buffer.allocUnsafe(READ_CHUNK);
  let resumeFrom: SourcePositions = {};
  let firstScan = true;
  /** the directory was missing at the last discovery: warned once, not again until it appeared */
  let directoryMissing = false;
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
    rotated.delete(tail);
    counters.active_watchers = tails.size;
    await tail.fh.close().catch(() => undefined);
  };

  /** Emits the held partial line of `tail`, if any. */
  const flushTail = (tail: Tail) => {
    const out: string[] = [];
    tail.lines.flush(out);
    emitLines(tail, out);
  };

  /** Reads `tail` up to its current end (or until paused/stopped); returns false when paused. */
  const readTail = async (tail: Tail): Promise<boolean> => {
    const st = await tail.fh.stat();
    if (tail.detached && st.nlink === 0) tail.deleted = true;
    if (st.size < tail.offset) {
      counters.truncations++;
      flushTail(tail);
      tail.offset = 0;
    }
    let size = st.size;
    // A rotated file's held partial line comes before its successor's first bytes; until then the
    // application may still complete it through its old descriptor.
    if (tail.offset < size && !tail.detached) for (const r of rotated) if (r.path === tail.path && r.lines.pendingBytes > 0) flushTail(r);
    while (tail.offset < size) {
      if (paused || stopped) return false;
      const { bytesRead } = await tail.fh.read(buf, 0, Math.min(READ_CHUNK, size - tail.offset), tail.offset);
      if (bytesRead === 0) {
        size = (await tail.fh.stat()).size;
        if (size <= tail.offset) break;
        continue;
      }
      tail.offset += bytesRead;
      tail.grewAt = Date.now();
      counters.bytes_read += bytesRead;
      const out: string[] = [];
      const before = tail.lines.truncated;
      tail.lines.push(buf.subarray(0, bytesRead), out);
      counters.truncated_lines += tail.lines.truncated - before;
      emitLines(tail, out);
    }
    return true;
  };

  /**
   * Opens `path` from `offset`. With `rotatedFrom` (the name the predecessor reported it under) it
   * is a rotated file handed over: only that inode will do, and it is tailed as detached.
   */
  const openTail = async (path: string, inode: number, offset: number, rotatedFrom?: string): Promise<Tail | undefined> => {
    let fh: FileHandle;
    try {
      fh = await open(path, 'r');
    } catch (err) {
      // gone since the scan is no news; anything else (EACCES) is said once per file
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && unopenable.get(path) !== inode) {
        unopenable.set(path, inode);
        ctx.log.warn({ path, error: errorMessage(err) }, 'File cannot be opened');
      }
      return undefined;
    }
    unopenable.delete(path);
    try {
      return await tailOpened(fh, path, inode, offset, rotatedFrom);
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw err;
    }
  };

  const tailOpened = async (fh: FileHandle, path: string, inode: number, offset: number, rotatedFrom?: string): Promise<Tail | undefined> => {
    const st = await fh.stat();
    // a handed-over file is known by its inode alone: one shorter than its position is not it
    // (the inode was freed and used again during the handover)
    if ((st.ino !== inode || st.size < offset) && rotatedFrom !== undefined) {
      await fh.close();
      return undefined;
    }
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
    const lines = new LineSplitter(cfg.max_line_bytes);
    // Reading never starts inside a line: there, the head was had before (a predecessor cutting an
    // over-long line reports the cut point) or was there before the start (from = "end").
    if (offset > 0) {
      const { bytesRead } = await fh.read(buf, 0, 1, offset - 1);
      if (bytesRead === 1 && buf[0] !== 10) lines.skipLine();
    }
    const tail: Tail = {
      path: rotatedFrom ?? path,
      name: basename(rotatedFrom ?? path),
      inode,
      fh,
      lines,
      offset,
      detached: rotatedFrom !== undefined,
      deleted: false,
      renamedTo: rotatedFrom === undefined ? undefined : path,
      grewAt: Date.now(),
    };
    tails.set(inode, tail);
    if (tail.detached) rotated.add(tail);
    counters.active_watchers = tails.size;
    return tail;
  };

  const positionFor = (path: string, inode: number): FilePosition | undefined => {
    const same = resumeFrom[path];
    if (same && same.inode === inode) return same;
    for (const p of Object.values(resumeFrom)) if (p.inode === inode) return p;
    return undefined;
  };

  /** Where the files with these inodes are in the directory now (any name, matching or not). */
  const findInDirectory = async (inodes: ReadonlySet<number>): Promise<Map<number, string>> => {
    const found = new Map<number, string>();
    let names: string[];
    try {
      names = await readdir(cfg.directory);
    } catch {
      return found;
    }
    for (const name of names) {
      const path = join(cfg.directory, name);
      const ino = await fileInode(path);
      if (ino !== undefined && inodes.has(ino) && !found.has(ino)) found.set(ino, path);
      if (found.size === inodes.size) break;
    }
    return found;
  };

  /**
   * On the first scan: files the predecessor was still reading that discovery does not see, i.e.
   * rotated away before or during the handover, are finished as rotated files from their position.
   */
  const resumeRotated = async (seen: ReadonlySet<number>) => {
    const wanted = new Map<number, [string, FilePosition]>();
    const dirPrefix = join(cfg.directory, '/');
    for (const [path, pos] of Object.entries(resumeFrom)) {
      if (!seen.has(pos.inode) && !tails.has(pos.inode) && path.startsWith(dirPrefix) && !path.includes('/', dirPrefix.length)) wanted.set(pos.inode, [path, pos]);
    }
    if (wanted.size === 0) return;
    const where = new Map<number, string>();
    for (const [inode, [path]] of wanted) if ((await fileInode(path)) === inode) where.set(inode, path);
    const elsewhere = new Set([...wanted.keys()].filter((inode) => !where.has(inode)));
    if (elsewhere.size > 0) for (const [inode, path] of await findInDirectory(elsewhere)) where.set(inode, path);
    for (const [inode, now] of where) {
      const [path, pos] = wanted.get(inode)!;
      // still under its name yet not discovered and not rotated: the new pattern leaves it out
      if (now === path && !pos.rotated) continue;
      // renamed during the handover: a rotation the predecessor did not see
      if ((await openTail(now, inode, pos.offset, path)) && now !== path) counters.rotations++;
    }
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
    // fast-glob finds nothing in a missing directory; say so once, and keep looking for it
    if (paths.length === 0 && !(await isDirectory(cfg.directory))) {
      if (!directoryMissing) ctx.log.warn({ directory: cfg.directory }, 'Directory does not exist, watching for it');
      directoryMissing = true;
    } else if (directoryMissing) {
      directoryMissing = false;
      ctx.log.info({ directory: cfg.directory }, 'Directory appeared');
    }
    const found: [string, { ino: number; size: number; birthtimeMs: number }][] = [];
    for (const path of paths.sort()) {
      const st = await statPath(path);
      if (st) found.push([path, st]);
    }
    const present = new Set(found.map(([p]) => p));
    for (const path of unopenable.keys()) if (!present.has(path)) unopenable.delete(path);
    // opened before any file found now, so they are read before their successors
    if (firstScan) await resumeRotated(new Set(found.map(([, st]) => st.ino)));
    for (const [path, st] of found) {
      const known = tails.get(st.ino);
      if (known) {
        // a rotated file that still matches the pattern keeps being tailed under its new name
        if (known.detached && !known.deleted) {
          known.path = path;
          known.detached = false;
          known.renamedTo = undefined;
          rotated.delete(known);
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
  };

  /**
   * Its name no longer leads to it: gone (deleted: closed once read to its end) or renamed away
   * (rotated: tailed until idle for ROTATE_WAIT_MS, whether or not its new name matches).
   */
  const detach = async (tail: Tail) => {
    tail.detached = true;
    tail.grewAt = Date.now();
    rotated.add(tail);
    const own = await tail.fh.stat();
    if (own.nlink === 0) {
      tail.deleted = true;
      return;
    }
    counters.rotations++;
    tail.renamedTo = (await findInDirectory(new Set([tail.inode]))).get(tail.inode);
  };

  /** Checks each open file's name: renamed away or replaced means rotation, gone means deleted. */
  const checkNames = async () => {
    let rotated = false;
    for (const tail of tails.values()) {
      if (tail.detached) {
        // renamed again during its grace (a second rotation shifts app.log.1 to app.log.2): its
        // position must go under the name it has now, not one another rotated file took over
        if (!tail.deleted && tail.renamedTo !== undefined && (await fileInode(tail.renamedTo)) !== tail.inode) {
          tail.renamedTo = (await findInDirectory(new Set([tail.inode]))).get(tail.inode);
        }
        continue;
      }
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
        if (tail.detached && (tail.deleted || Date.now() - tail.grewAt >= ROTATE_WAIT_MS)) {
          flushTail(tail);
          await closeTail(tail);
        }
      } catch (err) {
        ctx.log.warn({ path: tail.path, error: errorMessage(err) }, 'File read failed');
        await closeTail(tail);
      }
    }
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
        // a rotated file goes under its new name, for a successor to finish it
        const path = tail.detached ? (tail.renamedTo ?? tail.path) : tail.path;
        if (tail.detached && out[path]) continue;
        const offset = tail.offset - tail.lines.pendingBytes;
        out[path] = tail.detached && !tail.deleted ? { inode: tail.inode, offset, rotated: true } : { inode: tail.inode, offset };
      }
      return out;
    },
  };
};
