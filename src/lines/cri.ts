// CRI lines (DESIGN.md §21: `<RFC 3339 time> <stdout|stderr> <P|F>[:tags] <content>`, as
// containerd and CRI-O write them) read into a container line's parts, from the bytes they were
// split from where it can: the per-line part of a CRI file's way to its entries.

import { piece, SECONDS_SHAPE, secondsOf, secondsOfParts } from './piece.js';

/** ` std`, `out ` and `err ` as little-endian 32-bit words */
const SP_STD = 0x64747320;
const OUT_SP = 0x2074756f;
const ERR_SP = 0x20727265;

/** True when the four bytes of the little-endian word `w` are ASCII digits. */
function isDigits4(w: number): boolean {
  // every byte 0x30-0x3f, and none past 0x39 (adding 6 carries such a byte out of 0x3_)
  return (w & 0xf0f0f0f0) >>> 0 === 0x30303030 && ((w + 0x06060606) & 0xf0f0f0f0) >>> 0 === 0x30303030;
}

/** The shape of a CRI line's prefix after its `YYYY-MM-DDTHH:MM:SS`, up to its content, with the parts read as groups. */
const CRI_REST = String.raw`(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d) std(out|err) ([PF])(?::[^ ]*)?(?: |$)`;
/** A CRI line's prefix, of any second: the tag is `P`, `F`, or colon-separated tags with P or F first; the content may be empty. */
const CRI_ANY = new RegExp(String.raw`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d${CRI_REST}`, 'y');

/** The longest line (in characters) written into `scratch` to be read from its bytes. */
const SCRATCH_CHARS = 1024;
/** Bytes for a line not wholly in the chunk it was split from: UTF-8 takes at most 3 bytes a character. */
const scratch = Buffer.alloc(SCRATCH_CHARS * 3);

/**
 * Reads CRI lines into `piece`, from the bytes they were split from where it can (readBytes), else
 * from their text (read). Before, Date.parse, a scan by characters and the strings cut out for
 * them took more than the rest of the line's way to its JSON. Runtimes write every line's time,
 * mostly within the same second as the line before: both remember the last valid second (as its
 * bytes; as a regular expression with it written in, made again when the second changes) and
 * read only the fraction per line.
 */
export class CriReader {
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

  /**
   * Reads `line` into `piece`, from its bytes where given (`bytes` from `at`, or `at` < 0: not
   * wholly in them), else from its text; false when it is not a CRI line.
   */
  readLine(line: string, bytes: Buffer | undefined, at: number): boolean {
    if (bytes === undefined) return this.read(line);
    if (at >= 0) return this.readBytes(line, bytes, at) || this.read(line);
    // A line across two reads (one a chunk) is written into bytes of its own: read() makes a
    // regular expression for every second it meets, and a line a chunk apart is mostly of
    // another second than the last it read (it cost 0.1 µs a line, spread over all of them).
    if (line.length > SCRATCH_CHARS) return this.read(line);
    scratch.write(line, 0, 'utf8');
    return this.readBytes(line, scratch, 0) || this.read(line);
  }
}
