// `file` source: discovers files (one directory's pattern, or `include` globs) every
// `check_interval_ms` and when a watched directory reports a new name, tails open files by polling
// every 100 ms (and on change events), follows rename rotation and truncation, assembles container
// lines and multiline entries (src/lines/), and reports acknowledged positions by path and inode
// so a reload or a restarted worker resumes without loss or duplicates (DESIGN.md §6, §15, §21).

import { type FileHandle, open, realpath } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { InOrder } from '../core/ack.js';
import type { Entry } from '../core/entry.js';
import { idPrefix } from '../core/ids.js';
import { parseLine } from '../core/entry.js';
import { errorMessage } from '../core/errors.js';
import { LineAssembler } from '../lines/assembler.js';
import { entryOf } from '../lines/entries.js';
import { containerLinkMeta, type KubernetesMeta, podLogMeta } from '../lines/kubernetes.js';
import type { LineCounters, LogicalLine, Resume } from '../lines/line.js';
import { LineSplitter } from '../lines/splitter.js';
import { fileSourceConfig } from './file-config.js';
import { DirectoryWatchers, directoryFinder, fileInode, findInDirectory, globFinder, statPath } from './file-discovery.js';
import { fingerprintOf, fingerprintShort, sameContent } from './file-identity.js';
import type { FilePosition, Source, SourceFactory, SourcePositions } from './types.js';

export { FILE_SOURCE } from './file-config.js';

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

interface Tail {
  path: string;
  readonly name: string;
  /** the entries' `source`: the base name, or the container's name with `kubernetes_metadata` */
  readonly source: string;
  readonly k8s: KubernetesMeta | undefined;
  readonly inode: number;
  readonly dev: number;
  readonly fh: FileHandle;
  readonly lines: LineSplitter;
  /** container and multiline stages; undefined for plain lines */
  readonly assembler: LineAssembler | undefined;
  /** where the next physical line begins */
  lineStart: number;
  /** next byte to read */
  offset: number;
  /** the acknowledged position (DESIGN.md §15): every line before it is done (and what past it is, when something is open) */
  acked: Resume;
  /** the emitted batches' positions, completed as their entries are done */
  readonly order: InOrder<Resume>;
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

export const createFileSource: SourceFactory = (plugin, ctx): Source => {
  const { cfg, multiline } = fileSourceConfig(plugin);
  const finder = cfg.directory !== undefined ? directoryFinder(cfg.directory, cfg.pattern) : globFinder(cfg.include, cfg.exclude);
  const assembles = cfg.container_format !== 'none' || multiline !== undefined;
  const counters = {
    total_entries: 0,
    dropped_entries: 0,
    active_watchers: 0,
    rotations: 0,
    bytes_read: 0,
    truncations: 0,
    truncated_lines: 0,
    lag_bytes: 0,
    parse_errors: 0,
    multiline_entries: 0,
    multiline_splits: 0,
    multiline_timeouts: 0,
  } satisfies LineCounters & Record<string, number>;
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
  /**
   * Wake the source when a watched directory changes: a grown file is read at once, a new name
   * is discovered at once; the polls stay for missed events.
   */
  const watchers = new DirectoryWatchers((event, name) => {
    if (event === 'rename' && (name === null || finder.mayMatch(name))) discoverDue = true;
    run();
  });

  /** Hands a batch of `tail`'s entries to the flow; its acknowledged position moves to `mark` once they are done. */
  const emitBatch = (tail: Tail, batch: Entry[], mark: Resume) => {
    const done = tail.order.add(mark);
    if (batch.length === 0) {
      done();
      return;
    }
    counters.total_entries += batch.length;
    ctx.emit(batch, done);
  };

  /** Emits a batch of `tail`'s physical lines (`ends[i]`: where line i ends in the file). */
  const emitLines = (tail: Tail, lines: string[], ends: number[]) => {
    const readEnd = tail.offset - tail.lines.pendingBytes;
    const now = Date.now();
    if (tail.assembler !== undefined) {
      const out: LogicalLine[] = [];
      tail.assembler.push(lines, ends, tail.lineStart, now, out);
      if (ends.length > 0) tail.lineStart = ends[ends.length - 1]!;
      emitLogical(tail, out, tail.assembler.resume(readEnd), now);
      return;
    }
    const batch: Entry[] = new Array(lines.length);
    for (let i = 0; i < lines.length; i++) batch[i] = parseLine(lines[i]!, tail.name, now, cfg.raw);
    if (ctx.idNode !== undefined) for (let i = 0; i < batch.length; i++) batch[i]!.id = tail.idPrefix + ends[i]!.toString(36);
    emitBatch(tail, batch, { offset: readEnd });
  };

  const emitLogical = (tail: Tail, out: LogicalLine[], mark: Resume, now: number) => {
    const batch: Entry[] = new Array(out.length);
    for (let i = 0; i < out.length; i++) batch[i] = entryOf(out[i]!, tail.source, now, cfg.raw, tail.k8s);
    if (ctx.idNode !== undefined) for (let i = 0; i < batch.length; i++) batch[i]!.id = tail.idPrefix + out[i]!.idAt.toString(36);
    emitBatch(tail, batch, mark);
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

  /** Emits everything `tail` holds open: its partial line, container partials, multiline entries. */
  const flushTail = (tail: Tail) => {
    const out: string[] = [];
    const ends: number[] = [];
    tail.lines.flush(out, ends);
    if (out.length > 0) emitLines(tail, out, ends);
    if (tail.assembler === undefined) return;
    const now = Date.now();
    const logical: LogicalLine[] = [];
    tail.assembler.flush(tail.offset, now, logical);
    if (logical.length > 0) emitLogical(tail, logical, tail.assembler.resume(tail.offset), now);
  };

  /** Whether `tail` holds anything open that its successor's first bytes must come after. */
  const holdsOpen = (tail: Tail) => tail.lines.pendingBytes > 0 || (tail.assembler !== undefined && tail.assembler.resume(tail.offset).offset < tail.offset);

  /** Emits the multiline entries of `tail` quiet for `timeout_ms`. */
  const expireTail = (tail: Tail) => {
    const now = Date.now();
    const due = tail.assembler?.nextTimeout();
    if (due === undefined || due > now) return;
    const out: LogicalLine[] = [];
    tail.assembler!.expire(now, out);
    emitLogical(tail, out, tail.assembler!.resume(tail.offset - tail.lines.pendingBytes), now);
  };

  /** Reads `tail` up to its current end (or until paused/stopped); returns false when paused. */
  const readTail = async (tail: Tail): Promise<boolean> => {
    const st = await tail.fh.stat();
    if (tail.detached && st.nlink === 0) tail.deleted = true;
    if (st.size < tail.offset) {
      counters.truncations++;
      flushTail(tail);
      tail.offset = 0;
      tail.acked = { offset: 0 };
      tail.lineStart = 0;
      tail.lines.at(0);
      tail.truncations++;
      tail.idPrefix = fileIdPrefix(tail.dev, tail.inode, tail.truncations);
      tail.fingerprint = undefined;
    }
    let size = st.size;
    tail.size = size;
    if (fingerprintShort(tail.fingerprint, size)) tail.fingerprint = await fingerprintOf(tail.fh, size);
    // A rotated file's held partial line (and open entry) comes before its successor's first
    // bytes; until then the application may still complete it through its old descriptor.
    if (tail.offset < size && !tail.detached) for (const r of rotated) if (r.path === tail.path && holdsOpen(r)) flushTail(r);
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
    if (tail.assembler !== undefined) expireTail(tail);
    return true;
  };

  /** `source` and `fields.k8s` of the file at `path` (with `kubernetes_metadata`). */
  const kubernetesOf = async (path: string): Promise<KubernetesMeta | undefined> => {
    if (!cfg.kubernetes_metadata) return undefined;
    const direct = podLogMeta(path);
    if (direct) return direct;
    // a /var/log/containers link: its target under /var/log/pods says more (uid, restart count)
    const target = await realpath(path).catch(() => path);
    return podLogMeta(target) ?? containerLinkMeta(path);
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
    /** what a predecessor had open at its position: delivered lines past it are passed over */
    let resume: Resume = { offset };
    if (resumed && st.ino === inode) {
      const known = (resumed.pos.dev === undefined || resumed.pos.dev === st.dev) && (await sameContent(fh, st.size, resumed.pos));
      if (known) {
        truncations = resumed.pos.truncations ?? 0;
        if (resumed.pos.read !== undefined && resumed.pos.offset === offset) resume = { offset, read: resumed.pos.read, streams: resumed.pos.streams ?? {} };
      }
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
    if (offset !== resume.offset) resume = { offset };
    const lines = new LineSplitter(cfg.max_line_bytes);
    // Reading never starts inside a line: there, the head was had before (a predecessor cutting an
    // over-long line reports the cut point) or was there before the start (from = "end").
    if (offset > 0) {
      const { bytesRead } = await fh.read(buf, 0, 1, offset - 1);
      if (bytesRead === 1 && buf[0] !== 10) lines.skipLine();
    }
    lines.at(offset);
    const name = rotatedFrom ?? path;
    const k8s = await kubernetesOf(name);
    const tail: Tail = {
      path: name,
      name: basename(name),
      source: k8s?.container ?? basename(name),
      k8s,
      inode,
      dev: st.dev,
      fh,
      lines,
      assembler: assembles ? new LineAssembler({ format: cfg.container_format, maxLineBytes: cfg.max_line_bytes, multiline }, counters, resume) : undefined,
      lineStart: offset,
      offset,
      acked: resume,
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

  /** Whether a position handed over under `path` may be one of this source's files. */
  const owns = (path: string) => {
    if (cfg.directory === undefined) return true;
    const dirPrefix = join(cfg.directory, '/');
    return path.startsWith(dirPrefix) && !path.includes('/', dirPrefix.length);
  };

  /**
   * On the first scan: files the predecessor was still reading that discovery does not see, i.e.
   * rotated away before or during the handover, are finished as rotated files from their position.
   */
  const resumeRotated = async (seen: ReadonlySet<number>) => {
    const wanted = new Map<number, [string, FilePosition]>();
    for (const [path, pos] of Object.entries(resumeFrom)) {
      if (!seen.has(pos.inode) && !tails.has(pos.inode) && owns(path)) wanted.set(pos.inode, [path, pos]);
    }
    if (wanted.size === 0) return;
    const where = new Map<number, string>();
    for (const [inode, [path]] of wanted) if ((await fileInode(path)) === inode) where.set(inode, path);
    for (const [inode, [path]] of wanted) {
      if (where.has(inode)) continue;
      for (const [ino, now] of await findInDirectory(dirname(path), new Set([inode]))) where.set(ino, now);
    }
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
    let missing: boolean;
    try {
      ({ paths, missing } = await finder.find());
    } catch (err) {
      ctx.log.warn({ error: errorMessage(err) }, 'File discovery failed');
      return;
    }
    // fast-glob finds nothing in a missing directory; say so once, and keep looking for it
    if (missing) {
      if (!directoryMissing) ctx.log.warn({ directory: cfg.directory }, 'Directory does not exist, watching for it');
      directoryMissing = true;
    } else if (directoryMissing) {
      directoryMissing = false;
      ctx.log.info({ directory: cfg.directory }, 'Directory appeared');
    }
    // a directory watched from now on may have got a file before its watch began: look again
    if (cfg.watch_events && watchers.sync(await finder.directories(paths))) discoverDue = true;
    const found: [string, { ino: number; size: number; birthtimeMs: number }][] = [];
    for (const path of paths) {
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
    tail.renamedTo = (await findInDirectory(dirname(tail.path), new Set([tail.inode]))).get(tail.inode);
  };

  /** Checks each open file's name: renamed away or replaced means rotation, gone means deleted. */
  const checkNames = async () => {
    let rotated = false;
    for (const tail of tails.values()) {
      if (tail.detached) {
        // renamed again during its grace (a second rotation shifts app.log.1 to app.log.2): its
        // position must go under the name it has now, not one another rotated file took over
        if (!tail.deleted && tail.renamedTo !== undefined && (await fileInode(tail.renamedTo)) !== tail.inode) {
          tail.renamedTo = (await findInDirectory(dirname(tail.path), new Set([tail.inode]))).get(tail.inode);
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
    for (const tail of tails.values()) lag += Math.max(0, tail.size - tail.acked.offset);
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
      watchers.close();
      await busy;
      // positions stay readable after stop: the final stats carry them; open multiline entries
      // are not emitted: they lie after the acknowledged position, for the successor to read whole
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
          offset: tail.acked.offset,
          dev: tail.dev,
          truncations: tail.truncations,
          fingerprint: tail.fingerprint,
          ...(tail.acked.read === undefined ? {} : { read: tail.acked.read, streams: tail.acked.streams }),
        };
        // a finishing file (closed, last lines not yet done) is handed over as a rotated one: a successor reads it to its end
        out[path] = (tail.detached && !tail.deleted) || finishing.has(tail) ? { ...pos, rotated: true } : pos;
      }
      return out;
    },
  };
};
