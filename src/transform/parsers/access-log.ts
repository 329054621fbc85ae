// `format = "nginx_combined"` and `"apache_common"`: access log lines. `-` for user, bytes,
// referrer and user agent means absent; status and bytes are numbers; the time becomes the entry's.

import { readClfTime } from '../time.js';
import type { Parsed } from './types.js';

// client ident user [time] "method path protocol" status bytes
const COMMON = String.raw`^(\S+) \S+ (\S+) \[([^\]]+)\] "(\S+) (\S+)(?: ([^"]*))?" (\d{3}) (\d+|-)`;
const COMMON_LINE = new RegExp(`${COMMON}(?:$|\\s)`);
// nginx writes a " inside the referrer or user agent as \x22, so a quoted part holds no quote
const COMBINED_LINE = new RegExp(`${COMMON} "([^"]*)" "([^"]*)"`);

function parseAccess(m: RegExpExecArray, combined: boolean): Parsed | undefined {
  const time = readClfTime(m[3]!);
  if (time === undefined) return undefined;
  const fields: Record<string, unknown> = { client: m[1] };
  if (m[2] !== '-') fields.user = m[2];
  fields.method = m[4];
  fields.path = m[5];
  if (m[6] !== undefined && m[6] !== '') fields.protocol = m[6];
  fields.status = Number(m[7]);
  if (m[8] !== '-') fields.bytes = Number(m[8]);
  if (combined) {
    if (m[9] !== '-') fields.referrer = m[9];
    if (m[10] !== '-') fields.user_agent = m[10];
  }
  return { fields, time, promote: false };
}

export function parseNginxCombined(text: string): Parsed | undefined {
  const m = COMBINED_LINE.exec(text);
  return m ? parseAccess(m, true) : undefined;
}

export function parseApacheCommon(text: string): Parsed | undefined {
  const m = COMMON_LINE.exec(text);
  return m ? parseAccess(m, false) : undefined;
}
