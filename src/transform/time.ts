// The time forms a transform may write into `time` (DESIGN.md §24): RFC 3339, epoch seconds or
// milliseconds as a number, and the common log format's `10/Oct/2000:13:55:36 -0700`.

import { isTime } from '../core/entry.js';
import { readRfc3339 } from '../core/time.js';

/** Numbers below this are epoch seconds (1e11 s is the year 5138; 1e11 ms is 1973). */
const SECONDS_BELOW = 1e11;
const CLF = /^(\d\d)\/(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\/(\d{4}):(\d\d):(\d\d):(\d\d) ([+-])(\d\d)(\d\d)$/;
const MONTH: Readonly<Record<string, number>> = { Jan: 0, Feb: 1, Mar: 2, Apr: 3, May: 4, Jun: 5, Jul: 6, Aug: 7, Sep: 8, Oct: 9, Nov: 10, Dec: 11 };

// access log lines of one second share their time text: the last one read is remembered
let lastClfText = '';
let lastClfMs: number | undefined;

/** The common log format's time as epoch ms; undefined when `text` is not one. */
export function readClfTime(text: string): number | undefined {
  if (text === lastClfText) return lastClfMs;
  const m = CLF.exec(text);
  let t: number | undefined;
  if (m) {
    const offset = (m[7] === '-' ? -1 : 1) * (Number(m[8]) * 60 + Number(m[9])) * 60_000;
    t = Date.UTC(Number(m[3]), MONTH[m[2]!]!, Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6])) - offset;
    if (!isTime(t)) t = undefined;
  }
  lastClfText = text;
  lastClfMs = t;
  return t;
}

/**
 * readClfTime of `line` from `from` to `to`: the last time read again is known without a slice of
 * it. Compared by indexOf, not startsWith: V8's startsWith at a position takes a runtime call
 * (~0.15 µs on a 26-character access log time, a third of the parse's own work), indexOf stays
 * in its builtin; the first occurrence at or after `from` is at `from` just when the text is there.
 */
export function readClfTimeIn(line: string, from: number, to: number): number | undefined {
  if (to - from === lastClfText.length && line.indexOf(lastClfText, from) === from) return lastClfMs;
  return readClfTime(from === 0 && to === line.length ? line : line.slice(from, to));
}

/** A value written to `time`, as epoch ms; undefined when it is none of the accepted forms. */
export function readTime(v: unknown): number | undefined {
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) return undefined;
    const ms = Math.abs(v) < SECONDS_BELOW ? v * 1000 : v;
    return isTime(ms) ? Math.round(ms) : undefined;
  }
  if (typeof v !== 'string') return undefined;
  const ms = readRfc3339(v);
  return Number.isNaN(ms) ? readClfTime(v) : ms;
}
