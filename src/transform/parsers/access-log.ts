// `format = "nginx_combined"` and `"apache_common"`: access log lines. `-` for user, bytes,
// referrer and user agent means absent; status and bytes are numbers; the time becomes the entry's.
// The fields' JSON text is made along with them (Parsed.text): their keys are known here, and
// one look at the line tells which values need no escaping.

import { jsonString, primitiveJson, QUOTED_ASCII } from '../../core/entry-json.js';
import { readClfTimeIn } from '../time.js';
import type { Parsed } from './types.js';

// client ident user [time] "method path protocol" status bytes
const COMMON = String.raw`^(\S+) \S+ (\S+) \[([^\]]+)\] "(\S+) (\S+)(?: ([^"]*))?" (\d{3}) (\d+|-)`;
const COMMON_LINE = new RegExp(`${COMMON}(?:$|\\s)`);
// nginx writes a " inside the referrer or user agent as \x22, so a quoted part holds no quote
const COMBINED_LINE = new RegExp(`${COMMON} "([^"]*)" "([^"]*)"`);

/**
 * A part of the line as JSON: as it is, quoted, when the line is printable ASCII without `\`
 * (`plain`) and the part has no `"` (`quoteFree`: a `[^"]*` group's); else through jsonString.
 */
function partJson(v: string, plain: boolean, quoteFree: boolean): string {
  return plain && (quoteFree || !v.includes('"')) ? `"${v}"` : jsonString(v);
}

/** Digits as the JSON of their number: the digits themselves when Number gives them back. */
function digitsJson(d: string): string {
  return d.length <= 15 && (d.length === 1 || d.charCodeAt(0) !== 48) ? d : primitiveJson(Number(d))!;
}

/**
 * The parts of a line (the patterns' groups, in order), with `plain`: the line is printable ASCII
 * without `\` (QUOTED_ASCII). Module state, not an array per line: parseAccess reads them at once.
 */
let client = '';
let user = '';
/** the time's text: timeLine from timeFrom to timeTo (no slice made when it is the last one read) */
let timeLine = '';
let timeFrom = 0;
let timeTo = 0;
let method = '';
let path = '';
let protocol: string | undefined;
let status = '';
let bytes = '';
let referrer = '';
let agent = '';
/** client, user, method and path hold no `"` (scan knows it: their JSON is themselves quoted) */
let headQuoteFree = false;

/** The parts of the pattern's match into the module's state. */
function fromMatch(m: RegExpExecArray, combined: boolean): void {
  headQuoteFree = false;
  client = m[1]!;
  user = m[2]!;
  timeLine = m[3]!;
  timeFrom = 0;
  timeTo = timeLine.length;
  method = m[4]!;
  path = m[5]!;
  protocol = m[6];
  status = m[7]!;
  bytes = m[8]!;
  if (combined) {
    referrer = m[9]!;
    agent = m[10]!;
  }
}

const isDigit = (c: number): boolean => c >= 48 && c <= 57;

/** `HTTP/1.1` at `at` in `s` (compared by character: startsWith at a position takes V8 a runtime call). */
const isHttp11 = (s: string, at: number): boolean =>
  s.charCodeAt(at) === 72 &&
  s.charCodeAt(at + 1) === 84 &&
  s.charCodeAt(at + 2) === 84 &&
  s.charCodeAt(at + 3) === 80 &&
  s.charCodeAt(at + 4) === 47 &&
  s.charCodeAt(at + 5) === 49 &&
  s.charCodeAt(at + 6) === 46 &&
  s.charCodeAt(at + 7) === 49;

/** Statuses below this (from 100, HTTP's) have their text and JSON made once, by number (0 to 99 unused). */
const COMMON_STATUSES = 600;
const STATUS_TEXTS: readonly string[] = Array.from({ length: COMMON_STATUSES }, (_, n) => String(n));
const STATUS_JSONS: readonly string[] = Array.from({ length: COMMON_STATUSES }, (_, n) => `,"status":${n}`);
const HTTP11_JSON = ',"protocol":"HTTP/1.1"';

/** What scan says of a line: its parts are read, it does not match, or only the pattern can tell. */
const MATCHED = 1;
const NO_MATCH = 0;
const ASK_PATTERN = -1;

/**
 * The pattern's match of a printable ASCII line without `\`, read by indexOf instead of the
 * regular expression (whose match array and scan cost a third of the parse). In such a line `\S`
 * is any character but a space and `\s` a space, and every part but the path is forced: each
 * greedy run ends where the next character of the pattern must stand. The path (`(\S+)` before
 * an optional ` protocol` and a `"`) can give back characters up to a `"` within it: a path
 * with a `"` is left to the pattern, so a line read here is matched as the pattern matches it
 * (a property test holds the two to each other).
 */
function scan(s: string, combined: boolean): number {
  // ^(\S+) \S+ (\S+) \[
  const a = s.indexOf(' ');
  if (a <= 0) return NO_MATCH;
  const b = s.indexOf(' ', a + 1);
  if (b <= a + 1) return NO_MATCH;
  const c = s.indexOf(' ', b + 1);
  if (c <= b + 1 || s.charCodeAt(c + 1) !== 91 /* [ */) return NO_MATCH;
  // ([^\]]+)\] "
  const d = s.indexOf(']', c + 2);
  if (d <= c + 2 || s.charCodeAt(d + 1) !== 32 || s.charCodeAt(d + 2) !== 34 /* " */) return NO_MATCH;
  // (\S+) (\S+)
  const e = s.indexOf(' ', d + 3);
  if (e <= d + 3) return NO_MATCH;
  const f = s.indexOf(' ', e + 1);
  const pathEnd = f < 0 ? s.length : f;
  if (pathEnd === e + 1) return NO_MATCH;
  // the first `"` after the method's: in the method, in the path, or the one closing the request
  const quote = s.indexOf('"', d + 3);
  if (quote >= 0 && quote < pathEnd) return ASK_PATTERN;
  // nor before the method's (the time's brackets could hold one)
  headQuoteFree = s.indexOf('"') === d + 2;
  // without a `"` in the path, ` ([^"]*)"` must follow it whole: the path cannot end sooner
  if (f < 0 || quote < 0) return NO_MATCH;
  // " (\d{3}) (\d+|-)
  let k = quote + 1;
  if (s.charCodeAt(k) !== 32 || !isDigit(s.charCodeAt(k + 1)) || !isDigit(s.charCodeAt(k + 2)) || !isDigit(s.charCodeAt(k + 3)) || s.charCodeAt(k + 4) !== 32) return NO_MATCH;
  const bytesAt = k + 5;
  k = bytesAt;
  if (isDigit(s.charCodeAt(k))) {
    // k only grows, bounded by the length of s
    while (isDigit(s.charCodeAt(k))) k++;
  } else if (s.charCodeAt(k) === 45 /* - */) k++;
  else return NO_MATCH;
  let r = 0;
  let g = 0;
  if (combined) {
    // "([^"]*)" "([^"]*)"
    if (s.charCodeAt(k) !== 32 || s.charCodeAt(k + 1) !== 34) return NO_MATCH;
    r = s.indexOf('"', k + 2);
    if (r < 0 || s.charCodeAt(r + 1) !== 32 || s.charCodeAt(r + 2) !== 34) return NO_MATCH;
    g = s.indexOf('"', r + 3);
    if (g < 0) return NO_MATCH;
  } else if (k !== s.length && s.charCodeAt(k) !== 32) return NO_MATCH; // (?:$|\s)
  client = s.slice(0, a);
  // a `-` part (absent) is the constant, not a slice of its own
  user = c === b + 2 && s.charCodeAt(b + 1) === 45 ? '-' : s.slice(b + 1, c);
  timeLine = s;
  timeFrom = c + 2;
  timeTo = d;
  // the method, protocol and status most lines share are their constants, not slices of their own
  method = e === d + 6 && s.charCodeAt(d + 3) === 71 && s.charCodeAt(d + 4) === 69 && s.charCodeAt(d + 5) === 84 /* GET */ ? 'GET' : s.slice(d + 3, e);
  path = s.slice(e + 1, f);
  protocol = quote === f + 9 && isHttp11(s, f + 1) ? 'HTTP/1.1' : s.slice(f + 1, quote);
  const code = (s.charCodeAt(quote + 2) - 48) * 100 + (s.charCodeAt(quote + 3) - 48) * 10 + (s.charCodeAt(quote + 4) - 48);
  status = code >= 100 && code < COMMON_STATUSES ? STATUS_TEXTS[code]! : s.slice(quote + 2, quote + 5);
  bytes = k === bytesAt + 1 && s.charCodeAt(bytesAt) === 45 ? '-' : s.slice(bytesAt, k);
  if (combined) {
    referrer = r === k + 3 && s.charCodeAt(k + 2) === 45 ? '-' : s.slice(k + 2, r);
    agent = g === r + 4 && s.charCodeAt(r + 3) === 45 ? '-' : s.slice(r + 3, g);
  }
  return MATCHED;
}

/** The fields of the parts read (module state) of `text`; undefined when its time is none. */
function parseAccess(combined: boolean, plain: boolean): Parsed | undefined {
  const time = readClfTimeIn(timeLine, timeFrom, timeTo);
  if (time === undefined) return undefined;
  const fields: Record<string, unknown> = { client };
  if (user !== '-') fields.user = user;
  fields.method = method;
  fields.path = path;
  let json: string;
  // the common line, whose head's parts need no escaping: their JSON in one string, not one a part
  if (plain && headQuoteFree) {
    json =
      user !== '-'
        ? `{"client":"${client}","user":"${user}","method":"${method}","path":"${path}"`
        : // the usual method inside the constant: two strings fewer joined
          method === 'GET'
          ? `{"client":"${client}","method":"GET","path":"${path}"`
          : `{"client":"${client}","method":"${method}","path":"${path}"`;
  } else {
    json = `{"client":${partJson(client, plain, headQuoteFree)}`;
    if (user !== '-') json += `,"user":${partJson(user, plain, headQuoteFree)}`;
    json += `,"method":${partJson(method, plain, headQuoteFree)},"path":${partJson(path, plain, headQuoteFree)}`;
  }
  if (protocol !== undefined && protocol !== '') {
    fields.protocol = protocol;
    json += protocol === 'HTTP/1.1' ? HTTP11_JSON : plain ? `,"protocol":"${protocol}"` : `,"protocol":${jsonString(protocol)}`;
  }
  // three ASCII digits (both readers make sure): their number without Number's parse
  const code = (status.charCodeAt(0) - 48) * 100 + (status.charCodeAt(1) - 48) * 10 + (status.charCodeAt(2) - 48);
  fields.status = code;
  json += code >= 100 && code < COMMON_STATUSES ? STATUS_JSONS[code]! : `,"status":${digitsJson(status)}`;
  if (bytes !== '-') {
    fields.bytes = Number(bytes);
    json += `,"bytes":${digitsJson(bytes)}`;
  }
  if (combined) {
    if (referrer !== '-') {
      fields.referrer = referrer;
      json += plain ? `,"referrer":"${referrer}"` : `,"referrer":${jsonString(referrer)}`;
    }
    if (agent !== '-') {
      fields.user_agent = agent;
      json += plain ? `,"user_agent":"${agent}"` : `,"user_agent":${jsonString(agent)}`;
    }
  }
  return { fields, time, promote: false, text: json, quotedAscii: plain };
}

/** A line read by its pattern alone: what parseAccessLine gives, the way it was first written (the property test's reference). */
export function parseAccessByPattern(text: string, combined: boolean): Parsed | undefined {
  const m = (combined ? COMBINED_LINE : COMMON_LINE).exec(text);
  if (m === null) return undefined;
  fromMatch(m, combined);
  return parseAccess(combined, QUOTED_ASCII.test(text));
}

/** A line read by scan when it is printable ASCII without `\`, else (or when scan cannot tell) by its pattern. */
export function parseAccessLine(text: string, combined: boolean): Parsed | undefined {
  if (!QUOTED_ASCII.test(text)) return parseAccessByPattern(text, combined);
  const read = scan(text, combined);
  if (read === NO_MATCH) return undefined;
  if (read === ASK_PATTERN) {
    const m = (combined ? COMBINED_LINE : COMMON_LINE).exec(text);
    if (m === null) return undefined;
    fromMatch(m, combined);
  }
  return parseAccess(combined, true);
}

export function parseNginxCombined(text: string): Parsed | undefined {
  return parseAccessLine(text, true);
}

export function parseApacheCommon(text: string): Parsed | undefined {
  return parseAccessLine(text, false);
}
