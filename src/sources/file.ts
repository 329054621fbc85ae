// `file` source: discovers files (one directory's pattern, or `include` globs) every
// `check_interval_ms` and when a watched directory reports a new name, tails open files by polling
// every 100 ms (and on change events), follows rename rotation and truncation, assembles container
// lines and multiline entries (src/lines/), and reports acknowledged positions by path and inode
// so a reload or a restarted worker resumes without loss or duplicates (DESIGN.md §6, §15, §21).

import { dirname, join } from 'node:path';
import { errorMessage } from '../core/errors.js';
import { fileSourceConfig } from './file-config.js';
import { DirectoryWatchers, directoryFinder, fileInode, findInDirectory, globFinder, statPath } from './file-discovery.js';
import type { Resumed } from './file-open.js';
import type { FileCounters, Tail } from './file-tail.js';
import { TailSet } from './file-tail-set.js';
import type { FilePosition, Source, SourceFactory, SourcePositions } from './types.js';

export { FILE_SOURCE } from './file-config.js';

/** Tail polling period, ms (fixed by the contract). */
const TAIL_INTERVAL_MS = 100;
/**
 * File times come from the kernel's coarse clock, a tick (up to ~10 ms) behind Date.now(): a file
 * born this close before the start counts as born after it.
 */
const BIRTH_CLOCK_SLACK_MS = 20;
/**
 * How long a rotated file (renamed away, still linked) is tailed after it last grew, ms: the
 * application may write to its old descriptor until it reopens its log (logrotate's `create`
 * mode), as Fluent Bit's `rotate_wait`.
 */
const ROTATE_WAIT_MS = 5000;

export const createFileSource: SourceFactory = (plugin, ctx): Source => {
  const { cfg, multiline } = fileSourceConfig(plugin);
  const finder = cfg.directory !== undefined ? directoryFinder(cfg.directory, cfg.pattern) : globFinder(cfg.include, cfg.exclude);
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
  } satisfies FileCounters;
  let resumeFrom: SourcePositions = {};
  let firstScan = true;
  /** the directories missing at the last discovery: each warned once, not again until it appeared */
  let directoriesMissing = new Set<string>();
  /** when this source's run began, in this worker or a predecessor (see Source.start) */
  let since = Number.POSITIVE_INFINITY;
  let running = false;
  let paused = false;
  let stopped = false;
  let busy: Promise<void> | undefined;
  let again = false;
  let discoverDue = true;
  const tailSet = new TailSet(plugin.id, cfg, multiline, counters, ctx, () => paused || stopped);
  const { tails, rotated, unopenable } = tailSet;
  const openTail = (path: string, inode: number, offset: number, rotatedFrom?: string, resumed?: Resumed) => tailSet.open({ path, inode, offset, rotatedFrom, resumed });
  const readTail = (tail: Tail) => tailSet.read(tail);
  const flushTail = (tail: Tail) => tail.flush();
  const closeTail = (tail: Tail) => tailSet.close(tail);
  const updateLag = () => tailSet.updateLag();
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
    let missing: string[];
    try {
      ({ paths, missing } = await finder.find());
    } catch (err) {
      ctx.log.warn({ error: errorMessage(err) }, 'File discovery failed');
      return;
    }
    // fast-glob finds nothing in a missing directory; say so once, and keep looking for it
    for (const directory of missing) if (!directoriesMissing.has(directory)) ctx.log.warn({ directory }, 'Directory does not exist, watching for it');
    for (const directory of directoriesMissing) if (!missing.includes(directory)) ctx.log.info({ directory }, 'Directory appeared');
    directoriesMissing = new Set(missing);
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
      return tailSet.positions();
    },
  };
};
