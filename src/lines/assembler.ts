// The line-assembly stages of one file (or input) in their order: container format, then
// multiline groups (DESIGN.md §21). Pure and synchronous on batches of physical lines; it also
// says where a reader may start again without cutting anything open (the acknowledged position
// never falls inside an open partial line or entry).

import { ContainerLines, type ContainerFormat } from './container.js';
import type { LineCounters, LineMaker, LogicalLine, Resume } from './line.js';
import { MultilineGroups, type MultilineRules } from './multiline.js';

export interface AssemblyOptions {
  readonly format: ContainerFormat;
  readonly maxLineBytes: number;
  readonly multiline: MultilineRules | undefined;
}

export class LineAssembler {
  private readonly container: ContainerLines;
  private readonly groups: MultilineGroups | undefined;
  /** logical lines between the stages, reused */
  private readonly middle: LogicalLine[] = [];

  /** `resume`: where the reader starts again, as a predecessor's `resume()` said */
  constructor(opts: AssemblyOptions, counters: LineCounters, resume?: Resume) {
    this.container = new ContainerLines(opts.format, opts.maxLineBytes, counters, resume);
    this.groups = opts.multiline ? new MultilineGroups(opts.multiline, counters) : undefined;
  }

  /**
   * Takes physical lines in file order (`ends[i]`: the offset just past line i; line 0 begins at
   * `from`); appends the logical lines they complete to `out`. `now`: when they were read.
   * `bytes` and `starts`, when given: the chunk the lines were split from and where each begins
   * in it (-1: not wholly in it), as LineSplitter.push gives them.
   */
  push(lines: readonly string[], ends: readonly number[], from: number, now: number, out: LogicalLine[], bytes?: Buffer, starts?: readonly number[]): void {
    const mid = this.groups ? this.middle : out;
    let start = from;
    for (let i = 0; i < lines.length; i++) {
      const end = ends[i]!;
      this.container.push(lines[i]!, start, end, mid, bytes, starts?.[i] ?? -1);
      start = end;
    }
    if (this.groups) this.group(now, out);
  }

  /**
   * As push() without multiline groups: what the container stage completes is made by `make`
   * straight into `out`, with no LogicalLine between (the line reader makes its entries so: an
   * object a line less, and a loop over them, cost about 5 % of a CRI line's way).
   */
  pushMade<T>(lines: readonly string[], ends: readonly number[], from: number, out: T[], make: LineMaker<T>, bytes?: Buffer, starts?: readonly number[]): void {
    if (this.groups) throw new Error('pushMade: multiline groups take LogicalLines');
    let start = from;
    for (let i = 0; i < lines.length; i++) {
      const end = ends[i]!;
      this.container.push(lines[i]!, start, end, out, bytes, starts?.[i] ?? -1, make);
      start = end;
    }
  }

  /** Emits the entries quiet for the multiline `timeout_ms`. */
  expire(now: number, out: LogicalLine[]): void {
    this.groups?.expire(now, out);
  }

  /** When the earliest open entry times out (epoch ms), if any is open. */
  nextTimeout(): number | undefined {
    return this.groups?.nextTimeout();
  }

  /** Emits everything open: partial lines as they are, then entries (rotated away, deleted, input ended). */
  flush(end: number, now: number, out: LogicalLine[]): void {
    const mid = this.groups ? this.middle : out;
    this.container.flush(end, mid);
    if (!this.groups) return;
    this.group(now, out);
    this.groups.flush(out);
  }

  /** Where a reader starts again once what was emitted so far is done; `readEnd`: where reading got to. */
  resume(readEnd: number): Resume {
    const streams: Record<string, number> = {};
    this.container.openStarts(streams);
    this.groups?.openStarts(streams);
    const skip = this.container.skip;
    if (skip !== undefined && readEnd <= skip.read!) {
      // still passing over what a predecessor delivered: up to its `read`, a stream it had open is
      // delivered up to what is open here now (else up to where it or this reader got), the
      // others entirely
      for (const key in skip.streams) streams[key] ??= Math.max(skip.streams[key]!, readEnd);
      let offset = readEnd;
      for (const key in streams) offset = Math.min(offset, streams[key]!);
      return { offset, read: skip.read!, streams };
    }
    let offset = readEnd;
    for (const key in streams) offset = Math.min(offset, streams[key]!);
    return offset === readEnd ? { offset } : { offset, read: readEnd, streams };
  }

  private group(now: number, out: LogicalLine[]): void {
    const mid = this.middle;
    for (let i = 0; i < mid.length; i++) this.groups!.push(mid[i]!, now, out);
    mid.length = 0;
  }
}
