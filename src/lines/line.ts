// The unit the line-assembly stages pass on: a logical line with where it lies in its file.

export type Stream = 'stdout' | 'stderr';

/**
 * One logical line: a physical line, the joined pieces of a container runtime's partial line, or
 * (after the multiline stage) a group of lines joined with `\n`.
 */
export interface LogicalLine {
  text: string;
  /** file offset where its first piece begins (a reader started here reads it whole) */
  readonly start: number;
  /** file offset just past its last piece: its position once done */
  end: number;
  /** file offset its id is derived from (DESIGN.md §14): the end of its first logical line */
  readonly idAt: number;
  /** the container stream, when the file is in a container format */
  readonly stream?: Stream;
  /** the runtime's time of its first piece, epoch ms */
  readonly time?: number;
  /** that time as written, when finer than ms (`fields.time_nanos`) */
  readonly nanos?: string;
}

/**
 * Makes what a line stage emits of a logical line's parts (`stream`, `time`, `nanos`: a container
 * line's, else undefined): a LogicalLine (logicalLine), or, when no stage follows, the entry itself.
 */
export type LineMaker<T> = (text: string, start: number, end: number, idAt: number, stream?: Stream, time?: number, nanos?: string) => T;

/** A LogicalLine of its parts; a line of no container has no `stream`, `time` or `nanos` key. */
export const logicalLine: LineMaker<LogicalLine> = (text, start, end, idAt, stream, time, nanos) =>
  stream === undefined ? { text, start, end, idAt } : { text, start, end, idAt, stream, time, nanos };

/**
 * Where a reader of a file starts again so that nothing open is cut and nothing delivered is
 * sent twice (DESIGN.md §15, §21): from `offset` (the start of the earliest open partial line or
 * entry); when something was open, lines up to `read` were delivered, except those of a stream
 * (`stdout`, `stderr`, `""` for plain lines) at or after its own open start in `streams`.
 */
export interface Resume {
  readonly offset: number;
  readonly read?: number;
  readonly streams?: Readonly<Record<string, number>>;
}

/** Counters the line-assembly stages add to their source's (DESIGN.md §21). */
export interface LineCounters {
  parse_errors: number;
  truncated_lines: number;
  multiline_entries: number;
  multiline_splits: number;
  multiline_timeouts: number;
}

/** A line cut to `maxBytes` of UTF-8, backed off to a character boundary. */
export function cutToBytes(text: string, maxBytes: number): string {
  if (text.length * 3 <= maxBytes || Buffer.byteLength(text) <= maxBytes) return text;
  const bytes = Buffer.from(text);
  let end = maxBytes;
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.toString('utf8', 0, end);
}
