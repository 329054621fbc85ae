// The entry as one chain or buffer line (DESIGN.md §4, §9, §23): encoded from an entry, decoded
// back, a canonical line read without JSON.parse, and the trailing id read ahead of decoding.
// Below chain/ and buffer/, which both write and read these lines.

import type { Entry, Level } from './entry.js';
import { entryJson, fieldsJson, hasKeys, isoTime, jsonString, NEEDS_ESCAPE, rawLine } from './entry-json.js';
import { isTime, normaliseLevel, parseJsonText, parseTime } from './entry.js';
import { readTimeText } from './time.js';

// ── Entry codec ───────────────────────────────────────────────────────────────────────────────

/** True for a JSON object (not an array, not null). */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** JSON text as a value; undefined when it is not JSON or nests too deep (see MAX_JSON_DEPTH). */
const parseJson = parseJsonText;

/**
 * Completes an entry before it is sent (no time → `now`, no source → `fallbackSource`) and
 * encodes it as one JSON line without terminator, keys in §4 order, `id` last.
 * `completed` is set when anything had to be filled in.
 */
export function encodeEntry(e: Entry, now: number, fallbackSource: string, out: { completed: boolean }): string {
  if (e.raw !== undefined) {
    out.completed = false;
    return rawLine(e as Entry & { raw: string });
  }
  let time = e.time;
  let source = e.source;
  out.completed = false;
  if (!isTime(time)) {
    time = now;
    out.completed = true;
  }
  if (typeof source !== 'string' || source === '') {
    source = fallbackSource;
    out.completed = true;
  }
  return entryJson(e, time, source, typeof e.message === 'string' ? e.message : String(e.message ?? ''), true);
}

/**
 * Decodes one entry line; undefined when it is not a JSON object (a parse error). A received
 * entry without `node` gets `node`; one without time or source gets `now` / `fallbackSource`.
 */
export function decodeEntry(line: string, node: string | undefined, now: number, fallbackSource: string): Entry | undefined {
  if (line.charCodeAt(0) !== 123 /* { */) return undefined;
  const canonical = decodeCanonical(line, node);
  if (canonical) return canonical;
  const obj = parseJson(line);
  if (!isObject(obj)) return undefined;
  const time = parseTime(obj.time) ?? now;
  const entry: Entry = {
    time,
    source: typeof obj.source === 'string' && obj.source !== '' ? obj.source : fallbackSource,
    message: typeof obj.message === 'string' ? obj.message : obj.message === undefined ? '' : JSON.stringify(obj.message),
  };
  const entryNode = typeof obj.node === 'string' && obj.node !== '' ? obj.node : node;
  if (entryNode) entry.node = entryNode;
  const level = normaliseLevel(obj.level);
  if (level) entry.level = level;
  if (isObject(obj.fields)) entry.fields = obj.fields;
  if (typeof obj.id === 'string') entry.id = obj.id;
  return entry;
}

// ── Canonical lines ───────────────────────────────────────────────────────────────────────────
//
// What one logrelay node sends another is almost always a line `entryJson` wrote: keys in §4
// order, `id` last, time as RFC 3339 with milliseconds, and strings that needed no escaping. Such a
// line is read here without JSON.parse (each string a slice of the line) and kept on the entry as
// `raw`: a relay sends it on as it came, with the `node` its link stamps put in, and the json
// format cuts its line from it. Anything else (escapes, fields, a key out of order, a time in
// another form, an empty source) takes the general path and is encoded anew when sent.

/** A C0 control: JSON.parse refuses one inside a string. */
const CONTROL = /[\u0000-\u001f]/;

/**
 * What a line holds of escapes and controls: 0 nothing, 1 escaped quotes (`\"`) only, -1 anything
 * else (another escape, a control). One match for controls, then the backslashes found by indexOf:
 * a search for either, resumed past each escaped quote, took 80 ms for 300,000 log lines against 69.
 */
function escapesOf(line: string): number {
  if (CONTROL.test(line)) return -1;
  let at = line.indexOf('\\');
  if (at < 0) return 0;
  for (; at >= 0; at = line.indexOf('\\', at + 2)) if (line.charCodeAt(at + 1) !== 34 /* " */) return -1;
  return 1;
}

/** `text` with each `\"` as `"`, joined from its pieces (never flattened unless used). */
function unescapeQuotes(text: string): string {
  let at = text.indexOf('\\"');
  if (at < 0) return text;
  let out = '';
  let from = 0;
  for (; at >= 0; at = text.indexOf('\\"', from)) {
    out += `${text.slice(from, at)}"`;
    from = at + 2;
  }
  return out + text.slice(from);
}
const LEVELS: ReadonlySet<string> = new Set(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL']);
const TIME_AT = 9; // after {"time":"
const TIME_END = TIME_AT + 24; // YYYY-MM-DDTHH:MM:SS.mmmZ

let lastCanonicalTime = '';
let lastCanonicalMs = 0;

/** Epoch ms of RFC 3339 text that `isoTime` would write back the same; undefined otherwise. */
function canonicalTime(text: string): number | undefined {
  if (text === lastCanonicalTime) return lastCanonicalMs;
  const ms = readTimeText(text);
  if (Number.isNaN(ms) || new Date(ms).toISOString() !== text) return undefined;
  lastCanonicalTime = text;
  lastCanonicalMs = ms;
  return ms;
}

/** End (the closing quote) of a plain string whose opening quote ends `key` at `at`; -1 when the key is not there. */
function plainValueEnd(line: string, at: number, key: string): number {
  return line.startsWith(key, at) ? line.indexOf('"', at + key.length) : -1;
}

/** The closing quote of the message whose text starts at `from`, past its escaped quotes. */
function messageEnd(line: string, from: number): number {
  let end = line.indexOf('"', from);
  while (end > 0 && line.charCodeAt(end - 1) === 92 /* \\ */) end = line.indexOf('"', end + 1);
  return end;
}

/** True when the value that closes at `end` ends with a backslash: its quote was escaped. */
const escapedEnd = (line: string, end: number) => line.charCodeAt(end - 1) === 92;

/**
 * A canonical line with an id as an entry carrying `raw`; undefined when the line is anything else.
 * Its message may hold quotes (`\"`, as JSON.stringify writes them, so the line stays canonical):
 * log lines often do (`msg="…"`), and any other escape takes the general path.
 */
function decodeCanonical(line: string, node: string | undefined): Entry | undefined {
  if (!line.startsWith('{"time":"') || line.charCodeAt(TIME_END) !== 34 /* " */) return undefined;
  const escapes = escapesOf(line);
  if (escapes < 0) return undefined;
  const quoted = escapes === 1;
  // lines sent together share their time: the last one is compared in place, without a slice
  const time = line.startsWith(lastCanonicalTime, TIME_AT) && lastCanonicalTime !== '' ? lastCanonicalMs : canonicalTime(line.slice(TIME_AT, TIME_END));
  if (time === undefined) return undefined;
  let at = TIME_END + 1;
  let lineNode: string | undefined;
  let end = plainValueEnd(line, at, ',"node":"');
  if (end >= 0) {
    if (end === at + 9 || (quoted && escapedEnd(line, end))) return undefined; // an empty node is left out when written
    lineNode = line.slice(at + 9, end);
    at = end + 1;
  }
  const nodeAt = at;
  end = plainValueEnd(line, at, ',"source":"');
  if (end <= at + 11 || (quoted && escapedEnd(line, end))) return undefined; // no source, or an empty one: filled in, so encoded anew
  const source = line.slice(at + 11, end);
  at = end + 1;
  let level: string | undefined;
  end = plainValueEnd(line, at, ',"level":"');
  if (end >= 0) {
    level = line.slice(at + 10, end);
    if (!LEVELS.has(level)) return undefined;
    at = end + 1;
  }
  if (!line.startsWith(',"message":"', at)) return undefined;
  end = quoted ? messageEnd(line, at + 12) : line.indexOf('"', at + 12);
  if (end < 0) return undefined;
  let message = line.slice(at + 12, end);
  at = end + 1;
  const idAt = at;
  end = plainValueEnd(line, at, ',"id":"');
  if (end < 0 || end + 2 !== line.length || line.charCodeAt(end + 1) !== 125 /* } */ || (quoted && escapedEnd(line, end))) return undefined;
  if (quoted) message = unescapeQuotes(message);
  const entry: Entry = { time, source, message };
  const entryNode = lineNode ?? node;
  if (entryNode) entry.node = entryNode;
  if (level) entry.level = level as Level;
  // a slice of the line: the dedup window and its journal, which keep ids past the entry, make
  // copies of their own (see ownCopy in flow/dedup.ts)
  entry.id = line.slice(idAt + 7, end);
  entry.raw = line;
  entry.rawNodeAt = lineNode === undefined && node ? nodeAt : 0;
  entry.rawIdAt = idAt;
  return entry;
}

/** `,"id":"` — what comes before the id of a line that ends with one. */
const ID_KEY = ',"id":"';
/** The longest id read ahead of decoding (§14: at most 40 characters). */
const MAX_TRAILING_ID = 40;

/**
 * Where the quote opening a string that closes at `close` is, looking no further back than
 * `stop`: -1 when it is not there, the string is empty, or a character in it is not printable
 * ASCII or is a `\`.
 */
function openingQuote(close: number, stop: number, at: (i: number) => number): number {
  for (let q = close - 1; q >= stop; q--) {
    const c = at(q);
    if (c === 34 /* " */) return q + 1 === close ? -1 : q;
    if (c < 0x20 || c > 0x7e || c === 92 /* \ */) return -1;
  }
  return -1;
}

/**
 * The id a line ends with (`…,"id":"<id>"}`), read without decoding the line, for the dedup
 * window to drop a duplicate before it costs a decode; undefined when the line does not end so, or
 * the id is longer than 40 characters or has anything but printable ASCII without `\` and `"`. In
 * a line that is a JSON object, such an ending is its top-level `id` member: the value is the last
 * one (the object's `}` follows its closing quote), and nothing between the quotes can be escaped.
 * So a copy is known by its id before it is parsed: a line that starts and ends like an entry but
 * is no JSON, with an id the window holds, counts as a duplicate rather than a parse error
 * (dropped either way).
 */
export function trailingIdOf(line: string): string | undefined {
  const end = line.length;
  if (end < 10 || line.charCodeAt(0) !== 123 || line.charCodeAt(end - 1) !== 125 || line.charCodeAt(end - 2) !== 34) return undefined;
  const close = end - 2;
  const q = openingQuote(close, Math.max(ID_KEY.length, close - MAX_TRAILING_ID - 1), (i) => line.charCodeAt(i));
  if (q < 0 || !line.startsWith(ID_KEY, q - ID_KEY.length + 1)) return undefined;
  return line.slice(q + 1, close);
}

// ── The buffer's line encoder ─────────────────────────────────────────────────────────────────
//
// The JSON line of a buffer record: byte for byte what `encodeEntry` writes, made faster for the
// way entries reach a buffer. The entries of one read mostly share their time, node, source and
// level, and a syslog sender's fields (hostname, facility): the text of those is made once and
// reused while they stay the same; an id the buffer stamped needs no escaping check.
// Synchronous, one instance per buffer.

export class LineEncoder {
  private headTime = Number.NaN;
  private headNode: string | undefined;
  private headSource = '';
  private headLevel: string | undefined;
  /** `{"time":…,"node":…,"source":…,"level":…,"message":` for the four above */
  private head = '';
  /** the keys and (primitive) values of the last fields encoded, and their text */
  private readonly fieldKeys: string[] = [];
  private readonly fieldValues: unknown[] = [];
  private fieldsText = '';
  /** set by encode(): the entry had no valid time or no source, and was given `now` or the fallback */
  completed = false;

  /** True when `text` (an id prefix) is written as it is inside JSON quotes. */
  static isPlain(text: string): boolean {
    return !NEEDS_ESCAPE.test(text);
  }

  /**
   * The line of `e`, as `encodeEntry(e, now, fallbackSource, …)` gives it; `plainId`: the id is
   * known to need no escaping (one the buffer stamped from a plain prefix).
   */
  encode(e: Entry, now: number, fallbackSource: string, plainId: boolean): string {
    this.completed = false;
    if (e.raw !== undefined) return rawLine(e as Entry & { raw: string });
    let time = e.time;
    let source = e.source;
    if (!isTime(time)) {
      time = now;
      this.completed = true;
    }
    if (typeof source !== 'string' || source === '') {
      source = fallbackSource;
      this.completed = true;
    }
    if (time !== this.headTime || e.node !== this.headNode || source !== this.headSource || e.level !== this.headLevel) this.newHead(e, time, source);
    const message = typeof e.message === 'string' ? e.message : String(e.message ?? '');
    let s = this.head + jsonString(message);
    if (e.fields && hasKeys(e.fields)) s += `,"fields":${this.fields(e.fields)}`;
    if (typeof e.id === 'string') s += plainId ? `,"id":"${e.id}"` : `,"id":${jsonString(e.id)}`;
    return `${s}}`;
  }

  private newHead(e: Entry, time: number, source: string): void {
    let s = `{"time":"${isoTime(time)}"`;
    if (e.node) s += `,"node":${jsonString(e.node)}`;
    if (source) s += `,"source":${jsonString(source)}`;
    if (e.level) s += `,"level":"${e.level}"`;
    this.head = `${s},"message":`;
    this.headTime = time;
    this.headNode = e.node;
    this.headSource = source;
    this.headLevel = e.level;
  }

  /** `fieldsJson(fields)`, reused while the keys (in order) and their primitive values stay the same. */
  fields(fields: Readonly<Record<string, unknown>>): string {
    const keys = this.fieldKeys;
    const values = this.fieldValues;
    let n = 0;
    let same = true;
    for (const key in fields) {
      if (!Object.hasOwn(fields, key)) continue;
      if (n >= keys.length || keys[n] !== key || values[n] !== fields[key]) {
        same = false;
        break;
      }
      n++;
    }
    if (same && n === keys.length) return this.fieldsText;
    this.fieldsText = fieldsJson(fields);
    keys.length = values.length = 0;
    for (const key in fields) {
      if (!Object.hasOwn(fields, key)) continue;
      const value = fields[key];
      // an object's text may change while it stays the same object: never reused
      if (typeof value === 'object' && value !== null) {
        keys.length = values.length = 0;
        break;
      }
      keys.push(key);
      values.push(value);
    }
    return this.fieldsText;
  }
}
