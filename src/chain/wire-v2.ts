// Chain protocol version 2 (DESIGN.md §25; the format is in docs/protocol.md): after a hello whose
// offer `"version":2` the source accepted, the sink → source stream is length-prefixed binary
// frames instead of JSON lines. An entry frame carries its time as a number, its level as a code,
// and its strings as their UTF-8 bytes, the message last, as read: nothing is escaped on the way
// out or searched for escapes on the way in. The receiving end makes each string a slice of one
// Latin-1 text per read when the read is ASCII (most are), so a string costs no decode of its own.
// Version 1 (wire.ts, protocol.ts) stays: a link uses version 2 only when both ends said so.

import { isAscii } from 'node:buffer';
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

/** Entry frame flags: which optional strings follow the id and source. */
const HAS_ID = 1;
const HAS_NODE = 2;
const HAS_FIELDS = 4;
const KNOWN_FLAGS = HAS_ID | HAS_NODE | HAS_FIELDS;

/** Level codes 1–6; 0 is no level. */
const LEVELS: readonly (Level | undefined)[] = [undefined, 'TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'];
const LEVEL_CODES: Readonly<Record<Level, number>> = { TRACE: 1, DEBUG: 2, INFO: 3, WARN: 4, ERROR: 5, FATAL: 6 };

/** Bytes of the length, kind, flags, level and time: an entry frame's fixed head. */
const HEAD_BYTES = 15;
/** Where the time lies in a frame (after length, kind, flags and level). */
const TIME_AT = 7;
/** Bytes of a string's length prefix. */
const LENGTH_BYTES = 4;
/** The head and the length prefixes of id, source, node and fields. */
const FIXED_BYTES = HEAD_BYTES + 4 * LENGTH_BYTES;
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

function putU32(buf: Buffer, at: number, n: number): void {
  buf[at] = n >>> 24;
  buf[at + 1] = (n >>> 16) & 0xff;
  buf[at + 2] = (n >>> 8) & 0xff;
  buf[at + 3] = n & 0xff;
}

function readU32(buf: Buffer, at: number): number {
  return ((buf[at]! << 24) >>> 0) + (buf[at + 1]! << 16) + (buf[at + 2]! << 8) + buf[at + 3]!;
}

/** `s` with its length prefix at `at`; returns the end. */
function putString(buf: Utf8Writer, at: number, s: string): number {
  const n = buf.utf8Write(s, at + LENGTH_BYTES);
  putU32(buf, at, n);
  return at + LENGTH_BYTES + n;
}

/** The bytes of the last value, with their length prefix: a file's lines share their source, a relay's link their node. */
function lastBytes(): (value: string) => Buffer {
  let last: string | undefined;
  let bytes = Buffer.alloc(0);
  return (value) => {
    if (value !== last) {
      const utf8 = Buffer.from(value);
      bytes = Buffer.allocUnsafe(LENGTH_BYTES + utf8.length);
      putU32(bytes, 0, utf8.length);
      utf8.copy(bytes, LENGTH_BYTES);
      last = value;
    }
    return bytes;
  };
}
const sourceBytes = lastBytes();
const nodeBytes = lastBytes();

function put(buf: Buffer, at: number, bytes: Buffer): number {
  for (let i = 0; i < bytes.length; i++) buf[at + i] = bytes[i]!;
  return at + bytes.length;
}

/** Set by writeFrame: the entry had to be completed (no time → now, no source → the pipeline). */
let completed = false;

/** Writes `e` as one entry frame at `at` (room for frameBound() bytes); returns the end. */
function writeFrame(buf: Utf8Writer, at: number, e: Entry, fields: string | undefined, now: number, fallbackSource: string): number {
  completed = false;
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
  buf[at + 4] = FRAME_ENTRY;
  buf[at + 5] = (typeof id === 'string' ? HAS_ID : 0) | (node ? HAS_NODE : 0) | (fields !== undefined ? HAS_FIELDS : 0);
  buf[at + 6] = e.level ? (LEVEL_CODES[e.level] ?? 0) : 0;
  // whole milliseconds, as version 1's RFC 3339 text carries them
  buf.writeDoubleBE(Math.trunc(time), at + TIME_AT);
  at += HEAD_BYTES;
  if (typeof id === 'string') at = putString(buf, at, id);
  at = put(buf, at, sourceBytes(source));
  if (node) at = put(buf, at, nodeBytes(node));
  if (fields !== undefined) at = putString(buf, at, fields);
  const message = e.message;
  at += buf.utf8Write(typeof message === 'string' ? message : String(message ?? ''), at);
  putU32(buf, start, at - start - LENGTH_BYTES);
  return at;
}

/** The entry's fields as JSON text, or undefined when it has none. */
const fieldsText = (e: Entry): string | undefined => (e.fields && hasKeys(e.fields) ? fieldsJson(e.fields) : undefined);

/** Most bytes writeFrame may write for `e` (its fields as JSON text). */
function frameBound(e: Entry, fields: string | undefined, fallbackSource: string): number {
  const text = String(e.message ?? '').length + (e.node?.length ?? 0) + Math.max(e.source?.length ?? 0, fallbackSource.length) + (e.id?.length ?? 0) + (fields?.length ?? 0);
  return FIXED_BYTES + MAX_BYTES_PER_UNIT * text;
}

/** About the bytes of `e`'s frame when its strings are ASCII: what a batch's Buffer is sized by. */
function frameEstimate(e: Entry): number {
  return FIXED_BYTES + (e.message?.length ?? 0) + (e.id?.length ?? 0) + (e.source?.length ?? 0) + (e.node?.length ?? 0);
}

/**
 * Gives every item of `items[from..to)` its frame (`frameBuf[frameAt..frameEnd)`): the ones no
 * other sink of the pipeline framed yet are written into new Buffers, in order, so consecutive
 * items lie next to each other. Returns how many of the range had to be completed.
 */
export function encodeFrames(items: readonly FramedItem[], from: number, to: number, now: number, fallbackSource: string): number {
  let synthesized = 0;
  let buf: Utf8Writer | undefined;
  let at = 0;
  for (let i = from; i < to; i++) {
    const item = items[i]!;
    if (item.frameBuf !== undefined) {
      if (item.frameCompleted) synthesized++;
      continue;
    }
    const e = item.entry;
    const fields = fieldsText(e);
    const bound = frameBound(e, fields, fallbackSource);
    if (!buf || buf.length - at < bound) {
      // sized for the rest of the range as ASCII plus this frame's bound: frames like it then fit
      // to the end; one that needs more starts a new Buffer
      let rest = 0;
      for (let k = i; k < to; k++) rest += frameEstimate(items[k]!.entry);
      buf = Buffer.allocUnsafe(rest + bound) as Utf8Writer;
      at = 0;
    }
    const end = writeFrame(buf, at, e, fields, now, fallbackSource);
    item.frameBuf = buf;
    item.frameAt = at;
    item.frameEnd = end;
    item.frameCompleted = completed;
    if (completed) synthesized++;
    at = end;
  }
  return synthesized;
}

/** A node report (the JSON object a v1 `{"report":…}` line carries) as one report frame. */
export function reportFrame(report: object): Buffer {
  const json = Buffer.from(JSON.stringify(report));
  const frame = Buffer.allocUnsafe(LENGTH_BYTES + 1 + json.length);
  putU32(frame, 0, 1 + json.length);
  frame[LENGTH_BYTES] = FRAME_REPORT;
  json.copy(frame, LENGTH_BYTES + 1);
  return frame;
}

// ── Decoding ──────────────────────────────────────────────────────────────────────────────────

/** Node's Latin-1 and UTF-8 readers without `toString()`'s argument handling (see Utf8Writer). */
type SliceReader = Buffer & { latin1Slice(start: number, end: number): string; utf8Slice(start: number, end: number): string };
const latin1Of = (buf: Buffer, start: number, end: number): string => (buf as SliceReader).latin1Slice(start, end);

/**
 * One frame as the reader hands it on: its body is `buf[at..end)` (the kind first). `text`, when
 * set, is the Latin-1 text of `buf` from `base` on, known to be ASCII: strings are sliced from it.
 */
export interface Frame {
  buf: Buffer;
  at: number;
  end: number;
  text: string | undefined;
  base: number;
}

/**
 * Cuts a byte stream into frames. Feed chunks; each whole frame goes to `onFrame` (the same Frame
 * object, filled anew: read it before returning). Returns false as soon as a frame's length is over
 * `maxBytes`; the stream must then end.
 */
export class FrameReader {
  /** the start of a frame begun in an earlier chunk */
  private parts: Buffer[] = [];
  private partLen = 0;
  /** that frame's length, once its prefix is in; -1 before */
  private partSize = -1;
  private readonly frame: Frame = { buf: Buffer.alloc(0), at: 0, end: 0, text: undefined, base: 0 };

  constructor(private readonly maxBytes: number) {}

  push(chunk: Buffer, onFrame: (frame: Frame) => void): boolean {
    let at = 0;
    if (this.partLen > 0) {
      at = this.finishPart(chunk, onFrame);
      if (at < 0) return false;
      if (at >= chunk.length) return true;
    }
    // the whole frames of the chunk, then their text at once when they are ASCII; the frames
    // before one over the bound are still read
    let end = at;
    let tooLong = false;
    while (end + LENGTH_BYTES <= chunk.length) {
      const size = readU32(chunk, end);
      if (size > this.maxBytes) {
        tooLong = true;
        break;
      }
      if (end + LENGTH_BYTES + size > chunk.length) break;
      end += LENGTH_BYTES + size;
    }
    if (end > at) {
      const f = this.frame;
      f.buf = chunk;
      f.base = at;
      f.text = isAscii(chunk.subarray(at, end)) ? latin1Of(chunk, at, end) : undefined;
      for (let p = at; p < end; ) {
        const size = readU32(chunk, p);
        f.at = p + LENGTH_BYTES;
        f.end = f.at + size;
        p = f.end;
        onFrame(f);
      }
    }
    if (tooLong) return false;
    if (end < chunk.length) {
      // the next frame's start: copied, the caller may reuse the chunk
      const rest = Buffer.from(chunk.subarray(end));
      this.parts.push(rest);
      this.partLen = rest.length;
      this.partSize = rest.length >= LENGTH_BYTES ? readU32(rest, 0) : -1;
      if (this.partSize > this.maxBytes) return false;
    }
    return true;
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
      this.partSize = readU32(head, 0);
      if (this.partSize > this.maxBytes) return -1;
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
    const f = this.frame;
    f.buf = buf;
    f.base = 0;
    f.at = LENGTH_BYTES;
    f.end = whole;
    f.text = isAscii(buf) ? latin1Of(buf, 0, whole) : undefined;
    onFrame(f);
    return at;
  }
}

/** `buf[from..to)` as a string: a slice of the frame's text when it has one, else decoded as UTF-8. */
function stringOf(f: Frame, from: number, to: number): string {
  return f.text !== undefined ? f.text.slice(from - f.base, to - f.base) : (f.buf as SliceReader).utf8Slice(from, to);
}

/** Where an entry frame's id lies: [start, end) after its length prefix; -1 when it has none or the frame is cut short. */
function idSpan(f: Frame): number {
  if (f.end - f.at < HEAD_BYTES - LENGTH_BYTES || (f.buf[f.at + 1]! & HAS_ID) === 0) return -1;
  return f.at + HEAD_BYTES - LENGTH_BYTES;
}

/**
 * The id of an entry frame, read before the rest (a dedup window drops a copy before it is
 * decoded); undefined when the frame has none or is no entry frame.
 */
export function frameIdOf(f: Frame): string | undefined {
  if (f.buf[f.at] !== FRAME_ENTRY) return undefined;
  const at = idSpan(f);
  if (at < 0 || at + LENGTH_BYTES > f.end) return undefined;
  const n = readU32(f.buf, at);
  const from = at + LENGTH_BYTES;
  return from + n <= f.end ? stringOf(f, from, from + n) : undefined;
}

/**
 * Decodes an entry frame, as decodeEntry does a line; undefined when it is malformed (a parse
 * error). A received entry without `node` gets `node`; one without time or source gets `now` /
 * `fallbackSource`. `id`: what frameIdOf read, when it was read already.
 */
export function decodeEntryFrame(f: Frame, node: string | undefined, now: number, fallbackSource: string, id = frameIdOf(f)): Entry | undefined {
  const { buf, end } = f;
  if (buf[f.at] !== FRAME_ENTRY || end - f.at < HEAD_BYTES - LENGTH_BYTES) return undefined;
  const flags = buf[f.at + 1]!;
  const levelCode = buf[f.at + 2]!;
  if ((flags & ~KNOWN_FLAGS) !== 0 || levelCode >= LEVELS.length) return undefined;
  const t = buf.readDoubleBE(f.at + 3);
  let at = f.at + HEAD_BYTES - LENGTH_BYTES;
  // each string: its length, then its bytes; -1 once one runs past the frame
  const next = (): number => {
    if (at < 0 || at + LENGTH_BYTES > end) return (at = -1);
    const n = readU32(buf, at);
    const from = at + LENGTH_BYTES;
    at = from + n <= end ? from + n : -1;
    return from;
  };
  if (flags & HAS_ID) {
    next();
    if (id === undefined) return undefined;
  }
  const sourceAt = next();
  const source = at < 0 ? '' : stringOf(f, sourceAt, at);
  let entryNode = node;
  if (flags & HAS_NODE) {
    const from = next();
    if (at > from) entryNode = stringOf(f, from, at);
  }
  let fields: unknown;
  if (flags & HAS_FIELDS) {
    const from = next();
    if (at < 0) return undefined;
    fields = parseJsonText(stringOf(f, from, at));
    if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) return undefined;
  }
  if (at < 0) return undefined;
  const entry: Entry = { time: isTime(t) ? t : now, source: source === '' ? fallbackSource : source, message: stringOf(f, at, end) };
  if (entryNode) entry.node = entryNode;
  const level = LEVELS[levelCode];
  if (level) entry.level = level;
  if (fields !== undefined) entry.fields = fields as Record<string, unknown>;
  if (id !== undefined) entry.id = id;
  return entry;
}

/** The report a report frame carries (unchecked: see asNodeReport); undefined when it is no JSON. */
export function reportOfFrame(f: Frame): unknown {
  return parseJsonText(stringOf(f, f.at + 1, f.end));
}
