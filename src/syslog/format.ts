// Formatting of an entry as one syslog message (DESIGN.md §17): RFC 5424
// `<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID - - MSG`, or RFC 3164 `<PRI>Mmm dd hh:mm:ss HOSTNAME TAG[PID]: MSG`.

import type { Entry } from '../core/entry.js';
import { isTime } from '../core/entry.js';
import { priOf } from './pri.js';

export type SyslogFormat = 'rfc5424' | 'rfc3164';

export interface HeaderOptions {
  /** 0–23 */
  readonly facility: number;
  /** HOSTNAME of entries without `node` */
  readonly hostname: string;
  /** APP-NAME of entries whose source has no printable character */
  readonly appName: string;
}

/** Month abbreviations of the RFC 3164 TIMESTAMP. */
export const MONTHS: readonly string[] = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/**
 * `s` as a header field: printable US-ASCII only (others become `_`), at most `max` characters;
 * `fallback` when nothing is left. `extra` names more characters to replace (3164 TAG delimiters).
 */
export function headerField(s: string, max: number, fallback: string, extra = ''): string {
  let out = '';
  for (let i = 0; i < s.length && out.length < max; i++) {
    const c = s.charCodeAt(i);
    out += c > 32 && c < 127 && !extra.includes(s[i]!) ? s[i] : '_';
  }
  return /[^_]/.test(out) ? out : fallback;
}

const procidOf = (e: Entry): string | undefined => {
  const p = e.fields?.procid;
  return typeof p === 'string' || typeof p === 'number' ? headerField(String(p), 128, '') || undefined : undefined;
};

const two = (n: number) => (n < 10 ? `0${n}` : String(n));

/** One message for `entry` (without framing) at `now` when the entry has no valid time. */
export function formatSyslog(entry: Entry, format: SyslogFormat, opts: HeaderOptions, now: number): string {
  const pri = priOf(opts.facility, entry.level);
  const time = isTime(entry.time) ? entry.time : now;
  const host = headerField(entry.node ?? opts.hostname, 255, '-');
  const message = typeof entry.message === 'string' ? entry.message : String(entry.message ?? '');
  const procid = procidOf(entry);
  if (format === 'rfc5424') {
    const app = headerField(typeof entry.source === 'string' ? entry.source : '', 48, opts.appName);
    return `<${pri}>1 ${new Date(time).toISOString()} ${host} ${app} ${procid ?? '-'} - - ${message}`;
  }
  const d = new Date(time);
  const day = d.getDate();
  const stamp = `${MONTHS[d.getMonth()]} ${day < 10 ? ` ${day}` : day} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  const tag = headerField(typeof entry.source === 'string' ? entry.source : '', 32, opts.appName, ':[]');
  return `<${pri}>${stamp} ${host} ${tag}${procid ? `[${procid}]` : ''}: ${message}`;
}
