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
  zstdCompress(buf: Buffer, opts: object, cb: (err: Error | null, out: Buffer) => void): void;
  constants: { ZSTD_e_flush: number; ZSTD_c_compressionLevel: number };
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

/**
 * gzip level of the links (and of http_chain bodies): 1, zlib's fastest. On log lines it makes
 * 0.17–0.18 × raw (the bench input; JSON logs 0.10 ×) at about 1.3 µs of CPU per 250-byte entry;
 * level 6 (zlib's default) makes 0.13 × at three times the CPU. See docs/protocol.md.
 */
export const GZIP_LEVEL = 1;
/**
 * zstd level of the links: 1, its fastest standard level. On log lines it makes 0.144 × raw (the
 * bench input) against level 3's 0.139 (zstd's default), at about 0.45 µs of CPU per 200-byte
 * entry against 0.7–0.8 (Node.js 22, one stream flushed per 128 KiB write). See docs/protocol.md.
 */
export const ZSTD_LEVEL = 1;
/** zlib's zstd options of http_chain bodies: the links' level (ZSTD_LEVEL) */
const ZSTD_OPTIONS = { params: zstd ? { [zstd.constants.ZSTD_c_compressionLevel]: ZSTD_LEVEL } : {} };

/** One http_chain body compressed with zstd at the links' level; undefined where the runtime has no zstd. */
export const zstdBody: ((raw: Buffer) => Promise<Buffer>) | undefined = zstd
  ? (raw) => new Promise((resolve, reject) => zstd.zstdCompress(raw, ZSTD_OPTIONS, (err, out) => (err ? reject(err) : resolve(out))))
  : undefined;
/** zlib's memLevel for the link streams: its default, 8 (9, a hash table twice as large, measured no faster on log lines) */
export const GZIP_MEM_LEVEL = 8;

/**
 * Output chunk of the link streams: one deflate pass takes a whole sink write (hundreds of
 * entries) and one inflate pass gives the source a large read. Each pass is a round trip to
 * libuv's threadpool; zlib's default of 16 KiB made several per write and cut the source's
 * batches to about 60 entries.
 */
const DEFLATE_CHUNK = 64 * 1024;
const INFLATE_CHUNK = 256 * 1024;

/**
 * The compressing stream of a link for `codec`, at the links' level unless `level` (and gzip's
 * `memLevel`) says otherwise (the compression bench's table of levels). Each write is compressed
 * and flushed in one pass (so it reaches the peer whole, latency does not grow): the stream's own
 * flush flag does it, Z_SYNC_FLUSH for gzip, ZSTD_e_flush for zstd, not an empty write after it.
 */
export function streamCompressor(codec: string, level?: number, memLevel = GZIP_MEM_LEVEL): Transform {
  if (codec === 'zstd' && zstd) {
    const params = { [zstd.constants.ZSTD_c_compressionLevel]: level ?? ZSTD_LEVEL };
    return zstd.createZstdCompress({ chunkSize: DEFLATE_CHUNK, flush: zstd.constants.ZSTD_e_flush, params });
  }
  return zlib.createGzip({ level: level ?? GZIP_LEVEL, memLevel, chunkSize: DEFLATE_CHUNK, flush: zlib.constants.Z_SYNC_FLUSH });
}

/** The inflating stream for `codec` (one the source accepted). */
export function streamDecompressor(codec: string): Transform {
  if (codec === 'zstd' && zstd) return zstd.createZstdDecompress({ chunkSize: INFLATE_CHUNK });
  return zlib.createGunzip({ chunkSize: INFLATE_CHUNK });
}
