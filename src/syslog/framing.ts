// RFC 6587 framing of syslog over TCP: octet counting ("LEN SP MSG") and non-transparent
// framing (MSG LF, or MSG NUL as Python's SysLogHandler and many Java and Go appenders end a
// message), decoded from a byte stream with a bound per frame, and encoded for the sink.

/**
 * How a TCP stream is split: `auto` takes a frame that starts with digits and a space as octet
 * counted, any other frame ends at a newline or a NUL; `newline` and `nul` end frames at that
 * byte only (no octet counting); `octet_counting` takes counted frames only.
 */
export type SourceFraming = 'auto' | 'octet_counting' | 'newline' | 'nul';
export type SinkFraming = 'octet_counting' | 'newline';

/** Longest octet count taken (9 digits, under 1 GB); a longer run of digits is no count. */
const MAX_COUNT_DIGITS = 9;
const NUL = 0;
const LF = 10;
const CR = 13;
const SP = 32;

const isDigit = (c: number) => c >= 48 && c <= 57;

/** What the decoder reports per frame: its bytes (cut to the bound) and whether it was cut. */
export type FrameHandler = (frame: Buffer, truncated: boolean) => void;

/**
 * Splits a TCP byte stream into syslog frames. Memory is bounded by `maxBytes` per connection:
 * the tail of a longer frame is skipped, not kept. Octet counts are counted in bytes, so the
 * decoder works on Buffers, never on decoded text.
 */
export class FrameDecoder {
  /** bytes of the frame being collected (at most maxBytes) */
  private parts: Buffer[] = [];
  private partBytes = 0;
  /** octet-counted frame: bytes still to come; -1 while in a newline frame or between frames */
  private remaining = -1;
  /** the current frame went over maxBytes: the rest of it is skipped */
  private cut = false;
  /** digits of an octet count that a chunk boundary split */
  private countDigits = '';
  /** between frames (nothing of the next frame read yet, count digits aside) */
  private atStart = true;

  constructor(
    private readonly framing: SourceFraming,
    private readonly maxBytes: number,
  ) {}

  /**
   * Feeds a chunk; each complete frame goes to `onFrame`. Returns false when strict octet
   * counting meets a frame without a count: the stream cannot be resynchronised and must end.
   */
  push(chunk: Buffer, onFrame: FrameHandler): boolean {
    const ok = this.split(chunk, onFrame);
    // A frame that goes on in the next chunk keeps copies: a view would keep the whole socket chunk alive.
    for (let k = 0; k < this.parts.length; k++) if (this.parts[k]!.buffer === chunk.buffer) this.parts[k] = Buffer.from(this.parts[k]!);
    return ok;
  }

  private split(chunk: Buffer, onFrame: FrameHandler): boolean {
    let i = 0;
    const n = chunk.length;
    // Next LF and NUL at or after i in this chunk (-1: none left); each found once per chunk, so
    // a chunk of many short frames is scanned in linear time.
    const endsAtLf = this.framing !== 'nul';
    const endsAtNul = this.framing !== 'newline';
    let lf = endsAtLf ? -2 : -1;
    let nul = endsAtNul ? -2 : -1;
    while (i < n) {
      if (this.atStart) {
        if (this.framing === 'newline' || this.framing === 'nul') {
          this.atStart = false;
          continue;
        }
        // Read the count's digits (possibly across chunks) up to the space.
        let j = i;
        while (j < n && isDigit(chunk[j]!) && this.countDigits.length <= MAX_COUNT_DIGITS) {
          this.countDigits += String.fromCharCode(chunk[j]!);
          j++;
        }
        if (j === n && this.countDigits.length <= MAX_COUNT_DIGITS) return true; // the chunk ended inside the count
        const count = Number(this.countDigits);
        const counted = this.countDigits.length > 0 && this.countDigits.length <= MAX_COUNT_DIGITS && chunk[j] === SP && count > 0 && this.countDigits[0] !== '0';
        if (counted) {
          this.countDigits = '';
          this.atStart = false;
          this.remaining = count;
          i = j + 1;
          continue;
        }
        if (this.framing === 'octet_counting') return false;
        // Not a count: the digits read so far belong to a newline-framed frame.
        this.atStart = false;
        if (this.countDigits.length > 0) this.add(Buffer.from(this.countDigits, 'latin1'));
        this.countDigits = '';
        i = j;
        continue;
      }
      if (this.remaining >= 0) {
        const take = Math.min(this.remaining, n - i);
        this.add(chunk.subarray(i, i + take));
        this.remaining -= take;
        i += take;
        if (this.remaining === 0) this.end(onFrame, false);
        continue;
      }
      if (lf !== -1 && lf < i) lf = chunk.indexOf(LF, i);
      if (nul !== -1 && nul < i) nul = chunk.indexOf(NUL, i);
      const stop = lf < 0 ? nul : nul < 0 ? lf : Math.min(lf, nul);
      if (stop < 0) {
        this.add(chunk.subarray(i));
        return true;
      }
      this.add(chunk.subarray(i, stop));
      i = stop + 1;
      this.end(onFrame, true);
    }
    return true;
  }

  /**
   * The stream ended: a last frame without its newline is a message; an octet-counted frame
   * that ended early is kept as far as it came and counts as cut.
   */
  finish(onFrame: FrameHandler): void {
    if (this.atStart && this.countDigits.length === 0) return;
    if (this.atStart) this.add(Buffer.from(this.countDigits, 'latin1'));
    this.countDigits = '';
    if (this.remaining > 0) this.cut = true;
    this.end(onFrame, true);
  }

  /** Bytes held for the frame being collected (for tests of the bound). */
  get held(): number {
    return this.partBytes + this.countDigits.length;
  }

  private add(bytes: Buffer): void {
    const room = this.maxBytes - this.partBytes;
    if (bytes.length > room) {
      this.cut = true;
      if (room <= 0) return;
      bytes = bytes.subarray(0, room);
    }
    if (bytes.length === 0) return;
    this.parts.push(bytes);
    this.partBytes += bytes.length;
  }

  private end(onFrame: FrameHandler, newline: boolean): void {
    let frame = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.partBytes);
    const truncated = this.cut;
    this.parts = [];
    this.partBytes = 0;
    this.cut = false;
    this.remaining = -1;
    this.atStart = true;
    if (newline) frame = trimFrameEnd(frame);
    // An empty line between frames (a stray LF or NUL) is no message.
    if (frame.length === 0 && newline && !truncated) return;
    onFrame(frame, truncated);
  }
}

/**
 * `frame` without its trailing NULs, CRs and LFs: what senders put after a message that is not
 * octet counted (a UDP datagram, a newline- or NUL-terminated TCP frame), never part of it.
 */
export function trimFrameEnd(frame: Buffer): Buffer {
  let end = frame.length;
  while (end > 0) {
    const c = frame[end - 1];
    if (c !== NUL && c !== CR && c !== LF) break;
    end--;
  }
  return end === frame.length ? frame : frame.subarray(0, end);
}

/** A frame for `payload` (one message, without terminator). Newline framing escapes CR and LF inside it as rsyslog does (#015, #012). */
export function encodeFrame(payload: string, framing: SinkFraming): string {
  if (framing === 'octet_counting') return `${Buffer.byteLength(payload)} ${payload}`;
  return `${/[\r\n]/.test(payload) ? payload.replace(/\r/g, '#015').replace(/\n/g, '#012') : payload}\n`;
}
