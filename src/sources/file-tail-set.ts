// The open (and finishing) files of one `file` source: opened once each, read in the order they
// were opened (a rotated file before its successor), closed, and their acknowledged positions
// reported by path (DESIGN.md §6, §15). Discovery and rotation decide which files are open (file.ts).

import { type FileHandle, open } from 'node:fs/promises';
import { errorMessage } from '../core/errors.js';
import type { MultilineRules } from '../lines/multiline.js';
import type { FileSourceConfig } from './file-config.js';
import { fileIdPrefix } from './file-identity.js';
import { type OpenAt, type OpenEnv, tailOf } from './file-open.js';
import { type FileCounters, READ_CHUNK, type Tail } from './file-tail.js';
import type { SourceContext, SourcePositions } from './types.js';

export class TailSet {
  /** open files by inode; insertion order is read order, so a rotated file comes before its successor */
  readonly tails = new Map<number, Tail>();
  /** the detached tails among them */
  readonly rotated = new Set<Tail>();
  /** paths that could not be opened, with the inode already warned about */
  readonly unopenable = new Map<string, number>();
  /** closed files whose last batches are not done yet: their positions stay reported until they are */
  private readonly finishing = new Set<Tail>();
  private readonly buf = Buffer.allocUnsafe(READ_CHUNK);
  private readonly env: OpenEnv;

  constructor(
    pluginId: string,
    cfg: FileSourceConfig,
    multiline: MultilineRules | undefined,
    private readonly counters: FileCounters,
    private readonly ctx: SourceContext,
    /** reading stops at once (the source is paused or stopped) */
    private readonly halted: () => boolean,
  ) {
    this.env = {
      ctx,
      counters,
      cfg,
      multiline,
      idPrefix: (dev, inode, born, truncations) => fileIdPrefix(ctx, pluginId, dev, inode, born, truncations),
      settled: (tail) => this.finishing.delete(tail),
      open: (inode) => this.tails.get(inode),
    };
  }

  /** Opens a file as `at` says (see OpenAt); undefined when it cannot be opened or is not the file meant. */
  async open(at: OpenAt): Promise<Tail | undefined> {
    const { path, inode } = at;
    let fh: FileHandle;
    try {
      fh = await open(path, 'r');
    } catch (err) {
      // gone since the scan is no news; anything else (EACCES) is said once per file
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && this.unopenable.get(path) !== inode) {
        this.unopenable.set(path, inode);
        this.ctx.log.warn({ path, error: errorMessage(err) }, 'File cannot be opened');
      }
      return undefined;
    }
    this.unopenable.delete(path);
    let tail: Tail | undefined;
    try {
      tail = await tailOf(fh, at, this.env);
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw err;
    }
    if (tail === undefined || this.tails.get(tail.inode) === tail) return tail;
    this.tails.set(tail.inode, tail);
    if (tail.detached) this.rotated.add(tail);
    this.counters.active_watchers = this.tails.size;
    return tail;
  }

  /** Reads `tail` up to its current end (or until paused/stopped); false when paused. */
  async read(tail: Tail): Promise<boolean> {
    const size = await tail.stat();
    // A rotated file's held partial line (and open entry) comes before its successor's first
    // bytes; until then the application may still complete it through its old descriptor.
    if (tail.offset < size && !tail.detached) for (const r of this.rotated) if (r.path === tail.path && r.reader.holdsOpen()) r.flush();
    return tail.readTo(size, this.buf, this.halted);
  }

  async close(tail: Tail): Promise<void> {
    this.tails.delete(tail.inode);
    this.rotated.delete(tail);
    if (tail.order.outstanding > 0) this.finishing.add(tail);
    this.counters.active_watchers = this.tails.size;
    await tail.fh.close().catch(() => undefined);
  }

  updateLag(): void {
    let lag = 0;
    for (const tail of this.tails.values()) lag += Math.max(0, tail.size - tail.acked.offset);
    this.counters.lag_bytes = lag;
  }

  /** The acknowledged positions of the open and finishing files, by path. */
  positions(): SourcePositions {
    const out: SourcePositions = {};
    for (const tail of [...this.finishing, ...this.tails.values()]) {
      // a rotated file goes under its new name, for a successor to finish it
      const path = tail.detached ? (tail.renamedTo ?? tail.path) : tail.path;
      if (tail.detached && out[path]) continue;
      const pos = tail.position();
      // a finishing file (closed, last lines not yet done) is handed over as a rotated one: a successor reads it to its end
      out[path] = (tail.detached && !tail.deleted) || this.finishing.has(tail) ? { ...pos, rotated: true } : pos;
    }
    return out;
  }
}
