// Chain lines written straight into Buffers, once per pipeline. Building each line as a string
// first (a concatenation per key) and writing it out later cost the edge a third of its time: V8
// has to flatten every such string before it can write its bytes. Here the bytes of a whole sink
// batch go into one Buffer; each item keeps where its line lies, so an edge's second link sends
// the same bytes (often the same Buffer, as one write) and a tcp_chain sink resends them after a
// reconnect. Held lines live outside the JS heap, which the garbage collector never copies.

import { hasKeys, isoTime, jsonString, NEEDS_ESCAPE, onlyQuotesFrom, QUOTED_ASCII } from './entry-json.js';
import type { Entry, Level } from './entry.js';
import { isTime } from './entry.js';
import type { Utf8Writer } from './lines-buffer.js';
import type { SinkItem } from './sink-item.js';
import type { Ticket } from './ack.js';

const ascii = (s: string): Uint8Array => Buffer.from(s, 'latin1');
const K_TIME = ascii('{"time":"');
const K_NODE = ascii('","node":');
const K_MESSAGE = ascii(',"message":');
const K_FIELDS = ascii(',"fields":');
const K_ID = ascii(',"id":');
const TIME_CLOSE = ascii('"');
/** `,"level":"<level>"` of each level (every entry's is one of them: sources normalise it): one copy. */
const LEVEL_BYTES: Readonly<Record<Level, Uint8Array>> = {
  TRACE: ascii(',"level":"TRACE"'),
  DEBUG: ascii(',"level":"DEBUG"'),
  INFO: ascii(',"level":"INFO"'),
  WARN: ascii(',"level":"WARN"'),
  ERROR: ascii(',"level":"ERROR"'),
  FATAL: ascii(',"level":"FATAL"'),
};

/** Bytes of the keys and punctuation of the longest line, beyond its strings. */
const FIXED_BYTES = 128;
/** Bytes a string may take as JSON: `\uXXXX` is 6 bytes for one UTF-16 unit. */
const MAX_BYTES_PER_UNIT = 6;
/**
 * Bytes of the keys, punctuation and time of a line with time, source, message and id (69, and a
 * little for quotes escaped): with its strings, the estimate a Buffer is sized by.
 */
const TYPICAL_FIXED_BYTES = 72;
/** `,"level":"DEBUG"` and `,"node":""`: a line with a level or node has these beyond it */
const LEVEL_KEY_BYTES = 16;
const NODE_KEY_BYTES = 10;

function put(buf: Buffer, at: number, bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length; i++) buf[at + i] = bytes[i]!;
  return at + bytes.length;
}

/**
 * `s` as a JSON string. Log lines often quote (`msg="…"`) and need nothing else escaped: the
 * pieces between the quotes are written as they are, each quote as `\"` (the bytes of
 * JSON.stringify, without the string it would make). Printable ASCII, known by one match of the
 * whole string, is copied as Latin-1 (no UTF-8 encoding, no search for what needs escaping):
 * 0.42 µs a 200-byte line and its id, against 0.61 through a search and UTF-8 writes.
 */
function putString(buf: Utf8Writer, at: number, s: string): number {
  const ascii = QUOTED_ASCII.test(s);
  if (!ascii) {
    const first = s.search(NEEDS_ESCAPE);
    if (first >= 0 && !onlyQuotesFrom(s, first)) return at + buf.utf8Write(JSON.stringify(s), at);
  }
  buf[at++] = 34;
  let from = 0;
  for (let q = s.indexOf('"'); q >= 0; q = s.indexOf('"', from)) {
    if (q > from) at += ascii ? buf.latin1Write(s.slice(from, q), at) : buf.utf8Write(s.slice(from, q), at);
    buf[at++] = 92;
    buf[at++] = 34;
    from = q + 1;
  }
  const rest = from === 0 ? s : s.slice(from);
  at += ascii ? buf.latin1Write(rest, at) : buf.utf8Write(rest, at);
  buf[at] = 34;
  return at + 1;
}

let lastMs = Number.NaN;
const lastIso = Buffer.alloc(24);

function putTime(buf: Buffer, at: number, ms: number): number {
  if (ms !== lastMs) {
    lastIso.write(isoTime(ms), 'latin1');
    lastMs = ms;
  }
  return put(buf, at, lastIso);
}

/**
 * `,"<key>":<value as JSON>` as bytes, remembered for the last value: a file's lines share their
 * source, and a relay stamps the same node (its link's) on line after line.
 */
function keyBytesOfLast(key: string): (value: string) => Uint8Array {
  let last: string | undefined;
  let bytes: Uint8Array = new Uint8Array(0);
  return (value) => {
    if (value !== last) {
      bytes = Buffer.from(`,"${key}":${jsonString(value)}`);
      last = value;
    }
    return bytes;
  };
}

const sourceKeyBytes = keyBytesOfLast('source');
const nodeKeyBytes = keyBytesOfLast('node');

/** Most bytes `writeEntry` may write for `e` (its fields already as JSON text). */
function boundOf(e: Entry, fields: string | undefined, fallbackSource: string): number {
  if (e.raw !== undefined) return FIXED_BYTES + MAX_BYTES_PER_UNIT * (e.raw.length + (e.node?.length ?? 0));
  const text = e.message.length + (e.node?.length ?? 0) + Math.max(e.source?.length ?? 0, fallbackSource.length) + (e.id?.length ?? 0);
  return FIXED_BYTES + MAX_BYTES_PER_UNIT * text + 3 * (fields?.length ?? 0);
}

/**
 * About the bytes of `e`'s line when its strings need no escaping: a batch's Buffer is sized by
 * the sum (lines with a level were 16 bytes each beyond it: the last fifth of a batch took a
 * second Buffer, its size counted anew from the rest of the batch).
 */
function lineEstimate(e: Entry): number {
  let n = TYPICAL_FIXED_BYTES + e.message.length + (e.id?.length ?? 0) + (e.source?.length ?? 0);
  if (e.level) n += LEVEL_KEY_BYTES;
  if (e.node) n += NODE_KEY_BYTES + e.node.length;
  return n;
}

/** Set by `writeEntry`: the line had to be completed (no time → now, no source → the pipeline). */
let completed = false;

/**
 * Writes `e` as one chain line and its `\n` at `at`: the bytes of `encodeEntry` (a canonical
 * received line as it came, its stamped node put in). Returns the end.
 */
function writeEntry(buf: Utf8Writer, at: number, e: Entry, fields: string | undefined, now: number, fallbackSource: string): number {
  completed = false;
  if (e.raw !== undefined) {
    const nodeAt = e.rawNodeAt ?? 0;
    if (nodeAt > 0) {
      at += buf.utf8Write(e.raw.slice(0, nodeAt), at);
      at = put(buf, at, nodeKeyBytes(e.node!));
      at += buf.utf8Write(e.raw.slice(nodeAt), at);
    } else {
      at += buf.utf8Write(e.raw, at);
    }
    buf[at] = 10;
    return at + 1;
  }
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
  at = put(buf, at, K_TIME);
  at = putTime(buf, at, time);
  if (e.node) {
    at = put(buf, at, K_NODE);
    at = putString(buf, at, e.node);
  } else {
    at = put(buf, at, TIME_CLOSE);
  }
  at = put(buf, at, sourceKeyBytes(source));
  if (e.level) at = put(buf, at, LEVEL_BYTES[e.level]);
  at = put(buf, at, K_MESSAGE);
  at = putString(buf, at, typeof e.message === 'string' ? e.message : String(e.message ?? ''));
  if (fields !== undefined) {
    at = put(buf, at, K_FIELDS);
    at += buf.utf8Write(fields, at);
  }
  if (typeof e.id === 'string') {
    at = put(buf, at, K_ID);
    at = putString(buf, at, e.id);
  }
  buf[at++] = 125;
  buf[at] = 10;
  return at + 1;
}

/** The entry's fields as JSON text, or undefined when it has none. */
function fieldsJson(e: Entry): string | undefined {
  return e.fields && hasKeys(e.fields) ? JSON.stringify(e.fields) : undefined;
}

/** A sink item with room for its chain line: what a `sendsWire` sink is given (see wireItem). */
export interface WireItem extends SinkItem {
  /**
   * The entry as a chain line (`\n` included) in `wireBuf[wireAt..wireEnd)`, written by the first
   * chain sink that sends it (or by the pipeline ahead of them) and kept for the others (an
   * edge's two links send the same bytes). `wireCompleted`: the line had to be completed (no
   * time or source).
   */
  wireBuf: Buffer | undefined;
  wireAt: number;
  wireEnd: number;
  wireCompleted: boolean;
}

/** The pipeline's item for an entry when one of its sinks sends chain lines (`sendsWire`). */
export function wireItem(entry: Entry, line: string, ticket: Ticket | undefined): WireItem {
  return { entry, line, ticket, paths: 0, wireBuf: undefined, wireAt: 0, wireEnd: 0, wireCompleted: false };
}

/** A `sendsWire` sink's batch: the pipeline made every item with wireItem(). */
export const wireItems = (batch: SinkItem[]): WireItem[] => batch as WireItem[];

/**
 * Gives every item of `items[from..to)` its chain line (`wireBuf[wireAt..wireEnd)`, `\n`
 * included): the ones no other chain sink of the pipeline wrote yet are written into new
 * Buffers, in order, so consecutive items lie next to each other. Returns how many of the
 * range had to be completed (each sink counts `synthesized` for itself).
 */
export function encodeWire(items: readonly WireItem[], from: number, to: number, now: number, fallbackSource: string): number {
  let synthesized = 0;
  let buf: Utf8Writer | undefined;
  let at = 0;
  for (let i = from; i < to; i++) {
    const item = items[i]!;
    if (item.wireBuf !== undefined) {
      if (item.wireCompleted) synthesized++;
      continue;
    }
    const e = item.entry;
    const fields = e.raw === undefined ? fieldsJson(e) : undefined;
    const bound = boundOf(e, fields, fallbackSource);
    if (!buf || buf.length - at < bound) {
      // sized for the rest of the range as ASCII plus this line's bound: lines like it then fit
      // to the end; one that needs more starts a new Buffer
      let rest = 0;
      for (let k = i; k < to; k++) {
        const x = items[k]!.entry;
        rest += x.raw !== undefined ? TYPICAL_FIXED_BYTES + x.raw.length : lineEstimate(x);
      }
      buf = Buffer.allocUnsafe(rest + bound) as Utf8Writer;
      at = 0;
    }
    const end = writeEntry(buf, at, e, fields, now, fallbackSource);
    item.wireBuf = buf;
    item.wireAt = at;
    item.wireEnd = end;
    item.wireCompleted = completed;
    if (completed) synthesized++;
    at = end;
  }
  return synthesized;
}

/**
 * Calls `onBytes` with the chain lines of `items[from..to)` (encoded by `encodeWire`), lines that
 * lie next to each other in one Buffer given as one slice.
 */
export function eachWireRun(items: readonly WireItem[], from: number, to: number, onBytes: (bytes: Buffer) => void): void {
  let buf: Buffer | undefined;
  let start = 0;
  let end = 0;
  for (let i = from; i < to; i++) {
    const item = items[i]!;
    if (item.wireBuf === buf && item.wireAt === end) {
      end = item.wireEnd;
      continue;
    }
    if (buf) onBytes(buf.subarray(start, end));
    buf = item.wireBuf;
    start = item.wireAt;
    end = item.wireEnd;
  }
  if (buf) onBytes(buf.subarray(start, end));
}
