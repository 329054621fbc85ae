// parseTime remembers the second of the last UTC time with milliseconds it parsed: times of that
// second read as it plus their milliseconds, and nothing else changes (each checked against Date.parse).

import test from 'ava';
import { parseTime } from '../../src/core/entry.js';

test('times within one second, across seconds, and forms that only look alike read as Date.parse reads them', (t) => {
  const texts: string[] = [];
  for (let i = 0; i < 5000; i++) texts.push(new Date(1_700_000_000_000 + i * 37 - (i % 5) * 86_400_000).toISOString());
  texts.push('2023-11-14T22:13:20.123+01:00', '2023-11-14T22:13:20.999Z', '2023-11-14T22:13:20.5ZZ', '2023-11-14T22:13:20.abcZ', '2023-11-14T22:13:20Z', '1969-12-31T23:59:59.999Z', '1970-01-01T00:00:00.001Z');
  for (const text of texts) {
    const want = Date.parse(text);
    t.is(parseTime(text), Number.isNaN(want) ? undefined : want, text);
  }
});
