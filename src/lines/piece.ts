// A container line's parts, as the format readers (CRI: cri.ts, docker json-file: container.ts)
// leave them, and the date arithmetic of the runtimes' times they share (DESIGN.md §21).

import type { Stream } from './line.js';

/** The epoch ms of a `YYYY-MM-DDTHH:MM:SS` text (UTC), NaN when a field is out of range. */
export function secondsOf(text: string): number {
  const n = (from: number, to: number) => Number(text.slice(from, to));
  return secondsOfParts(n(0, 4), n(5, 7), n(8, 10), n(11, 13), n(14, 16), n(17, 19));
}

/** The epoch ms of a UTC date and time of day, NaN when a field is out of range. */
export function secondsOfParts(y: number, mo: number, d: number, h: number, mi: number, s: number): number {
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return Number.NaN;
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  // Date.UTC takes years 0 to 99 as 1900 to 1999
  if (y < 100) date.setUTCFullYear(y, mo - 1, d);
  // a day past its month's end would roll over into the next
  return date.getUTCDate() === d ? date.getTime() : Number.NaN;
}

/** `YYYY-MM-DDTHH:MM:SS`: `d` a digit, anything else itself */
export const SECONDS_SHAPE = 'dddd-dd-ddTdd:dd:dd';

/** True for the code of an ASCII digit. */
export function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/** True when `s` begins with SECONDS_SHAPE. */
export function hasSecondsShape(s: string): boolean {
  for (let i = 0; i < 19; i++) {
    const want = SECONDS_SHAPE.charCodeAt(i);
    const c = s.charCodeAt(i);
    if (want === 100 /* d */ ? !isDigit(c) : c !== want) return false;
  }
  return true;
}

/** A container line's parts. */
export interface Piece {
  stream: Stream;
  partial: boolean;
  content: string;
  /** the runtime's time, epoch ms */
  time: number;
  /** that time as written, when finer than ms (`fields.time_nanos`) */
  nanos: string | undefined;
}

/** The parts of the last line a CriReader or readDocker took: one object, filled anew for every line. */
export const piece: Piece = { stream: 'stdout', partial: false, content: '', time: 0, nanos: undefined };
