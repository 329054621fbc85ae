// Container runtime formats (DESIGN.md §21): CRI (`<time> <stream> <P|F> <content>`) and docker
// json-file (`{"log":"…","stream":"…","time":"…"}`) lines unwrapped, partial lines joined per
// stream up to their last piece, the runtime's time kept. Pure and synchronous, one instance per
// file identity; a line not in the format is passed on as plain text and counted.

import { CriReader } from './cri.js';
import { cutToBytes, type LineCounters, type LineMaker, type LogicalLine, logicalLine, type Resume, type Stream } from './line.js';
import { hasSecondsShape, isDigit, type Piece, piece, secondsOf } from './piece.js';

export type ContainerFormat = 'none' | 'cri' | 'docker' | 'auto';

/** the seconds part of the last time read, of SECONDS_SHAPE (the initial value names no time) */
let lastSecondText = 'no time read yet...';
let lastSecond = Number.NaN;
/** whether the last time read was finer than ms (a fraction digit past the third not 0) */
let finer = false;

/**
 * Epoch ms of the RFC 3339 time `s` begins with, up to `end` (NaN when those characters are not
 * `YYYY-MM-DDTHH:MM:SS`, an optional fraction of 1 to 9 digits and `Z` or `±HH:MM`, or name no
 * time); sets `finer`. Docker json-file times (CRI lines have CriReader): runtimes write every
 * line's time, mostly within the same second as the line before, so a time that begins with the
 * last seconds text read is read from its fraction on (no Date.parse per line).
 */
function timeOf(s: string, end: number): number {
  finer = false;
  if (end < 20) return Number.NaN;
  if (!s.startsWith(lastSecondText)) {
    if (!hasSecondsShape(s)) return Number.NaN;
    lastSecondText = s.slice(0, 19);
    lastSecond = secondsOf(lastSecondText);
  }
  let i = 19;
  let ms = 0;
  if (s.charCodeAt(i) === 46 /* . */) {
    for (; ++i < end && isDigit(s.charCodeAt(i)); ) {
      if (i < 23) ms = ms * 10 + s.charCodeAt(i) - 48;
      else if (s.charCodeAt(i) !== 48) finer = true;
    }
    const digits = i - 20;
    if (digits < 1 || digits > 9) return Number.NaN;
    ms *= digits === 1 ? 100 : digits === 2 ? 10 : 1;
  }
  const c = s.charCodeAt(i);
  if (c === 90 /* Z */) return i + 1 === end ? lastSecond + ms : Number.NaN;
  if ((c !== 43 && c !== 45) /* + - */ || i + 6 !== end) return Number.NaN;
  const h1 = s.charCodeAt(i + 1);
  const h2 = s.charCodeAt(i + 2);
  const m1 = s.charCodeAt(i + 4);
  const m2 = s.charCodeAt(i + 5);
  if (!isDigit(h1) || !isDigit(h2) || s.charCodeAt(i + 3) !== 58 /* : */ || !isDigit(m1) || !isDigit(m2)) return Number.NaN;
  const offset = ((h1 * 10 + h2 - 528) * 60 + m1 * 10 + m2 - 528) * 60_000;
  return lastSecond + ms - (c === 45 ? -offset : offset);
}

const criReader = new CriReader();

/** Reads a docker json-file line into `piece`; false when it is not one. */
function readDocker(line: string): boolean {
  if (line.charCodeAt(0) !== 123) return false;
  let obj: unknown;
  try {
    obj = JSON.parse(line);
  } catch {
    return false;
  }
  if (typeof obj !== 'object' || obj === null) return false;
  const { log, stream, time } = obj as Record<string, unknown>;
  if (typeof log !== 'string' || (stream !== 'stdout' && stream !== 'stderr') || typeof time !== 'string') return false;
  const ms = timeOf(time, time.length);
  if (Number.isNaN(ms)) return false;
  const partial = !log.endsWith('\n');
  piece.stream = stream;
  piece.partial = partial;
  piece.content = partial ? log : log.slice(0, log.endsWith('\r\n') ? -2 : -1);
  piece.time = ms;
  piece.nanos = finer ? time : undefined;
  return true;
}

/** A CRI line's parts, or undefined when it is not one (an invalid time included). */
export function parseCri(line: string): Readonly<Piece> | undefined {
  return criReader.read(line) ? { ...piece } : undefined;
}

/** A docker json-file line's parts, or undefined when it is not one. */
export function parseDocker(line: string): Readonly<Piece> | undefined {
  return readDocker(line) ? { ...piece } : undefined;
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
  private readonly cri = new CriReader();

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

  /**
   * Appends to `out` what the physical line `line` (at `start`..`end` in its file) completes, as
   * `make` makes it (a LogicalLine by default); `bytes`, when given, holds the line's bytes from
   * `at` on.
   */
  push<T = LogicalLine>(line: string, start: number, end: number, out: T[], bytes?: Buffer, at = -1, make = logicalLine as LineMaker<unknown> as LineMaker<T>): void {
    if (this.format === 'auto') this.format = this.cri.read(line) ? 'cri' : readDocker(line) ? 'docker' : 'none';
    if (this.format === 'none') {
      if (this.skip === undefined || !this.delivered('', start, end)) out.push(make(line, start, end, end));
      return;
    }
    const p = piece;
    const ok = this.format === 'cri' ? this.cri.readLine(line, bytes, at) : readDocker(line);
    if (this.skip !== undefined && this.delivered(ok ? p.stream : '', start, end)) return;
    if (!ok) {
      this.counters.parse_errors++;
      out.push(make(line, start, end, end));
      return;
    }
    const open = this.open.size === 0 ? undefined : this.open.get(p.stream);
    if (open === undefined && !p.partial) {
      const text = cutToBytes(p.content, this.maxLineBytes);
      if (text !== p.content) this.counters.truncated_lines++;
      out.push(make(text, start, end, end, p.stream, p.time, p.nanos));
      return;
    }
    const o = open ?? { parts: [], bytes: 0, cut: false, start, time: p.time, nanos: p.nanos };
    if (open === undefined) this.open.set(p.stream, o);
    if (!o.cut) {
      o.parts.push(p.content);
      o.bytes += p.content.length;
      // characters bound bytes from below: past the bound in characters, the rest is cut anyway
      // (the exact cut is made once, when the line ends)
      if (o.bytes > this.maxLineBytes) o.cut = true;
    }
    if (!p.partial) this.close(p.stream, o, end, out, make);
  }

  /** Emits every open partial as it is (its file was rotated away, deleted, or input ended). */
  flush(end: number, out: LogicalLine[]): void {
    for (const [stream, o] of [...this.open].sort((x, y) => x[1].start - y[1].start)) this.close(stream, o, end, out, logicalLine);
  }

  private close<T>(stream: Stream, o: Open, end: number, out: T[], make: LineMaker<T>): void {
    this.open.delete(stream);
    const whole = o.parts.length === 1 ? o.parts[0]! : o.parts.join('');
    const text = cutToBytes(whole, this.maxLineBytes);
    if (text !== whole) this.counters.truncated_lines++;
    out.push(make(text, o.start, end, end, stream, o.time, o.nanos));
  }
}
