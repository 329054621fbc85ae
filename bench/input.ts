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

/** Writes the input file; returns its size in bytes. */
export function writeInput(path: string, lines: number, lineBytes: number): number {
  const fd = openSync(path, 'w');
  let size = 0;
  let chunk = '';
  for (let i = 0; i < lines; i++) {
    chunk += benchLine(i, lineBytes);
    if (chunk.length >= 1 << 20 || i === lines - 1) {
      size += writeSync(fd, chunk);
      chunk = '';
    }
  }
  closeSync(fd);
  return size;
}
