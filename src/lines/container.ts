// Container runtime formats (DESIGN.md §21): CRI (`<time> <stream> <P|F> <content>`) and docker
// json-file (`{"log":"…","stream":"…","time":"…"}`) lines unwrapped, partial lines joined per
// stream up to their last piece, the runtime's time kept. Pure and synchronous, one instance per
// file identity; a line not in the format is passed on as plain text and counted.

import { cutToBytes, type LineCounters, type LogicalLine, type Resume, type Stream } from './line.js';

export type ContainerFormat = 'none' | 'cri' | 'docker' | 'auto';

/** RFC 3339 as runtimes write it: seconds, an optional fraction, `Z` or an offset. */
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)$/;

let lastTimeText = '';
let lastTime = 0;
/** Epoch ms of a runtime's time text (NaN when it names no time); the last one is remembered, as lines come in runs of one time. */
function timeOf(text: string): number {
  if (text !== lastTimeText) {
    lastTime = Date.parse(text);
    lastTimeText = text;
  }
  return lastTime;
}

interface Piece {
  readonly stream: Stream;
  readonly partial: boolean;
  readonly content: string;
  readonly timeText: string;
}

/** A CRI line's parts, or undefined when it is not one (an invalid time included). */
export function parseCri(line: string): Piece | undefined {
  const a = line.indexOf(' ');
  if (a < 20) return undefined;
  const b = line.indexOf(' ', a + 1);
  if (b < 0) return undefined;
  const streamText = line.slice(a + 1, b);
  if (streamText !== 'stdout' && streamText !== 'stderr') return undefined;
  // the tag is `P`, `F`, or colon-separated tags with P or F first; the content may be empty
  let c = line.indexOf(' ', b + 1);
  if (c < 0) c = line.length;
  const tag = line.charCodeAt(b + 1);
  if ((tag !== 80 && tag !== 70) || (c > b + 2 && line.charCodeAt(b + 2) !== 58)) return undefined;
  const timeText = line.slice(0, a);
  if (!RFC3339.test(timeText) || Number.isNaN(timeOf(timeText))) return undefined;
  return { stream: streamText, partial: tag === 80, content: line.slice(c + 1), timeText };
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
  if (typeof log !== 'string' || (stream !== 'stdout' && stream !== 'stderr') || typeof time !== 'string' || !RFC3339.test(time) || Number.isNaN(timeOf(time))) return undefined;
  const partial = !log.endsWith('\n');
  return { stream, partial, content: partial ? log : log.slice(0, log.endsWith('\r\n') ? -2 : -1), timeText: time };
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
      out.push({ text, start, end, idAt: end, stream: piece.stream, time: timeOf(piece.timeText), nanos: nanosOf(piece.timeText) });
      return;
    }
    const o = open ?? { parts: [], bytes: 0, cut: false, start, time: timeOf(piece.timeText), nanos: nanosOf(piece.timeText) };
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
