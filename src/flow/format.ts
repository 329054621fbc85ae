// Formatters: one line per entry without terminator; encoding belongs here, framing to sinks.

import type { FormatType } from '../config/schema.js';
import type { Entry } from '../core/entry.js';
import { entryJson, hasKeys, isoTime, rawJsonLine } from '../core/entry-json.js';

export type Formatter = (entry: Entry) => string;

/** json: the keys of §4 in order, empty ones left out (`id` is not shown). */
export function formatJson(e: Entry): string {
  if (e.raw !== undefined) return rawJsonLine(e as Entry & { raw: string });
  return entryJson(e, e.time, e.source, e.message, false);
}

// C0 but tab, DEL, C1, and the bidi embedding/override/isolate controls.
const UNSAFE = /[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;

function escapeChar(ch: string): string {
  const cp = ch.codePointAt(0)!;
  return cp <= 0xff ? `\\x${cp.toString(16).padStart(2, '0')}` : `\\u{${cp.toString(16).padStart(4, '0')}}`;
}

/** Shows control characters escaped so nothing reaches a terminal raw. */
export function sanitise(text: string): string {
  UNSAFE.lastIndex = 0;
  if (!UNSAFE.test(text)) return text;
  UNSAFE.lastIndex = 0;
  return text.replace(UNSAFE, escapeChar);
}

/** txt: `<time> <LEVEL> <node/source> <message>[ <fields json>]`; a missing level shows as `-`. */
export function formatTxt(e: Entry): string {
  const who = e.node ? `${e.node}/${e.source}` : e.source;
  let line = `${isoTime(e.time)} ${e.level ?? '-'} ${sanitise(who)} ${sanitise(e.message)}`;
  if (e.fields && hasKeys(e.fields)) line += ` ${sanitise(JSON.stringify(e.fields))}`;
  return line;
}

export const FORMATTERS = {
  raw: (e) => e.message,
  json: formatJson,
  txt: formatTxt,
} satisfies Record<FormatType, Formatter>;
