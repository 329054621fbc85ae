// The readers of entry times in text, held to the forms each one took before they were made one
// reader: a JSON line's or a chain line's `time` (parseTime, anything Date.parse reads), the
// canonical chain line's time (exactly what isoTime writes), an OTLP entry's `time_nanos` and
// `observed_time` (RFC 3339 with at most nine fraction digits, nanoseconds kept), a transform
// writing `time` (RFC 3339, any fraction, `T`, `t` or a space, `Z` or `z`), and a syslog message's
// TIMESTAMP (RFC 5424: what Date.parse reads; an RFC 3164 message beginning with RFC 3339: `T`,
// `Z`, at most nine fraction digits). Where a reader takes a form it reads what Date.parse reads.
// They read through core/time.ts now: readTimeText takes what parseTime takes, readRfc3339 what a
// transform takes, with the nanoseconds OTLP keeps.

import test from 'ava';
import { parseTime } from '../../src/core/entry.js';
import { decodeEntry } from '../../src/core/entry-line.js';
import { readRfc3339, readTimeText } from '../../src/core/time.js';
import { parseNanoTime } from '../../src/otlp/map-out.js';
import { parseSyslog } from '../../src/syslog/parse.js';
import { readTime } from '../../src/transform/time.js';

/**
 * A form and the readers that take it: `p` parseTime, `c` a canonical chain line, `n` OTLP's
 * nanosecond times (with the nanoseconds within the millisecond), `t` a transform's `time`, `s`
 * an RFC 5424 TIMESTAMP, `b` an RFC 3164 message's leading RFC 3339 time.
 */
const FORMS: readonly (readonly [text: string, readers: string, ns?: number])[] = [
  ['2023-11-14T22:13:20Z', 'pntsb', 0],
  ['2023-11-14T22:13:20.123Z', 'pcntsb', 0],
  ['2023-11-14T22:13:20.1Z', 'pntsb', 0],
  ['2023-11-14T22:13:20.12Z', 'pntsb', 0],
  ['2023-11-14T22:13:20.123456Z', 'pntsb', 456_000],
  ['2023-11-14T22:13:20.123456789Z', 'pntsb', 456_789],
  ['2023-11-14T22:13:20.1234567891Z', 'pts'],
  ['2023-11-14t22:13:20z', 'pnts', 0],
  ['2023-11-14T22:13:20.5z', 'pnts', 0],
  ['2023-11-14 22:13:20Z', 'pt'],
  ['2023-11-14 22:13:20.5Z', 'pt'],
  ['2023-11-14T22:13:20+01:00', 'pntsb', 0],
  ['2023-11-14T22:13:20.123456789-05:30', 'pntsb', 456_789],
  ['2023-11-14T22:13:20-00:00', 'pntsb', 0],
  // Date.parse takes hour 24 as the next day's midnight and a day past its month's end into the next month
  ['2023-11-14T24:00:00Z', 'pntsb', 0],
  ['2023-02-30T00:00:00Z', 'pntsb', 0],
  ['2023-11-14T23:59:60Z', ''],
  ['1969-12-31T23:59:59.999Z', 'pcntsb', 0],
  ['1969-12-31T23:59:59.5Z', 'pntsb', 0],
  ['0099-01-01T00:00:00.000Z', 'pcntsb', 0],
  ['+012023-11-14T22:13:20.000Z', 'ps'],
  // no zone: local time, as Date.parse reads it
  ['2023-11-14T22:13:20', 'ps'],
  ['2023-11-14', 'ps'],
  ['2023-11-14T22:13:20+0100', 'ps'],
  ['Jan 1 2020', 'p'],
  ['2023-11-14T22:13:20.Z', ''],
  ['2023-13-01T00:00:00Z', ''],
  ['2023-11-14T22:13:20+24:00', ''],
  ['2023-11-14T22:13:20.5ZZ', ''],
  ['not a time', ''],
];

/** `now` of the readers that fill a time in: no form reads as it. */
const NOW = 1;

for (const [text, readers, ns] of FORMS) {
  test(`${JSON.stringify(text)} is read by ${readers === '' ? 'none' : readers}`, (t) => {
    const want = Date.parse(text);
    const takes = (r: string) => readers.includes(r);
    t.is(parseTime(text), takes('p') ? want : undefined, 'parseTime');
    t.is(readTimeText(text), takes('p') ? want : Number.NaN, 'readTimeText');
    const parts = { ns: -1, digits: -1 };
    t.is(readRfc3339(text), takes('t') ? want : Number.NaN, 'readRfc3339');
    t.is(readRfc3339(text, parts), takes('t') ? want : Number.NaN, 'readRfc3339 with its parts');
    if (takes('n')) t.is(parts.ns, ns!, 'readRfc3339: the nanoseconds');

    const line = decodeEntry(`{"time":"${text}","source":"s","message":"m","id":"i"}`, undefined, NOW, 'fb');
    t.is(line?.time, takes('p') ? want : NOW, 'a chain line');
    t.is(line?.raw !== undefined, takes('c'), 'read as a canonical chain line');

    const nanos = { ms: 0, ns: 0 };
    t.is(parseNanoTime(text, nanos), takes('n'), 'parseNanoTime');
    if (takes('n')) t.deepEqual(nanos, { ms: want, ns: ns! }, 'parseNanoTime');

    t.is(readTime(text), takes('t') ? want : undefined, "a transform's time");

    if (!text.includes(' ')) t.is(parseSyslog(`<13>1 ${text} host app - - - m`, NOW, 'fb').entry.time, takes('s') ? want : NOW, 'RFC 5424');
    const bsd = parseSyslog(`<13>${text} host app: m`, NOW, 'fb');
    t.is(bsd.entry.time, takes('b') ? want : NOW, 'RFC 3164');
    if (takes('b')) t.is(bsd.entry.fields?.hostname, 'host', 'RFC 3164: the hostname follows the time');
  });
}
