// core/iso-time.ts: the text Date.prototype.toISOString gives, made from the UTC fields.

import test from 'ava';
import { isoTime } from '../../src/core/entry-json.js';
import { isoString } from '../../src/core/iso-time.js';

/** Instants across the range a Date holds: the edges of four- and six-digit years, fractions, random ones. */
function instants(): number[] {
  const out = [0, 1, -1, 999, 1000, 0.5, -0.5, 1_700_000_000_123.7, Date.now(), 253_402_300_799_999, 253_402_300_800_000, -62_167_219_200_000, -62_167_219_200_001, 8.64e15, -8.64e15];
  for (let i = 0; i < 2000; i++) out.push(Math.round((Math.random() * 2 - 1) * 8.64e15), Math.random() * 4e12);
  return out;
}

test('isoString writes what toISOString writes, for any instant a Date holds', (t) => {
  for (const ms of instants()) t.is(isoString(ms), new Date(ms).toISOString(), String(ms));
});

test('isoString throws the RangeError toISOString throws for an invalid time', (t) => {
  for (const ms of [Number.NaN, 8.64e15 + 1, -8.64e15 - 1, Number.POSITIVE_INFINITY]) {
    t.throws(() => new Date(ms).toISOString(), { instanceOf: RangeError });
    t.throws(() => isoString(ms), { instanceOf: RangeError }, String(ms));
  }
});

test("isoTime (entries' and reports' times) writes what toISOString writes, second after second", (t) => {
  for (const ms of instants()) t.is(isoTime(ms), new Date(Math.trunc(ms)).toISOString(), String(ms));
});
