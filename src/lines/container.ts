// Container runtime formats (DESIGN.md §21): CRI (`<time> <stream> <P|F> <content>`) and docker
// json-file (`{"log":"…","stream":"…","time":"…"}`) lines unwrapped, partial lines joined per
// stream up to their last piece, the runtime's time kept. Pure and synchronous, one instance per
// file identity; a line not in the format is passed on as plain text and counted.

import { cutToBytes, type LineCounters, type LineMaker, type LogicalLine, logicalLine, type Resume, type Stream } from './line.js';

export type ContainerFormat = 'none' | 'cri' | 'docker' | 'auto';

/** The epoch ms of a `YYYY-MM-DDTHH:MM:SS` text (UTC), NaN when a field is out of range. */
function secondsOf(text: string): number {
  const n = (from: number, to: number) => Number(text.slice(from, to));
  return secondsOfParts(n(0, 4), n(5, 7), n(8, 10), n(11, 13), n(14, 16), n(17, 19));
}

/** The epoch ms of a UTC date and time of day, NaN when a field is out of range. */
function secondsOfParts(y: number, mo: number, d: number, h: number, mi: number, s: number): number {
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return Number.NaN;
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  // Date.UTC takes years 0 to 99 as 1900 to 1999
  if (y < 100) date.setUTCFullYear(y, mo - 1, d);
  // a day past its month's end would roll over into the next
  return date.getUTCDate() === d ? date.getTime() : Number.NaN;
}

/** `YYYY-MM-DDTHH:MM:SS`: `d` a digit, anything else itself */
const SECONDS_SHAPE = 'dddd-dd-ddTdd:dd:dd';

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/** ` std`, `out ` and `err ` as little-endian 32-bit words */
const SP_STD = 0x64747320;
const OUT_SP = 0x2074756f;
const ERR_SP = 0x20727265;

/** True when the four bytes of the little-endian word `w` are ASCII digits. */
function isDigits4(w: number): boolean {
  // every byte 0x30-0x3f, and none past 0x39 (adding 6 carries such a byte out of 0x3_)
  return (w & 0xf0f0f0f0) >>> 0 === 0x30303030 && ((w + 0x06060606) & 0xf0f0f0f0) >>> 0 === 0x30303030;
}

/** True when `s` begins with SECONDS_SHAPE. */
function hasSecondsShape(s: string): boolean {
  for (let i = 0; i < 19; i++) {
    const want = SECONDS_SHAPE.charCodeAt(i);
    const c = s.charCodeAt(i);
    if (want === 100 /* d */ ? !isDigit(c) : c !== want) return false;
  }
  return true;
}

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

/** A container line's parts. */
interface Piece {
  stream: Stream;
  partial: boolean;
  content: string;
  /** the runtime's time, epoch ms */
  time: number;
  /** that time as written, when finer than ms (`fields.time_nanos`) */
  nanos: string | undefined;
}

/** The parts of the last line a CriReader or readDocker took: one object, filled anew for every line. */
const piece: Piece = { stream: 'stdout', partial: false, content: '', time: 0, nanos: undefined };

/** The shape of a CRI line's prefix after its `YYYY-MM-DDTHH:MM:SS`, up to its content, with the parts read as groups. */
const CRI_REST = String.raw`(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d) std(out|err) ([PF])(?::[^ ]*)?(?: |$)`;
/** A CRI line's prefix, of any second: the tag is `P`, `F`, or colon-separated tags with P or F first; the content may be empty. */
const CRI_ANY = new RegExp(String.raw`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d${CRI_REST}`, 'y');

/**
 * Reads CRI lines into `piece`, from the bytes they were split from where it can (readBytes), else
 * from their text (read). Before, Date.parse, a scan by characters and the strings cut out for
 * them took more than the rest of the line's way to its JSON. Runtimes write every line's time,
 * mostly within the same second as the line before: both remember the last valid second (as its
 * bytes; as a regular expression with it written in, made again when the second changes) and
 * read only the fraction per line.
 */
class CriReader {
  /** CRI_REST after the last valid second read, or nothing */
  private sameSecond: RegExp | undefined;
  /** that second, epoch ms */
  private second = 0;

  /** Reads `line` into `piece`; false when it is not a CRI line (an invalid time included). */
  read(line: string): boolean {
    let re = this.sameSecond;
    let m: RegExpExecArray | null = null;
    if (re !== undefined) {
      re.lastIndex = 0;
      m = re.exec(line);
    }
    if (m === null) {
      CRI_ANY.lastIndex = 0;
      if (!CRI_ANY.test(line)) return false;
      const text = line.slice(0, 19);
      const second = secondsOf(text);
      if (Number.isNaN(second)) return false;
      this.second = second;
      re = this.sameSecond = new RegExp(text + CRI_REST, 'y');
      m = re.exec(line)!;
    }
    const fraction = m[1];
    const zone = m[2]!;
    let ms = this.second;
    let finer = false;
    if (fraction !== undefined) {
      const n = fraction.length;
      ms += (fraction.charCodeAt(0) - 48) * 100;
      if (n > 1) ms += (fraction.charCodeAt(1) - 48) * 10;
      if (n > 2) ms += fraction.charCodeAt(2) - 48;
      for (let i = 3; i < n && !finer; i++) finer = fraction.charCodeAt(i) !== 48;
    }
    if (zone !== 'Z') {
      const offset = ((zone.charCodeAt(1) * 10 + zone.charCodeAt(2) - 528) * 60 + zone.charCodeAt(4) * 10 + zone.charCodeAt(5) - 528) * 60_000;
      ms += zone.charCodeAt(0) === 45 /* - */ ? offset : -offset;
    }
    piece.stream = m[3] === 'out' ? 'stdout' : 'stderr';
    piece.partial = m[4] === 'P';
    piece.content = line.slice(re!.lastIndex);
    piece.time = ms;
    piece.nanos = finer ? line.slice(0, 20 + (fraction?.length ?? -1) + zone.length) : undefined;
    return true;
  }

  /**
   * The seconds part of the last line readBytes took, when it was a valid time: its 19 bytes read
   * as four 32-bit words, a 16-bit one and a byte (compared so, a line's second costs a third of
   * what 19 byte comparisons did); -1 before any.
   */
  private w0 = -1;
  private w1 = -1;
  private w2 = -1;
  private w3 = -1;
  private w4 = -1;
  private w5 = -1;
  /** that second, epoch ms */
  private secondBytesMs = 0;
  /** a view of the last bytes readBytes took (a read's chunk serves its many lines), and those bytes */
  private view: DataView = new DataView(new ArrayBuffer(0));
  private viewOf: Buffer | undefined;

  /** Takes the seconds part of the bytes at `at` as the current second; false when it is not a valid one. */
  private newSecond(b: Buffer, at: number): boolean {
    for (let i = 0; i < 19; i++) {
      const want = SECONDS_SHAPE.charCodeAt(i);
      const c = b[at + i]!;
      if (want === 100 /* d */ ? c < 48 || c > 57 : c !== want) return false;
    }
    const n = (from: number, to: number) => {
      let v = 0;
      for (let i = at + from; i < at + to; i++) v = v * 10 + b[i]! - 48;
      return v;
    };
    const second = secondsOfParts(n(0, 4), n(5, 7), n(8, 10), n(11, 13), n(14, 16), n(17, 19));
    if (Number.isNaN(second)) return false;
    const v = this.view;
    this.w0 = v.getUint32(at, true);
    this.w1 = v.getUint32(at + 4, true);
    this.w2 = v.getUint32(at + 8, true);
    this.w3 = v.getUint32(at + 12, true);
    this.w4 = v.getUint16(at + 16, true);
    this.w5 = v.getUint8(at + 18);
    this.secondBytesMs = second;
    return true;
  }

  /**
   * Reads `line` into `piece` from its bytes, `bytes` from `at` on (a byte is read ten times
   * faster than a character); the same as read() where it says true. False when the line is no
   * CRI line or its prefix has a character outside ASCII (before the content, a byte is then a
   * character): read() decides those.
   */
  readBytes(line: string, b: Buffer, at: number): boolean {
    // bounds in characters hold for the bytes of the ASCII prefix
    const lim = at + line.length;
    if (line.length < 29) return false;
    if (b !== this.viewOf) {
      this.viewOf = b;
      this.view = new DataView(b.buffer, b.byteOffset, b.byteLength);
    }
    const v = this.view;
    const same =
      v.getUint32(at, true) === this.w0 &&
      v.getUint32(at + 4, true) === this.w1 &&
      v.getUint32(at + 8, true) === this.w2 &&
      v.getUint32(at + 12, true) === this.w3 &&
      v.getUint16(at + 16, true) === this.w4 &&
      v.getUint8(at + 18) === this.w5;
    if (!same && !this.newSecond(b, at)) return false;
    let i = at + 19;
    let ms = this.secondBytesMs;
    let finer = false;
    if (b[i] === 46 /* . */) {
      // nine digits (what runtimes write): two words of four digits and one, read at once
      const w1 = i + 14 <= lim ? v.getUint32(i + 1, true) : 0;
      const w2 = w1 === 0 ? 0 : v.getUint32(i + 5, true);
      const d9 = w1 === 0 ? 0 : b[i + 9]!;
      const d10 = w1 === 0 ? 0 : b[i + 10]!;
      if (isDigits4(w1) && isDigits4(w2) && d9 >= 48 && d9 <= 57 && (d10 < 48 || d10 > 57)) {
        ms += (w1 & 0xf) * 100 + ((w1 >>> 8) & 0xf) * 10 + ((w1 >>> 16) & 0xf);
        finer = w1 >>> 24 !== 48 || w2 !== 0x30303030 || d9 !== 48;
        i += 10;
      } else {
        let digits = 0;
        let frac = 0;
        for (i++; i < lim; i++, digits++) {
          const c = b[i]!;
          if (c < 48 || c > 57) break;
          if (digits < 3) frac = frac * 10 + c - 48;
          else if (c !== 48) finer = true;
        }
        if (digits < 1 || digits > 9) return false;
        ms += digits === 1 ? frac * 100 : digits === 2 ? frac * 10 : frac;
      }
    }
    const z = b[i];
    if (z === 90 /* Z */) i++;
    else if (z === 43 || z === 45 /* + - */) {
      if (i + 6 > lim || b[i + 3] !== 58 /* : */) return false;
      const h1 = b[i + 1]!;
      const h2 = b[i + 2]!;
      const m1 = b[i + 4]!;
      const m2 = b[i + 5]!;
      if (h1 < 48 || h1 > 57 || h2 < 48 || h2 > 57 || m1 < 48 || m1 > 57 || m2 < 48 || m2 > 57) return false;
      const offset = ((h1 * 10 + h2 - 528) * 60 + m1 * 10 + m2 - 528) * 60_000;
      ms += z === 45 ? offset : -offset;
      i += 6;
    } else return false;
    const timeEnd = i;
    // ` stdout ` or ` stderr `, then the tag
    if (i + 9 > lim || v.getUint32(i, true) !== SP_STD) return false;
    const out = v.getUint32(i + 4, true);
    const stream = out === OUT_SP ? 'stdout' : out === ERR_SP ? 'stderr' : undefined;
    if (stream === undefined) return false;
    const tag = b[i + 8];
    if (tag !== 80 && tag !== 70) return false;
    let c = i + 9;
    if (c < lim) {
      if (b[c] === 58 /* : */) {
        for (c++; c < lim && b[c] !== 32; c++) if (b[c]! >= 128) return false;
      } else if (b[c] !== 32) return false;
    }
    piece.stream = stream;
    piece.partial = tag === 80;
    piece.content = line.slice(c - at + 1);
    piece.time = ms;
    piece.nanos = finer ? line.slice(0, timeEnd - at) : undefined;
    return true;
  }
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

/** The longest line (in characters) written into `scratch` to be read from its bytes. */
const SCRATCH_CHARS = 1024;
/** Bytes for a line not wholly in the chunk it was split from: UTF-8 takes at most 3 bytes a character. */
const scratch = Buffer.alloc(SCRATCH_CHARS * 3);

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
    const ok = this.format === 'cri' ? this.readCri(line, bytes, at) : readDocker(line);
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

  /** Reads the CRI line `line` into `piece`, from its bytes where given (`bytes` from `at`, or `at` < 0: not wholly in them). */
  private readCri(line: string, bytes: Buffer | undefined, at: number): boolean {
    if (bytes === undefined) return this.cri.read(line);
    if (at >= 0) return this.cri.readBytes(line, bytes, at) || this.cri.read(line);
    // A line across two reads (one a chunk) is written into bytes of its own: read() makes a
    // regular expression for every second it meets, and a line a chunk apart is mostly of
    // another second than the last it read (it cost 0.1 µs a line, spread over all of them).
    if (line.length > SCRATCH_CHARS) return this.cri.read(line);
    scratch.write(line, 0, 'utf8');
    return this.cri.readBytes(line, scratch, 0) || this.cri.read(line);
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
