// What a predecessor (the worker before a reload or a restart, or the checkpoint) handed a `file`
// source over: positions by path and inode, applied by the first scan only, and the rotated
// files it was still reading, finished from their positions (DESIGN.md §15).

import { dirname, join } from 'node:path';
import type { FileSourceConfig } from './file-config.js';
import { type FileStat, fileInode, findInDirectory } from './file-discovery.js';
import type { OpenAt } from './file-open.js';
import type { FileCounters } from './file-tail.js';
import type { TailSet } from './file-tail-set.js';
import type { FilePosition, SourcePositions } from './types.js';

/**
 * File times come from the kernel's coarse clock, a tick (up to ~10 ms) behind Date.now(): a file
 * born this close before the start counts as born after it.
 */
const BIRTH_CLOCK_SLACK_MS = 20;

export class Handover {
  constructor(
    /** the positions handed over, by path */
    readonly positions: SourcePositions,
    /** when this source's run began, in this worker or a predecessor (see Source.start) */
    private readonly since: number,
    private readonly cfg: FileSourceConfig,
  ) {}

  /** How the first scan opens the file it found at `path`. */
  openAt(path: string, st: FileStat): OpenAt {
    const pos = this.positionFor(path, st.ino);
    // a path the predecessor knew under another inode was replaced since: all of it is new; so
    // is a file born since the run began that no predecessor reported (born during a handover,
    // or after its last scan) and that this first scan happens to see
    const bornSince = st.birthtimeMs > 0 && st.birthtimeMs >= this.since - BIRTH_CLOCK_SLACK_MS;
    const fresh = (size: number) => (this.positions[path] || this.cfg.from === 'start' || bornSince ? 0 : size);
    // a known inode whose device or first bytes differ is another file (the inode was used again)
    return pos ? { path, inode: st.ino, offset: pos.offset, resumed: { pos, otherwise: fresh } } : { path, inode: st.ino, offset: fresh(st.size) };
  }

  /**
   * Files the predecessor was still reading that discovery does not see (`seen`: the inodes it
   * does), i.e. rotated away before or during the handover, are finished as rotated files from
   * their position.
   */
  async resumeRotated(seen: ReadonlySet<number>, set: TailSet, counters: FileCounters): Promise<void> {
    const wanted = new Map<number, [string, FilePosition]>();
    for (const [path, pos] of Object.entries(this.positions)) {
      if (!seen.has(pos.inode) && !set.tails.has(pos.inode) && this.owns(path)) wanted.set(pos.inode, [path, pos]);
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
      if ((await set.open({ path: now, inode, offset: pos.offset, rotatedFrom: path, resumed: { pos, otherwise: () => 0 } })) && now !== path) counters.rotations++;
    }
  }

  private positionFor(path: string, inode: number): FilePosition | undefined {
    const same = this.positions[path];
    if (same && same.inode === inode) return same;
    for (const p of Object.values(this.positions)) if (p.inode === inode) return p;
    return undefined;
  }

  /** Whether a position handed over under `path` may be one of this source's files. */
  private owns(path: string): boolean {
    if (this.cfg.directory === undefined) return true;
    const dirPrefix = join(this.cfg.directory, '/');
    return path.startsWith(dirPrefix) && !path.includes('/', dirPrefix.length);
  }
}
