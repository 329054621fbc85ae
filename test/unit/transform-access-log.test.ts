// The access log formats read a printable ASCII line by indexOf (scan in parsers/access-log.ts)
// and any other by their pattern: property tests that the two give the same on random lines, built
// around the structure with the characters that make the pattern choose (spaces, quotes, brackets,
// dashes, digits) and the ones that send a line to the pattern (tabs, `\`, non-ASCII).

import test from 'ava';
import fc from 'fast-check';
import { parseAccessByPattern, parseAccessLine } from '../../src/transform/parsers/access-log.js';
import { readClfTime, readClfTimeIn } from '../../src/transform/time.js';

/** Characters the pattern's parts turn on, and a few that make a line not plain. */
const tricky = fc.constantFrom(' ', ' ', '"', '"', '[', ']', '-', '0', '7', 'a', 'Z', '/', '\t', '\\', 'é', '\u00a0');
const plainText = fc.string({ unit: fc.constantFrom(...'abcXYZ019./:?=&%_-'.split('')), minLength: 1, maxLength: 10 });
/** a part of a line: mostly plain, now and then with tricky characters, now and then empty */
const part = fc.oneof(
  { weight: 10, arbitrary: plainText },
  { weight: 4, arbitrary: fc.array(fc.oneof(plainText, tricky), { minLength: 1, maxLength: 5 }).map((a) => a.join('')) },
  { weight: 1, arbitrary: fc.constantFrom('', '-', '"', ' ') },
);
const status = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 100, max: 599 }).map(String) },
  { weight: 1, arbitrary: fc.constantFrom('20', '2000', 'abc', '-', '', '099', '000', '007', '999') },
);
/** the method and protocol the scan takes as its constants, those near them, and any part */
const method = fc.oneof({ weight: 2, arbitrary: part }, { weight: 1, arbitrary: fc.constantFrom('GET', 'GE', 'GETS', 'GEt', 'gET', 'POST', 'GET"') });
const protocol = fc.oneof({ weight: 2, arbitrary: part }, { weight: 1, arbitrary: fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/1.11', 'HTTP/1.', 'HTTP/2.0', 'http/1.1', 'HTTP/1,1') });
const bytes = fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 0, max: 10_000_000 }).map(String) }, { weight: 2, arbitrary: fc.constantFrom('-', '007', '', '12a', '9'.repeat(30)) });
const time = fc.oneof({ weight: 6, arbitrary: fc.constantFrom('10/Oct/2000:13:55:36 -0700', '14/Nov/2023:22:13:20 +0000') }, { weight: 1, arbitrary: part });
/** what is between two parts: mostly the single space of the format */
const gap = fc.oneof({ weight: 12, arbitrary: fc.constant(' ') }, { weight: 1, arbitrary: fc.constantFrom('', '  ', '\t', '"', ' "') });

const line = fc
  .record({
    client: part,
    ident: part,
    user: part,
    g1: gap,
    time,
    method,
    path: part,
    protocol: fc.option(protocol),
    g2: gap,
    status,
    bytes,
    referrer: fc.option(part),
    agent: part,
    tail: fc.constantFrom('', ' ', ' x', '\t', '"'),
  })
  .map(
    (p) =>
      `${p.client} ${p.ident}${p.g1}${p.user} [${p.time}] "${p.method} ${p.path}${p.protocol === null ? '' : ` ${p.protocol}`}"${p.g2}${p.status} ${p.bytes}` +
      (p.referrer === null ? '' : ` "${p.referrer}" "${p.agent}"`) +
      p.tail,
  );

// the common part of both patterns (src/transform/parsers/access-log.ts), written out again
const HEAD = /^(\S+) \S+ (\S+) \[([^\]]+)\] "(\S+) (\S+)(?: ([^"]*))?" (\d{3}) (\d+|-)/;

test('the time of a part of a line is the time of that part sliced off, the last one read or not', (t) => {
  const times = fc.constantFrom('10/Oct/2000:13:55:36 -0700', '14/Nov/2023:22:13:20 +0000', '14/Nov/2023:22:13:2', '4/Nov/2023:22:13:20 +0000', 'x');
  fc.assert(
    fc.property(fc.string({ maxLength: 3 }), times, fc.string({ maxLength: 3 }), fc.boolean(), (before, time, after, again) => {
      const line = before + time + after;
      if (again) readClfTime(time);
      t.is(readClfTimeIn(line, before.length, before.length + time.length), readClfTime(time));
      t.is(readClfTimeIn(time, 0, time.length), readClfTime(time));
    }),
    { numRuns: 2_000 },
  );
});

test('an access log line read by indexOf gives what its pattern gives, for both formats', (t) => {
  let parsed = 0;
  fc.assert(
    fc.property(fc.boolean(), line, (combined, text) => {
      const want = parseAccessByPattern(text, combined);
      if (want !== undefined) {
        parsed++;
        // the shared reading of the parts, against the pattern's groups read the plain way
        const m = HEAD.exec(text)!;
        t.is(want.fields.status, Number(m[7]), JSON.stringify(text));
        t.is(want.time, readClfTime(m[3]!), JSON.stringify(text));
        t.deepEqual(JSON.parse(`${want.text!}}`), want.fields, JSON.stringify(text));
      }
      t.deepEqual(parseAccessLine(text, combined), want, JSON.stringify(text));
    }),
    { numRuns: 20_000 },
  );
  // the lines must reach the scan's every branch: most parse, many do not
  t.true(parsed > 4_000 && parsed < 16_000, `${parsed} of 20,000 lines parsed`);
});

test('a path with a quote, which the pattern may cut short, is read as the pattern reads it', (t) => {
  const lines = [
    '1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a" 200 5 "-" "b"',
    '1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a"b" 200 5 "-" "b"',
    '1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a"b HTTP/1.1" 200 5 "-" "b"',
    '1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a" "x" 200 5 "-" "b"',
    '1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a"" 200 5 "-" "b"',
    '1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 5',
    '1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 -\tx',
  ];
  for (const text of lines) {
    for (const combined of [true, false]) t.deepEqual(parseAccessLine(text, combined), parseAccessByPattern(text, combined), `${combined ? 'combined' : 'common'}: ${text}`);
  }
  t.is((parseAccessLine(lines[1]!, true)?.fields as { path?: string }).path, '/a"b', 'the path keeps its quote');
  t.is((parseAccessLine(lines[0]!, true)?.fields as { path?: string; protocol?: string }).path, '/a', 'the path gives back its quote');
  t.false('protocol' in parseAccessLine(lines[0]!, true)!.fields, 'no protocol');
});
