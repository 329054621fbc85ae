// The open files of a `file` source: opening one at a position (checked against the file's
// identity), reading it to its end in batches through the line-assembly stages, emitting entries
// with their ids, and the acknowledged positions that move as those entries are done (DESIGN.md
// §6, §15, §21). Discovery and rotation decide which files are open (file.ts).

import { type FileHandle, open, realpath } from 'node:fs/promises';
import { basename } from 'node:path';
import { InOrder } from '../core/ack.js';
import type { Entry } from '../core/entry.js';
import { errorMessage } from '../core/errors.js';
import { idPrefix } from '../core/ids.js';
import { containerLinkMeta, type KubernetesMeta, podLogMeta } from '../lines/kubernetes.js';
import type { LineCounters, Resume } from '../lines/line.js';
import type { MultilineRules } from '../lines/multiline.js';
import { LineReader } from '../lines/reader.js';
import type { FileSourceConfig } from './file-config.js';
import { fingerprintOf, fingerprintShort, sameContent } from './file-identity.js';
import type { FilePosition, SourceContext, SourcePositions } from './types.js';

/** Bytes per read; one read yields one batch. */
const READ_CHUNK = 64 * 1024;

/** The `file` source's counters. */
export interface FileCounters extends LineCounters {
  total_entries: number;
  dropped_entries: number;
  active_watchers: number;
  rotations: number;
  bytes_read: number;
  truncations: number;
  lag_bytes: number;
}

export interface Tail {
  path: string;
  readonly name: string;
  /** the entries' `source`: the base name, or the container's name with `kubernetes_metadata` */
  readonly source: string;
  readonly k8s: KubernetesMeta | undefined;
  readonly inode: number;
  readonly dev: number;
  /** the file's birth time (ms, 0 where the platform has none): an inode used again by a new file is another file */
  readonly born: number;
  readonly fh: FileHandle;
  /** bytes in, entries out */
  readonly reader: LineReader;
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

export /** A position a file is resumed from, and where to start instead when the file is not the one it names. */
interface Resumed {
  readonly pos: FilePosition;
  readonly otherwise: (size: number) => number;
}

export interface TailSetEnv {
  readonly pluginId: string;
  readonly cfg: FileSourceConfig;
  readonly multiline: MultilineRules | undefined;
  readonly counters: FileCounters;
  readonly ctx: SourceContext;
  /** reading stops at once (the source is paused or stopped) */
  halted(): boolean;
}

/** The open (and finishing) files of one `file` source. */
export function createTailSet(env: TailSetEnv) {
  const { cfg, multiline, counters, ctx } = env;
  /** closed files whose last batches are not done yet: their positions stay reported until they are */
  const finishing = new Set<Tail>();
  /** open files by inode; insertion order is read order, so a rotated file comes before its successor */
  const tails = new Map<number, Tail>();
  /** the detached tails among them */
  const rotated = new Set<Tail>();
  /** paths that could not be opened, with the inode already warned about */
  const unopenable = new Map<string, number>();
  const buf = Buffer.allocUnsafe(READ_CHUNK);

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

  /**
   * The file's part of its lines' ids: device, inode, birth time and truncations. The birth time
   * tells a file from an earlier one that had its inode (kubelet gzips a rotated log and deletes
   * it; the next rotation's new file often gets the freed inode): without it, the new file's
   * lines would repeat the old one's ids and a dedup collector would drop them.
   */
  const fileIdPrefix = (dev: number, inode: number, born: number, truncations: number) =>
    ctx.idNode === undefined ? undefined : born > 0 ? idPrefix(ctx.idNode, ctx.pipeline, env.pluginId, dev, inode, born, truncations) : idPrefix(ctx.idNode, ctx.pipeline, env.pluginId, dev, inode, truncations);

  const closeTail = async (tail: Tail) => {
    tails.delete(tail.inode);
    rotated.delete(tail);
    if (tail.order.outstanding > 0) finishing.add(tail);
    counters.active_watchers = tails.size;
    await tail.fh.close().catch(() => undefined);
  };

  /** Emits everything `tail` holds open: its partial line, container partials, multiline entries. */
  const flushTail = (tail: Tail) => {
    const batch: Entry[] = [];
    const mark = tail.reader.flush(batch);
    if (mark !== undefined) emitBatch(tail, batch, mark);
  };

  /** Emits the multiline entries of `tail` quiet for `timeout_ms`. */
  const expireTail = (tail: Tail) => {
    const batch: Entry[] = [];
    const mark = tail.reader.expire(batch);
    if (mark !== undefined) emitBatch(tail, batch, mark);
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
      tail.truncations++;
      tail.reader.restart(fileIdPrefix(tail.dev, tail.inode, tail.born, tail.truncations));
      tail.fingerprint = undefined;
    }
    let size = st.size;
    tail.size = size;
    if (fingerprintShort(tail.fingerprint, size)) tail.fingerprint = await fingerprintOf(tail.fh, size);
    // A rotated file's held partial line (and open entry) comes before its successor's first
    // bytes; until then the application may still complete it through its old descriptor.
    if (tail.offset < size && !tail.detached) for (const r of rotated) if (r.path === tail.path && r.reader.holdsOpen()) flushTail(r);
    while (tail.offset < size) {
      if (env.halted()) return false;
      const { bytesRead } = await tail.fh.read(buf, 0, Math.min(READ_CHUNK, size - tail.offset), tail.offset);
      if (bytesRead === 0) {
        size = (await tail.fh.stat()).size;
        if (size <= tail.offset) break;
        continue;
      }
      tail.offset += bytesRead;
      tail.grewAt = Date.now();
      counters.bytes_read += bytesRead;
      const batch: Entry[] = [];
      const mark = tail.reader.push(buf.subarray(0, bytesRead), batch);
      emitBatch(tail, batch, mark);
    }
    expireTail(tail);
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
    const name = rotatedFrom ?? path;
    const k8s = await kubernetesOf(name);
    const reader = new LineReader(
      {
        format: cfg.container_format,
        maxLineBytes: cfg.max_line_bytes,
        multiline,
        raw: cfg.raw,
        name: basename(name),
        source: k8s?.container ?? basename(name),
        k8s,
        // the node a container's entries were produced on: this one (§21), set at the source so
        // that an edge writing to a local or an otlp sink keeps it, not only after a chain hop
        node: k8s === undefined ? undefined : ctx.node,
      },
      counters,
      { offset, resume, idPrefix: fileIdPrefix(st.dev, inode, st.birthtimeMs, truncations) },
    );
    // Reading never starts inside a line: there, the head was had before (a predecessor cutting an
    // over-long line reports the cut point) or was there before the start (from = "end").
    if (offset > 0) {
      const { bytesRead } = await fh.read(buf, 0, 1, offset - 1);
      if (bytesRead === 1 && buf[0] !== 10) reader.skipLine();
    }
    const tail: Tail = {
      path: name,
      name: basename(name),
      source: k8s?.container ?? basename(name),
      k8s,
      inode,
      dev: st.dev,
      born: st.birthtimeMs,
      fh,
      reader,
      offset,
      acked: resume,
      order: new InOrder((end) => {
        tail.acked = end;
        if (tail.order.outstanding === 0) finishing.delete(tail);
      }),
      size: st.size,
      truncations,
      fingerprint: await fingerprintOf(fh, st.size),
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

  const updateLag = () => {
    let lag = 0;
    for (const tail of tails.values()) lag += Math.max(0, tail.size - tail.acked.offset);
    counters.lag_bytes = lag;
  };

  /** The acknowledged positions of the open and finishing files, by path. */
  const positions = (): SourcePositions => {
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
  };

  return { tails, rotated, finishing, unopenable, openTail, readTail, flushTail, closeTail, updateLag, positions };
}

export type TailSet = ReturnType<typeof createTailSet>;
