// Chain protocol version 2, the reading end: cuts a byte stream into the frames entry-frame.ts
// writes (the format is in docs/protocol.md) and makes entries and reports of them (a relay that
// needs no entry carries the frames on instead: frame-pass.ts). An ASCII
// frame's strings are slices of one Latin-1 text per read, so a string costs no decode of its own.

import type { Entry } from './entry.js';
import { isTime, parseJsonText } from './entry.js';
import { ASCII, BODY_HEAD_BYTES, FRAME_ENTRY, type FramedItem, HAS_FIELDS, HAS_ID, HAS_NODE, KNOWN_FLAGS, LENGTH_BYTES, LEVELS, NEGATIVE_TIME, readLength, readTime } from './entry-frame.js';

// ── Decoding ──────────────────────────────────────────────────────────────────────────────────

/** Node's Latin-1 and UTF-8 readers without `toString()`'s argument handling (see Utf8Writer). */
type SliceReader = Buffer & { latin1Slice(start: number, end: number): string; utf8Slice(start: number, end: number): string };
const latin1Of = (buf: Buffer, start: number, end: number): string => (buf as SliceReader).latin1Slice(start, end);

/**
 * One frame as the reader hands it on: its body is `buf[at..end)` (the kind first). The strings of
 * an ASCII frame are sliced from `text`, the Latin-1 text of `buf` from `base` (at most `limit`),
 * made when the first such frame of a read needs it and once per TEXT_BYTES after (see textOf).
 */
export interface Frame {
  buf: Buffer;
  at: number;
  end: number;
  base: number;
  limit: number;
  text: string | undefined;
  /** which read of which reader the frame came in: a number of its own for every read (see passFrame) */
  read: number;
}

/** Reads handed on so far, by every reader: each read's frames get the next number. */
let reads = 0;

/**
 * Cuts a byte stream into frames. Feed chunks; each whole frame goes to `onFrame` (the same Frame
 * object, filled anew: read it before returning). Returns false as soon as a frame's length is over
 * `maxBytes` (or is no version 2 length); the stream must then end. The frames before it are read.
 */
export class FrameReader {
  /** the start of a frame begun in an earlier chunk */
  private parts: Buffer[] = [];
  private partLen = 0;
  /** that frame's body length, once its prefix is in; -1 before */
  private partSize = -1;
  private readonly frame: Frame = { buf: Buffer.alloc(0), at: 0, end: 0, base: 0, limit: 0, text: undefined, read: 0 };

  constructor(private readonly maxBytes: number) {}

  /** a frame begun and not finished: at the end of a body, a frame cut short */
  get pending(): boolean {
    return this.partLen > 0;
  }

  private fits(size: number): boolean {
    return size >= 0 && size <= this.maxBytes;
  }

  push(chunk: Buffer, onFrame: (frame: Frame) => void): boolean {
    let at = 0;
    if (this.partLen > 0) {
      at = this.finishPart(chunk, onFrame);
      if (at < 0) return false;
      if (at >= chunk.length) return true;
    }
    // the whole frames of the chunk
    let end = at;
    let fits = true;
    while (end + LENGTH_BYTES <= chunk.length) {
      const size = readLength(chunk, end);
      if (!this.fits(size)) {
        fits = false;
        break;
      }
      if (end + LENGTH_BYTES + size > chunk.length) break;
      end += LENGTH_BYTES + size;
    }
    if (end > at) this.each(chunk, at, end, onFrame);
    if (!fits) return false;
    if (end < chunk.length) {
      // the next frame's start: copied, the caller may reuse the chunk
      const rest = Buffer.from(chunk.subarray(end));
      this.parts.push(rest);
      this.partLen = rest.length;
      this.partSize = rest.length >= LENGTH_BYTES ? readLength(rest, 0) : -1;
      if (rest.length >= LENGTH_BYTES && !this.fits(this.partSize)) return false;
    }
    return true;
  }

  /** Hands on the whole frames of `buf[from..to)`. */
  private each(buf: Buffer, from: number, to: number, onFrame: (frame: Frame) => void): void {
    const f = this.frame;
    f.buf = buf;
    f.base = from;
    f.limit = to;
    f.text = undefined;
    f.read = ++reads;
    for (let p = from; p < to; ) {
      f.at = p + LENGTH_BYTES;
      f.end = f.at + readLength(buf, p);
      p = f.end;
      onFrame(f);
    }
  }

  /**
   * Completes the frame begun earlier with the head of `chunk`; returns where the chunk's own
   * frames begin (its length when it only added to the frame), or -1 when the frame is over the bound.
   */
  private finishPart(chunk: Buffer, onFrame: (frame: Frame) => void): number {
    let at = 0;
    if (this.partSize < 0) {
      at = Math.min(LENGTH_BYTES - this.partLen, chunk.length);
      this.parts.push(Buffer.from(chunk.subarray(0, at)));
      this.partLen += at;
      if (this.partLen < LENGTH_BYTES) return chunk.length;
      const head = Buffer.concat(this.parts, this.partLen);
      this.parts = [head];
      this.partSize = readLength(head, 0);
      if (!this.fits(this.partSize)) return -1;
    }
    const whole = LENGTH_BYTES + this.partSize;
    const take = Math.min(whole - this.partLen, chunk.length - at);
    // copied: the caller may reuse the chunk
    this.parts.push(Buffer.from(chunk.subarray(at, at + take)));
    this.partLen += take;
    at += take;
    if (this.partLen < whole) return at;
    const buf = Buffer.concat(this.parts, whole);
    this.parts = [];
    this.partLen = 0;
    this.partSize = -1;
    this.each(buf, 0, whole, onFrame);
    return at;
  }
}

/**
 * Most bytes of one Latin-1 text. A read may be far larger (an inflated link's 256 KiB, a whole
 * http_chain body); a string over V8's regular object size (128 KiB) is made in its large-object
 * space, which cost a compressed link's receiver 4 × the time of its texts and more collections.
 */
const TEXT_BYTES = 64 * 1024;

/**
 * The Latin-1 text of the frame's read from `f.base`, made on first use and anew (from this
 * frame's body) once a string ends past it: TEXT_BYTES, or the frame when it is larger.
 */
function textOf(f: Frame, to: number): string {
  let text = f.text;
  if (text === undefined || to - f.base > text.length) {
    f.base = f.at;
    text = f.text = latin1Of(f.buf, f.at, Math.min(f.limit, Math.max(f.end, f.at + TEXT_BYTES)));
  }
  return text;
}

/** `buf[from..to)` as a string: of an ASCII frame a slice of its read's text, else decoded as UTF-8. */
export function stringOf(f: Frame, from: number, to: number, ascii: boolean): string {
  if (!ascii) return (f.buf as SliceReader).utf8Slice(from, to);
  const text = textOf(f, to);
  return text.slice(from - f.base, to - f.base);
}

/** The last string read at one place of the frames (their source, their node), and its bytes. */
interface LastString {
  readonly bytes: Buffer;
  length: number;
  ascii: boolean;
  text: string;
}

/** Strings up to this many bytes are remembered by repeatedString. */
const LAST_STRING_BYTES = 64;
const lastString = (): LastString => ({ bytes: Buffer.alloc(LAST_STRING_BYTES), length: -1, ascii: false, text: '' });
const LAST_SOURCE = lastString();
const LAST_NODE = lastString();

/**
 * `buf[from..to)` as stringOf reads it, the same string as last time when the bytes are: a link's
 * entries mostly share their source and node, and one string for all of them is one allocation
 * instead of one per entry, and an equality test of a pointer where the json format compares them
 * with the last ones written (core/entry-json.ts).
 */
function repeatedString(f: Frame, from: number, to: number, ascii: boolean, last: LastString): string {
  const n = to - from;
  if (n > LAST_STRING_BYTES) return stringOf(f, from, to, ascii);
  const { buf } = f;
  const bytes = last.bytes;
  if (n === last.length && ascii === last.ascii) {
    let k = 0;
    while (k < n && buf[from + k] === bytes[k]) k++;
    if (k === n) return last.text;
  }
  buf.copy(bytes, 0, from, to);
  last.length = n;
  last.ascii = ascii;
  // a string of its own: a slice would keep the read's whole text alive
  last.text = ` ${stringOf(f, from, to, ascii)}`.slice(1);
  return last.text;
}

/** Where an entry frame's id lies (its length prefix); -1 when it has none or the frame is cut short. */
function idSpan(f: Frame): number {
  if (f.end - f.at < BODY_HEAD_BYTES || (f.buf[f.at + 1]! & HAS_ID) === 0) return -1;
  return f.at + BODY_HEAD_BYTES;
}

/**
 * The id of an entry frame, read before the rest (a dedup window drops a copy before it is
 * decoded); undefined when the frame has none or is no entry frame.
 */
export function frameIdOf(f: Frame): string | undefined {
  if (f.buf[f.at] !== FRAME_ENTRY) return undefined;
  const at = idSpan(f);
  if (at < 0 || at + LENGTH_BYTES > f.end) return undefined;
  const n = readLength(f.buf, at);
  const from = at + LENGTH_BYTES;
  return n >= 0 && from + n <= f.end ? stringOf(f, from, from + n, (f.buf[f.at + 1]! & ASCII) !== 0) : undefined;
}

/**
 * Where the string whose length prefix is at `at` ends; -1 when it runs past `end` or `at` is -1.
 * A function of its own, not a closure over the decode's position: that closure was an allocation
 * per entry (a function and its context, more than the entry object itself).
 */
export function stringEnd(buf: Buffer, at: number, end: number): number {
  if (at < 0 || at + LENGTH_BYTES > end) return -1;
  const n = readLength(buf, at);
  const from = at + LENGTH_BYTES;
  return n >= 0 && from + n <= end ? from + n : -1;
}

/**
 * Decodes an entry frame, as decodeEntry does a line; undefined when it is malformed (a parse
 * error). A received entry without `node` gets `node`; one without time or source gets `now` /
 * `fallbackSource`. `id`: what frameIdOf read, when it was read already.
 */
export function decodeEntryFrame(f: Frame, node: string | undefined, now: number, fallbackSource: string, id = frameIdOf(f)): Entry | undefined {
  const { buf, end } = f;
  if (buf[f.at] !== FRAME_ENTRY || end - f.at < BODY_HEAD_BYTES) return undefined;
  const flags = buf[f.at + 1]!;
  const levelCode = buf[f.at + 2]!;
  if ((flags & ~KNOWN_FLAGS) !== 0 || levelCode >= LEVELS.length) return undefined;
  const ascii = (flags & ASCII) !== 0;
  const magnitude = readTime(buf, f.at + 3);
  const t = flags & NEGATIVE_TIME ? -magnitude : magnitude;
  // each string: its length, then its bytes (from at + LENGTH_BYTES); at is -1 once one runs past the frame
  let at = f.at + BODY_HEAD_BYTES;
  if (flags & HAS_ID) {
    at = stringEnd(buf, at, end);
    if (id === undefined) return undefined;
  }
  const sourceAt = at + LENGTH_BYTES;
  at = stringEnd(buf, at, end);
  const source = at < 0 ? '' : repeatedString(f, sourceAt, at, ascii, LAST_SOURCE);
  let entryNode = node;
  if (flags & HAS_NODE) {
    const from = at + LENGTH_BYTES;
    at = stringEnd(buf, at, end);
    if (at > from) entryNode = repeatedString(f, from, at, ascii, LAST_NODE);
  }
  let fields: unknown;
  if (flags & HAS_FIELDS) {
    const from = at + LENGTH_BYTES;
    at = stringEnd(buf, at, end);
    if (at < 0) return undefined;
    fields = parseJsonText(stringOf(f, from, at, ascii));
    if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) return undefined;
  }
  if (at < 0) return undefined;
  const time = isTime(t) ? t : now;
  const entrySource = source === '' ? fallbackSource : source;
  const message = stringOf(f, at, end, ascii);
  const level = LEVELS[levelCode];
  // a relayed line's usual shape made at once, keys in the order below: each key added after the
  // literal's own went to a properties array of its own, one more allocation per entry
  if (entryNode && !level && fields === undefined && id !== undefined) return { time, source: entrySource, message, node: entryNode, id };
  const entry: Entry = { time, source: entrySource, message };
  if (entryNode) entry.node = entryNode;
  if (level) entry.level = level;
  if (fields !== undefined) entry.fields = fields as Record<string, unknown>;
  if (id !== undefined) entry.id = id;
  return entry;
}

/**
 * Gives the items of `items[from..to)` whose entry releaseEntries let go their entry again, decoded
 * from their frame (what a version 2 peer would have received): a link that must send them in
 * version 1 after all (it reconnected to an older peer, or took them over from another link).
 */
export function restoreEntries(items: readonly FramedItem[], from: number, to: number, now: number, fallbackSource: string): void {
  for (let i = from; i < to; i++) {
    const item = items[i]!;
    if ((item.entry as Entry | undefined) !== undefined || item.frameBuf === undefined) continue;
    const f: Frame = { buf: item.frameBuf, at: item.frameAt + LENGTH_BYTES, end: item.frameEnd, base: item.frameAt, limit: item.frameEnd, text: undefined, read: 0 };
    // a frame this node wrote decodes; the fallback keeps a sink going whatever happens
    (item as unknown as { entry: Entry }).entry = decodeEntryFrame(f, undefined, now, fallbackSource) ?? { time: now, source: fallbackSource, message: '' };
  }
}

/** The report a report frame carries (unchecked: see asNodeReport); undefined when it is no JSON. */
export function reportOfFrame(f: Frame): unknown {
  return parseJsonText(stringOf(f, f.at + 1, f.end, false));
}
