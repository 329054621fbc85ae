// The file source's line splitter reports where each line ends in the file: the offset that
// entry ids of file lines are made from (DESIGN.md §14), so it must not depend on how reads
// happened to be cut.

import test from 'ava';
import { LineSplitter } from '../../src/lines/splitter.js';

function split(chunks: readonly string[], start = 0): { lines: string[]; ends: number[] } {
  const s = new LineSplitter(1024);
  s.at(start);
  const lines: string[] = [];
  const ends: number[] = [];
  for (const c of chunks) s.push(Buffer.from(c), lines, ends);
  return { lines, ends };
}

test('line ends are byte offsets past each newline, empty lines and CR skipped', (t) => {
  t.deepEqual(split(['ab\n\ncd\r\nef\n']), { lines: ['ab', 'cd', 'ef'], ends: [3, 8, 11] });
});

test('multi-byte characters count in bytes', (t) => {
  t.deepEqual(split(['é\nxyz\n€€\n']), { lines: ['é', 'xyz', '€€'], ends: [3, 7, 14] });
});

test('the same bytes cut into other reads give the same ends', (t) => {
  const text = 'first line\nsecond ünïcode line\nthird\n';
  const whole = split([text]);
  const buf = Buffer.from(text);
  for (let cut = 1; cut < buf.length; cut++) {
    const s = new LineSplitter(1024);
    const lines: string[] = [];
    const ends: number[] = [];
    s.push(buf.subarray(0, cut), lines, ends);
    s.push(buf.subarray(cut), lines, ends);
    t.deepEqual({ lines, ends }, whole, `cut at byte ${cut}`);
  }
});

test('reading resumed at an offset continues the offsets from there', (t) => {
  t.deepEqual(split(['c\nd\n'], 100), { lines: ['c', 'd'], ends: [102, 104] });
});

test('a partial line flushed (file rotated away) ends where the data ends', (t) => {
  const s = new LineSplitter(1024);
  const lines: string[] = [];
  const ends: number[] = [];
  s.push(Buffer.from('a\nbc'), lines, ends);
  s.flush(lines, ends);
  t.deepEqual({ lines, ends }, { lines: ['a', 'bc'], ends: [2, 4] });
});
