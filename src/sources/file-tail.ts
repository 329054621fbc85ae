// One open file of a `file` source: read to its end in batches through its line reader, its
// entries handed to the flow, and its acknowledged position moved as they are done (DESIGN.md
// §6, §15, §21). Opening one (file-open.ts) and which are open (file-tail-set.ts, file.ts) are
// decided elsewhere.

import type { FileHandle } from 'node:fs/promises';
import { InOrder } from '../core/ack.js';
import type { Entry } from '../core/entry.js';
import type { KubernetesMeta } from '../lines/kubernetes.js';
import type { LineCounters, Resume } from '../lines/line.js';
import type { LineReader } from '../lines/reader.js';
import { fingerprintOf, fingerprintShort } from './file-identity.js';
import type { FilePosition, SourceContext } from './types.js';

/** Bytes per read; one read yields one batch. */
export const READ_CHUNK = 64 * 1024;

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

/** What the files of one source share: where their entries go, the counters, their ids. */
export interface TailEnv {
  readonly ctx: SourceContext;
  readonly counters: FileCounters;
  /** The ids' prefix of a file's lines (file-identity.ts); undefined when the pipeline stamps none. */
  idPrefix(dev: number, inode: number, born: number, truncations: number): string | undefined;
  /** `tail` has no batch left that is not done */
  settled(tail: Tail): void;
}

/** A Tail's parts when it is opened (`renamedTo`: set for a rotated file handed over, its path the old name). */
export type TailInit = Pick<Tail, 'path' | 'source' | 'k8s' | 'inode' | 'dev' | 'born' | 'fh' | 'reader' | 'offset' | 'acked' | 'size' | 'truncations' | 'fingerprint' | 'renamedTo'>;

export class Tail {
  // `declare`d: the parts it is opened with (TailInit), set at once by the constructor
  declare path: string;
  /** the entries' `source`: the base name, or the container's name with `kubernetes_metadata` */
  declare readonly source: string;
  declare readonly k8s: KubernetesMeta | undefined;
  declare readonly inode: number;
  declare readonly dev: number;
  /** the file's birth time (ms, 0 where the platform has none): an inode used again by a new file is another file */
  declare readonly born: number;
  declare readonly fh: FileHandle;
  /** bytes in, entries out */
  declare readonly reader: LineReader;
  /** next byte to read */
  declare offset: number;
  /** the acknowledged position (DESIGN.md §15): every line before it is done (and what past it is, when something is open) */
  declare acked: Resume;
  /** the emitted batches' positions, completed as their entries are done */
  readonly order: InOrder<Resume>;
  /** size at the last stat, for `lag_bytes` */
  declare size: number;
  /** truncations seen for this file; part of its lines' ids */
  declare truncations: number;
  /** `<bytes>:<hash>` of the file's first bytes; undefined while it is empty */
  declare fingerprint: string | undefined;
  /**
   * the path no longer names this file: renamed away (rotated: tailed until idle for
   * ROTATE_WAIT_MS) or deleted; read to its end, then closed
   */
  detached: boolean;
  /** the file has no name left at all (nlink 0) */
  deleted = false;
  /** a rotated file's name in the directory now, when found: its positions go under it */
  declare renamedTo: string | undefined;
  /** when the file last grew (or was detached), epoch ms */
  grewAt = Date.now();

  constructor(
    init: TailInit,
    private readonly env: TailEnv,
  ) {
    Object.assign(this, init);
    this.detached = init.renamedTo !== undefined;
    this.order = new InOrder((end) => {
      this.acked = end;
      if (this.order.outstanding === 0) env.settled(this);
    });
  }

  /** The acknowledged position, as a checkpoint keeps it. */
  position(): FilePosition {
    const { acked } = this;
    return {
      inode: this.inode,
      offset: acked.offset,
      dev: this.dev,
      truncations: this.truncations,
      fingerprint: this.fingerprint,
      ...(acked.read === undefined ? {} : { read: acked.read, streams: acked.streams }),
    };
  }

  /** Looks at the file again: deleted, truncated (read again from its start under new ids), its size; returns the size. */
  async stat(): Promise<number> {
    const st = await this.fh.stat();
    if (this.detached && st.nlink === 0) this.deleted = true;
    if (st.size < this.offset) this.truncated();
    this.size = st.size;
    if (fingerprintShort(this.fingerprint, st.size)) this.fingerprint = await fingerprintOf(this.fh, st.size);
    return st.size;
  }

  /** Reads up to `size` (or on to the end the file has by then) into `buf`, a batch a read; false when `halted` stopped it. */
  async readTo(size: number, buf: Buffer, halted: () => boolean): Promise<boolean> {
    while (this.offset < size) {
      if (halted()) return false;
      const { bytesRead } = await this.fh.read(buf, 0, Math.min(buf.length, size - this.offset), this.offset);
      if (bytesRead === 0) {
        size = (await this.fh.stat()).size;
        if (size <= this.offset) break;
        continue;
      }
      this.offset += bytesRead;
      this.grewAt = Date.now();
      this.env.counters.bytes_read += bytesRead;
      const batch: Entry[] = [];
      this.emit(batch, this.reader.push(buf.subarray(0, bytesRead), batch));
    }
    const batch: Entry[] = [];
    const expired = this.reader.expire(batch);
    if (expired !== undefined) this.emit(batch, expired);
    return true;
  }

  /** Emits everything held open: the partial line, container partials, multiline entries. */
  flush(): void {
    const batch: Entry[] = [];
    const mark = this.reader.flush(batch);
    if (mark !== undefined) this.emit(batch, mark);
  }

  /** What is held open is emitted, and the file is read again from its start as the next truncation. */
  private truncated(): void {
    this.env.counters.truncations++;
    this.flush();
    this.offset = 0;
    this.acked = { offset: 0 };
    this.truncations++;
    this.reader.restart(this.env.idPrefix(this.dev, this.inode, this.born, this.truncations));
    this.fingerprint = undefined;
  }

  /** Hands a batch to the flow; the acknowledged position moves to `mark` once its entries are done. */
  private emit(batch: Entry[], mark: Resume): void {
    const done = this.order.add(mark);
    if (batch.length === 0) {
      done();
      return;
    }
    this.env.counters.total_entries += batch.length;
    this.env.ctx.emit(batch, done);
  }
}
