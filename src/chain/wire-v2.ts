// Chain protocol version 2 (DESIGN.md §25; the format is in docs/protocol.md): after a hello whose
// offer `"version":2` the source accepted, the sink → source stream is length-prefixed binary
// frames instead of JSON lines. An entry frame carries its time as a number, its level as a code,
// and its strings as their UTF-8 bytes, the message last, as read: nothing is escaped on the way
// out or searched for escapes on the way in. Numbers are written 7 bits a byte, so a frame of ASCII
// strings is ASCII through and through (and says so in its flags): the receiving end makes each of
// its strings a slice of one Latin-1 text per read, and a string costs no decode of its own.
// Version 1 (wire.ts, protocol.ts) stays: a link uses version 2 only when both ends said so.

import type { Ticket } from '../core/ack.js';
import { fieldsJson, hasKeys } from '../core/entry-json.js';
import type { Entry, Level } from '../core/entry.js';
import { isTime, parseJsonText } from '../core/entry.js';
import type { Utf8Writer } from '../core/lines-buffer.js';
import type { SinkItem } from '../core/sink-item.js';
import { encodeWire, type WireItem } from './wire.js';

/** The version a sink offers in its hello (`"offer":{"version":2}`) and a source accepts. */
export const PROTOCOL_V2 = 2;

/** Frame kinds: the byte after the length. */
export const FRAME_ENTRY = 1;
export const FRAME_REPORT = 2;

/** Entry frame flags: which optional strings it has, whether all its strings are ASCII, the time's sign. */
const HAS_ID = 1;
const HAS_NODE = 2;
const HAS_FIELDS = 4;
const ASCII = 8;
const NEGATIVE_TIME = 16;
const KNOWN_FLAGS = HAS_ID | HAS_NODE | HAS_FIELDS | ASCII | NEGATIVE_TIME;

/** Level codes 1–6; 0 is no level. */
const LEVELS: readonly (Level | undefined)[] = [undefined, 'TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'];
const LEVEL_CODES: Readonly<Record<Level, number>> = { TRACE: 1, DEBUG: 2, INFO: 3, WARN: 4, ERROR: 5, FATAL: 6 };

/** Bytes of a length (a frame's, a string's): 5 bytes of 7 bits, most significant first. */
const LENGTH_BYTES = 5;
/** Bytes of the time: its magnitude in 8 bytes of 7 bits (56 bits; epoch ms need 53), most significant first. */
const TIME_BYTES = 8;
/** Bytes of an entry frame's body before its strings: kind, flags, level, time. */
const BODY_HEAD_BYTES = 3 + TIME_BYTES;
/** The length, the body's head, and the length prefixes of id, source, node and fields. */
const FIXED_BYTES = LENGTH_BYTES + BODY_HEAD_BYTES + 4 * LENGTH_BYTES;
/** UTF-8 bytes a UTF-16 unit may take. */
const MAX_BYTES_PER_UNIT = 3;

// ── Items ─────────────────────────────────────────────────────────────────────────────────────

/**
 * A sink item with room for its chain line (version 1, WireItem) and its frame (version 2):
 * `frameBuf[frameAt..frameEnd)`, written by the first sink that sends it in version 2 (or by the
 * pipeline ahead of it) and kept for the others and for a resend. Two links of one edge may speak
 * different versions during a rolling upgrade: each encoding is made once and kept.
 */
export interface FramedItem extends WireItem {
  frameBuf: Buffer | undefined;
  frameAt: number;
  frameEnd: number;
  frameCompleted: boolean;
}

/** The pipeline's item for an entry when one of its sinks sends chain lines or frames. */
export function framedItem(entry: Entry, line: string, ticket: Ticket | undefined): FramedItem {
  return { entry, line, ticket, paths: 0, wireBuf: undefined, wireAt: 0, wireEnd: 0, wireCompleted: false, frameBuf: undefined, frameAt: 0, frameEnd: 0, frameCompleted: false };
}

/** A chain sink's batch: the pipeline made every item with framedItem() (or wireItem(): the frame fields are then added when written). */
export const framedItems = (batch: SinkItem[]): FramedItem[] => batch as FramedItem[];

/**
 * Writes `items[from..to)` ahead for every version in `versions` (bit 1 << v: what the pipeline's
 * chain sinks speak now), so a link whose window opens only sends. Returns nothing: each sink counts
 * what it had to complete when it takes the batch.
 */
export function encodeAhead(items: readonly FramedItem[], versions: number, now: number, fallbackSource: string): void {
  if (versions & (1 << 1)) encodeWire(items, 0, items.length, now, fallbackSource);
  if (versions & (1 << PROTOCOL_V2)) encodeFrames(items, 0, items.length, now, fallbackSource);
}

/**
 * Gives `items[from..to)` their chain encoding in `version` (see encodeWire, encodeFrames);
 * returns how many of the range had to be completed (no time or source).
 */
export function encodeFor(version: number, items: readonly FramedItem[], from: number, to: number, now: number, fallbackSource: string): number {
  return version === PROTOCOL_V2 ? encodeFrames(items, from, to, now, fallbackSource) : encodeWire(items, from, to, now, fallbackSource);
}

/**
 * Calls `onBytes` with the encoding in `version` of `items[from..to)` (made by encodeFor), the
 * ones that lie next to each other in one Buffer as one slice.
 */
export function eachRun(version: number, items: readonly FramedItem[], from: number, to: number, onBytes: (bytes: Buffer) => void): void {
  const v2 = version === PROTOCOL_V2;
  let buf: Buffer | undefined;
  let start = 0;
  let end = 0;
  for (let i = from; i < to; i++) {
    const item = items[i]!;
    const b = v2 ? item.frameBuf : item.wireBuf;
    const at = v2 ? item.frameAt : item.wireAt;
    if (b === buf && at === end) {
      end = v2 ? item.frameEnd : item.wireEnd;
      continue;
    }
    if (buf) onBytes(buf.subarray(start, end));
    buf = b;
    start = at;
    end = v2 ? item.frameEnd : item.wireEnd;
  }
  if (buf) onBytes(buf.subarray(start, end));
}

// ── Encoding ──────────────────────────────────────────────────────────────────────────────────

/** `n` (below 2^32: a Buffer's length) as LENGTH_BYTES bytes of 7 bits. */
function putLength(buf: Buffer, at: number, n: number): void {
  buf[at] = n >>> 28;
  buf[at + 1] = (n >>> 21) & 0x7f;
  buf[at + 2] = (n >>> 14) & 0x7f;
  buf[at + 3] = (n >>> 7) & 0x7f;
  buf[at + 4] = n & 0x7f;
}

/** A length written by putLength; -1 when a byte has its high bit set (no version 2 length). */
function readLength(buf: Buffer, at: number): number {
  const a = buf[at]!;
  const b = buf[at + 1]!;
  const c = buf[at + 2]!;
  const d = buf[at + 3]!;
  const e = buf[at + 4]!;
  if ((a | b | c | d | e) & 0x80) return -1;
  return a * 0x10000000 + ((b << 21) | (c << 14) | (d << 7) | e);
}

/** `ms` (a whole number, |ms| < 2^53) as TIME_BYTES bytes of 7 bits; its sign goes in the flags. */
function putTime(buf: Buffer, at: number, ms: number): void {
  const abs = Math.abs(ms);
  const hi = Math.floor(abs / 0x10000000);
  const lo = abs - hi * 0x10000000;
  buf[at] = (hi >>> 21) & 0x7f;
  buf[at + 1] = (hi >>> 14) & 0x7f;
  buf[at + 2] = (hi >>> 7) & 0x7f;
  buf[at + 3] = hi & 0x7f;
  buf[at + 4] = (lo >>> 21) & 0x7f;
  buf[at + 5] = (lo >>> 14) & 0x7f;
  buf[at + 6] = (lo >>> 7) & 0x7f;
  buf[at + 7] = lo & 0x7f;
}

/** The magnitude putTime wrote; NaN when a byte has its high bit set. */
function readTime(buf: Buffer, at: number): number {
  let hi = 0;
  let lo = 0;
  let high = 0;
  for (let i = 0; i < 4; i++) {
    hi = (hi << 7) | buf[at + i]!;
    lo = (lo << 7) | buf[at + 4 + i]!;
    high |= buf[at + i]! | buf[at + 4 + i]!;
  }
  return high & 0x80 ? Number.NaN : hi * 0x10000000 + lo;
}

/** Set by putString and writeFrame: a string written had a byte beyond ASCII. */
let beyondAscii = false;

/** `s` with its length prefix at `at`; returns the end. */
function putString(buf: Utf8Writer, at: number, s: string): number {
  const n = buf.utf8Write(s, at + LENGTH_BYTES);
  putLength(buf, at, n);
  if (n !== s.length) beyondAscii = true;
  return at + LENGTH_BYTES + n;
}

/** A string's bytes with their length prefix, and whether they are ASCII. */
interface StringBytes {
  readonly bytes: Buffer;
  readonly ascii: boolean;
}

/** The bytes of the last value: a file's lines share their source, a relay's link their node. */
function lastBytes(): (value: string) => StringBytes {
  let last: string | undefined;
  let out: StringBytes = { bytes: Buffer.alloc(LENGTH_BYTES), ascii: true };
  return (value) => {
    if (value !== last) {
      const utf8 = Buffer.from(value);
      const bytes = Buffer.allocUnsafe(LENGTH_BYTES + utf8.length);
      putLength(bytes, 0, utf8.length);
      utf8.copy(bytes, LENGTH_BYTES);
      out = { bytes, ascii: utf8.length === value.length };
      last = value;
    }
    return out;
  };
}
const sourceBytes = lastBytes();
const nodeBytes = lastBytes();

/** Copies the cached bytes of a string; returns the end. */
function putCached(buf: Buffer, at: number, s: StringBytes): number {
  const bytes = s.bytes;
  for (let i = 0; i < bytes.length; i++) buf[at + i] = bytes[i]!;
  if (!s.ascii) beyondAscii = true;
  return at + bytes.length;
}

/** Set by writeFrame: the entry had to be completed (no time → now, no source → the pipeline). */
let completed = false;

/** Writes `e` as one entry frame at `at` (room for frameBound() bytes); returns the end. */
function writeFrame(buf: Utf8Writer, at: number, e: Entry, fields: string | undefined, now: number, fallbackSource: string): number {
  completed = false;
  beyondAscii = false;
  let time = e.time;
  if (!isTime(time)) {
    time = now;
    completed = true;
  }
  let source = e.source;
  if (typeof source !== 'string' || source === '') {
    source = fallbackSource;
    completed = true;
  }
  const start = at;
  const id = e.id;
  const node = e.node;
  // whole milliseconds, as version 1's RFC 3339 text carries them
  const ms = Math.trunc(time);
  const flags = (typeof id === 'string' ? HAS_ID : 0) | (node ? HAS_NODE : 0) | (fields !== undefined ? HAS_FIELDS : 0) | (ms < 0 ? NEGATIVE_TIME : 0);
  const body = at + LENGTH_BYTES;
  buf[body] = FRAME_ENTRY;
  buf[body + 2] = e.level ? (LEVEL_CODES[e.level] ?? 0) : 0;
  putTime(buf, body + 3, ms);
  at = body + BODY_HEAD_BYTES;
  if (typeof id === 'string') at = putString(buf, at, id);
  at = putCached(buf, at, sourceBytes(source));
  if (node) at = putCached(buf, at, nodeBytes(node));
  if (fields !== undefined) at = putString(buf, at, fields);
  const message = typeof e.message === 'string' ? e.message : String(e.message ?? '');
  const n = buf.utf8Write(message, at);
  if (n !== message.length) beyondAscii = true;
  at += n;
  buf[body + 1] = beyondAscii ? flags : flags | ASCII;
  putLength(buf, start, at - body);
  return at;
}

/** The entry's fields as JSON text, or undefined when it has none. */
const fieldsText = (e: Entry): string | undefined => (e.fields && hasKeys(e.fields) ? fieldsJson(e.fields) : undefined);

/** Most bytes writeFrame may write for `e` (its fields as JSON text). */
function frameBound(e: Entry, fields: string | undefined, fallbackSource: string): number {
  const text = String(e.message ?? '').length + (e.node?.length ?? 0) + Math.max(e.source?.length ?? 0, fallbackSource.length) + (e.id?.length ?? 0) + (fields?.length ?? 0);
  return FIXED_BYTES + MAX_BYTES_PER_UNIT * text;
}

/**
 * Frames are written one after another into slabs of this many bytes (a frame larger than that
 * gets a slab of its own): frames of consecutive items, of one batch or the next, lie next to each
 * other and go out as one write. A slab lives as long as a frame in it is held (unacknowledged).
 */
const SLAB_BYTES = 128 * 1024;
let slab = Buffer.alloc(0) as Utf8Writer;
let slabAt = 0;

/**
 * Gives every item of `items[from..to)` its frame (`frameBuf[frameAt..frameEnd)`): the ones no
 * other sink of the pipeline framed yet are written, in order, into the current slab. Returns how
 * many of the range had to be completed.
 */
export function encodeFrames(items: readonly FramedItem[], from: number, to: number, now: number, fallbackSource: string): number {
  let synthesized = 0;
  for (let i = from; i < to; i++) {
    const item = items[i]!;
    if (item.frameBuf !== undefined) {
      if (item.frameCompleted) synthesized++;
      continue;
    }
    const e = item.entry;
    const fields = fieldsText(e);
    const bound = frameBound(e, fields, fallbackSource);
    if (slab.length - slabAt < bound) {
      slab = Buffer.allocUnsafe(Math.max(SLAB_BYTES, bound)) as Utf8Writer;
      slabAt = 0;
    }
    const end = writeFrame(slab, slabAt, e, fields, now, fallbackSource);
    item.frameBuf = slab;
    item.frameAt = slabAt;
    item.frameEnd = end;
    item.frameCompleted = completed;
    if (completed) synthesized++;
    slabAt = end;
  }
  return synthesized;
}

/** A node report (the JSON object a v1 `{"report":…}` line carries) as one report frame. */
export function reportFrame(report: object): Buffer {
  const json = Buffer.from(JSON.stringify(report));
  const frame = Buffer.allocUnsafe(LENGTH_BYTES + 1 + json.length);
  putLength(frame, 0, 1 + json.length);
  frame[LENGTH_BYTES] = FRAME_REPORT;
  json.copy(frame, LENGTH_BYTES + 1);
  return frame;
}

// ── Decoding ──────────────────────────────────────────────────────────────────────────────────

/** Node's Latin-1 and UTF-8 readers without `toString()`'s argument handling (see Utf8Writer). */
type SliceReader = Buffer & { latin1Slice(start: number, end: number): string; utf8Slice(start: number, end: number): string };
const latin1Of = (buf: Buffer, start: number, end: number): string => (buf as SliceReader).latin1Slice(start, end);

/**
 * One frame as the reader hands it on: its body is `buf[at..end)` (the kind first). The strings of
 * an ASCII frame are sliced from `text`, the Latin-1 text of `buf[base..limit)`, made once per read
 * when the first such frame needs it (see textOf).
 */
export interface Frame {
  buf: Buffer;
  at: number;
  end: number;
  base: number;
  limit: number;
  text: string | undefined;
}

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
  private readonly frame: Frame = { buf: Buffer.alloc(0), at: 0, end: 0, base: 0, limit: 0, text: undefined };

  constructor(private readonly maxBytes: number) {}

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

/** The Latin-1 text of the frame's read, made on first use. */
function textOf(f: Frame): string {
  return (f.text ??= latin1Of(f.buf, f.base, f.limit));
}

/** `buf[from..to)` as a string: of an ASCII frame a slice of its read's text, else decoded as UTF-8. */
function stringOf(f: Frame, from: number, to: number, ascii: boolean): string {
  return ascii ? textOf(f).slice(from - f.base, to - f.base) : (f.buf as SliceReader).utf8Slice(from, to);
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
  let at = f.at + BODY_HEAD_BYTES;
  // each string: its length, then its bytes; -1 once one runs past the frame
  const next = (): number => {
    if (at < 0 || at + LENGTH_BYTES > end) return (at = -1);
    const n = readLength(buf, at);
    const from = at + LENGTH_BYTES;
    at = n >= 0 && from + n <= end ? from + n : -1;
    return from;
  };
  if (flags & HAS_ID) {
    next();
    if (id === undefined) return undefined;
  }
  const sourceAt = next();
  const source = at < 0 ? '' : stringOf(f, sourceAt, at, ascii);
  let entryNode = node;
  if (flags & HAS_NODE) {
    const from = next();
    if (at > from) entryNode = stringOf(f, from, at, ascii);
  }
  let fields: unknown;
  if (flags & HAS_FIELDS) {
    const from = next();
    if (at < 0) return undefined;
    fields = parseJsonText(stringOf(f, from, at, ascii));
    if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) return undefined;
  }
  if (at < 0) return undefined;
  const entry: Entry = { time: isTime(t) ? t : now, source: source === '' ? fallbackSource : source, message: stringOf(f, at, end, ascii) };
  if (entryNode) entry.node = entryNode;
  const level = LEVELS[levelCode];
  if (level) entry.level = level;
  if (fields !== undefined) entry.fields = fields as Record<string, unknown>;
  if (id !== undefined) entry.id = id;
  return entry;
}

/** The report a report frame carries (unchecked: see asNodeReport); undefined when it is no JSON. */
export function reportOfFrame(f: Frame): unknown {
  return parseJsonText(stringOf(f, f.at + 1, f.end, false));
}
