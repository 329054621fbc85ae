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

/** Statuses below this (from 100, HTTP's) have their JSON made once, by number (0 to 99 unused). */
const COMMON_STATUSES = 600;
const STATUS_JSONS: readonly string[] = Array.from({ length: COMMON_STATUSES }, (_, n) => `,"status":${n}`);
const HTTP11_JSON = ',"protocol":"HTTP/1.1"';
/** HTTP11_JSON and the status's, in one string: one piece fewer joined to the fields' text */
const HTTP11_STATUS_JSONS: readonly string[] = STATUS_JSONS.map((status) => HTTP11_JSON + status);
/** Most digits whose number a loop of `n * 10 + d` gives exactly (as Number does) */
const EXACT_DIGITS = 15;

/** What scan says of a line when it gives no fields: it does not match, or only the pattern can tell. */
const NO_MATCH = 0;
const ASK_PATTERN = -1;

/**
 * The pattern's match of a printable ASCII line without `\`, read by indexOf instead of the
 * regular expression (whose match array and scan cost a third of the parse), and its fields. In
 * such a line `\S` is any character but a space and `\s` a space, and every part but the path is
 * forced: each greedy run ends where the next character of the pattern must stand. The path
 * (`(\S+)` before an optional ` protocol` and a `"`) can give back characters up to a `"` within
 * it: a path with a `"` is left to the pattern, so a line read here is matched as the pattern
 * matches it (a property test holds the two to each other). The parts go to parseAccess as
 * arguments: kept in module state, each line's strings were written into an old object (a write
 * barrier each, and slots for the scavenger to visit).
 */
function scan(s: string, combined: boolean): Parsed | undefined | typeof NO_MATCH | typeof ASK_PATTERN {
  // ^(\S+) \S+ (\S+) \[
  const a = s.indexOf(' ');
  if (a <= 0) return NO_MATCH;
  // the next space one character on (the usual `-` ident and user) is looked at, not searched for:
  // an indexOf is a call of its own (~20 ns), a character is read in place
  const b = s.charCodeAt(a + 1) !== 32 && s.charCodeAt(a + 2) === 32 ? a + 2 : s.indexOf(' ', a + 1);
  if (b <= a + 1) return NO_MATCH;
  const c = s.charCodeAt(b + 1) !== 32 && s.charCodeAt(b + 2) === 32 ? b + 2 : s.indexOf(' ', b + 1);
  if (c <= b + 1 || s.charCodeAt(c + 1) !== 91 /* [ */) return NO_MATCH;
  // ([^\]]+)\] "
  const d = s.indexOf(']', c + 2);
  if (d <= c + 2 || s.charCodeAt(d + 1) !== 32 || s.charCodeAt(d + 2) !== 34 /* " */) return NO_MATCH;
  // (\S+) (\S+)
  const get = s.charCodeAt(d + 3) === 71 && s.charCodeAt(d + 4) === 69 && s.charCodeAt(d + 5) === 84 /* GET */ && s.charCodeAt(d + 6) === 32;
  const e = get ? d + 6 : s.indexOf(' ', d + 3);
  if (e <= d + 3) return NO_MATCH;
  const f = s.indexOf(' ', e + 1);
  const pathEnd = f < 0 ? s.length : f;
  if (pathEnd === e + 1) return NO_MATCH;
  // the first `"` after the method's: in the method, in the path, or the one closing the request
  const quote = s.indexOf('"', d + 3);
  if (quote >= 0 && quote < pathEnd) return ASK_PATTERN;
  // without a `"` in the path, ` ([^"]*)"` must follow it whole: the path cannot end sooner
  if (f < 0 || quote < 0) return NO_MATCH;
  // " (\d{3}) (\d+|-)
  if (s.charCodeAt(quote + 1) !== 32 || s.charCodeAt(quote + 5) !== 32) return NO_MATCH;
  const s0 = s.charCodeAt(quote + 2) - 48;
  const s1 = s.charCodeAt(quote + 3) - 48;
  const s2 = s.charCodeAt(quote + 4) - 48;
  if (s0 < 0 || s0 > 9 || s1 < 0 || s1 > 9 || s2 < 0 || s2 > 9) return NO_MATCH;
  const bytesAt = quote + 6;
  let k = bytesAt;
  /** the bytes' number read along with its digits; -1: a `-`, or too many digits to read exactly */
  let bytesValue = 0;
  let digit = s.charCodeAt(k) - 48;
  if (digit >= 0 && digit <= 9) {
    // k only grows, bounded by the length of s
    do {
      bytesValue = bytesValue * 10 + digit;
      digit = s.charCodeAt(++k) - 48;
    } while (digit >= 0 && digit <= 9);
    if (k - bytesAt > EXACT_DIGITS) bytesValue = -1;
  } else if (digit === 45 - 48 /* - */) {
    k++;
    bytesValue = -1;
  } else return NO_MATCH;
  let r = 0;
  let g = 0;
  if (combined) {
    // "([^"]*)" "([^"]*)"
    if (s.charCodeAt(k) !== 32 || s.charCodeAt(k + 1) !== 34) return NO_MATCH;
    r = s.charCodeAt(k + 2) === 45 /* - */ && s.charCodeAt(k + 3) === 34 ? k + 3 : s.indexOf('"', k + 2);
    if (r < 0 || s.charCodeAt(r + 1) !== 32 || s.charCodeAt(r + 2) !== 34) return NO_MATCH;
    g = s.indexOf('"', r + 3);
    if (g < 0) return NO_MATCH;
  } else if (k !== s.length && s.charCodeAt(k) !== 32) return NO_MATCH; // (?:$|\s)
  // nor a `"` before the method's (the client, the user, the time's brackets could hold one)
  const headQuoteFree = s.indexOf('"') === d + 2;
  // a `-` part (absent) is the constant, not a slice of its own; so are the method and protocol most lines share
  return parseAccess(
    combined,
    true,
    headQuoteFree,
    s.slice(0, a),
    c === b + 2 && s.charCodeAt(b + 1) === 45 ? '-' : s.slice(b + 1, c),
    s,
    c + 2,
    d,
    get ? 'GET' : s.slice(d + 3, e),
    s.slice(e + 1, f),
    quote === f + 9 && isHttp11(s, f + 1) ? 'HTTP/1.1' : s.slice(f + 1, quote),
    s0 * 100 + s1 * 10 + s2,
    bytesValue === -1 && k === bytesAt + 1 ? '-' : s.slice(bytesAt, k),
    bytesValue,
    !combined ? '-' : r === k + 3 && s.charCodeAt(k + 2) === 45 ? '-' : s.slice(k + 2, r),
    !combined ? '-' : g === r + 4 && s.charCodeAt(r + 3) === 45 ? '-' : s.slice(r + 3, g),
  );
}

/**
 * The fields of a line's parts (the patterns' groups, in order) and their JSON text; undefined
 * when its time (`timeLine` from `timeFrom` to `timeTo`) is none. `plain`: the line is printable
 * ASCII without `\` (QUOTED_ASCII); `headQuoteFree`: client, user, method and path hold no `"`
 * (their JSON is themselves quoted). `code` is the status's number (three ASCII digits, both
 * readers make sure), `bytesValue` the number of `bytes` when known, else -1.
 */
function parseAccess(
  combined: boolean,
  plain: boolean,
  headQuoteFree: boolean,
  client: string,
  user: string,
  timeLine: string,
  timeFrom: number,
  timeTo: number,
  method: string,
  path: string,
  protocol: string | undefined,
  code: number,
  bytes: string,
  bytesValue: number,
  referrer: string,
  agent: string,
): Parsed | undefined {
  const time = readClfTimeIn(timeLine, timeFrom, timeTo);
  if (time === undefined) return undefined;
  const hasUser = user !== '-';
  const hasProtocol = protocol !== undefined && protocol !== '';
  // the parts every line of a shape has, in one literal: its properties are made in the object
  // itself; added one by one after a literal of one, they were moved to ever larger arrays beside it
  const fields: Record<string, unknown> = hasUser
    ? hasProtocol
      ? { client, user, method, path, protocol, status: code }
      : { client, user, method, path, status: code }
    : hasProtocol
      ? { client, method, path, protocol, status: code }
      : { client, method, path, status: code };
  let json: string;
  // the common line, whose head's parts need no escaping: their JSON in one string, not one a part
  if (plain && headQuoteFree) {
    json =
      hasUser
        ? `{"client":"${client}","user":"${user}","method":"${method}","path":"${path}"`
        : // the usual method inside the constant: two strings fewer joined
          method === 'GET'
          ? `{"client":"${client}","method":"GET","path":"${path}"`
          : `{"client":"${client}","method":"${method}","path":"${path}"`;
  } else {
    json = `{"client":${partJson(client, plain, headQuoteFree)}`;
    if (hasUser) json += `,"user":${partJson(user, plain, headQuoteFree)}`;
    json += `,"method":${partJson(method, plain, headQuoteFree)},"path":${partJson(path, plain, headQuoteFree)}`;
  }
  // three digits: the JSON of their number is the number's text (`099` is 99)
  const common = code >= 100 && code < COMMON_STATUSES;
  if (hasProtocol && protocol === 'HTTP/1.1' && common) json += HTTP11_STATUS_JSONS[code]!;
  else {
    if (hasProtocol) json += protocol === 'HTTP/1.1' ? HTTP11_JSON : plain ? `,"protocol":"${protocol}"` : `,"protocol":${jsonString(protocol)}`;
    json += common ? STATUS_JSONS[code]! : `,"status":${code}`;
  }
  if (bytes !== '-') {
    fields.bytes = bytesValue >= 0 ? bytesValue : Number(bytes);
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

/** The pattern's match as parseAccess's arguments. */
function fromMatch(m: RegExpExecArray, combined: boolean, plain: boolean): Parsed | undefined {
  const status = m[7]!;
  const code = (status.charCodeAt(0) - 48) * 100 + (status.charCodeAt(1) - 48) * 10 + (status.charCodeAt(2) - 48);
  const time = m[3]!;
  return parseAccess(combined, plain, false, m[1]!, m[2]!, time, 0, time.length, m[4]!, m[5]!, m[6], code, m[8]!, -1, combined ? m[9]! : '-', combined ? m[10]! : '-');
}

/** A line read by its pattern alone: what parseAccessLine gives, the way it was first written (the property test's reference). */
export function parseAccessByPattern(text: string, combined: boolean): Parsed | undefined {
  const m = (combined ? COMBINED_LINE : COMMON_LINE).exec(text);
  return m === null ? undefined : fromMatch(m, combined, QUOTED_ASCII.test(text));
}

/** A line read by scan when it is printable ASCII without `\`, else (or when scan cannot tell) by its pattern. */
export function parseAccessLine(text: string, combined: boolean): Parsed | undefined {
  if (!QUOTED_ASCII.test(text)) return parseAccessByPattern(text, combined);
  const read = scan(text, combined);
  if (read === NO_MATCH) return undefined;
  if (read === ASK_PATTERN) {
    const m = (combined ? COMBINED_LINE : COMMON_LINE).exec(text);
    return m === null ? undefined : fromMatch(m, combined, true);
  }
  return read;
}

export function parseNginxCombined(text: string): Parsed | undefined {
  return parseAccessLine(text, true);
}

export function parseApacheCommon(text: string): Parsed | undefined {
  return parseAccessLine(text, false);
}
