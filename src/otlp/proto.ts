// Protocol buffers wire format, as much as the OTLP logs schema needs: a reader over a Buffer
// (varints, fixed 32/64-bit, length-delimited fields, unknown fields skipped by wire type) and a
// growing writer whose nested messages reserve one length byte and shift when they need more.

/** A body that is not valid protobuf; `message` says what and where (it goes into the 400's Status). */
export class ProtoError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtoError';
  }
}

export const WIRE_VARINT = 0;
export const WIRE_FIXED64 = 1;
export const WIRE_LEN = 2;
export const WIRE_START_GROUP = 3;
export const WIRE_END_GROUP = 4;
export const WIRE_FIXED32 = 5;

/** Reads one message's fields from `buf[pos..end)`; nested messages are read with `sub()`. */
export class ProtoReader {
  pos: number;
  constructor(
    readonly buf: Buffer,
    pos = 0,
    readonly end = buf.length,
  ) {
    this.pos = pos;
  }

  get more(): boolean {
    return this.pos < this.end;
  }

  /** A varint that fits 32 bits unsigned (tags, lengths, uint32, enums); larger ones are cut to their low 32 bits. */
  uint32(): number {
    const buf = this.buf;
    let pos = this.pos;
    let b = buf[pos++]!;
    let v = b & 0x7f;
    if (b >= 0x80) {
      b = buf[pos++]!;
      v |= (b & 0x7f) << 7;
      if (b >= 0x80) {
        b = buf[pos++]!;
        v |= (b & 0x7f) << 14;
        if (b >= 0x80) {
          b = buf[pos++]!;
          v |= (b & 0x7f) << 21;
          if (b >= 0x80) {
            b = buf[pos++]!;
            v |= b << 28;
            // the rest of a 64-bit varint (a negative int32 takes ten bytes)
            for (let i = 0; b >= 0x80 && i < 5; i++) b = buf[pos++]!;
            if (b >= 0x80) throw new ProtoError(`varint longer than 10 bytes at offset ${this.pos}`);
          }
        }
      }
    }
    if (pos > this.end) throw new ProtoError(`truncated varint at offset ${this.pos}`);
    this.pos = pos;
    return v >>> 0;
  }

  /** A field's tag: field number << 3 | wire type. */
  tag(): number {
    return this.uint32();
  }

  /** An int64 varint as a number when it is a safe integer, else its decimal string. */
  int64(): number | string {
    const start = this.pos;
    const buf = this.buf;
    let lo = 0;
    let hi = 0;
    let pos = start;
    let shift = 0;
    let b: number;
    // low 28 bits
    for (; shift < 28; shift += 7) {
      if (pos >= this.end) throw new ProtoError(`truncated varint at offset ${start}`);
      b = buf[pos++]!;
      lo |= (b & 0x7f) << shift;
      if (b < 0x80) {
        this.pos = pos;
        return lo >>> 0;
      }
    }
    if (pos >= this.end) throw new ProtoError(`truncated varint at offset ${start}`);
    b = buf[pos++]!;
    lo |= (b & 0x0f) << 28;
    hi = (b & 0x7f) >> 4;
    if (b >= 0x80) {
      for (shift = 3; shift < 32; shift += 7) {
        if (pos >= this.end) throw new ProtoError(`truncated varint at offset ${start}`);
        b = buf[pos++]!;
        hi |= (b & 0x7f) << shift;
        if (b < 0x80) break;
      }
      if (b! >= 0x80) throw new ProtoError(`varint longer than 10 bytes at offset ${start}`);
    }
    this.pos = pos;
    return int64Of(lo >>> 0, hi >>> 0);
  }

  bool(): boolean {
    return this.uint32() !== 0;
  }

  fixed32(): number {
    const pos = this.pos;
    if (pos + 4 > this.end) throw new ProtoError(`truncated fixed32 at offset ${pos}`);
    this.pos = pos + 4;
    return this.buf.readUInt32LE(pos);
  }

  double(): number {
    const pos = this.pos;
    if (pos + 8 > this.end) throw new ProtoError(`truncated double at offset ${pos}`);
    this.pos = pos + 8;
    return this.buf.readDoubleLE(pos);
  }

  /** A fixed64 of epoch nanoseconds as its whole milliseconds (`ms`) and the nanoseconds past them (`ns`). */
  nanos(into: Nanos): void {
    const pos = this.pos;
    if (pos + 8 > this.end) throw new ProtoError(`truncated fixed64 at offset ${pos}`);
    this.pos = pos + 8;
    splitNanos(this.buf.readUInt32LE(pos), this.buf.readUInt32LE(pos + 4), into);
  }

  /** The length of a length-delimited field, checked against the message's end; `pos` moves past it. */
  private span(): number {
    const len = this.uint32();
    const start = this.pos;
    if (start + len > this.end) throw new ProtoError(`length ${len} at offset ${start} runs past the end of its message`);
    this.pos = start + len;
    return start;
  }

  string(): string {
    const start = this.span();
    const end = this.pos;
    if (end - start <= SHORT_STRING) return shortString(this.buf, start, end);
    return this.buf.toString('utf8', start, end);
  }

  /** Bytes as lower-case hex (trace and span ids). */
  hex(): string {
    const start = this.span();
    return start === this.pos ? '' : this.buf.toString('hex', start, this.pos);
  }

  base64(): string {
    const start = this.span();
    return start === this.pos ? '' : this.buf.toString('base64', start, this.pos);
  }

  /** A reader over a nested message (the length-delimited field at `pos`). */
  sub(): ProtoReader {
    const start = this.span();
    return new ProtoReader(this.buf, start, this.pos);
  }

  /** Skips a field of `wire` type, whatever its number (an unknown field). */
  skip(wire: number, field = 0): void {
    switch (wire) {
      case WIRE_VARINT:
        this.int64();
        return;
      case WIRE_FIXED64:
        if (this.pos + 8 > this.end) throw new ProtoError(`truncated fixed64 at offset ${this.pos}`);
        this.pos += 8;
        return;
      case WIRE_LEN:
        this.span();
        return;
      case WIRE_FIXED32:
        if (this.pos + 4 > this.end) throw new ProtoError(`truncated fixed32 at offset ${this.pos}`);
        this.pos += 4;
        return;
      case WIRE_START_GROUP:
        for (;;) {
          if (!this.more) throw new ProtoError(`unterminated group ${field}`);
          const tag = this.tag();
          if ((tag & 7) === WIRE_END_GROUP) {
            if (tag >>> 3 !== field) throw new ProtoError(`group ${field} ended by ${tag >>> 3}`);
            return;
          }
          this.skip(tag & 7, tag >>> 3);
        }
      default:
        throw new ProtoError(`invalid wire type ${wire} at offset ${this.pos}`);
    }
  }
}

/**
 * Short strings (attribute keys, severity texts, small values) repeat from record to record:
 * they are kept by their bytes, so a repeat costs a hash and a compare instead of a decode and an
 * allocation, and a key is the same string each time (object properties set with it stay fast).
 */
const SHORT_STRING = 32;
const CACHE_SLOTS = 4096;
const cachedBytes: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(CACHE_SLOTS);
const cachedStrings: string[] = new Array<string>(CACHE_SLOTS);

function shortString(buf: Buffer, start: number, end: number): string {
  const len = end - start;
  if (len === 0) return '';
  let h = len;
  for (let i = start; i < end; i++) h = (Math.imul(h, 31) + buf[i]!) | 0;
  const slot = (h ^ (h >>> 15)) & (CACHE_SLOTS - 1);
  const bytes = cachedBytes[slot];
  if (bytes !== undefined && bytes.length === len) {
    let same = true;
    for (let i = 0; i < len; i++) {
      if (bytes[i] !== buf[start + i]) {
        same = false;
        break;
      }
    }
    if (same) return cachedStrings[slot]!;
  }
  const s = buf.toString('utf8', start, end);
  cachedBytes[slot] = new Uint8Array(buf.subarray(start, end)); // a copy: the request's buffer is not kept
  cachedStrings[slot] = s;
  return s;
}

/** Epoch nanoseconds as whole milliseconds and the nanoseconds past them (0 to 999,999). */
export interface Nanos {
  ms: number;
  ns: number;
}

/** 2^32 = 4294 × 10^6 + 967296: so lo + hi × 2^32 splits into ms and ns in safe integers. */
export function splitNanos(lo: number, hi: number, into: Nanos): void {
  const rest = hi * 967_296 + lo; // < 2^53
  const msRest = Math.floor(rest / 1_000_000);
  into.ms = hi * 4294 + msRest;
  into.ns = rest - msRest * 1_000_000;
}

/** A 64-bit two's complement value as a number when safe, else as a decimal string. */
function int64Of(lo: number, hi: number): number | string {
  if (hi < 0x200000) return hi * 4294967296 + lo; // < 2^53
  if (hi >= 0xffe00000 && (hi !== 0xffe00000 || lo !== 0)) return (hi - 4294967296) * 4294967296 + lo; // > -2^53
  return BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo)).toString();
}

const INITIAL_SIZE = 16 * 1024;

/** Writes one message into a growing Buffer. */
export class ProtoWriter {
  buf: Buffer;
  pos = 0;

  constructor(size = INITIAL_SIZE) {
    this.buf = Buffer.allocUnsafe(size);
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** An unsigned varint of up to 53 bits. */
  varint(v: number): void {
    this.ensure(10);
    const buf = this.buf;
    let pos = this.pos;
    while (v > 0x7fffffff) {
      buf[pos++] = (v % 128) | 0x80;
      v = Math.floor(v / 128);
    }
    while (v > 0x7f) {
      buf[pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[pos++] = v;
    this.pos = pos;
  }

  tag(field: number, wire: number): void {
    this.varint((field << 3) | wire);
  }

  /** An int64 field's value: a safe integer, or a decimal string for larger ones. */
  int64(v: number | string): void {
    if (typeof v === 'number' && v >= 0) {
      this.varint(v);
      return;
    }
    let big = BigInt.asUintN(64, BigInt(v));
    this.ensure(10);
    while (big > 0x7fn) {
      this.buf[this.pos++] = Number(big & 0x7fn) | 0x80;
      big >>= 7n;
    }
    this.buf[this.pos++] = Number(big);
  }

  fixed32(v: number): void {
    this.ensure(4);
    this.buf.writeUInt32LE(v >>> 0, this.pos);
    this.pos += 4;
  }

  double(v: number): void {
    this.ensure(8);
    this.buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
  }

  /** Epoch nanoseconds given as milliseconds and the nanoseconds past them, as a fixed64 (times before 1970 as 0). */
  nanos(ms: number, ns: number): void {
    this.ensure(8);
    if (!(ms >= 0)) ms = ns = 0;
    // ms = mh × 2^26 + ml, and 2^26 × 10^6 = 15625 × 2^32: every step stays a safe integer
    const mh = Math.floor(ms / 67_108_864);
    const x = (ms - mh * 67_108_864) * 1_000_000 + ns;
    const carry = Math.floor(x / 4294967296);
    this.buf.writeUInt32LE(x - carry * 4294967296, this.pos);
    this.buf.writeUInt32LE((mh * 15625 + carry) >>> 0, this.pos + 4);
    this.pos += 8;
  }

  /** A string field (tag written here). */
  string(field: number, s: string): void {
    this.tag(field, WIRE_LEN);
    if (s.length * 3 < 128) {
      this.ensure(1 + s.length * 3);
      const n = this.buf.write(s, this.pos + 1, 'utf8');
      this.buf[this.pos] = n;
      this.pos += 1 + n;
      return;
    }
    const n = Buffer.byteLength(s, 'utf8');
    this.varint(n);
    this.ensure(n);
    this.pos += this.buf.write(s, this.pos, 'utf8');
  }

  /** A bytes field given as hex or base64 text. */
  bytes(field: number, text: string, encoding: 'hex' | 'base64'): void {
    const data = Buffer.from(text, encoding);
    this.tag(field, WIRE_LEN);
    this.varint(data.length);
    this.ensure(data.length);
    data.copy(this.buf, this.pos);
    this.pos += data.length;
  }

  /** Opens a nested message field: returns where its content starts, for `close`. One length byte is reserved. */
  open(field: number): number {
    this.tag(field, WIRE_LEN);
    this.ensure(1);
    this.pos += 1;
    return this.pos;
  }

  /** Closes the nested message opened at `start`: writes its length, moving the content when it needs more than one byte. */
  close(start: number): void {
    const len = this.pos - start;
    if (len < 128) {
      this.buf[start - 1] = len;
      return;
    }
    const extra = varintSize(len) - 1;
    this.ensure(extra);
    this.buf.copyWithin(start + extra, start, this.pos);
    this.pos = start - 1;
    this.varint(len);
    this.pos += len;
  }

  /** The bytes written (a view, valid until the next write). */
  finish(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}

function varintSize(v: number): number {
  let n = 1;
  while (v >= 128) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}
