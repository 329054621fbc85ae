// Link compression (DESIGN.md §25): the codecs a chain sink may offer and a chain source accepts,
// as Node.js zlib streams. `zstd` only where the runtime has it (zlib.createZstdCompress, Node.js
// 22.15 and later); a sink configured for it on another runtime fails to build, naming the version.

import * as zlib from 'node:zlib';
import type { Transform } from 'node:stream';

/** The `compression` key of chain sinks. */
export type Compression = 'none' | 'gzip' | 'zstd';
export const COMPRESSIONS: readonly Compression[] = ['none', 'gzip', 'zstd'];

/** The zstd half of zlib, present on Node.js 22.15+ / 23.8+. */
interface ZstdZlib {
  createZstdCompress(opts?: object): Transform;
  createZstdDecompress(opts?: object): Transform;
  zstdCompress(buf: Buffer, cb: (err: Error | null, out: Buffer) => void): void;
  constants: { ZSTD_e_flush: number };
}
const zstd: ZstdZlib | undefined = typeof (zlib as unknown as Partial<ZstdZlib>).createZstdCompress === 'function' ? (zlib as unknown as ZstdZlib) : undefined;

/** This runtime has zstd. */
export const hasZstd = (): boolean => zstd !== undefined;

/** Why `compression = "zstd"` cannot be built here; undefined when it can. */
export function zstdMissing(): string | undefined {
  return zstd ? undefined : `zstd needs a Node.js runtime whose zlib has it (22.15 or later); this one is ${process.version}`;
}

/** Stream codecs a chain source takes, preferred first. */
export const STREAM_CODECS: readonly string[] = zstd ? ['zstd', 'gzip'] : ['gzip'];

/** What a sink offers for its configured compression, preferred first; empty for none. */
export function offeredCodecs(c: Compression): string[] {
  if (c === 'zstd') return ['zstd', 'gzip'];
  if (c === 'gzip') return ['gzip'];
  return [];
}

/** A compressing stream for `codec` and how to flush it so every write reaches the peer whole. */
export function streamCompressor(codec: string): { stream: Transform; flush(cb?: () => void): void } {
  if (codec === 'zstd' && zstd) {
    const stream = zstd.createZstdCompress();
    return { stream, flush: (cb) => (stream as unknown as zlib.Zlib).flush(zstd.constants.ZSTD_e_flush, cb ?? (() => undefined)) };
  }
  // level 1: on log lines it already makes well under 0.2 × raw, at a fraction of level 6's CPU
  const stream = zlib.createGzip({ level: 1 });
  return { stream, flush: (cb) => stream.flush(zlib.constants.Z_SYNC_FLUSH, cb ?? (() => undefined)) };
}

/** The inflating stream for `codec` (one the source accepted). */
export function streamDecompressor(codec: string): Transform {
  if (codec === 'zstd' && zstd) return zstd.createZstdDecompress();
  return zlib.createGunzip();
}
