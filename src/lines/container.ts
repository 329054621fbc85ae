// Container runtime formats (DESIGN.md §21): CRI (`<time> <stream> <P|F> <content>`) and docker
// json-file (`{"log":"…","stream":"…","time":"…"}`) lines unwrapped, partial lines joined per
// stream up to their last piece, the runtime's time kept. Pure and synchronous, one instance per
// file identity; a line not in the format is passed on as plain text and counted.

import { cutToBytes, type LineCounters, type LogicalLine, type Resume, type Stream } from './line.js';

export type ContainerFormat = 'none' | 'cri' | 'docker' | 'auto';

/** RFC 3339 as runtimes write it: seconds, an optional fraction, `Z` or an offset. */
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)$/;

/** The epoch ms of a `YYYY-MM-DDTHH:MM:SS` text (UTC), NaN when a field is out of range. */
function secondsOf(text: string): number {
  const y = Number(text.slice(0, 4));
  const mo = Number(text.slice(5, 7));
  const d = Number(text.slice(8, 10));
  const h = Number(text.slice(11, 13));
  const mi = Number(text.slice(14, 16));
  const s = Number(text.slice(17, 19));
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return Number.NaN;
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  // Date.UTC takes years 0 to 99 as 1900 to 1999
  if (y < 100) date.setUTCFullYear(y, mo - 1, d);
  // a day past its month's end would roll over into the next
  return date.getUTCDate() === d ? date.getTime() : Number.NaN;
}

let lastSecondText = '';
let lastSecond = Number.NaN;

/**
 * Epoch ms of a time text of RFC3339's shape (NaN when it names no time). Runtimes write every
 * line's time, mostly within the same second as the line before: the seconds part is remembered
 * and only the fraction and the offset are read each time (Date.parse took a third of the time of
 * a CRI line).
 */
function timeOf(text: string): number {
  const second = text.slice(0, 19);
  if (second !== lastSecondText) {
    lastSecondText = second;
    lastSecond = secondsOf(second);
  }
  let i = 19;
  let ms = 0;
  if (text.charCodeAt(i) === 46 /* . */) {
    for (let n = 0; ++i < text.length && text.charCodeAt(i) >= 48 && text.charCodeAt(i) <= 57; n++) if (n < 3) ms = ms * 10 + text.charCodeAt(i) - 48;
    const digits = Math.min(3, i - 20);
    ms *= digits === 1 ? 100 : digits === 2 ? 10 : 1;
  }
  if (text.charCodeAt(i) === 90 /* Z */) return lastSecond + ms;
  const sign = text.charCodeAt(i) === 45 /* - */ ? -1 : 1;
  const offset = (Number(text.slice(i + 1, i + 3)) * 60 + Number(text.slice(i + 4, i + 6))) * 60_000;
  return lastSecond + ms - sign * offset;
}

interface Piece {
  readonly stream: Stream;
  readonly partial: boolean;
  readonly content: string;
  readonly timeText: string;
  /** epoch ms of `timeText` */
  readonly time: number;
}

/** A CRI line's parts, or undefined when it is not one (an invalid time included). */
export function parseCri(line: string): Piece | undefined {
  const a = line.indexOf(' ');
  if (a < 20) return undefined;
  const b = line.indexOf(' ', a + 1);
  if (b < 0) return undefined;
  // `stdout` or `stderr`, told apart by their fourth letter without cutting the word out
  if (b !== a + 7 || !line.startsWith('std', a + 1)) return undefined;
  const stream = line.startsWith('out', a + 4) ? 'stdout' : line.startsWith('err', a + 4) ? 'stderr' : undefined;
  if (stream === undefined) return undefined;
  // the tag is `P`, `F`, or colon-separated tags with P or F first; the content may be empty
  let c = line.indexOf(' ', b + 1);
  if (c < 0) c = line.length;
  const tag = line.charCodeAt(b + 1);
  if ((tag !== 80 && tag !== 70) || (c > b + 2 && line.charCodeAt(b + 2) !== 58)) return undefined;
  const timeText = line.slice(0, a);
  if (!RFC3339.test(timeText)) return undefined;
  const time = timeOf(timeText);
  return Number.isNaN(time) ? undefined : { stream, partial: tag === 80, content: line.slice(c + 1), timeText, time };
}

/** A docker json-file line's parts, or undefined when it is not one. */
export function parseDocker(line: string): Piece | undefined {
  if (line.charCodeAt(0) !== 123) return undefined;
  let obj: unknown;
  try {
    obj = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof obj !== 'object' || obj === null) return undefined;
  const { log, stream, time } = obj as Record<string, unknown>;
  if (typeof log !== 'string' || (stream !== 'stdout' && stream !== 'stderr') || typeof time !== 'string' || !RFC3339.test(time)) return undefined;
  const ms = timeOf(time);
  if (Number.isNaN(ms)) return undefined;
  const partial = !log.endsWith('\n');
  return { stream, partial, content: partial ? log : log.slice(0, log.endsWith('\r\n') ? -2 : -1), timeText: time, time: ms };
}

/** `fields.time_nanos` for a time text finer than ms (digits past the third in its fraction that are not all 0). */
function nanosOf(timeText: string): string | undefined {
  const dot = timeText.indexOf('.');
  if (dot < 0) return undefined;
  let end = dot + 1;
  while (end < timeText.length && timeText.charCodeAt(end) >= 48 && timeText.charCodeAt(end) <= 57) end++;
  for (let i = dot + 4; i < end; i++) if (timeText.charCodeAt(i) !== 48) return timeText;
  return undefined;
}

/** A partial line being joined. */
interface Open {
  parts: string[];
  /** characters in `parts` */
  bytes: number;
  /** past the bound: later pieces are not kept */
  cut: boolean;
  readonly start: number;
  readonly time: number;
  readonly nanos: string | undefined;
}

/** Unwraps one file's container lines; `push` a physical line at a time, in file order. */
export class ContainerLines {
  private format: ContainerFormat;
  private readonly open = new Map<Stream, Open>();

  /** lines already delivered before a restart, to pass over (see Resume); undefined once past them */
  skip: Resume | undefined;

  constructor(
    format: ContainerFormat,
    private readonly maxLineBytes: number,
    private readonly counters: LineCounters,
    resume?: Resume,
  ) {
    this.format = format;
    this.skip = resume?.read === undefined ? undefined : resume;
  }

  /** The format in use: `auto` until the first line decided it. */
  get decided(): ContainerFormat {
    return this.format;
  }

  /** Adds where each stream's open partial begins to `starts`. */
  openStarts(starts: Record<string, number>): void {
    for (const [stream, o] of this.open) starts[stream] = Math.min(starts[stream] ?? o.start, o.start);
  }

  /** Whether a line of stream `key` was delivered before the restart this reader resumes from. */
  private delivered(key: string, start: number, end: number): boolean {
    const skip = this.skip!;
    if (end > skip.read!) {
      this.skip = undefined;
      return false;
    }
    const open = skip.streams?.[key];
    return open === undefined || start < open;
  }

  /** Appends to `out` what the physical line `line` (at `start`..`end` in its file) completes. */
  push(line: string, start: number, end: number, out: LogicalLine[]): void {
    if (this.format === 'auto') this.format = parseCri(line) ? 'cri' : parseDocker(line) ? 'docker' : 'none';
    if (this.format === 'none') {
      if (this.skip === undefined || !this.delivered('', start, end)) out.push({ text: line, start, end, idAt: end });
      return;
    }
    const piece = this.format === 'cri' ? parseCri(line) : parseDocker(line);
    if (this.skip !== undefined && this.delivered(piece?.stream ?? '', start, end)) return;
    if (piece === undefined) {
      this.counters.parse_errors++;
      out.push({ text: line, start, end, idAt: end });
      return;
    }
    const open = this.open.get(piece.stream);
    if (open === undefined && !piece.partial) {
      const text = cutToBytes(piece.content, this.maxLineBytes);
      if (text !== piece.content) this.counters.truncated_lines++;
      out.push({ text, start, end, idAt: end, stream: piece.stream, time: piece.time, nanos: nanosOf(piece.timeText) });
      return;
    }
    const o = open ?? { parts: [], bytes: 0, cut: false, start, time: piece.time, nanos: nanosOf(piece.timeText) };
    if (open === undefined) this.open.set(piece.stream, o);
    if (!o.cut) {
      o.parts.push(piece.content);
      o.bytes += piece.content.length;
      // characters bound bytes from below: past the bound in characters, the rest is cut anyway
      // (the exact cut is made once, when the line ends)
      if (o.bytes > this.maxLineBytes) o.cut = true;
    }
    if (!piece.partial) this.close(piece.stream, o, end, out);
  }

  /** Emits every open partial as it is (its file was rotated away, deleted, or input ended). */
  flush(end: number, out: LogicalLine[]): void {
    for (const [stream, o] of [...this.open].sort((x, y) => x[1].start - y[1].start)) this.close(stream, o, end, out);
  }

  private close(stream: Stream, o: Open, end: number, out: LogicalLine[]): void {
    this.open.delete(stream);
    const whole = o.parts.length === 1 ? o.parts[0]! : o.parts.join('');
    const text = cutToBytes(whole, this.maxLineBytes);
    if (text !== whole) this.counters.truncated_lines++;
    out.push({ text, start: o.start, end, idAt: end, stream, time: o.time, nanos: o.nanos });
  }
}
