import test from 'ava';
import { linesBuffer } from '../../src/core/lines-buffer.js';

test('linesBuffer: the lines as UTF-8, each ended by a newline, for ASCII and multi-byte text', (t) => {
  const samples = [
    ['a', 'bc', ''],
    ['héllo', '日本語のテキスト', 'emoji 😀 and ascii', 'x'.repeat(1000)],
    Array.from({ length: 2000 }, (_, i) => (i % 7 === 0 ? `ü${'é'.repeat(i % 50)}` : `line ${i}`)),
    ['€'.repeat(5000)],
  ];
  for (const lines of samples) {
    const want = Buffer.from(lines.map((l) => `${l}\n`).join(''));
    t.true(linesBuffer(lines).equals(want));
    t.true(linesBuffer(lines, 1, lines.length - 1).equals(Buffer.from(lines.slice(1, -1).map((l) => `${l}\n`).join(''))));
  }
  t.is(linesBuffer([]).length, 0);
});
