// The line reader the file and stdin sources drive (DESIGN.md §4, §14, §15, §21): bytes in,
// entries out. It splits a byte stream into lines, unwraps container lines, groups multiline
// entries, makes the entries (with their ids, when asked) and says where a reader starts again
// once they are done. Synchronous, a batch per chunk; it never calls back into its source.

import { type Entry, parseLine } from '../core/entry.js';
import { LineAssembler } from './assembler.js';
import type { ContainerFormat } from './container.js';
import { entryOf, lineEntry } from './entries.js';
import type { KubernetesMeta } from './kubernetes.js';
import type { LineCounters, LineMaker, LogicalLine, Resume } from './line.js';
import type { MultilineRules } from './multiline.js';
import { LineSplitter } from './splitter.js';

export interface LineReaderOptions {
  readonly format: ContainerFormat;
  readonly maxLineBytes: number;
  readonly multiline: MultilineRules | undefined;
  /** take every line as plain text, never parse JSON lines */
  readonly raw: boolean;
  /** the `source` of plain lines (no container format, no multiline): a file's base name, `stdin` */
  readonly name: string;
  /** the `source` of assembled lines: the name, or the container's with Kubernetes metadata */
  readonly source: string;
  readonly k8s: KubernetesMeta | undefined;
  /** the node a container's entries were produced on (§21), set on them when they have none */
  readonly node: string | undefined;
}

/** Where a reader begins: the stream offset of its first byte, and what a predecessor had open there. */
export interface ReaderStart {
  readonly offset: number;
  readonly resume?: Resume;
  /** entry ids are this and the offset of the line's end in base 36; undefined: no ids */
  readonly idPrefix: string | undefined;
}

export class LineReader {
  /** the ids of the lines read from now on start with it (a truncation changes it) */
  idPrefix: string | undefined;
  private readonly splitter: LineSplitter;
  /** container and multiline stages; undefined for plain lines */
  private readonly assembler: LineAssembler | undefined;
  /** container lines alone: their entries are made as they are completed, with no LogicalLine between */
  private readonly makes: boolean;
  /** where the next physical line begins */
  private lineStart: number;
  /** when the lines of the current batch were read, epoch ms (for the entry maker) */
  private now = 0;
  private readonly make: LineMaker<Entry>;
  /** whether CRI prefixes are read from the bytes (LineSplitter's `starts`) */
  private readonly byBytes: boolean;

  constructor(
    private readonly opts: LineReaderOptions,
    private readonly counters: LineCounters,
    start: ReaderStart,
  ) {
    this.idPrefix = start.idPrefix;
    this.splitter = new LineSplitter(opts.maxLineBytes);
    this.splitter.at(start.offset);
    this.lineStart = start.offset;
    const assembles = opts.format !== 'none' || opts.multiline !== undefined;
    this.assembler = assembles ? new LineAssembler({ format: opts.format, maxLineBytes: opts.maxLineBytes, multiline: opts.multiline }, counters, start.resume) : undefined;
    this.makes = assembles && opts.multiline === undefined;
    this.byBytes = opts.format !== 'none';
    this.make = this.entryMaker();
  }

  /** The stream offset of the next byte pushed. */
  get offset(): number {
    return this.splitter.offset;
  }

  /** Skips input up to the next newline: reading starts inside a line whose head was handled. */
  skipLine(): void {
    this.splitter.skipLine();
  }

  /** Reading starts again at offset 0 (the file was truncated, after flush()), its ids with `idPrefix`. */
  restart(idPrefix: string | undefined): void {
    this.splitter.at(0);
    this.lineStart = 0;
    this.idPrefix = idPrefix;
  }

  /**
   * Reads `chunk`, the next bytes of the stream (reusable once this returns): appends the entries
   * it completes to `out` and returns where a reader starts again once they are done.
   */
  push(chunk: Buffer, out: Entry[]): Resume {
    // arrays of the batch's own, not kept ones: a young string stored into an old array costs a
    // write barrier and a remembered-set entry each
    const lines: string[] = [];
    const ends: number[] = [];
    const starts = this.byBytes ? [] : undefined;
    const before = this.splitter.truncated;
    this.splitter.push(chunk, lines, ends, starts);
    this.counters.truncated_lines += this.splitter.truncated - before;
    return this.linesRead(lines, ends, out, chunk, starts);
  }

  /**
   * Emits everything held open (the stream ended, or its file was rotated away or truncated): the
   * partial line, container partials, multiline entries. Undefined when nothing was open.
   */
  flush(out: Entry[]): Resume | undefined {
    const lines: string[] = [];
    const ends: number[] = [];
    this.splitter.flush(lines, ends);
    const mark = lines.length > 0 ? this.linesRead(lines, ends, out) : undefined;
    if (this.assembler === undefined) return mark;
    const logical: LogicalLine[] = [];
    this.now = Date.now();
    this.assembler.flush(this.offset, this.now, logical);
    if (logical.length === 0) return mark;
    this.entriesOf(logical, out);
    return this.assembler.resume(this.offset);
  }

  /** Emits the multiline entries quiet for their `timeout_ms`; undefined when none is due. */
  expire(out: Entry[]): Resume | undefined {
    const due = this.assembler?.nextTimeout();
    if (due === undefined) return undefined;
    this.now = Date.now();
    if (due > this.now) return undefined;
    const logical: LogicalLine[] = [];
    this.assembler!.expire(this.now, logical);
    this.entriesOf(logical, out);
    return this.assembler!.resume(this.readEnd);
  }

  /** Whether anything is held open that a successor's first bytes must come after. */
  holdsOpen(): boolean {
    return this.splitter.pendingBytes > 0 || (this.assembler !== undefined && this.assembler.resume(this.offset).offset < this.offset);
  }

  /** where reading got to, short of the held partial line */
  private get readEnd(): number {
    return this.splitter.offset - this.splitter.pendingBytes;
  }

  /** The entries of physical lines (`bytes`, `starts`: the chunk they came from, as LineSplitter.push gives them). */
  private linesRead(lines: readonly string[], ends: readonly number[], out: Entry[], bytes?: Buffer, starts?: readonly number[]): Resume {
    this.now = Date.now();
    const assembler = this.assembler;
    if (assembler === undefined) {
      const { name, raw } = this.opts;
      const prefix = this.idPrefix;
      if (prefix === undefined) for (let i = 0; i < lines.length; i++) out.push(parseLine(lines[i]!, name, this.now, raw));
      else for (let i = 0; i < lines.length; i++) out.push(parseLine(lines[i]!, name, this.now, raw, prefix + ends[i]!.toString(36)));
      return { offset: this.readEnd };
    }
    if (this.makes) assembler.pushMade(lines, ends, this.lineStart, out, this.make, bytes, starts);
    else {
      const logical: LogicalLine[] = [];
      assembler.push(lines, ends, this.lineStart, this.now, logical, bytes, starts);
      this.entriesOf(logical, out);
    }
    if (ends.length > 0) this.lineStart = ends[ends.length - 1]!;
    return assembler.resume(this.readEnd);
  }

  /** Appends the entries of `logical` to `out`. */
  private entriesOf(logical: readonly LogicalLine[], out: Entry[]): void {
    const { source, raw, k8s, node } = this.opts;
    const first = out.length;
    for (let i = 0; i < logical.length; i++) out.push(entryOf(logical[i]!, source, this.now, raw, k8s));
    if (node !== undefined) for (let i = first; i < out.length; i++) out[i]!.node ??= node;
    const prefix = this.idPrefix;
    if (prefix !== undefined) for (let i = 0; i < logical.length; i++) out[first + i]!.id = prefix + logical[i]!.idAt.toString(36);
  }

  /** Makes the entry of a container line as the container stage completes it (see LineAssembler.pushMade). */
  private entryMaker(): LineMaker<Entry> {
    const { source, raw, k8s, node } = this.opts;
    if (node === undefined) {
      return (text, _start, _end, idAt, stream, time, nanos) => {
        const entry = lineEntry(text, stream, time, nanos, source, this.now, raw, k8s);
        if (this.idPrefix !== undefined) entry.id = this.idPrefix + idAt.toString(36);
        return entry;
      };
    }
    return (text, _start, _end, idAt, stream, time, nanos) => {
      const entry = lineEntry(text, stream, time, nanos, source, this.now, raw, k8s);
      entry.node ??= node;
      if (this.idPrefix !== undefined) entry.id = this.idPrefix + idAt.toString(36);
      return entry;
    };
  }
}
