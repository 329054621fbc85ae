// The records of a disk buffer's appends: each entry's line (byte for byte what `encodeEntry`,
// core/entry-line.ts, writes) with its record header, written into shared memory for the writer
// thread. Synchronous, one instance per buffer.

import type { Entry } from '../core/entry.js';
import { hasKeys, isoTime, jsonString, PLAIN_ASCII } from '../core/entry-json.js';
import { isTime } from '../core/entry.js';
import { LineEncoder } from '../core/entry-line.js';
import { HEADER_BYTES, writeHeader } from './record.js';

const EMPTY = new Uint8Array(0);

/** Node's Latin-1 and UTF-8 writers without `write()`'s argument handling (see lines-buffer.ts). */
type Writer = Buffer & { latin1Write(text: string, offset: number): number; utf8Write(text: string, offset: number): number };

const bytesOf = (s: string): Buffer => Buffer.from(s, 'utf8');
const QUOTE = 34;
const CLOSE = 125;
/** `,"id":"`: the key of an id the buffer did not stamp (its text follows from its own opening quote on) */
const ID_KEY = bytesOf(',"id":"');
const FIELDS_KEY = ',"fields":';
/**
 * Shared memory taken at once for records, bytes: the appends that fill it share it (shared
 * memory is zeroed and counted against the heap's limits at each allocation), and it is freed
 * when the last of them is.
 */
const SLAB_BYTES = 4 * 1024 * 1024;
/** Released slabs kept for reuse at most. */
const MAX_SPARE_SLABS = 2;

interface Slab {
  readonly buf: Buffer;
  /** where the next append's records go */
  at: number;
  /** appends whose records the writer has not released */
  refs: number;
}

const newSlab = (bytes = SLAB_BYTES): Slab => ({ buf: Buffer.from(new SharedArrayBuffer(bytes)), at: 0, refs: 0 });
const DIGITS_36 = Array.from({ length: 36 }, (_, d) => d.toString(36));
/** Most bytes a string may take as JSON per UTF-16 unit (`\uXXXX`). */
const MAX_BYTES_PER_UNIT = 6;

/**
 * The records of entries as they are appended (DESIGN.md §23): each entry's line is written
 * straight into bytes, never made as a string. Its parts come from bytes kept for what
 * consecutive entries share (the time, the node, source and level, the fields), a message of
 * printable ASCII without `"` and `\` (most log lines) is copied as it is, and an id the buffer
 * stamped is its prefix's bytes and its sequence. Building each line as a string and joining
 * them cost twice as much (V8 flattens every concatenation before its bytes can be copied) and
 * made about 300 bytes of garbage per entry. An entry that has its line already (`raw`, from a
 * chain source), or whose message needs escaping, goes through LineEncoder, and keeps that line
 * as `raw` as before. The bytes are byte for byte what `encodeEntry` writes either way.
 */
export class RecordEncoder {
  private readonly lines = new LineEncoder();
  /** where an append's records are written (V8 writes into shared memory about 20 % slower) */
  private scratch = Buffer.allocUnsafe(1024 * 1024) as Writer;
  /** shared memory the records are copied into for the writer thread, each append's after the last one's */
  private slab = newSlab();
  /** slabs left behind with records the writer has not released yet */
  private retired: Slab[] = [];
  /** slabs whose records were all released: written again (fresh memory costs a page fault each 4 KiB) */
  private spare: Slab[] = [];
  /** the base-36 text of the last sequence stamped, but its last digit, and that sequence / 36 */
  private seqHead = '';
  private seqHeadOf = -1;
  private timeMs = Number.NaN;
  /** `{"time":"<RFC 3339>"` of timeMs */
  private timeBytes: Uint8Array = EMPTY;
  private restNode: string | undefined;
  private restSource = '';
  private restLevel: string | undefined;
  /** `,"node":…,"source":…,"level":"…","message":"` for the three above */
  private restBytes: Uint8Array = EMPTY;
  /** the fields text its bytes were made of (LineEncoder.fields returns the same string while they stay the same) */
  private fieldsText = '';
  /** `,"fields":<fieldsText>` */
  private fieldsBytes: Uint8Array = EMPTY;
  private tailBytes: Uint8Array = EMPTY;
  private tailFields: Uint8Array = EMPTY;
  private tailId: Uint8Array = EMPTY;
  private idPrefix = '';
  /** `,"id":"<idPrefix>` */
  private idBytes: Uint8Array = EMPTY;

  /**
   * The records of `entries` with sequences `first`, `first + 1`, …, unsealed (no CRC), in shared
   * memory for the writer thread. An entry without an id gets `prefix` + its sequence in base 36;
   * `plainPrefix`: that prefix needs no escaping in JSON. `now` and `fallbackSource` complete an
   * entry without a valid time or a source, as encodeEntry does.
   */
  records(entries: readonly Entry[], first: number, prefix: string, plainPrefix: boolean, now: number, fallbackSource: string): Buffer {
    if (prefix !== this.idPrefix) {
      this.idPrefix = prefix;
      this.idBytes = bytesOf(`,"id":"${prefix}`);
    }
    let buf = this.scratch;
    let at = 0;
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!;
      let stamped = false;
      let seq36 = '';
      if (e.id === undefined) {
        seq36 = this.base36(first + i);
        e.id = prefix + seq36;
        stamped = plainPrefix;
        if (e.raw !== undefined) e.raw = e.rawNodeAt = e.rawIdAt = undefined;
      }
      const message = e.message;
      if (e.raw !== undefined || typeof message !== 'string' || !PLAIN_ASCII.test(message)) {
        const line = this.lineOf(e, now, fallbackSource, stamped);
        const need = HEADER_BYTES + line.length * 3;
        if (buf.length - at < need) buf = this.grow(at, need);
        const n = buf.utf8Write(line, at + HEADER_BYTES);
        writeHeader(buf, at, n, first + i);
        at += HEADER_BYTES + n;
        continue;
      }
      let time = e.time;
      if (!isTime(time)) time = now;
      let source = e.source;
      if (typeof source !== 'string' || source === '') source = fallbackSource;
      if (time !== this.timeMs) {
        this.timeBytes = bytesOf(`{"time":"${isoTime(time)}"`);
        this.timeMs = time;
      }
      if (source !== this.restSource || e.node !== this.restNode || e.level !== this.restLevel) this.newRest(e.node, source, e.level);
      const hasFields = e.fields !== undefined && hasKeys(e.fields);
      const id = e.id;
      const idText = stamped ? seq36 : typeof id === 'string' ? jsonString(id) : '';
      // what follows the message's closing quote up to the id's text: `,"fields":…,"id":"<prefix>`
      const tail = stamped ? this.tailOf(hasFields ? e.fields : undefined) : hasFields ? this.fieldsOf(e.fields!) : EMPTY;
      const need = HEADER_BYTES + this.timeBytes.length + this.restBytes.length + message.length + tail.length + ID_KEY.length + MAX_BYTES_PER_UNIT * idText.length + 4;
      if (buf.length - at < need) buf = this.grow(at, need);
      const start = at + HEADER_BYTES;
      let p = start;
      buf.set(this.timeBytes, p);
      p += this.timeBytes.length;
      buf.set(this.restBytes, p);
      p += this.restBytes.length;
      p += buf.latin1Write(message, p);
      buf[p++] = QUOTE;
      if (tail.length > 0) {
        buf.set(tail, p);
        p += tail.length;
      }
      if (stamped) {
        // a few base-36 digits: a native call costs more than the loop
        for (let k = 0; k < seq36.length; k++) buf[p++] = seq36.charCodeAt(k);
        buf[p++] = QUOTE;
      } else if (idText !== '') {
        buf.set(ID_KEY, p);
        // the key's opening quote is jsonString's own
        p += ID_KEY.length - 1;
        p += buf.utf8Write(idText, p);
      }
      buf[p++] = CLOSE;
      writeHeader(buf, at, p - start, first + i);
      at = p;
    }
    let slab = this.slab;
    if (slab.refs === 0) slab.at = 0;
    if (slab.buf.length - slab.at < at) slab = this.nextSlab(at);
    const out = slab.buf.subarray(slab.at, slab.at + at);
    out.set(buf.subarray(0, at));
    slab.at += at;
    slab.refs++;
    return out;
  }

  /**
   * The writer is done with `chunks` (records this encoder made, each released once): their
   * memory may be written again.
   */
  release(chunks: readonly Uint8Array[]): void {
    for (const c of chunks) {
      if (c.buffer === this.slab.buf.buffer) {
        this.slab.refs--;
        continue;
      }
      const i = this.retired.findIndex((s) => s.buf.buffer === c.buffer);
      if (i < 0) continue;
      const s = this.retired[i]!;
      if (--s.refs > 0) continue;
      this.retired.splice(i, 1);
      if (this.spare.length < MAX_SPARE_SLABS && s.buf.length === SLAB_BYTES) this.spare.push(s);
    }
  }

  /** A slab with room for `bytes` becomes the current one; the current one is retired. */
  private nextSlab(bytes: number): Slab {
    const old = this.slab;
    if (old.refs > 0) this.retired.push(old);
    else if (this.spare.length < MAX_SPARE_SLABS && old.buf.length === SLAB_BYTES) this.spare.push(old);
    const slab = bytes <= SLAB_BYTES && this.spare.length > 0 ? this.spare.pop()! : newSlab(Math.max(SLAB_BYTES, bytes));
    slab.at = 0;
    this.slab = slab;
    return slab;
  }

  /** `seq` in base 36: its last digit from a table, the rest made once every 36 sequences. */
  private base36(seq: number): string {
    const head = Math.floor(seq / 36);
    if (head !== this.seqHeadOf) {
      this.seqHead = head === 0 ? '' : head.toString(36);
      this.seqHeadOf = head;
    }
    return this.seqHead + DIGITS_36[seq - head * 36]!;
  }

  /** The line as a string (LineEncoder), kept as the entry's `raw` when it is the entry as it is. */
  private lineOf(e: Entry, now: number, fallbackSource: string, stamped: boolean): string {
    const encoder = this.lines;
    const line = encoder.encode(e, now, fallbackSource, stamped);
    // The line is what reading the record back would give the entry as `raw`: kept, the json
    // format and chain sinks cut theirs from it instead of encoding the entry again. (Nothing
    // was filled in, so it encodes this entry as it is; `,"` never occurs inside a JSON string.)
    if (e.raw === undefined && !encoder.completed && typeof e.id === 'string') {
      e.raw = line;
      e.rawNodeAt = 0;
      // `,"id":"<id>"}` ends it
      e.rawIdAt = stamped ? line.length - e.id.length - 9 : line.lastIndexOf(',"id":');
    }
    return line;
  }

  private newRest(node: string | undefined, source: string, level: string | undefined): void {
    let s = '';
    if (node) s += `,"node":${jsonString(node)}`;
    if (source) s += `,"source":${jsonString(source)}`;
    if (level) s += `,"level":"${level}"`;
    this.restBytes = bytesOf(`${s},"message":"`);
    this.restNode = node;
    this.restSource = source;
    this.restLevel = level;
  }

  /** `,"fields":…` (when `fields`) and `,"id":"<prefix>`, in one piece. */
  private tailOf(fields: Readonly<Record<string, unknown>> | undefined): Uint8Array {
    if (fields === undefined) return this.idBytes;
    const f = this.fieldsOf(fields);
    if (f !== this.tailFields || this.idBytes !== this.tailId) {
      this.tailBytes = Buffer.concat([f, this.idBytes]);
      this.tailFields = f;
      this.tailId = this.idBytes;
    }
    return this.tailBytes;
  }

  private fieldsOf(fields: Readonly<Record<string, unknown>>): Uint8Array {
    const text = this.lines.fields(fields);
    if (text !== this.fieldsText) {
      this.fieldsText = text;
      this.fieldsBytes = bytesOf(FIELDS_KEY + text);
    }
    return this.fieldsBytes;
  }

  /** The scratch buffer, grown to hold `need` more bytes after the `at` written. */
  private grow(at: number, need: number): Writer {
    const bigger = Buffer.allocUnsafe(Math.max(this.scratch.length * 2, at + need)) as Writer;
    this.scratch.copy(bigger, 0, 0, at);
    this.scratch = bigger;
    return bigger;
  }
}
