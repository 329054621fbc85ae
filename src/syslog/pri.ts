// Syslog PRI (RFC 5424 §6.2.1): facility and severity, and their mapping to and from entry levels
// (DESIGN.md §17), shared by the parser and the formatter.

import type { Level } from '../core/entry.js';

/** Facility keywords by code (RFC 5424 table 1, names as rsyslog writes them). */
export const FACILITIES: readonly string[] = [
  'kern', 'user', 'mail', 'daemon', 'auth', 'syslog', 'lpr', 'news',
  'uucp', 'cron', 'authpriv', 'ftp', 'ntp', 'security', 'console', 'solaris-cron',
  'local0', 'local1', 'local2', 'local3', 'local4', 'local5', 'local6', 'local7',
];

/** Largest valid PRI value: facility 23, severity 7. */
export const MAX_PRI = 191;

/** Entry level of a severity: 0–2 FATAL, 3 ERROR, 4 WARN, 5–6 INFO, 7 DEBUG. */
export const SEVERITY_LEVELS: readonly Level[] = ['FATAL', 'FATAL', 'FATAL', 'ERROR', 'WARN', 'INFO', 'INFO', 'DEBUG'];

const LEVEL_SEVERITY: Readonly<Record<Level, number>> = { FATAL: 2, ERROR: 3, WARN: 4, INFO: 6, DEBUG: 7, TRACE: 7 };

/** PRI of an entry level under `facility` (0–23); no level counts as INFO (6). */
export function priOf(facility: number, level: Level | undefined): number {
  return facility * 8 + (level ? LEVEL_SEVERITY[level] : 6);
}
