import test from 'ava';
import { linesBuffer } from '../../src/core/lines-buffer.js';

test('linesBuffer: the lines as UTF-8, each ended by a newline, for ASCII and multi-byte text', (t) => {
  const samples = [
    ['a', 'bc', ''],
    ['héllo', '日本語のテキスト', 'emoji 😀 and ascii', 'x'.repeat(1000)],
    Array.from({ length: 2000 }, (_, i) => (i % 7 === 0 ? `ü${'é'.repeat(i % 50)}` : `line ${i}`)),
    ['€'.repeat(5000)],
    // several joined writes (32 Ki units each), multi-byte text where a write meets the buffer's end
    Array.from({ length: 3000 }, (_, i) => `${'x'.repeat(i % 300)} ${i}`),
    [...Array.from({ length: 1000 }, (_, i) => `${'a'.repeat(200)} ${i}`), '😀'.repeat(40_000), 'é'],
    [...Array.from({ length: 400 }, (_, i) => `${'b'.repeat(100)} ${i}`), `${'c'.repeat(32_000)}€`],
    // lone surrogates stay U+FFFD each, in a line of their own or beside others
    ['\ud800', 'a\udc00', '\udbff\udfff', 'tail \ud83d'],
  ];
  for (const lines of samples) {
    const want = Buffer.from(lines.map((l) => `${l}\n`).join(''));
    t.true(linesBuffer(lines).equals(want));
    t.true(linesBuffer(lines, 1, lines.length - 1).equals(Buffer.from(lines.slice(1, -1).map((l) => `${l}\n`).join(''))));
  }
  t.is(linesBuffer([]).length, 0);
});
