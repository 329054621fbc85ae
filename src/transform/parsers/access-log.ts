// `format = "nginx_combined"` and `"apache_common"`: access log lines. `-` for user, bytes,
// referrer and user agent means absent; status and bytes are numbers; the time becomes the entry's.
// The fields' JSON text is made along with them (Parsed.text): their keys are known here, and
// one look at the line tells which values need no escaping.

import { jsonString, primitiveJson, QUOTED_ASCII } from '../../core/entry-json.js';
import { readClfTime } from '../time.js';
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

function parseAccess(m: RegExpExecArray, text: string, combined: boolean): Parsed | undefined {
  const time = readClfTime(m[3]!);
  if (time === undefined) return undefined;
  const plain = QUOTED_ASCII.test(text);
  const client = m[1]!;
  const fields: Record<string, unknown> = { client };
  let json = `{"client":${partJson(client, plain, false)}`;
  const user = m[2]!;
  if (user !== '-') {
    fields.user = user;
    json += `,"user":${partJson(user, plain, false)}`;
  }
  const method = m[4]!;
  const path = m[5]!;
  fields.method = method;
  fields.path = path;
  json += `,"method":${partJson(method, plain, false)},"path":${partJson(path, plain, false)}`;
  const protocol = m[6];
  if (protocol !== undefined && protocol !== '') {
    fields.protocol = protocol;
    json += `,"protocol":${partJson(protocol, plain, true)}`;
  }
  const status = m[7]!;
  fields.status = Number(status);
  json += `,"status":${digitsJson(status)}`;
  const bytes = m[8]!;
  if (bytes !== '-') {
    fields.bytes = Number(bytes);
    json += `,"bytes":${digitsJson(bytes)}`;
  }
  if (combined) {
    const referrer = m[9]!;
    if (referrer !== '-') {
      fields.referrer = referrer;
      json += `,"referrer":${partJson(referrer, plain, true)}`;
    }
    const agent = m[10]!;
    if (agent !== '-') {
      fields.user_agent = agent;
      json += `,"user_agent":${partJson(agent, plain, true)}`;
    }
  }
  return { fields, time, promote: false, text: json, quotedAscii: plain };
}

export function parseNginxCombined(text: string): Parsed | undefined {
  const m = COMBINED_LINE.exec(text);
  return m ? parseAccess(m, text, true) : undefined;
}

export function parseApacheCommon(text: string): Parsed | undefined {
  const m = COMMON_LINE.exec(text);
  return m ? parseAccess(m, text, false) : undefined;
}
