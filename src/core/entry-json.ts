// The entry as one JSON object (DESIGN.md §4 key order), written by hand for speed: the keys are
// fixed, most strings need no escaping (checked by one regular expression), and entries read
// together share their time to the millisecond, so its RFC 3339 text is made once. Output is
// byte for byte what JSON.stringify gives for the same object (a fuzz test holds it to that).

import type { Entry, PlainFields } from './entry.js';
import { isoString } from './iso-time.js';

/** Characters JSON.stringify would escape: `"`, `\`, C0 controls, and any surrogate (lone ones become \uXXXX). */
export const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** What JSON.stringify escapes, but `"`. */
const HARD_ESCAPE = /[\\\u0000-\u001f\ud800-\udfff]/g;

/**
 * True when the first character of `s` JSON.stringify would escape is at `first` and is a `"`, and
 * no other than `"` follows: log lines often quote (`msg="…"`) and need nothing else escaped.
 */
export function onlyQuotesFrom(s: string, first: number): boolean {
  if (s.charCodeAt(first) !== 34 /* " */) return false;
  HARD_ESCAPE.lastIndex = first;
  return !HARD_ESCAPE.test(s);
}

/**
 * Printable ASCII but `"` and `\`: a string of these alone is written as it is. Matching the whole
 * string against this class takes a 150-character message 0.1 µs, searching it for NEEDS_ESCAPE 0.25.
 */
export const PLAIN_ASCII = /^[ !#-[\]-~]*$/;

/** Printable ASCII but `\`: written byte for byte, each `"` as `\"` (see putString in core/entry-wire.ts). */
export const QUOTED_ASCII = /^[ -[\]-~]*$/;

/** A string of QUOTED_ASCII alone as JSON text: quoted, each `"` as `\"`. */
export function quotedAsciiJson(s: string): string {
  let p = s.indexOf('"');
  if (p < 0) return `"${s}"`;
  let out = '"';
  let from = 0;
  // p only grows: bounded by the length of s
  while (p >= 0) {
    out += `${s.slice(from, p)}\\"`;
    from = p + 1;
    p = s.indexOf('"', from);
  }
  return `${out}${s.slice(from)}"`;
}

/**
 * A string as JSON text: as it is when nothing needs escaping, its quotes escaped when only they
 * do (0.5 µs a 200-byte line against 0.85 through JSON.stringify), else JSON.stringify.
 */
export function jsonString(s: string): string {
  if (PLAIN_ASCII.test(s)) return `"${s}"`;
  const first = s.search(NEEDS_ESCAPE);
  if (first < 0) return `"${s}"`;
  return onlyQuotesFrom(s, first) ? `"${s.replaceAll('"', '\\"')}"` : JSON.stringify(s);
}

/**
 * A time's RFC 3339 text with milliseconds, UTC, between a fixed `head` and `tail`; the last one
 * is remembered (entries of one read share it), and so is its second: entries with their own
 * times (container runtimes write one per line) mostly differ in the milliseconds alone, written
 * from a table without another second's text. The second's text is made from the UTC fields
 * (core/iso-time.ts), not by toISOString, which reads ICU's time zone data.
 */
class TimeTexts {
  private lastMs = Number.NaN;
  private last = '';
  private lastSecond = Number.NaN;
  /** the last second's text from `head` up to its fraction: `<head>YYYY-MM-DDTHH:MM:SS.` */
  private secondHead = '';
  /** `000Z<tail>` to `999Z<tail>`: a text's end from its milliseconds */
  private readonly msTexts: readonly string[];

  constructor(
    private readonly head: string,
    tail: string,
  ) {
    this.msTexts = Array.from({ length: 1000 }, (_, ms) => `${String(ms).padStart(3, '0')}Z${tail}`);
  }

  text(ms: number): string {
    if (ms === this.lastMs) return this.last;
    // a Date drops a fraction of a millisecond toward 0
    const whole = Math.trunc(ms);
    const second = Math.floor(whole / 1000);
    if (second !== this.lastSecond) {
      this.secondHead = this.head + isoString(whole).slice(0, -4);
      this.lastSecond = second;
    }
    this.last = this.secondHead + this.msTexts[whole - second * 1000]!;
    this.lastMs = ms;
    return this.last;
  }
}

const ISO_TIMES = new TimeTexts('', '');

/** RFC 3339 with milliseconds, UTC (see TimeTexts). */
export function isoTime(ms: number): string {
  return ISO_TIMES.text(ms);
}

/**
 * `{"time":"<RFC 3339>"`: entryJson's start, made whole (see TimeTexts). A container line's own
 * time, through isoTime and then between its key and quote, made three strings of one.
 */
const TIME_HEADS = new TimeTexts('{"time":"', '"');

/** True when `o` has an own enumerable key (no array of keys is made). */
export function hasKeys(o: object): boolean {
  for (const k in o) if (Object.hasOwn(o, k)) return true;
  return false;
}

/**
 * A fields object as JSON.stringify writes it, string values through jsonString and the
 * container streams' names from constants: JSON.stringify of a small object cost a third of a
 * CRI line's time in the json format.
 */
export function fieldsJson(fields: Readonly<Record<string, unknown>>): string {
  let s = '';
  let at = 0;
  for (const key in fields) {
    if (!Object.hasOwn(fields, key)) continue;
    const value = fields[key];
    const json =
      typeof value === 'string'
        ? value === 'stdout'
          ? '"stdout"'
          : value === 'stderr'
            ? '"stderr"'
            : placedString(value, at)
        : typeof value === 'number'
          ? numberJson(value)
          : value === true
            ? 'true'
            : value === false
              ? 'false'
              : (JSON.stringify(value) as string | undefined);
    // what JSON.stringify leaves out (undefined, functions, symbols)
    if (json === undefined) continue;
    let k: string;
    if (at < MAX_PLACES && LAST_KEYS[at] === key) k = LAST_KEY_JSONS[at]!;
    else {
      k = keyJson(key);
      if (at < MAX_PLACES) {
        LAST_KEYS[at] = key;
        LAST_KEY_JSONS[at] = k;
      }
    }
    at++;
    s = s === '' ? `{${k}${json}` : `${s},${k}${json}`;
  }
  return s === '' ? '{}' : `${s}}`;
}

/**
 * The keys and string values fieldsJson wrote last, by their place among the written ones, with
 * their JSON. Entries one after the other mostly have their keys in one order (a parser's, then
 * what steps add) and many values repeat at their place (a method, a protocol, a user agent, a
 * value a `set` step writes): comparing with the last one costs less than a lookup in KEYS or an
 * escape check (a regular expression's call per value). A value of any length is compared: equal
 * text costs its length to compare, as the check would.
 */
const MAX_PLACES = 64;
// filled, so no hole is read; each place a true pair (the empty string and its JSON)
const LAST_KEYS: string[] = Array.from({ length: MAX_PLACES }, () => '');
const LAST_KEY_JSONS: string[] = Array.from({ length: MAX_PLACES }, () => '"":');
const LAST_VALUES: string[] = Array.from({ length: MAX_PLACES }, () => '');
const LAST_VALUE_JSONS: string[] = Array.from({ length: MAX_PLACES }, () => '""');

/** jsonString(value), remembered as the last value at place `at` of fieldsJson. */
function placedString(value: string, at: number): string {
  if (at >= MAX_PLACES) return jsonString(value);
  if (LAST_VALUES[at] === value) return LAST_VALUE_JSONS[at]!;
  const json = jsonString(value);
  LAST_VALUES[at] = value;
  LAST_VALUE_JSONS[at] = json;
  return json;
}

/**
 * A string, number or boolean value as fieldsJson writes it; undefined for any other (an object is
 * written by JSON.stringify, whose text a caller cannot keep: the object may change).
 */
export function primitiveJson(v: unknown): string | undefined {
  if (typeof v === 'string') return jsonString(v);
  if (typeof v === 'number') return numberJson(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return undefined;
}

/**
 * A number as JSON.stringify writes it (its shortest text; NaN and the infinities as null),
 * without the call: parsed access log and logfmt fields carry a few (status, bytes).
 */
function numberJson(n: number): string {
  return Number.isFinite(n) ? String(n) : 'null';
}

/** Field names written so far, encoded with their colon: a pipeline's entries mostly share a few. */
const KEYS = new Map<string, string>();
const MAX_KEYS = 1024;

/** `"key":` */
function keyJson(key: string): string {
  let json = KEYS.get(key);
  if (json === undefined) {
    json = `${jsonString(key)}:`;
    if (KEYS.size < MAX_KEYS) KEYS.set(key, json);
  }
  return json;
}

/**
 * `,"fields":{…}` of a container line's fields (Entry.plainFields) as JSON.stringify writes them:
 * of its few shapes, from constants. The fields of a container line, through fieldsJson, cost
 * about 0.1 µs of a CRI line's 1.5 µs in a node (its keys looked up, each part a string of its own).
 */
function plainFieldsJson(f: PlainFields): string {
  const nanos = f.time_nanos;
  const k8s = f.k8s;
  const err = f.stream === 'stderr';
  if (nanos === undefined) {
    const head = err ? ',"fields":{"stream":"stderr"' : ',"fields":{"stream":"stdout"';
    return k8s === undefined ? `${head}}` : `${head},"k8s":${JSON.stringify(k8s)}}`;
  }
  const head = err ? ',"fields":{"stream":"stderr","time_nanos":"' : ',"fields":{"stream":"stdout","time_nanos":"';
  return k8s === undefined ? `${head}${nanos}"}` : `${head}${nanos}","k8s":${JSON.stringify(k8s)}}`;
}

/** `,"level":"<LEVEL>"` of each level. */
const LEVEL_JSONS: Readonly<Record<string, string | undefined>> = Object.assign(Object.create(null) as Record<string, string | undefined>, {
  TRACE: ',"level":"TRACE"',
  DEBUG: ',"level":"DEBUG"',
  INFO: ',"level":"INFO"',
  WARN: ',"level":"WARN"',
  ERROR: ',"level":"ERROR"',
  FATAL: ',"level":"FATAL"',
});

/**
 * `,"node":…,"source":…` (either left out when empty) of the last node and source written: a
 * node's entries mostly share both (a file's lines, a link's peer), and the look at what to escape
 * in each, and the pieces joined, were a tenth of a collector's json line. Compared by value: the
 * strings of a received entry are its own slices even when their text repeats.
 */
let lastNode: string | undefined;
let lastSource = '';
let lastNodeSource = '';
function nodeSourceJson(node: string | undefined, source: string): string {
  if (node === lastNode && source === lastSource) return lastNodeSource;
  let json = node ? `,"node":${jsonString(node)}` : '';
  if (source) json += `,"source":${jsonString(source)}`;
  lastNode = node;
  lastSource = source;
  lastNodeSource = json;
  return json;
}

/** The last time head and node-and-source text joined: entries read together share both. */
let lastHead = '';
let lastNodeSourcePart = '';
let lastHeadWith = '';
/** lastHeadWith and the message's key and opening quote: a plain line without a level is this, its message and `"}` */
let lastHeadMessage = '';
function headWith(head: string, nodeSource: string): string {
  if (head === lastHead && nodeSource === lastNodeSourcePart) return lastHeadWith;
  lastHead = head;
  lastNodeSourcePart = nodeSource;
  lastHeadWith = head + nodeSource;
  lastHeadMessage = `${lastHeadWith},"message":"`;
  return lastHeadWith;
}

/**
 * `{"time":…,"node":…,"source":…,"level":…,"message":…,"fields":…,"id":…}`: empty node, source,
 * level and fields are left out; `id` only when `withId` and present.
 */
export function entryJson(e: Entry, time: number, source: string, message: string, withId: boolean): string {
  const node = e.node;
  const withHead = !!(node || source);
  let s = withHead ? headWith(TIME_HEADS.text(time), nodeSourceJson(node, source)) : TIME_HEADS.text(time);
  if (e.level) s += LEVEL_JSONS[e.level] ?? `,"level":"${e.level}"`;
  // the usual end (no fields, no id after the message) in one piece with the message
  if (e.fieldsText === undefined && !e.plainFields && !(withId && typeof e.id === 'string') && !(e.fields && hasKeys(e.fields)) && message !== e.quotedAscii && PLAIN_ASCII.test(message)) {
    return withHead && !e.level ? `${lastHeadMessage}${message}"}` : `${s},"message":"${message}"}`;
  }
  if (message === e.quotedAscii) {
    // a parsed line's usual end (its fields' text, no id) in one piece with the message
    if (e.fieldsText !== undefined && !e.plainFields && !(withId && typeof e.id === 'string')) return `${s},"message":${quotedAsciiJson(message)},"fields":${e.fieldsText}}}`;
    s += `,"message":${quotedAsciiJson(message)}`;
  }
  // the common message, printable ASCII without `"` or `\`, in one piece with its key and quotes
  else s += PLAIN_ASCII.test(message) ? `,"message":"${message}"` : `,"message":${jsonString(message)}`;
  if (e.plainFields) s += plainFieldsJson(e.fields as PlainFields);
  else if (e.fieldsText !== undefined) s += `,"fields":${e.fieldsText}}`;
  else if (e.fields && hasKeys(e.fields)) s += `,"fields":${fieldsJson(e.fields)}`;
  if (withId && typeof e.id === 'string') s += `,"id":${jsonString(e.id)}`;
  return `${s}}`;
}

/** `raw` with the stamped node put in: what `encodeEntry` writes for the entry, made without encoding it. */
export function rawLine(e: Entry & { raw: string }): string {
  const at = e.rawNodeAt ?? 0;
  return at > 0 ? `${e.raw.slice(0, at)},"node":${jsonString(e.node!)}${e.raw.slice(at)}` : e.raw;
}

/** `rawLine` without its id: what `formatJson` writes for the entry. */
export function rawJsonLine(e: Entry & { raw: string }): string {
  const at = e.rawNodeAt ?? 0;
  const idAt = e.rawIdAt!;
  return at > 0 ? `${e.raw.slice(0, at)},"node":${jsonString(e.node!)}${e.raw.slice(at, idAt)}}` : `${e.raw.slice(0, idAt)}}`;
}
