// `file` source: discovers files with fast-glob every `check_interval_ms`, tails open files by
// polling every 100 ms, follows rename rotation and truncation, and reports positions by path and
// inode so a reload or a restarted worker resumes without loss or duplicates (DESIGN.md §6).

import { createHash } from 'node:crypto';
import { type FSWatcher, lstat as lstatCb, stat as statCb, watch } from 'node:fs';
import { type FileHandle, open, readdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import fg from 'fast-glob';
import { InOrder } from '../core/ack.js';
import type { Entry } from '../core/entry.js';
import { idPrefix } from '../core/ids.js';
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
/** Bytes of a file's head hashed into its fingerprint (to know it again in a checkpoint). */
const FINGERPRINT_BYTES = 256;
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
  /** file offset of the next byte pushed */
  private pos = 0;
  /** when given to push()/flush(): the file offset where each emitted line ends (past its newline) */
  private ends: number[] | undefined;

  constructor(private readonly maxLineBytes: number) {}

  /** The file offset of the next byte pushed (after an open, a seek or a truncation). */
  at(offset: number): void {
    this.pos = offset;
  }

  /** bytes of the held partial line */
  get pendingBytes(): number {
    return this.partLen;
  }

  /** Appends the complete lines in `chunk` to `out` (and, given `ends`, where each ends in the file). */
  push(chunk: Buffer, out: string[], ends?: number[]): void {
    this.ends = ends;
    const base = this.pos;
    this.pos += chunk.length;
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
      this.line(whole.toString('utf8'), out, base + nl + 1);
      start = nl + 1;
    }
    if (start <= last) {
      const text = chunk.toString('utf8', start, last);
      const max = this.maxLineBytes;
      // where a line ends in the file: char index = byte index unless the text has multi-byte characters
      const ascii = text.length === last - start;
      let byteFrom = base + start;
      let from = 0;
      for (let nl = text.indexOf('\n'); ; nl = text.indexOf('\n', from)) {
        const end = nl < 0 ? text.length : nl;
        let lineEnd = 0;
        if (ends) {
          lineEnd = ascii ? base + start + end + 1 : byteFrom + Buffer.byteLength(text.slice(from, end)) + 1;
          byteFrom = lineEnd;
        }
        if (end > from) {
          let line = text.slice(from, end);
          if (line.charCodeAt(line.length - 1) === 13) line = line.slice(0, -1);
          if (line.length * 3 <= max) {
            if (line.length > 0) {
              out.push(line);
              ends?.push(lineEnd);
            }
          } else this.line(line, out, lineEnd);
        }
        if (nl < 0) break;
        from = nl + 1;
      }
    }
    if (last + 1 < chunk.length) this.hold(chunk.subarray(last + 1), out);
  }

  /** Emits the held partial line, if any (its file was rotated away or input ended). */
  flush(out: string[], ends?: number[]): void {
    this.ends = ends;
    this.skipping = false;
    if (this.partLen === 0) return;
    const whole = Buffer.concat(this.parts, this.partLen);
    this.parts = [];
    this.partLen = 0;
    this.line(whole.toString('utf8'), out, this.pos);
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
      // its end is not known yet: the cut point stands for it
      this.ends?.push(this.pos);
      this.skipping = true;
    }
  }

  private line(line: string, out: string[], end: number): void {
    if (line.charCodeAt(line.length - 1) === 13) line = line.slice(0, -1);
    if (line.length === 0) return;
    if (line.length * 3 > this.maxLineBytes && Buffer.byteLength(line) > this.maxLineBytes) line = this.cut(Buffer.from(line));
    out.push(line);
    this.ends?.push(end);
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
  readonly dev: number;
  readonly fh: FileHandle;
  readonly lines: LineSplitter;
  /** next byte to read */
  offset: number;
  /** the acknowledged position (DESIGN.md §15): every line before it is done */
  acked: number;
  /** the emitted batches' ends, completed as their entries are done */
  readonly order: InOrder<number>;
  /** size at the last stat, for `lag_bytes` */
  size: number;
  /** truncations seen for this file; part of its lines' ids */
  truncations: number;
  /** `<bytes>:<hash>` of the file's first bytes; undefined while it is empty */
  fingerprint: string | undefined;
  /** the ids of this file's lines start with it (when the pipeline stamps ids) */
  idPrefix: string;
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

/** A position a file is resumed from, and where to start instead when the file is not the one it names. */
interface Resumed {
  readonly pos: FilePosition;
  readonly otherwise: (size: number) => number;
}

function statPath(path: string): Promise<{ ino: number; dev: number; size: number; birthtimeMs: number } | undefined> {
  return new Promise((resolve) =>
    statCb(path, (err, st) => resolve(err ? undefined : { ino: st.ino, dev: st.dev, size: st.size, birthtimeMs: st.birthtimeMs })),
  );
}

/** `<n>:<hash>` of the first n (up to FINGERPRINT_BYTES) bytes, or of exactly `n` when given; undefined for an empty file. */
async function fingerprintOf(fh: FileHandle, size: number, n = Math.min(size, FINGERPRINT_BYTES)): Promise<string | undefined> {
  if (n === 0 || size < n) return undefined;
  const head = Buffer.alloc(n);
  const { bytesRead } = await fh.read(head, 0, n, 0);
  if (bytesRead < n) return undefined;
  return `${n}:${createHash('sha1').update(head).digest('base64url').slice(0, 16)}`;
}

/** True when the file open as `fh` has the fingerprint a position recorded (or it recorded none). */
async function sameContent(fh: FileHandle, size: number, pos: FilePosition): Promise<boolean> {
  if (pos.fingerprint === undefined) return true;
  const n = Number.parseInt(pos.fingerprint, 10);
  return Number.isInteger(n) && (await fingerprintOf(fh, size, n)) === pos.fingerprint;
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
    lag_bytes: 0,
  };
  /** closed files whose last batches are not done yet: their positions stay reported until they are */
  const finishing = new Set<Tail>();
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
  /** wakes the source when a file of the directory changes; the 100 ms poll stays for missed events */
  let watcher: FSWatcher | undefined;

  /** Emits a batch of `tail`'s lines; its acknowledged position moves past them once they are done. */
  const emitLines = (tail: Tail, lines: string[], ends: number[]) => {
    const done = tail.order.add(tail.offset - tail.lines.pendingBytes);
    if (lines.length === 0) {
      done();
      return;
    }
    const now = Date.now();
    const batch: Entry[] = new Array(lines.length);
    for (let i = 0; i < lines.length; i++) batch[i] = parseLine(lines[i]!, tail.name, now, cfg.raw);
    if (ctx.idNode !== undefined) for (let i = 0; i < batch.length; i++) batch[i]!.id = tail.idPrefix + ends[i]!.toString(36);
    counters.total_entries += batch.length;
    ctx.emit(batch, done);
  };

  const fileIdPrefix = (dev: number, inode: number, truncations: number) =>
    ctx.idNode === undefined ? '' : idPrefix(ctx.idNode, ctx.pipeline, plugin.id, dev, inode, truncations);

  const closeTail = async (tail: Tail) => {
    tails.delete(tail.inode);
    rotated.delete(tail);
    if (tail.order.outstanding > 0) finishing.add(tail);
    counters.active_watchers = tails.size;
    await tail.fh.close().catch(() => undefined);
  };

  /** Emits the held partial line of `tail`, if any. */
  const flushTail = (tail: Tail) => {
    const out: string[] = [];
    const ends: number[] = [];
    tail.lines.flush(out, ends);
    if (out.length > 0) emitLines(tail, out, ends);
  };

  /** Reads `tail` up to its current end (or until paused/stopped); returns false when paused. */
  const readTail = async (tail: Tail): Promise<boolean> => {
    const st = await tail.fh.stat();
    if (tail.detached && st.nlink === 0) tail.deleted = true;
    if (st.size < tail.offset) {
      counters.truncations++;
      flushTail(tail);
      tail.offset = 0;
      tail.acked = 0;
      tail.lines.at(0);
      tail.truncations++;
      tail.idPrefix = fileIdPrefix(tail.dev, tail.inode, tail.truncations);
      tail.fingerprint = undefined;
    }
    let size = st.size;
    tail.size = size;
    if ((tail.fingerprint === undefined || Number.parseInt(tail.fingerprint, 10) < FINGERPRINT_BYTES) && size > (tail.fingerprint ? Number.parseInt(tail.fingerprint, 10) : 0)) {
      tail.fingerprint = await fingerprintOf(tail.fh, size);
    }
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
      const ends: number[] = [];
      const before = tail.lines.truncated;
      tail.lines.push(buf.subarray(0, bytesRead), out, ends);
      counters.truncated_lines += tail.lines.truncated - before;
      emitLines(tail, out, ends);
    }
    return true;
  };

  /**
   * Opens `path` from `offset`. With `rotatedFrom` (the name the predecessor reported it under) it
   * is a rotated file handed over: only that inode will do, and it is tailed as detached.
   * `resumed`: the position `offset` comes from; a file whose content does not match it (the
   * inode was used again) is another file, read from `otherwise` (or not taken when rotated).
   */
  const openTail = async (path: string, inode: number, offset: number, rotatedFrom?: string, resumed?: Resumed): Promise<Tail | undefined> => {
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
      return await tailOpened(fh, path, inode, offset, rotatedFrom, resumed);
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw err;
    }
  };

  const tailOpened = async (fh: FileHandle, path: string, inode: number, offset: number, rotatedFrom?: string, resumed?: Resumed): Promise<Tail | undefined> => {
    const st = await fh.stat();
    let truncations = 0;
    if (resumed && st.ino === inode) {
      const known = (resumed.pos.dev === undefined || resumed.pos.dev === st.dev) && (await sameContent(fh, st.size, resumed.pos));
      if (known) truncations = resumed.pos.truncations ?? 0;
      else if (rotatedFrom !== undefined) {
        await fh.close();
        return undefined;
      } else offset = resumed.otherwise(st.size);
    }
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
    lines.at(offset);
    const tail: Tail = {
      path: rotatedFrom ?? path,
      name: basename(rotatedFrom ?? path),
      inode,
      dev: st.dev,
      fh,
      lines,
      offset,
      acked: offset,
      order: new InOrder((end) => {
        tail.acked = end;
        if (tail.order.outstanding === 0) finishing.delete(tail);
      }),
      size: st.size,
      truncations,
      fingerprint: await fingerprintOf(fh, st.size),
      idPrefix: fileIdPrefix(st.dev, inode, truncations),
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
      if ((await openTail(now, inode, pos.offset, path, { pos, otherwise: () => 0 })) && now !== path) counters.rotations++;
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
        const fresh = (size: number) => (resumeFrom[path] || cfg.from === 'start' || bornSince ? 0 : size);
        offset = pos ? pos.offset : fresh(st.size);
        // a known inode whose device or first bytes differ is another file (the inode was used again)
        if (pos) {
          await openTail(path, st.ino, offset, undefined, { pos, otherwise: fresh });
          continue;
        }
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

  const updateLag = () => {
    let lag = 0;
    for (const tail of tails.values()) lag += Math.max(0, tail.size - tail.acked);
    counters.lag_bytes = lag;
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
    updateLag();
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
      try {
        // a file that grows is read at once, not at the next poll (latency); discovery of new
        // files stays on check_interval_ms, as the contract says
        watcher = watch(cfg.directory, { persistent: false }, run);
        watcher.on('error', () => {
          watcher?.close();
          watcher = undefined;
        });
      } catch {
        // no directory yet, or no inotify left: polling alone
      }
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
      watcher?.close();
      await busy;
      // positions stay readable after stop: the final stats carry them
      for (const tail of tails.values()) await tail.fh.close().catch(() => undefined);
    },
    positions() {
      // before the first scan has opened anything, what was handed over still stands
      if (firstScan) return resumeFrom;
      const out: SourcePositions = {};
      for (const tail of [...finishing, ...tails.values()]) {
        // a rotated file goes under its new name, for a successor to finish it
        const path = tail.detached ? (tail.renamedTo ?? tail.path) : tail.path;
        if (tail.detached && out[path]) continue;
        const pos: FilePosition = {
          inode: tail.inode,
          offset: tail.acked,
          dev: tail.dev,
          truncations: tail.truncations,
          fingerprint: tail.fingerprint,
        };
        // a finishing file (closed, last lines not yet done) is handed over as a rotated one: a successor reads it to its end
        out[path] = (tail.detached && !tail.deleted) || finishing.has(tail) ? { ...pos, rotated: true } : pos;
      }
      return out;
    },
  };
};
