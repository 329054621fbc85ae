// `format = "syslog"`: an RFC 5424 or RFC 3164 message (DESIGN.md §17) read by the syslog
// source's own parser; time, level and message become the entry's, the rest `fields.syslog`.

import { parseSyslog } from '../../syslog/parse.js';
import type { Parsed } from './types.js';

export function parseSyslogText(text: string, now: number): Parsed | undefined {
  const { entry, ok } = parseSyslog(text, now, '');
  if (!ok) return undefined;
  const f = entry.fields ?? {};
  const syslog: Record<string, unknown> = { facility: f.facility };
  if (f.hostname !== undefined) syslog.hostname = f.hostname;
  if (entry.source !== '') syslog.app_name = entry.source;
  if (f.procid !== undefined) syslog.procid = f.procid;
  if (f.msgid !== undefined) syslog.msgid = f.msgid;
  if (f.sd !== undefined) syslog.structured_data = f.sd;
  const parsed: Parsed = { fields: { syslog }, time: entry.time, message: entry.message, promote: false };
  if (entry.level !== undefined) parsed.level = entry.level;
  return parsed;
}
