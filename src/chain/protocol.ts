// Chain protocol version 1 (DESIGN.md §9) in one place: the hello and its answers, acks, the
// NDJSON entry codec, the HTTP headers, and the line splitter both link types use.

import { hostname } from 'node:os';
import type { Entry, Level } from '../core/entry.js';
import { entryJson, rawLine } from '../core/entry-json.js';
import { isTime, normaliseLevel, parseJsonText, parseTime } from '../core/entry.js';

export const PROTOCOL_VERSION = 1;

/** HTTP header names, lower case as Node presents them. */
export const HEADER_PROTOCOL = 'x-logrelay-protocol';
export const HEADER_NODE = 'x-logrelay-node';
export const HEADER_ACCEPTED = 'x-logrelay-accepted';
/**
 * On a source's 204: the `Content-Encoding`s it reads (DESIGN.md §25). A sink compresses only
 * once a 204 named its codec, so a source that predates compression keeps getting plain bodies.
 */
export const HEADER_ACCEPT_ENCODING = 'x-logrelay-accept-encoding';

/** Whether a 204's HEADER_ACCEPT_ENCODING value names `codec`. */
export function acceptsEncoding(header: string | string[] | undefined, codec: string): boolean {
  const v = Array.isArray(header) ? header.join(',') : (header ?? '');
  return v.split(',').some((c) => c.trim().toLowerCase() === codec);
}
export const NDJSON = 'application/x-ndjson';

/** Seconds a saturated http_chain source asks the sink to wait (`Retry-After`). */
export const RETRY_AFTER_S = 1;

/** The node name a sink announces when its `node` key is unset. */
export const defaultNode = (): string => hostname();

// ── TCP control lines ─────────────────────────────────────────────────────────────────────────

// A hello may carry an `offer` (DESIGN.md §25): what the sink can do beyond version 1, one key per
// feature, each a list of choices in the sink's order of preference (or one choice alone, e.g.
// `"report":1`). The source answers with an
// `accept` naming, per key it knows, the first choice it supports; keys it does not know it
// ignores, and a source that knows no `offer` at all answers `{"ok":1}`: the sink then goes on
// with version 1 as it is. Every feature is built and read here, and nowhere else.

/** What a sink offers in its hello: feature → choices, preferred first (e.g. `compression: ["zstd","gzip"]`), or one choice. */
export type Offer = Readonly<Record<string, readonly (string | number)[] | string | number>>;
/** What a source accepts: feature → the one choice taken. Features absent are declined. */
export type Accept = Readonly<Record<string, string | number>>;

/** The hello line, with the offer when it holds any feature. */
export function helloLine(node: string, offer: Offer = {}): string {
  const features = Object.entries(offer).filter(([, choices]) => !Array.isArray(choices) || choices.length > 0);
  return `${JSON.stringify(features.length > 0 ? { logrelay: PROTOCOL_VERSION, node, offer: Object.fromEntries(features) } : { logrelay: PROTOCOL_VERSION, node })}\n`;
}

/**
 * The source's choice: per feature it `supports`, the first of the offered choices it supports;
 * offered features it does not know, and unreadable offers, are ignored.
 */
export function acceptFor(offer: unknown, supports: Offer): Accept {
  const out: Record<string, string | number> = {};
  if (!isObject(offer)) return out;
  for (const [feature, supported] of Object.entries(supports)) {
    const ours: readonly unknown[] = Array.isArray(supported) ? supported : [supported];
    const value = offer[feature];
    const theirs: readonly unknown[] = Array.isArray(value) ? value : [value];
    const chosen = theirs.find((c: unknown) => (typeof c === 'string' || typeof c === 'number') && ours.includes(c));
    if (chosen !== undefined) out[feature] = chosen as string | number;
  }
  return out;
}

/** The source's answer to a good hello, with what it accepts of the offer. */
export function okLine(accept: Accept = {}): string {
  return `${JSON.stringify(Object.keys(accept).length > 0 ? { ok: 1, accept } : { ok: 1 })}\n`;
}

export const OK_LINE = okLine();

export function errorLine(reason: string): string {
  return `${JSON.stringify({ error: reason })}\n`;
}

export function ackLine(n: number): string {
  return `{"ack":${n}}\n`;
}

export type HelloResult = { readonly ok: true; readonly node: string; readonly offer: unknown } | { readonly ok: false; readonly error: string };

/** Checks a hello line: a JSON object with `logrelay: 1` and a string `node`. */
export function parseHello(line: string): HelloResult {
  const obj = parseJson(line);
  if (obj === undefined) return { ok: false, error: 'hello is not JSON' };
  if (!isObject(obj) || !('logrelay' in obj)) return { ok: false, error: 'expected hello {"logrelay":1,"node":…}' };
  if (obj.logrelay !== PROTOCOL_VERSION) return { ok: false, error: `unsupported protocol version ${JSON.stringify(obj.logrelay)}, want 1` };
  const node = typeof obj.node === 'string' ? obj.node : '';
  return { ok: true, node, offer: obj.offer };
}

/** What a tcp_chain source says to its sink. */
export type ServerLine = { readonly kind: 'ok'; readonly accept: Accept } | { readonly kind: 'error'; readonly error: string } | { readonly kind: 'ack'; readonly n: number };

export function parseServerLine(line: string): ServerLine | undefined {
  const obj = parseJson(line);
  if (!isObject(obj)) return undefined;
  if (typeof obj.ack === 'number' && Number.isInteger(obj.ack) && obj.ack >= 0) return { kind: 'ack', n: obj.ack };
  if (obj.ok === 1) return { kind: 'ok', accept: isObject(obj.accept) ? acceptOf(obj.accept) : {} };
  if ('error' in obj) return { kind: 'error', error: String(obj.error) };
  return undefined;
}

/** An `accept` object's string and number values (anything else is not an answer we know). */
function acceptOf(obj: Record<string, unknown>): Accept {
  const out: Record<string, string | number> = {};
  for (const [k, v] of Object.entries(obj)) if (typeof v === 'string' || typeof v === 'number') out[k] = v;
  return out;
}

// ── Entry codec ───────────────────────────────────────────────────────────────────────────────

function isObject(v: unknown): v is Record<string, unknown> {
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
  const ms = Date.parse(text);
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

// ── Line splitting ────────────────────────────────────────────────────────────────────────────

/**
 * Splits a stream of decoded text into lines with a byte limit per line. Feed chunks; each
 * complete line (without `\n`, a trailing `\r` removed) goes to `onLine`. Returns false as soon
 * as a line, complete or still partial, is over `maxBytes`; the stream must then end.
 */
export class LineSplitter {
  private rest = '';
  constructor(private readonly maxBytes: number) {}

  push(chunk: string, onLine: (line: string) => void): boolean {
    let start = 0;
    if (this.rest.length > 0) {
      // the line begun in an earlier chunk ends in this one: joined alone, not the whole chunk to
      // it (a search in a joined chunk makes V8 copy all of it into one string first)
      const nl = chunk.indexOf('\n');
      if (nl < 0) {
        this.rest += chunk;
        return !this.tooLong(this.rest);
      }
      let line = this.rest + chunk.slice(0, nl);
      this.rest = '';
      if (line.charCodeAt(line.length - 1) === 13) line = line.slice(0, -1);
      if (this.tooLong(line)) return false;
      onLine(line);
      start = nl + 1;
    }
    for (let nl = chunk.indexOf('\n', start); nl >= 0; nl = chunk.indexOf('\n', start)) {
      let end = nl;
      if (end > start && chunk.charCodeAt(end - 1) === 13) end--;
      const line = chunk.slice(start, end);
      if (this.tooLong(line)) return false;
      onLine(line);
      start = nl + 1;
    }
    if (start < chunk.length) {
      const text = chunk.slice(start);
      if (this.tooLong(text)) return false;
      this.rest = text;
    }
    return true;
  }

  /** Longer than maxBytes in UTF-8 (counted only when it may be: a unit takes at most 3 bytes). */
  private tooLong(text: string): boolean {
    return text.length > this.maxBytes / 3 && Buffer.byteLength(text) > this.maxBytes;
  }

  /** The end of the stream: what followed the last `\n`, if anything, is the last line (a trailing `\r` removed). */
  end(onLine: (line: string) => void): void {
    let text = this.rest;
    this.rest = '';
    if (text.charCodeAt(text.length - 1) === 13) text = text.slice(0, -1);
    if (text.length > 0) onLine(text);
  }
}
