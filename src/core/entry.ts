// The log entry (DESIGN.md §4) and the parsing of text and JSON lines into entries.

import { readTimeText } from './time.js';

export type Level = 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'FATAL';

export interface Entry {
  /** epoch milliseconds; rendered as RFC 3339 with milliseconds in every encoding */
  time: number;
  /** the node that first sent it over a chain link */
  node?: string;
  /** the producing plugin: a file's base name, `random`, `stdin`, or the upstream's source */
  source: string;
  level?: Level;
  /** the text, without its line terminator */
  message: string;
  fields?: Record<string, unknown>;
  /** reserved for duplicate suppression; carried on unchanged */
  id?: string;
  /**
   * The chain line this entry was decoded from, when it was already in the canonical encoding
   * (`decodeEntry`): chain sinks send it again and the json format cuts its line from it instead
   * of encoding the entry anew. Entries are never changed after they are made; anything that
   * did change one would have to delete `raw`.
   */
  raw?: string;
  /** where in `raw` the `node` the receiving link stamped goes (0: the line has its node, or none is stamped) */
  rawNodeAt?: number;
  /** where in `raw` its trailing `,"id":…` begins */
  rawIdAt?: number;
  /**
   * `fields` is a container line's (plainFieldsEntry): `stream` (`stdout` or `stderr`), then
   * `time_nanos` (checked RFC 3339 text: nothing in it to escape) and `k8s` when present, no other
   * key; so the json format writes them without looking at the keys or for what to escape.
   */
  plainFields?: true;
  /**
   * `fields` as `fieldsJson` writes them, without the closing `}`, made by a transform step along
   * with them (a parsed access log line, keys a `set` step added after): the json format and the
   * chain line use it instead of encoding `fields` again. Whatever changes `fields` otherwise
   * must delete it (the transform steps do, through `touched`); set only when `fields` has a key.
   */
  fieldsText?: string;
  /**
   * A text known to be printable ASCII without `\` (a transform step looked): when it is the
   * message, the message's JSON is itself quoted with each `"` escaped, no other look needed.
   * Compared with the message where it is used, so a writer that does not know of it costs
   * nothing but the look.
   */
  quotedAscii?: string;
}

/** The fields of an entry with `plainFields`, in this order. */
// a type, not an interface: it is assignable to `fields`' index signature
export type PlainFields = {
  stream: 'stdout' | 'stderr';
  time_nanos?: string;
  k8s?: object;
};

const WORD_LEVELS: Readonly<Record<string, Level>> = {
  TRACE: 'TRACE',
  DEBUG: 'DEBUG',
  DBG: 'DEBUG',
  INFO: 'INFO',
  INF: 'INFO',
  WARN: 'WARN',
  WARNING: 'WARN',
  ERROR: 'ERROR',
  ERR: 'ERROR',
  FATAL: 'FATAL',
  CRITICAL: 'FATAL',
};

/** Normalises a level name (any case) or a pino/bunyan number (10–60). */
export function normaliseLevel(value: unknown): Level | undefined {
  if (typeof value === 'number') {
    if (value >= 60) return 'FATAL';
    if (value >= 50) return 'ERROR';
    if (value >= 40) return 'WARN';
    if (value >= 30) return 'INFO';
    if (value >= 20) return 'DEBUG';
    if (value >= 10) return 'TRACE';
    return undefined;
  }
  if (typeof value !== 'string') return undefined;
  // the six names as they are written most, compared as they are: a lookup by a string cut from
  // a line (a regex capture) first finds it in the string table, 0.1 µs of a regex parse's 1.2
  if (value === 'INFO' || value === 'ERROR' || value === 'WARN' || value === 'DEBUG' || value === 'TRACE' || value === 'FATAL') return value;
  // most levels come written as their name: no upper-case copy made for them
  if (Object.hasOwn(WORD_LEVELS, value)) return WORD_LEVELS[value];
  return WORD_LEVELS[value.toUpperCase()];
}

/**
 * The first whole word that names a level. A whole upper-case word that names none (`GET`) is no
 * match, so this finds what a scan of every upper-case word would, in one pass and one match.
 */
const LEVEL_WORD = new RegExp(`\\b(?:${Object.keys(WORD_LEVELS).join('|')})\\b`);
const LOGFMT_LEVEL = /(?:^|\s)(?:level|lvl)=("?)([A-Za-z]+)\1(?=\s|$)/i;

/** Level of a plain text line: first whole upper-case word naming one, else a logfmt level= pair. */
export function detectLevel(line: string): Level | undefined {
  const word = LEVEL_WORD.exec(line);
  if (word !== null) return WORD_LEVELS[word[0]];
  // a logfmt pair ends `level=` or `lvl=` (any case): a line without `l=` or `L=` is not searched
  // again (a URL's query has its `=` too; two indexOf cost a fifth of the pattern's search)
  if (!line.includes('l=') && !line.includes('L=')) return undefined;
  const kv = LOGFMT_LEVEL.exec(line);
  return kv ? normaliseLevel(kv[2]) : undefined;
}

/** The largest epoch ms a Date can hold (ECMA-262 §21.4.1.1); past it toISOString() throws. */
const MAX_TIME_MS = 8.64e15;

/** True for epoch ms that render as RFC 3339 (finite, within the Date range). */
export function isTime(ms: unknown): ms is number {
  return typeof ms === 'number' && Number.isFinite(ms) && Math.abs(ms) <= MAX_TIME_MS;
}

/**
 * A time value as epoch ms: an RFC 3339 string or epoch ms within the Date range; anything else
 * (epoch nanoseconds, say) is no time and stays a field. Text is read by readTimeText (core/time.ts),
 * so any other form Date.parse reads is taken too.
 */
export function parseTime(value: unknown): number | undefined {
  if (isTime(value)) return value;
  if (typeof value === 'string') {
    const t = readTimeText(value);
    if (!Number.isNaN(t)) return t;
  }
  return undefined;
}

/**
 * Deepest nesting of arrays and objects taken from JSON text. JSON.parse takes far deeper text
 * than JSON.stringify can write again (it overflows the stack a few thousand levels down), and
 * every encoding writes the entry again; no real log nests this deep.
 */
export const MAX_JSON_DEPTH = 1000;

/** True when JSON text nests deeper than MAX_JSON_DEPTH; only long text can, so short text costs nothing. */
export function nestsTooDeep(text: string): boolean {
  if (text.length <= 2 * MAX_JSON_DEPTH) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \\ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91 /* { [ */) {
      if (++depth > MAX_JSON_DEPTH) return true;
    } else if (c === 125 || c === 93 /* } ] */) depth--;
  }
  return false;
}

/**
 * Parses JSON text into a value; undefined when it is not JSON or nests deeper than
 * MAX_JSON_DEPTH (such text is then taken as plain text or a parse error by the caller).
 */
export function parseJsonText(text: string): unknown {
  if (nestsTooDeep(text)) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Turns one line into an entry: a JSON object becomes structured unless `raw`. An `id` given is
 * the entry's (last key, as if set after): a text line's entry is made whole with it, so it needs
 * no second step (a key added to an object made without it costs a property store of its own).
 */
export function parseLine(line: string, source: string, now: number, raw: boolean, id?: string): Entry {
  if (!raw && line.charCodeAt(0) === 123 /* { */) {
    const obj = parseJsonText(line);
    if (typeof obj === 'object' && obj !== null && !Array.isArray(obj)) {
      const entry = fromObject(obj as Record<string, unknown>, source, now);
      if (id !== undefined) entry.id = id;
      return entry;
    }
  }
  const level = detectLevel(line);
  if (id === undefined) return level ? { time: now, source, level, message: line } : { time: now, source, message: line };
  return level ? { time: now, source, level, message: line, id } : { time: now, source, message: line, id };
}

/**
 * The entry of a text line (not a JSON object, or `raw`) with a container line's fields: made
 * whole at once, so entries of a container file share one shape (two: with and without a level)
 * and none gets its fields added later.
 */
export function plainFieldsEntry(line: string, source: string, time: number, fields: PlainFields): Entry {
  const level = detectLevel(line);
  return level ? { time, source, level, message: line, fields, plainFields: true } : { time, source, message: line, fields, plainFields: true };
}

const MESSAGE_KEYS = ['msg', 'message'];
const TIME_KEYS = ['time', 'ts', 'timestamp'];
const LEVEL_KEYS = ['level', 'lvl', 'severity'];

function fromObject(obj: Record<string, unknown>, source: string, now: number): Entry {
  const entry: Entry = { time: now, source, message: '' };
  const fields: Record<string, unknown> = {};
  let hasFields = false;
  let gotMessage = false;
  let gotTime = false;
  let gotLevel = false;
  for (const [key, value] of Object.entries(obj)) {
    if (!gotMessage && MESSAGE_KEYS.includes(key) && typeof value === 'string') {
      entry.message = value;
      gotMessage = true;
      continue;
    }
    if (!gotTime && TIME_KEYS.includes(key)) {
      const t = parseTime(value);
      if (t !== undefined) {
        entry.time = t;
        gotTime = true;
        continue;
      }
    }
    if (!gotLevel && LEVEL_KEYS.includes(key)) {
      const level = normaliseLevel(value);
      if (level) {
        entry.level = level;
        gotLevel = true;
        continue;
      }
    }
    fields[key] = value;
    hasFields = true;
  }
  if (hasFields) entry.fields = fields;
  return entry;
}
