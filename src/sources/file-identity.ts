// A file's identity beyond its inode: a fingerprint of its first bytes, so a checkpoint or a
// handed-over position is not applied to another file that got the same inode (DESIGN.md §15).

import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { idPrefix } from '../core/ids.js';
import type { FilePosition, SourceContext } from './types.js';

/** Bytes of a file's head hashed into its fingerprint. */
export const FINGERPRINT_BYTES = 256;

/** `<n>:<hash>` of the first n (up to FINGERPRINT_BYTES) bytes, or of exactly `n` when given; undefined for an empty file. */
export async function fingerprintOf(fh: FileHandle, size: number, n = Math.min(size, FINGERPRINT_BYTES)): Promise<string | undefined> {
  if (n === 0 || size < n) return undefined;
  const head = Buffer.alloc(n);
  const { bytesRead } = await fh.read(head, 0, n, 0);
  if (bytesRead < n) return undefined;
  return `${n}:${createHash('sha1').update(head).digest('base64url').slice(0, 16)}`;
}

/** True when the file open as `fh` has the fingerprint a position recorded (or it recorded none). */
export async function sameContent(fh: FileHandle, size: number, pos: FilePosition): Promise<boolean> {
  if (pos.fingerprint === undefined) return true;
  const n = Number.parseInt(pos.fingerprint, 10);
  return Number.isInteger(n) && (await fingerprintOf(fh, size, n)) === pos.fingerprint;
}

/** Whether a fingerprint covers fewer bytes than it could (the file was shorter): taken again as the file grows. */
export function fingerprintShort(fingerprint: string | undefined, size: number): boolean {
  const n = fingerprint === undefined ? 0 : Number.parseInt(fingerprint, 10);
  return n < FINGERPRINT_BYTES && size > n;
}

/**
 * The file's part of its lines' ids (DESIGN.md §14): device, inode, birth time and truncations;
 * undefined when the pipeline stamps no ids. The birth time tells a file from an earlier one that
 * had its inode (kubelet gzips a rotated log and deletes it; the next rotation's new file often
 * gets the freed inode): without it, the new file's lines would repeat the old one's ids and a
 * dedup collector would drop them.
 */
export function fileIdPrefix(ctx: SourceContext, pluginId: string, dev: number, inode: number, born: number, truncations: number): string | undefined {
  if (ctx.idNode === undefined) return undefined;
  return born > 0 ? idPrefix(ctx.idNode, ctx.pipeline, pluginId, dev, inode, born, truncations) : idPrefix(ctx.idNode, ctx.pipeline, pluginId, dev, inode, truncations);
}
