// parseTime remembers the second of the last UTC time with milliseconds it parsed: times of that
// second read as it plus their milliseconds, and nothing else changes (each checked against Date.parse).

import test from 'ava';
import fc from 'fast-check';
import { parseTime } from '../../src/core/entry.js';
import { readTimeText } from '../../src/core/time.js';

test('times within one second, across seconds, and forms that only look alike read as Date.parse reads them', (t) => {
  const texts: string[] = [];
  for (let i = 0; i < 5000; i++) texts.push(new Date(1_700_000_000_000 + i * 37 - (i % 5) * 86_400_000).toISOString());
  texts.push('2023-11-14T22:13:20.123+01:00', '2023-11-14T22:13:20.999Z', '2023-11-14T22:13:20.5ZZ', '2023-11-14T22:13:20.abcZ', '2023-11-14T22:13:20Z', '1969-12-31T23:59:59.999Z', '1970-01-01T00:00:00.001Z');
  for (const text of texts) {
    const want = Date.parse(text);
    t.is(parseTime(text), Number.isNaN(want) ? undefined : want, text);
  }
});

test('any sequence of times, most in a few seconds, some with a character changed anywhere, reads as Date.parse reads each', (t) => {
  const seconds = [1_700_000_000_000, 1_700_000_001_000, 1_700_003_600_000, 946_684_799_000, -1_000];
  const text = fc
    .record({ second: fc.constantFrom(...seconds), ms: fc.integer({ min: 0, max: 999 }), change: fc.option(fc.record({ at: fc.nat(23), to: fc.constantFrom('0', '9', '.', 'Z', 'z', ':', '-', ' ', 'T', '+', 'a') })) })
    .map(({ second, ms, change }) => {
      const iso = new Date(second + ms).toISOString();
      return change === null ? iso : iso.slice(0, change.at) + change.to + iso.slice(change.at + 1);
    });
  fc.assert(
    fc.property(fc.array(text, { minLength: 1, maxLength: 40 }), (texts) => {
      for (const s of texts) {
        const want = Date.parse(s);
        t.is(readTimeText(s), want, s);
        t.is(parseTime(s), Number.isNaN(want) ? undefined : want, s);
      }
    }),
    { numRuns: 2_000 },
  );
});
