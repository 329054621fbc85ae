// `file` source: discovers files (one directory's pattern, or `include` globs) every
// `check_interval_ms` and when a watched directory reports a new name, tails open files by polling
// every 100 ms (and on change events), follows rename rotation and truncation, assembles container
// lines and multiline entries (src/lines/), and reports acknowledged positions by path and inode
// so a reload or a restarted worker resumes without loss or duplicates (DESIGN.md §6, §15, §21).
// The pieces: which files (file-discovery.ts), what was handed over (file-handover.ts), rotation
// (file-rotation.ts), the open files (file-tail-set.ts, file-open.ts, file-tail.ts).

import type { PluginConfig } from '../config/schema.js';
import { errorMessage } from '../core/errors.js';
import { fileSourceConfig, type FileSourceConfig } from './file-config.js';
import { DirectoryWatchers, directoryFinder, type FileStat, type Finder, globFinder, statPath } from './file-discovery.js';
import { Handover } from './file-handover.js';
import { checkNames, detach } from './file-rotation.js';
import type { FileCounters } from './file-tail.js';
import { TailSet } from './file-tail-set.js';
import type { Source, SourceContext, SourceFactory, SourcePositions } from './types.js';

export { FILE_SOURCE } from './file-config.js';

/** Tail polling period, ms (fixed by the contract). */
const TAIL_INTERVAL_MS = 100;
/**
 * How long a rotated file (renamed away, still linked) is tailed after it last grew, ms: the
 * application may write to its old descriptor until it reopens its log (logrotate's `create`
 * mode), as Fluent Bit's `rotate_wait`.
 */
const ROTATE_WAIT_MS = 5000;

export const createFileSource: SourceFactory = (plugin, ctx): Source => new FileSource(plugin, ctx);

class FileSource implements Source {
  readonly id: string;
  readonly type = 'file';
  readonly pausable = true;
  readonly counters = {
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
  private readonly cfg: FileSourceConfig;
  private readonly finder: Finder;
  private readonly tailSet: TailSet;
  /** wakes the source when a watched directory changes: a grown file is read at once, a new name discovered at once; the polls stay for missed events */
  private readonly watchers: DirectoryWatchers;
  /** what the predecessor handed over; applied by the first scan */
  private handover: Handover | undefined;
  private firstScan = true;
  /** the directories missing at the last discovery: each warned once, not again until it appeared */
  private directoriesMissing = new Set<string>();
  private running = false;
  private paused = false;
  private stopped = false;
  private busy: Promise<void> | undefined;
  private again = false;
  private discoverDue = true;
  private tailTimer: NodeJS.Timeout | undefined;
  private discoverTimer: NodeJS.Timeout | undefined;

  constructor(
    plugin: PluginConfig,
    private readonly ctx: SourceContext,
  ) {
    this.id = plugin.id;
    const { cfg, multiline } = fileSourceConfig(plugin);
    this.cfg = cfg;
    this.finder = cfg.directory !== undefined ? directoryFinder(cfg.directory, cfg.pattern) : globFinder(cfg.include, cfg.exclude);
    this.tailSet = new TailSet(plugin.id, cfg, multiline, this.counters, ctx, () => this.paused || this.stopped);
    this.watchers = new DirectoryWatchers((event, name) => {
      if (event === 'rename' && (name === null || this.finder.mayMatch(name))) this.discoverDue = true;
      this.run();
    });
  }

  start(positions: SourcePositions, since: number): void {
    if (this.running || this.stopped) return;
    this.running = true;
    this.handover = new Handover(positions, since, this.cfg);
    this.run();
    this.tailTimer = setInterval(() => this.run(), TAIL_INTERVAL_MS);
    this.discoverTimer = setInterval(() => {
      this.discoverDue = true;
      this.run();
    }, this.cfg.check_interval_ms);
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.run();
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.tailTimer) clearInterval(this.tailTimer);
    if (this.discoverTimer) clearInterval(this.discoverTimer);
    this.watchers.close();
    await this.busy;
    // positions stay readable after stop: the final stats carry them; open multiline entries
    // are not emitted: they lie after the acknowledged position, for the successor to read whole
    for (const tail of this.tailSet.tails.values()) await tail.fh.close().catch(() => undefined);
  }

  positions(): SourcePositions {
    // before the first scan has opened anything, what was handed over still stands
    if (this.firstScan) return this.handover?.positions ?? {};
    return this.tailSet.positions();
  }

  /** Runs a cycle now, or once more after the one under way. */
  private run(): void {
    if (this.stopped || this.paused) return;
    if (this.busy) {
      this.again = true;
      return;
    }
    this.busy = this.cycle()
      .catch((err: unknown) => this.ctx.log.warn({ error: errorMessage(err) }, 'File source cycle failed'))
      .finally(() => {
        this.busy = undefined;
        if (this.again) {
          this.again = false;
          this.run();
        }
      });
  }

  private async cycle(): Promise<void> {
    const { tailSet } = this;
    // Rotation is noticed before anything is read, so a renamed-away file is finished (to its end,
    // then its held partial line) before its successor under the old name is read.
    if (await checkNames(tailSet, this.counters)) this.discoverDue = true;
    if (this.discoverDue) {
      this.discoverDue = false;
      await this.discover();
    }
    // insertion order: a rotated file is read before its successor
    for (const tail of [...tailSet.tails.values()]) {
      if (this.stopped) return;
      try {
        if (!(await tailSet.read(tail))) return;
        if (tail.detached && (tail.deleted || Date.now() - tail.grewAt >= ROTATE_WAIT_MS)) {
          tail.flush();
          await tailSet.close(tail);
        }
      } catch (err) {
        this.ctx.log.warn({ path: tail.path, error: errorMessage(err) }, 'File read failed');
        await tailSet.close(tail);
      }
    }
    tailSet.updateLag();
  }

  /** Finds matching files; new ones are opened (from their start unless they were there at start). */
  private async discover(): Promise<void> {
    const found = await this.find();
    if (found === undefined) return;
    const { tailSet } = this;
    const present = new Set(found.map(([p]) => p));
    for (const path of tailSet.unopenable.keys()) if (!present.has(path)) tailSet.unopenable.delete(path);
    const handover = this.firstScan ? this.handover : undefined;
    // opened before any file found now, so they are read before their successors
    if (handover) await handover.resumeRotated(new Set(found.map(([, st]) => st.ino)), tailSet, this.counters);
    for (const [path, st] of found) {
      const known = tailSet.tails.get(st.ino);
      if (known) {
        // a rotated file that still matches the pattern keeps being tailed under its new name
        if (known.detached && !known.deleted) {
          known.path = path;
          known.detached = false;
          known.renamedTo = undefined;
          tailSet.rotated.delete(known);
        }
        continue;
      }
      // a new file under an open file's name: that one was rotated away (a rename since checkNames)
      for (const tail of [...tailSet.tails.values()]) if (!tail.detached && tail.path === path) await detach(tail, tailSet, this.counters);
      await tailSet.open(handover ? handover.openAt(path, st) : { path, inode: st.ino, offset: 0 });
    }
    this.firstScan = false;
  }

  /** The matching files and their stats; undefined when discovery failed. Says once when a directory goes missing or appears. */
  private async find(): Promise<[string, FileStat][] | undefined> {
    let paths: string[];
    let missing: string[];
    try {
      ({ paths, missing } = await this.finder.find());
    } catch (err) {
      this.ctx.log.warn({ error: errorMessage(err) }, 'File discovery failed');
      return undefined;
    }
    // fast-glob finds nothing in a missing directory; say so once, and keep looking for it
    for (const directory of missing) if (!this.directoriesMissing.has(directory)) this.ctx.log.warn({ directory }, 'Directory does not exist, watching for it');
    for (const directory of this.directoriesMissing) if (!missing.includes(directory)) this.ctx.log.info({ directory }, 'Directory appeared');
    this.directoriesMissing = new Set(missing);
    // a directory watched from now on may have got a file before its watch began: look again
    if (this.cfg.watch_events && this.watchers.sync(await this.finder.directories(paths))) this.discoverDue = true;
    const found: [string, FileStat][] = [];
    for (const path of paths) {
      const st = await statPath(path);
      if (st) found.push([path, st]);
    }
    return found;
  }
}
