// Chain protocol version 2 (DESIGN.md §25; the format is in docs/protocol.md): after a hello whose
// offer `"version":2` the source accepted, the sink → source stream is length-prefixed binary
// frames instead of JSON lines. An entry frame carries its time as a number, its level as a code,
// and its strings as their UTF-8 bytes, the message last, as read: nothing is escaped on the way
// out or searched for escapes on the way in. Numbers are written 7 bits a byte, so a frame of ASCII
// strings is ASCII through and through (and says so in its flags): the receiving end makes each of
// its strings a slice of one Latin-1 text per read, and a string costs no decode of its own.
// Version 1 (entry-wire.ts, entry-line.ts) stays: a link uses version 2 only when both ends said so.
// This file writes frames; frame-reader.ts reads them.

import type { Ticket } from './ack.js';
import { fieldsJson, hasKeys } from './entry-json.js';
import type { Entry, Level } from './entry.js';
import { isTime } from './entry.js';
import type { Utf8Writer } from './lines-buffer.js';
import type { SinkItem } from './sink-item.js';
import { encodeWire, type WireItem } from './entry-wire.js';

/** The version a sink offers in its hello (`"offer":{"version":2}`) and a source accepts. */
export const PROTOCOL_V2 = 2;

/** Frame kinds: the byte after the length. */
export const FRAME_ENTRY = 1;
export const FRAME_REPORT = 2;

/** Entry frame flags: which optional strings it has, whether all its strings are ASCII, the time's sign. */
export const HAS_ID = 1;
export const HAS_NODE = 2;
export const HAS_FIELDS = 4;
export const ASCII = 8;
export const NEGATIVE_TIME = 16;
export const KNOWN_FLAGS = HAS_ID | HAS_NODE | HAS_FIELDS | ASCII | NEGATIVE_TIME;

/** Level codes 1–6; 0 is no level. */
export const LEVELS: readonly (Level | undefined)[] = [undefined, 'TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'];
const LEVEL_CODES: Readonly<Record<Level, number>> = { TRACE: 1, DEBUG: 2, INFO: 3, WARN: 4, ERROR: 5, FATAL: 6 };

/** Bytes of a length (a frame's, a string's): 5 bytes of 7 bits, most significant first. */
export const LENGTH_BYTES = 5;
/** Bytes of the time: its magnitude in 8 bytes of 7 bits (56 bits; epoch ms need 53), most significant first. */
const TIME_BYTES = 8;
/** Bytes of an entry frame's body before its strings: kind, flags, level, time. */
export const BODY_HEAD_BYTES = 3 + TIME_BYTES;
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
  readonly lineBytes: number;
}

/** The pipeline's item for an entry when one of its sinks sends chain lines or frames. */
export function framedItem(entry: Entry, line: string, ticket: Ticket | undefined): FramedItem {
  return { entry, line, ticket, paths: 0, wireBuf: undefined, wireAt: 0, wireEnd: 0, wireCompleted: false, frameBuf: undefined, frameAt: 0, frameEnd: 0, frameCompleted: false, lineBytes: line.length };
}

/**
 * Lets go of the entry and line of each framed item (its frame, ticket, paths and lineBytes stay):
 * for a pipeline whose every sink sends version 2 frames and needs nothing else of an item
 * (Sink.framesSuffice). An entry is held from its read until the next node acknowledges it; held
 * as its frame alone (off the JS heap) it costs the garbage collector nothing to keep, where its
 * strings and objects would be copied at every young collection they live through and then
 * promoted. A sink that must encode a released item otherwise decodes the entry from its frame
 * again (restoreEntries, frame-reader.ts).
 */
export function releaseEntries(items: readonly FramedItem[]): void {
  for (const item of items) {
    if (item.frameBuf === undefined) continue;
    const open = item as unknown as { entry: Entry | undefined; line: string };
    open.entry = undefined;
    open.line = '';
  }
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
export function putLength(buf: Buffer, at: number, n: number): void {
  buf[at] = n >>> 28;
  buf[at + 1] = (n >>> 21) & 0x7f;
  buf[at + 2] = (n >>> 14) & 0x7f;
  buf[at + 3] = (n >>> 7) & 0x7f;
  buf[at + 4] = n & 0x7f;
}

/** A length written by putLength; -1 when a byte has its high bit set (no version 2 length). */
export function readLength(buf: Buffer, at: number): number {
  const a = buf[at]!;
  const b = buf[at + 1]!;
  const c = buf[at + 2]!;
  const d = buf[at + 3]!;
  const e = buf[at + 4]!;
  if ((a | b | c | d | e) & 0x80) return -1;
  return a * 0x10000000 + ((b << 21) | (c << 14) | (d << 7) | e);
}

/** `ms` (a whole number, |ms| < 2^53) as TIME_BYTES bytes of 7 bits; its sign goes in the flags. */
export function putTime(buf: Buffer, at: number, ms: number): void {
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
export function readTime(buf: Buffer, at: number): number {
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
export interface StringBytes {
  readonly bytes: Buffer;
  readonly ascii: boolean;
}

/** The bytes of the last value: a file's lines share their source, a relay's link their node. */
export function lastBytes(): (value: string) => StringBytes {
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
 * The current slab with room for `bound` bytes from slabOffset() (a new slab when it has not):
 * for a frame written elsewhere (passFrame, frame-reader.ts); slabTaken(end) then claims them.
 */
export function slabWith(bound: number): Utf8Writer {
  if (slab.length - slabAt < bound) {
    slab = Buffer.allocUnsafe(Math.max(SLAB_BYTES, bound)) as Utf8Writer;
    slabAt = 0;
  }
  return slab;
}
export const slabOffset = (): number => slabAt;
export function slabTaken(end: number): void {
  slabAt = end;
}

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
