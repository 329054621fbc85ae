// Splits a byte stream into lines: the first line-assembly stage of the file and stdin sources,
// holding a trailing partial line until its newline and cutting over-long lines.

/**
 * Splits a byte stream into lines (without `\n` or `\r\n`), holding a trailing partial line until
 * its newline and cutting lines longer than `maxLineBytes` (the rest of such a line is skipped).
 * Empty lines are skipped. Chunks passed to push() may be reused by the caller afterwards.
 */
export class LineSplitter {
  /** lines cut at `maxLineBytes` so far */
  truncated = 0;
  private parts: Buffer[] = [];
  private partLen = 0;
  /** inside an over-long line whose head was already emitted */
  private skipping = false;
  /** file offset of the next byte pushed */
  private pos = 0;
  /** when given to push()/flush(): the file offset where each emitted line ends (past its newline) */
  private ends: number[] | undefined;
  /** when given to push(): where each emitted line begins in the chunk (-1: not wholly in it) */
  private starts: number[] | undefined;

  constructor(private readonly maxLineBytes: number) {}

  /** The file offset of the next byte pushed (after an open, a seek or a truncation). */
  at(offset: number): void {
    this.pos = offset;
  }

  /** The file offset of the next byte pushed. */
  get offset(): number {
    return this.pos;
  }

  /** bytes of the held partial line */
  get pendingBytes(): number {
    return this.partLen;
  }

  /**
   * Appends the complete lines in `chunk` to `out` (and, given `ends`, where each ends in the file;
   * given `starts` too, where each begins in `chunk`, -1 when it is not wholly in it).
   */
  push(chunk: Buffer, out: string[], ends?: number[], starts?: number[]): void {
    this.ends = ends;
    this.starts = ends ? starts : undefined;
    const base = this.pos;
    this.pos += chunk.length;
    let start = 0;
    if (this.skipping) {
      const nl = chunk.indexOf(10);
      if (nl < 0) return;
      this.skipping = false;
      start = nl + 1;
    }
    const last = chunk.lastIndexOf(10);
    if (last < start) {
      this.hold(chunk.subarray(start), out);
      return;
    }
    if (this.partLen > 0) {
      const nl = chunk.indexOf(10, start);
      this.parts.push(chunk.subarray(start, nl));
      const whole = Buffer.concat(this.parts, this.partLen + nl - start);
      this.parts = [];
      this.partLen = 0;
      this.line(whole.toString('utf8'), out, base + nl + 1);
      start = nl + 1;
    }
    if (start <= last) {
      const text = chunk.toString('utf8', start, last);
      const max = this.maxLineBytes;
      // where a line ends in the file: char index = byte index unless the text has multi-byte characters
      const ascii = text.length === last - start;
      let byteFrom = base + start;
      let from = 0;
      for (let nl = text.indexOf('\n'); ; nl = text.indexOf('\n', from)) {
        const end = nl < 0 ? text.length : nl;
        let lineEnd = 0;
        const lineAt = ascii ? start + from : byteFrom - base;
        if (ends) {
          lineEnd = ascii ? base + start + end + 1 : byteFrom + Buffer.byteLength(text.slice(from, end)) + 1;
          byteFrom = lineEnd;
        }
        if (end > from) {
          let line = text.slice(from, end);
          if (line.charCodeAt(line.length - 1) === 13) line = line.slice(0, -1);
          if (line.length * 3 <= max) {
            if (line.length > 0) {
              out.push(line);
              ends?.push(lineEnd);
              this.starts?.push(lineAt);
            }
          } else this.line(line, out, lineEnd);
        }
        if (nl < 0) break;
        from = nl + 1;
      }
    }
    if (last + 1 < chunk.length) this.hold(chunk.subarray(last + 1), out);
  }

  /** Emits the held partial line, if any (its file was rotated away or input ended). */
  flush(out: string[], ends?: number[]): void {
    this.ends = ends;
    this.starts = undefined;
    this.skipping = false;
    if (this.partLen === 0) return;
    const whole = Buffer.concat(this.parts, this.partLen);
    this.parts = [];
    this.partLen = 0;
    this.line(whole.toString('utf8'), out, this.pos);
  }

  /** Skips input up to the next newline: reading starts inside a line whose head was handled. */
  skipLine(): void {
    this.skipping = true;
  }

  /** Drops the held partial line and any skip state. */
  reset(): void {
    this.parts = [];
    this.partLen = 0;
    this.skipping = false;
  }

  private hold(bytes: Buffer, out: string[]): void {
    if (bytes.length === 0) return;
    this.parts.push(Buffer.from(bytes));
    this.partLen += bytes.length;
    if (this.partLen > this.maxLineBytes) {
      const whole = Buffer.concat(this.parts, this.partLen);
      this.parts = [];
      this.partLen = 0;
      out.push(this.cut(whole));
      // its end is not known yet: the cut point stands for it
      this.ends?.push(this.pos);
      this.starts?.push(-1);
      this.skipping = true;
    }
  }

  private line(line: string, out: string[], end: number): void {
    if (line.charCodeAt(line.length - 1) === 13) line = line.slice(0, -1);
    if (line.length === 0) return;
    if (line.length * 3 > this.maxLineBytes && Buffer.byteLength(line) > this.maxLineBytes) line = this.cut(Buffer.from(line));
    out.push(line);
    this.ends?.push(end);
    this.starts?.push(-1);
  }

  /** The first `maxLineBytes` bytes, backed off to a character boundary. */
  private cut(bytes: Buffer): string {
    this.truncated++;
    let end = this.maxLineBytes;
    while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
    return bytes.toString('utf8', 0, end);
  }
}
