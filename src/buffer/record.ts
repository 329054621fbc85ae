// The disk buffer's record and segment formats (DESIGN.md §23). A record is a 16-byte header
// (payload length u32 LE, CRC-32 u32 LE, sequence u64 LE) and the entry as one JSON line without
// terminator. The CRC (`zlib.crc32` of the sequence and the payload, started from the length as
// its initial value) covers all three in one call, so a torn or flipped length is caught as well
// as a flipped payload byte. Pure and synchronous.

import { crc32 } from 'node:zlib';

export const HEADER_BYTES = 16;
/** The shortest payload (`{}`): a length below it is corruption. */
const MIN_PAYLOAD = 2;
/** The longest payload accepted, bytes: a larger length is corruption, never an allocation. */
export const MAX_PAYLOAD = 64 * 1024 * 1024;
/** The smallest record: how many records a run of bytes can hold at most. */
export const MIN_RECORD = HEADER_BYTES + MIN_PAYLOAD;

const TWO_32 = 2 ** 32;

/** A segment file of a buffer. */
export interface Segment {
  readonly firstSeq: number;
  readonly name: string;
  /** bytes durable in it (synced, or found at open) */
  size: number;
}

/** A segment's file name: its first sequence, 20 digits (so names sort as numbers do), `.seg`. */
export function segmentName(firstSeq: number): string {
  return `${String(firstSeq).padStart(20, '0')}.seg`;
}

const SEGMENT_NAME = /^(\d{20})\.seg$/;

/** The first sequence a segment's name says, or undefined for any other name. */
export function segmentSeq(name: string): number | undefined {
  const m = SEGMENT_NAME.exec(name);
  if (!m) return undefined;
  const n = Number(m[1]);
  return Number.isSafeInteger(n) ? n : undefined;
}

/**
 * Encodes payloads (JSON lines) as sealed records with sequences `firstSeq`, `firstSeq + 1`, …
 * into one buffer: the format at its plainest (the disk buffer writes its records with
 * RecordEncoder, encode.ts).
 */
export function encodeRecords(payloads: readonly string[], firstSeq: number): Buffer {
  let total = 0;
  for (const p of payloads) total += HEADER_BYTES + Buffer.byteLength(p);
  const buf = Buffer.allocUnsafe(total);
  let at = 0;
  for (let i = 0; i < payloads.length; i++) {
    const n = buf.write(payloads[i]!, at + HEADER_BYTES, 'utf8');
    writeHeader(buf, at, n, firstSeq + i);
    at += HEADER_BYTES + n;
  }
  sealRecords(buf);
  return buf;
}

/** The header, but its CRC, of the record at `at` whose payload (`n` bytes) is in place. */
export function writeHeader(buf: Uint8Array, at: number, n: number, seq: number): void {
  putU32(buf, at, n);
  putU32(buf, at + 8, seq % TWO_32);
  putU32(buf, at + 12, Math.floor(seq / TWO_32));
}

/** A u32, little-endian (bytes stored as they are: Buffer's writeUInt32LE checks its arguments first). */
function putU32(buf: Uint8Array, at: number, v: number): void {
  buf[at] = v;
  buf[at + 1] = v >>> 8;
  buf[at + 2] = v >>> 16;
  buf[at + 3] = v >>> 24;
}

/** Fills in the CRC of every record of `buf` (whole records, lengths and sequences in place). */
export function sealRecords(buf: Uint8Array): void {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  for (let at = 0; at + HEADER_BYTES <= buf.length; ) {
    const n = view.getUint32(at, true);
    const end = at + HEADER_BYTES + n;
    view.setUint32(at + 4, crc32(buf.subarray(at + 8, end), n), true);
    at = end;
  }
}

/** What one record at an offset is. */
export type RecordAt =
  | { readonly kind: 'ok'; readonly seq: number; readonly start: number; readonly end: number }
  /** the bytes end before the record does */
  | { readonly kind: 'short' }
  /** a length out of bounds or a CRC that does not match */
  | { readonly kind: 'bad' };

/** Reads the record at `at` in `buf` (bytes up to `limit`); `start`/`end` delimit its payload. */
export function recordAt(buf: Buffer, at: number, limit = buf.length): RecordAt {
  if (limit - at < HEADER_BYTES) return { kind: 'short' };
  const n = buf.readUInt32LE(at);
  if (n < MIN_PAYLOAD || n > MAX_PAYLOAD) return { kind: 'bad' };
  const end = at + HEADER_BYTES + n;
  if (end > limit) return { kind: 'short' };
  const crc = crc32(buf.subarray(at + 8, end), n);
  if (crc !== buf.readUInt32LE(at + 4)) return { kind: 'bad' };
  const seq = buf.readUInt32LE(at + 8) + buf.readUInt32LE(at + 12) * TWO_32;
  return { kind: 'ok', seq, start: at + HEADER_BYTES, end };
}

/** What a whole segment's bytes hold, for recovery at start. */
export interface SegmentScan {
  /** sequence of the last whole record, or undefined when none */
  readonly lastSeq: number | undefined;
  /** where the whole records end */
  readonly validEnd: number;
  /**
   * What follows `validEnd`: nothing; a torn tail (a record cut short, or a bad one that reaches
   * the end, or only zero bytes: what a crash mid-write leaves); or corruption with whole bytes after.
   */
  readonly after: 'end' | 'torn' | 'corrupt';
}

/** Scans a segment's bytes from the start. */
export function scanSegment(buf: Buffer): SegmentScan {
  let at = 0;
  let lastSeq: number | undefined;
  while (at < buf.length) {
    const r = recordAt(buf, at);
    if (r.kind === 'ok') {
      lastSeq = r.seq;
      at = r.end;
      continue;
    }
    if (r.kind === 'short' || allZero(buf, at) || endsAtEnd(buf, at)) return { lastSeq, validEnd: at, after: 'torn' };
    return { lastSeq, validEnd: at, after: 'corrupt' };
  }
  return { lastSeq, validEnd: at, after: 'end' };
}

function allZero(buf: Buffer, from: number): boolean {
  for (let i = from; i < buf.length; i++) if (buf[i] !== 0) return false;
  return true;
}

/** A bad record whose own length reaches exactly the end: the last write, torn. */
function endsAtEnd(buf: Buffer, at: number): boolean {
  return buf.length - at >= 4 && at + HEADER_BYTES + buf.readUInt32LE(at) === buf.length;
}
