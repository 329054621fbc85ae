import test from 'ava';
import type { FilterConfig, FlowConfig, RateLimitConfig } from '../../src/config/schema.js';
import type { Entry } from '../../src/core/entry.js';
import { createLogger } from '../../src/core/log.js';
import { compileFilters, matchText, passes } from '../../src/flow/filters.js';
import { FORMATTERS, formatJson, formatTxt, sanitise } from '../../src/flow/format.js';
import { createFlow } from '../../src/flow/index.js';
import { createRateLimiter } from '../../src/flow/rate-limit.js';

const T0 = Date.parse('2024-05-06T07:08:09.010Z');
const entry = (message: string, extra: Partial<Entry> = {}): Entry => ({ time: T0, source: 'app.log', message, ...extra });

// ---- rate limiter -------------------------------------------------------------------------

interface LimiterCase {
  readonly title: string;
  readonly cfg: RateLimitConfig;
  /** [message, ms after start] per entry */
  readonly input: readonly (readonly [string, number])[];
  readonly admitted: readonly boolean[];
  readonly dropped_total: number;
  readonly dropped_by_size_total: number;
}

const LIMITER_CASES: readonly LimiterCase[] = [
  {
    title: 'drop: bucket full at start, then empty',
    cfg: { rate: 2, burst: 3, policy: 'drop', max_entry_size_bytes: 0 },
    input: [['a', 0], ['b', 0], ['c', 0], ['d', 0], ['e', 0]],
    admitted: [true, true, true, false, false],
    dropped_total: 2,
    dropped_by_size_total: 0,
  },
  {
    title: 'drop: burst <= 0 means burst = rate',
    cfg: { rate: 2, burst: 0, policy: 'drop', max_entry_size_bytes: 0 },
    input: [['a', 0], ['b', 0], ['c', 0]],
    admitted: [true, true, false],
    dropped_total: 1,
    dropped_by_size_total: 0,
  },
  {
    title: 'drop: tokens refill at rate per second',
    cfg: { rate: 10, burst: 1, policy: 'drop', max_entry_size_bytes: 0 },
    input: [['a', 0], ['b', 50], ['c', 100], ['d', 150], ['e', 250]],
    admitted: [true, false, true, false, true],
    dropped_total: 2,
    dropped_by_size_total: 0,
  },
  {
    title: 'drop: size cap drops big entries and counts them in both counters',
    cfg: { rate: 100, burst: 100, policy: 'drop', max_entry_size_bytes: 4 },
    input: [['1234', 0], ['12345', 0], ['é12', 0], ['é123', 0]],
    admitted: [true, false, true, false],
    dropped_total: 2,
    dropped_by_size_total: 2,
  },
  {
    title: 'pass: never drops, not even over the size cap',
    cfg: { rate: 1, burst: 1, policy: 'pass', max_entry_size_bytes: 2 },
    input: [['short', 0], ['longer message', 0], ['x'.repeat(100), 0]],
    admitted: [true, true, true],
    dropped_total: 0,
    dropped_by_size_total: 0,
  },
];

for (const c of LIMITER_CASES) {
  test(`rate limiter: ${c.title}`, (t) => {
    const limiter = createRateLimiter(c.cfg);
    if (!limiter) return t.fail('limiter should exist');
    const got = c.input.map(([msg, at]) => limiter.admit(entry(msg), T0 + at));
    t.deepEqual(got, [...c.admitted]);
    t.is(limiter.counters.dropped_total, c.dropped_total);
    t.is(limiter.counters.dropped_by_size_total, c.dropped_by_size_total);
  });
}

for (const rate of [0, -1]) {
  test(`rate limiter: does not exist when rate = ${rate}, so the size cap is ignored`, (t) => {
    const cfg: FlowConfig = {
      rate_limit: { rate, burst: 1, policy: 'drop', max_entry_size_bytes: 1 },
      filters: [],
      format: { type: 'raw' },
    };
    t.is(createRateLimiter(cfg.rate_limit), undefined);
    const flow = createFlow(cfg);
    t.is(flow.rateLimiter, undefined);
    t.is(flow.process(entry('far over one byte'), T0), 'far over one byte');
    t.is(flow.counters.total_dropped, 0);
  });
}

test('rate limiter: available_tokens follows the bucket', (t) => {
  const limiter = createRateLimiter({ rate: 10, burst: 5, policy: 'drop', max_entry_size_bytes: 0 })!;
  t.is(limiter.counters.available_tokens, 5);
  limiter.admit(entry('a'), T0);
  limiter.admit(entry('b'), T0);
  t.is(limiter.counters.available_tokens, 3);
  limiter.admit(entry('c'), T0 + 1000);
  t.is(limiter.counters.available_tokens, 4);
});

// ---- filters ------------------------------------------------------------------------------

interface FilterCase {
  readonly title: string;
  readonly filters: readonly FilterConfig[];
  readonly entry: Entry;
  readonly pass: boolean;
}

const ERR = entry('disk full', { level: 'ERROR' });
const INFO = entry('user login', { level: 'INFO' });

const FILTER_CASES: readonly FilterCase[] = [
  { title: 'no filters pass all', filters: [], entry: INFO, pass: true },
  { title: 'include without patterns passes all', filters: [{ type: 'include', logic: 'or', patterns: [] }], entry: INFO, pass: true },
  { title: 'include or: one match passes', filters: [{ type: 'include', logic: 'or', patterns: ['ERROR', 'WARN'] }], entry: ERR, pass: true },
  { title: 'include or: no match rejects', filters: [{ type: 'include', logic: 'or', patterns: ['ERROR', 'WARN'] }], entry: INFO, pass: false },
  { title: 'include and: all must match', filters: [{ type: 'include', logic: 'and', patterns: ['ERROR', 'disk'] }], entry: ERR, pass: true },
  { title: 'include and: one missing rejects', filters: [{ type: 'include', logic: 'and', patterns: ['ERROR', 'login'] }], entry: ERR, pass: false },
  { title: 'exclude or: any match rejects', filters: [{ type: 'exclude', logic: 'or', patterns: ['login', 'nothing'] }], entry: INFO, pass: false },
  { title: 'exclude or: no match passes', filters: [{ type: 'exclude', logic: 'or', patterns: ['ERROR'] }], entry: INFO, pass: true },
  { title: 'exclude and: rejects only when all match', filters: [{ type: 'exclude', logic: 'and', patterns: ['INFO', 'disk'] }], entry: INFO, pass: true },
  { title: 'exclude and: all match rejects', filters: [{ type: 'exclude', logic: 'and', patterns: ['INFO', 'login'] }], entry: INFO, pass: false },
  { title: 'source is part of the text', filters: [{ type: 'include', logic: 'or', patterns: ['^app\\.log ERROR disk'] }], entry: ERR, pass: true },
  {
    title: 'filters apply in order, the first rejection ends the entry',
    filters: [
      { type: 'include', logic: 'or', patterns: ['ERROR'] },
      { type: 'exclude', logic: 'or', patterns: ['disk'] },
    ],
    entry: ERR,
    pass: false,
  },
];

for (const c of FILTER_CASES) {
  test(`filters: ${c.title}`, (t) => {
    const flow = createFlow({ filters: c.filters, format: { type: 'raw' } });
    t.is(flow.process(c.entry, T0) !== undefined, c.pass);
    t.is(flow.counters.total_dropped, c.pass ? 0 : 1);
    t.is(flow.counters.total_passed, c.pass ? 1 : 0);
  });
}

test('filters: match text leaves out empty parts', (t) => {
  t.is(matchText(entry('m')), 'app.log m');
  t.is(matchText({ time: T0, source: '', level: 'WARN', message: 'm' }), 'WARN m');
  t.is(matchText({ time: T0, source: 's', level: 'WARN', message: '' }), 's WARN');
  const [f] = compileFilters([{ type: 'include', logic: 'or', patterns: ['^s WARN$'] }]);
  t.true(passes(f!, 's WARN'));
});

test('filters: an invalid pattern names filters[i].patterns[j]', (t) => {
  const err = t.throws(() =>
    compileFilters([
      { type: 'include', logic: 'or', patterns: ['ok'] },
      { type: 'exclude', logic: 'or', patterns: ['fine', '(unclosed'] },
    ]),
  );
  t.is(err!.message, 'filters[1].patterns[1]: invalid regular expression "(unclosed": unterminated group');
});

test('filters: at debug level one line per filter evaluated, none otherwise', (t) => {
  const lines: string[] = [];
  const log = createLogger('debug', { write: (s: string) => void lines.push(s) });
  const filters: FilterConfig[] = [
    { type: 'include', logic: 'or', patterns: ['ERROR'] },
    { type: 'exclude', logic: 'or', patterns: ['disk'] },
  ];
  createFlow({ filters, format: { type: 'raw' } }, log).process(ERR, T0);
  t.is(lines.length, 2);
  t.like(JSON.parse(lines[0]!), { filter: 0, verdict: 'pass' });
  t.like(JSON.parse(lines[1]!), { filter: 1, verdict: 'reject' });
  lines.length = 0;
  createFlow({ filters, format: { type: 'raw' } }).process(ERR, T0);
  t.is(lines.length, 0);
});

// ---- formatters ---------------------------------------------------------------------------

interface FormatCase {
  readonly title: string;
  readonly entry: Entry;
  readonly raw: string;
  readonly json: string;
  readonly txt: string;
}

const FORMAT_CASES: readonly FormatCase[] = [
  {
    title: 'plain text line',
    entry: entry('hello world'),
    raw: 'hello world',
    json: '{"time":"2024-05-06T07:08:09.010Z","source":"app.log","message":"hello world"}',
    txt: '2024-05-06T07:08:09.010Z - app.log hello world',
  },
  {
    title: 'every key, in the order of the contract',
    entry: { fields: { b: 2, a: 'x' }, message: 'm', level: 'WARN', source: 'api', node: 'edge-1', time: T0, id: 'dup-1' },
    raw: 'm',
    json: '{"time":"2024-05-06T07:08:09.010Z","node":"edge-1","source":"api","level":"WARN","message":"m","fields":{"b":2,"a":"x"}}',
    txt: '2024-05-06T07:08:09.010Z WARN edge-1/api m {"b":2,"a":"x"}',
  },
  {
    title: 'empty fields are left out',
    entry: entry('m', { level: 'INFO', fields: {} }),
    raw: 'm',
    json: '{"time":"2024-05-06T07:08:09.010Z","source":"app.log","level":"INFO","message":"m"}',
    txt: '2024-05-06T07:08:09.010Z INFO app.log m',
  },
  {
    title: 'control characters: raw as is, json escaped, txt shown escaped',
    entry: entry('a\x1b[31mb\x7fc\u202ed\te\u0085f'),
    raw: 'a\x1b[31mb\x7fc\u202ed\te\u0085f',
    json: '{"time":"2024-05-06T07:08:09.010Z","source":"app.log","message":"a\\u001b[31mb\x7fc\u202ed\\te\u0085f"}',
    txt: '2024-05-06T07:08:09.010Z - app.log a\\x1b[31mb\\x7fc\\u{202e}d\te\\x85f',
  },
  {
    title: 'newlines in a message cannot start a new txt line',
    entry: entry('one\ntwo\r'),
    raw: 'one\ntwo\r',
    json: '{"time":"2024-05-06T07:08:09.010Z","source":"app.log","message":"one\\ntwo\\r"}',
    txt: '2024-05-06T07:08:09.010Z - app.log one\\x0atwo\\x0d',
  },
];

for (const c of FORMAT_CASES) {
  test(`formatters: ${c.title}`, (t) => {
    t.is(FORMATTERS.raw(c.entry), c.raw);
    t.is(FORMATTERS.json(c.entry), c.json);
    t.is(FORMATTERS.txt(c.entry), c.txt);
  });
}

test('formatters: json keeps the key order of the contract', (t) => {
  const line = formatJson({ fields: { z: 1 }, message: 'm', level: 'ERROR', source: 's', node: 'n', time: T0 });
  t.deepEqual(Object.keys(JSON.parse(line) as object), ['time', 'node', 'source', 'level', 'message', 'fields']);
});

test('formatters: txt escapes control characters in the fields and the source too', (t) => {
  t.is(formatTxt(entry('m', { source: 'a\x1bb', fields: { k: '\u202e' } })), '2024-05-06T07:08:09.010Z - a\\x1bb m {"k":"\\u{202e}"}');
  t.is(sanitise('\u2066x\u2069'), '\\u{2066}x\\u{2069}');
  t.is(sanitise('plain'), 'plain');
});

test('flow: the pipeline formatter is applied after rate limit and filters', (t) => {
  const flow = createFlow({
    rate_limit: { rate: 1, burst: 1, policy: 'drop', max_entry_size_bytes: 0 },
    filters: [{ type: 'include', logic: 'or', patterns: ['ERROR'] }],
    format: { type: 'json' },
  });
  t.is(flow.process(INFO, T0), undefined); // takes the only token, then rejected by the filter
  t.is(flow.process(ERR, T0), undefined); // no token left
  t.is(flow.counters.total_processed, 2);
  t.is(flow.counters.total_dropped, 2);
  t.regex(flow.process(ERR, T0 + 1000)!, /^\{"time":.*"level":"ERROR","message":"disk full"\}$/);
});
