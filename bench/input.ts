// The bench input: `lines` log lines of about `lineBytes` bytes each, written in large chunks.

import { closeSync, openSync, writeSync } from 'node:fs';

const LEVELS = ['INFO', 'INFO', 'INFO', 'DEBUG', 'WARN', 'ERROR'];
const WORDS = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua'.split(' ');

/** One line of exactly `lineBytes` bytes including its `\n`. */
export function benchLine(i: number, lineBytes: number): string {
  const time = new Date(1_700_000_000_000 + i).toISOString();
  let s = `${time} ${LEVELS[i % LEVELS.length]} api[${1000 + (i % 7)}]: request id=${i} method=GET path=/api/v1/items/${i % 9973} status=200 duration_ms=${i % 250} msg="`;
  for (let w = i; s.length < lineBytes - 2; w = (w * 31 + 7) % 1_000_003) s += `${WORDS[w % WORDS.length]} `;
  return `${s.slice(0, lineBytes - 2)}"\n`;
}

/** Lines of one Java stack trace in the multiline input: the message and its frames. */
export const JAVA_TRACE_LINES = 10;

/** Line `i` as a CRI runtime writes it: time with nanoseconds, stream, `F`, the plain line. */
export function criLine(i: number, lineBytes: number): string {
  return `${new Date(1_700_000_000_000 + i).toISOString().slice(0, -1)}123456Z ${i % 5 === 0 ? 'stderr' : 'stdout'} F ${benchLine(i, lineBytes)}`;
}

/** Line `i` of Java traces: every JAVA_TRACE_LINES-th a plain message, the others `at`, `Caused by:` and `... n more` lines. */
export function javaLine(i: number, lineBytes: number): string {
  const k = i % JAVA_TRACE_LINES;
  if (k === 0) return benchLine(i, lineBytes);
  const frame =
    k === JAVA_TRACE_LINES - 1
      ? '\t... 42 more'
      : k === 5
        ? `Caused by: java.sql.SQLException: connection reset by peer (request ${i})`
        : `\tat com.example.shop.service.OrderService${k}.find${i % 97}(OrderService${k}.java:${i % 400})`;
  // padded to the plain lines' size, so bytes per second compare
  return `${frame}${' '.repeat(Math.max(0, lineBytes - 1 - frame.length))}\n`;
}

/** Writes the input file; returns its size in bytes. */
export function writeInput(path: string, lines: number, lineBytes: number, line: (i: number, lineBytes: number) => string = benchLine): number {
  const fd = openSync(path, 'w');
  let size = 0;
  let chunk = '';
  for (let i = 0; i < lines; i++) {
    chunk += line(i, lineBytes);
    if (chunk.length >= 1 << 20 || i === lines - 1) {
      size += writeSync(fd, chunk);
      chunk = '';
    }
  }
  closeSync(fd);
  return size;
}

/** The input as CRI lines; returns its size in bytes. */
export const writeCriInput = (path: string, lines: number, lineBytes: number): number => writeInput(path, lines, lineBytes, criLine);

/** The input as Java stack traces of JAVA_TRACE_LINES lines; returns its size in bytes. */
export const writeJavaInput = (path: string, lines: number, lineBytes: number): number => writeInput(path, lines, lineBytes, javaLine);
