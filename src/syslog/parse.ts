// Parsing of one syslog message (RFC 5424, and RFC 3164 as real senders write it) into the entry
// of DESIGN.md §4: TIMESTAMP → time, severity → level, APP-NAME or TAG → source, MSG → message;
// HOSTNAME, facility, PROCID, MSGID and structured data → fields.

import type { Entry } from '../core/entry.js';
import { readTimeText } from '../core/time.js';
import { MONTHS } from './format.js';
import { FACILITIES, MAX_PRI, SEVERITY_LEVELS } from './pri.js';

/** An entry parsed from a message; `ok` is false when the message had no valid PRI or a broken RFC 5424 header. */
export interface Parsed {
  readonly entry: Entry;
  readonly ok: boolean;
}

/** SD-ID → PARAM-NAME → PARAM-VALUE */
export type StructuredData = Record<string, Record<string, string>>;

const NIL = '-';
/** RFC 3164 TIMESTAMP: "Mmm dd hh:mm:ss", the day padded with a space. */
const BSD_TIME = /^(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) ([ \d]\d) (\d\d):(\d\d):(\d\d) /;
/** An RFC 3339 timestamp where RFC 3164 has its own (what rsyslog's forward format writes). */
const RFC3339_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d) /;
/** A 3164 TAG with optional [PID] and the colon: "tag:", "tag[42]:", "tag[42]". */
const TAG = /^([^\s[\]:]{1,64})(?:\[([^\]\s]{1,128})\])?(:?)(?: |$)/;
const HALF_YEAR_MS = 183 * 24 * 3600 * 1000;

/**
 * Parses one syslog message (`text`, decoded, without framing). Without a valid PRI the entry
 * is the text as it is, from `fallbackSource` at `now`, and `ok` is false.
 */
export function parseSyslog(text: string, now: number, fallbackSource: string): Parsed {
  const pri = readPri(text);
  if (pri < 0) return { entry: { time: now, source: fallbackSource, message: stripTerminator(text) }, ok: false };
  const close = text.indexOf('>');
  const fields: Record<string, unknown> = {};
  const entry: Entry = { time: now, source: fallbackSource, level: SEVERITY_LEVELS[pri & 7]!, message: '', fields };
  let ok = true;
  const rest = text.slice(close + 1);
  if (rest.startsWith('1 ')) ok = parse5424(rest.slice(2), entry, fields);
  else parse3164(rest, now, entry, fields);
  fields.facility = FACILITIES[pri >> 3]!;
  entry.message = stripTerminator(entry.message);
  return { entry, ok };
}

/** The PRI value at the start of `text`: "<" 1–3 digits ">" with a value up to 191; -1 when there is none. */
function readPri(text: string): number {
  if (text.charCodeAt(0) !== 60 /* < */) return -1;
  let v = 0;
  let i = 1;
  for (; i < text.length && i <= 4; i++) {
    const c = text.charCodeAt(i);
    if (c === 62 /* > */) break;
    if (c < 48 || c > 57) return -1;
    v = v * 10 + (c - 48);
  }
  if (i === 1 || i > 4 || text.charCodeAt(i) !== 62 || v > MAX_PRI) return -1;
  return v;
}

function stripTerminator(s: string): string {
  if (s.endsWith('\n')) s = s.slice(0, s.endsWith('\r\n') ? -2 : -1);
  return s;
}

/** Next space-delimited header field from `pos`; the field and the position after its space. */
function field(s: string, pos: number): [string, number] | undefined {
  const sp = s.indexOf(' ', pos);
  if (sp < 0) return pos < s.length ? [s.slice(pos), s.length] : undefined;
  return [s.slice(pos, sp), sp + 1];
}

/** TIMESTAMP HOSTNAME APP-NAME PROCID MSGID SD [MSG]; false when the header is broken (the rest is then the message). */
function parse5424(s: string, entry: Entry, fields: Record<string, unknown>): boolean {
  const parts: string[] = [];
  let pos = 0;
  for (let k = 0; k < 5; k++) {
    const f = field(s, pos);
    if (!f || f[0] === '') {
      entry.message = s;
      return false;
    }
    parts.push(f[0]);
    pos = f[1];
  }
  const [time, hostname, app, procid, msgid] = parts as [string, string, string, string, string];
  if (time !== NIL) {
    const t = readTimeText(time);
    if (!Number.isNaN(t)) entry.time = t;
  }
  if (hostname !== NIL) fields.hostname = hostname;
  if (app !== NIL) entry.source = app;
  if (procid !== NIL) fields.procid = procid;
  if (msgid !== NIL) fields.msgid = msgid;
  if (s.startsWith(NIL, pos) && (pos + 1 === s.length || s.charCodeAt(pos + 1) === 32)) {
    pos += 1;
  } else {
    const sd = parseSd(s, pos);
    if (!sd) {
      entry.message = s.slice(pos);
      return false;
    }
    fields.sd = sd.data;
    pos = sd.end;
  }
  if (pos < s.length) {
    if (s.charCodeAt(pos) !== 32) {
      entry.message = s.slice(pos);
      return false;
    }
    pos++;
  }
  let msg = s.slice(pos);
  if (msg.charCodeAt(0) === 0xfeff) msg = msg.slice(1); // the BOM of an UTF-8 MSG
  entry.message = msg;
  return true;
}

/** STRUCTURED-DATA at `pos`: one or more [SD-ID *(SP PARAM-NAME="VALUE")]; undefined when malformed. */
function parseSd(s: string, pos: number): { data: StructuredData; end: number } | undefined {
  const data: StructuredData = {};
  while (s.charCodeAt(pos) === 91 /* [ */) {
    let i = pos + 1;
    const idEnd = scanName(s, i);
    if (idEnd === i) return undefined;
    const params: Record<string, string> = {};
    data[s.slice(i, idEnd)] = params;
    i = idEnd;
    for (;;) {
      const c = s.charCodeAt(i);
      if (c === 93 /* ] */) {
        i++;
        break;
      }
      if (c !== 32) return undefined;
      const nameStart = i + 1;
      const nameEnd = scanName(s, nameStart);
      if (nameEnd === nameStart || s.charCodeAt(nameEnd) !== 61 /* = */ || s.charCodeAt(nameEnd + 1) !== 34 /* " */) return undefined;
      let value = '';
      let j = nameEnd + 2;
      for (; j < s.length; j++) {
        const v = s.charCodeAt(j);
        if (v === 34) break;
        if (v === 92 /* \ */ && j + 1 < s.length) {
          const next = s[j + 1]!;
          // only \" \\ \] are escapes; any other backslash stays (RFC 5424 §6.3.3)
          if (next === '"' || next === '\\' || next === ']') {
            value += next;
            j++;
            continue;
          }
        }
        value += s[j];
      }
      if (j >= s.length) return undefined;
      params[s.slice(nameStart, nameEnd)] = value;
      i = j + 1;
    }
    pos = i;
  }
  return { data, end: pos };
}

/** End of an SD-NAME from `i`: printable US-ASCII but = SP ] " (at most 32). */
function scanName(s: string, i: number): number {
  const start = i;
  for (; i < s.length && i - start < 32; i++) {
    const c = s.charCodeAt(i);
    if (c <= 32 || c >= 127 || c === 61 || c === 93 || c === 34) break;
  }
  return i;
}

/** [TIMESTAMP SP HOSTNAME SP] [TAG[PID]: ] MSG, as senders really write RFC 3164. */
function parse3164(s: string, now: number, entry: Entry, fields: Record<string, unknown>): void {
  let pos = 0;
  let timed = false;
  const bsd = BSD_TIME.exec(s);
  if (bsd) {
    entry.time = bsdTime(bsd, now);
    pos = bsd[0].length;
    timed = true;
  } else {
    const iso = RFC3339_TIME.exec(s);
    if (iso) {
      const t = readTimeText(iso[0].slice(0, -1));
      if (!Number.isNaN(t)) entry.time = t;
      pos = iso[0].length;
      timed = true;
    }
  }
  // A HOSTNAME follows a TIMESTAMP, unless that word is already the TAG ("tag:" or "tag[pid]").
  if (timed) {
    const f = field(s, pos);
    if (f && f[0] !== '' && !/[:[]/.test(f[0])) {
      fields.hostname = f[0];
      pos = f[1];
    }
  }
  const tag = TAG.exec(s.slice(pos, pos + 200));
  if (tag && (tag[3] === ':' || tag[2] !== undefined)) {
    entry.source = tag[1]!;
    if (tag[2] !== undefined) fields.procid = tag[2];
    pos += tag[0].length;
  }
  entry.message = s.slice(pos);
}

/** The last 3164 timestamp converted: a burst shares its second, and local-time conversion is dear. */
let lastStamp = '';
let lastStampTime = 0;

/** A 3164 timestamp in the receiver's local time, in the year that puts it nearest to `now`. */
function bsdTime(m: RegExpExecArray, now: number): number {
  if (m[0] === lastStamp && Math.abs(now - lastStampTime) < HALF_YEAR_MS) return lastStampTime;
  lastStamp = m[0];
  lastStampTime = convertBsdTime(m, now);
  return lastStampTime;
}

function convertBsdTime(m: RegExpExecArray, now: number): number {
  const year = new Date(now).getFullYear();
  const at = (y: number) => new Date(y, MONTHS.indexOf(m[1]!), Number(m[2]!.trim()), Number(m[3]), Number(m[4]), Number(m[5])).getTime();
  let t = at(year);
  if (t - now > HALF_YEAR_MS) t = at(year - 1);
  else if (now - t > HALF_YEAR_MS) t = at(year + 1);
  return t;
}
