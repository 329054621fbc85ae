// Opening a file of a `file` source at a position: the position checked against the file's
// identity (inode, device, first bytes) so that it is never applied to another file, what a
// predecessor had open there carried over, and the file's line reader made (DESIGN.md §15, §21).

import type { Stats } from 'node:fs';
import { type FileHandle, realpath } from 'node:fs/promises';
import { basename } from 'node:path';
import { containerLinkMeta, type KubernetesMeta, podLogMeta } from '../lines/kubernetes.js';
import type { Resume } from '../lines/line.js';
import type { MultilineRules } from '../lines/multiline.js';
import { LineReader } from '../lines/reader.js';
import type { FileSourceConfig } from './file-config.js';
import { fingerprintOf, sameContent } from './file-identity.js';
import { Tail, type TailEnv } from './file-tail.js';
import type { FilePosition } from './types.js';

/** A position a file is resumed from, and where to start instead when the file is not the one it names. */
export interface Resumed {
  readonly pos: FilePosition;
  readonly otherwise: (size: number) => number;
}

/** How a file is to be opened. */
export interface OpenAt {
  readonly path: string;
  readonly inode: number;
  readonly offset: number;
  /** the name a predecessor reported a rotated file under: only that inode will do, and it is tailed as detached */
  readonly rotatedFrom?: string;
  /** the position `offset` comes from: a file whose content does not match it (the inode was used again) is another file */
  readonly resumed?: Resumed;
}

/** What opening a file needs of its source. */
export interface OpenEnv extends TailEnv {
  readonly cfg: FileSourceConfig;
  readonly multiline: MultilineRules | undefined;
  /** the open file with this inode, if any */
  open(inode: number): Tail | undefined;
}

/** Where reading a file opened as `fh` starts, or undefined when it is not the file `at` means. */
async function startOf(fh: FileHandle, at: OpenAt): Promise<{ st: Stats; inode: number; offset: number; resume: Resume; truncations: number } | undefined> {
  const st = await fh.stat();
  const { resumed, rotatedFrom } = at;
  let { inode, offset } = at;
  let truncations = 0;
  /** what a predecessor had open at its position: delivered lines past it are passed over */
  let resume: Resume = { offset };
  if (resumed && st.ino === inode) {
    const known = (resumed.pos.dev === undefined || resumed.pos.dev === st.dev) && (await sameContent(fh, st.size, resumed.pos));
    if (known) {
      truncations = resumed.pos.truncations ?? 0;
      if (resumed.pos.read !== undefined && resumed.pos.offset === offset) resume = { offset, read: resumed.pos.read, streams: resumed.pos.streams ?? {} };
    } else if (rotatedFrom !== undefined) return undefined;
    else offset = resumed.otherwise(st.size);
  }
  // a handed-over file is known by its inode alone: one shorter than its position is not it
  // (the inode was freed and used again during the handover)
  if ((st.ino !== inode || st.size < offset) && rotatedFrom !== undefined) return undefined;
  if (st.ino !== inode) {
    // replaced between the scan and the open: it is newer still, read from its start
    offset = 0;
    inode = st.ino;
  }
  if (offset > st.size) offset = 0;
  if (offset !== resume.offset) resume = { offset };
  return { st, inode, offset, resume, truncations };
}

/** `source` and `fields.k8s` of the file at `path` (with `kubernetes_metadata`). */
async function kubernetesOf(cfg: FileSourceConfig, path: string): Promise<KubernetesMeta | undefined> {
  if (!cfg.kubernetes_metadata) return undefined;
  const direct = podLogMeta(path);
  if (direct) return direct;
  // a /var/log/containers link: its target under /var/log/pods says more (uid, restart count)
  const target = await realpath(path).catch(() => path);
  return podLogMeta(target) ?? containerLinkMeta(path);
}

/**
 * A Tail of the file open as `fh`, as `at` says; the open one when the path turned out to lead to
 * a file already open; undefined when it is not the file `at` means (then `fh` is closed).
 */
export async function tailOf(fh: FileHandle, at: OpenAt, env: OpenEnv): Promise<Tail | undefined> {
  const start = await startOf(fh, at);
  const existing = start === undefined || start.inode === at.inode ? undefined : env.open(start.inode);
  if (start === undefined || existing !== undefined) {
    await fh.close();
    return existing;
  }
  const { cfg, ctx } = env;
  const { st, inode, offset, resume, truncations } = start;
  const name = at.rotatedFrom ?? at.path;
  const k8s = await kubernetesOf(cfg, name);
  const source = k8s?.container ?? basename(name);
  const reader = new LineReader(
    {
      format: cfg.container_format,
      maxLineBytes: cfg.max_line_bytes,
      multiline: env.multiline,
      raw: cfg.raw,
      name: basename(name),
      source,
      k8s,
      // the node a container's entries were produced on: this one (§21), set at the source so
      // that an edge writing to a local or an otlp sink keeps it, not only after a chain hop
      node: k8s === undefined ? undefined : ctx.node,
    },
    env.counters,
    { offset, resume, idPrefix: env.idPrefix(st.dev, inode, st.birthtimeMs, truncations) },
  );
  // Reading never starts inside a line: there, the head was had before (a predecessor cutting an
  // over-long line reports the cut point) or was there before the start (from = "end").
  if (offset > 0) {
    const byte = Buffer.alloc(1);
    const { bytesRead } = await fh.read(byte, 0, 1, offset - 1);
    if (bytesRead === 1 && byte[0] !== 10) reader.skipLine();
  }
  const init = {
    path: name,
    source,
    k8s,
    inode,
    dev: st.dev,
    born: st.birthtimeMs,
    fh,
    reader,
    offset,
    acked: resume,
    size: st.size,
    truncations,
    fingerprint: await fingerprintOf(fh, st.size),
    renamedTo: at.rotatedFrom === undefined ? undefined : at.path,
  };
  return new Tail(init, env);
}
