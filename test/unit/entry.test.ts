import test from 'ava';
import { detectLevel, type Level, normaliseLevel, parseLine } from '../../src/core/entry.js';
import { formatJson } from '../../src/flow/format.js';
import { LineSplitter } from '../../src/lines/splitter.js';
import { xorshift } from '../helpers/random.js';

const NOW = Date.parse('2024-01-02T03:04:05.006Z');

const LEVEL_CASES: readonly (readonly [string, Level | undefined])[] = [
  ['2024-01-01 ERROR disk full', 'ERROR'],
  ['[WARN] slow query', 'WARN'],
  ['WARNING: low memory', 'WARN'],
  ['ERR connection reset', 'ERROR'],
  ['INF started', 'INFO'],
  ['DBG cache miss', 'DEBUG'],
  ['TRACE enter f()', 'TRACE'],
  ['CRITICAL meltdown', 'FATAL'],
  ['FATAL out of memory', 'FATAL'],
  ['GET /api INFO later', 'INFO'],
  ['error in lower case is not a level word', undefined],
  ['ERRORS is not a whole level word', undefined],
  ['time=1 level=warn msg=x', 'WARN'],
  ['lvl=ERROR msg=x', 'ERROR'],
  ['level="info" msg=x', 'INFO'],
  ['level=bogus msg=x', undefined],
  ['LEVEL=Error msg=x', 'ERROR'],
  ['Lvl="debug" msg=x', 'DEBUG'],
  ['GET /items?user=u1&p=x level=warn', 'WARN'],
  ['GET /items?user=u1&p=x', undefined],
  ['no level here', undefined],
  ['', undefined],
];

for (const [line, level] of LEVEL_CASES) {
  test(`detectLevel: ${JSON.stringify(line)} → ${level ?? 'none'}`, (t) => {
    t.is(detectLevel(line), level);
  });
}

test('detectLevel finds the first whole upper-case word naming a level, as a scan of every upper-case word does', (t) => {
  const rand = xorshift(0x51ed270b);
  const WORDS = ['INFO', 'INF', 'INFOS', 'XINFO', 'WARN', 'WARNING', 'WARNINGS', 'ERR', 'ERROR', 'ERRORS', 'DBG', 'DEBUG', 'TRACE', 'FATAL', 'CRITICAL', 'GET', 'ABCDEFGHI', 'info', 'Info'];
  const GLUE = [' ', '', '-', '_', '1', '[', ']', ':', 'a', 'é', '\t', '='];
  const WORD = /\b[A-Z]{3,8}\b/g;
  const reference = (line: string): Level | undefined => {
    WORD.lastIndex = 0;
    for (let m = WORD.exec(line); m !== null; m = WORD.exec(line)) {
      const level = normaliseLevel(m[0]); // the word is upper case already
      if (level) return level;
    }
    return undefined; // no logfmt pair in these lines
  };
  for (let i = 0; i < 20_000; i++) {
    let line = '';
    for (let n = Math.floor(rand() * 6); n > 0; n--) line += GLUE[Math.floor(rand() * GLUE.length)]! + WORDS[Math.floor(rand() * WORDS.length)]!;
    t.is(detectLevel(line), reference(line), line);
  }
});

test('detectLevel reads a logfmt level pair as the pattern alone does, lines without `l=` or `L=` not searched', (t) => {
  const rand = xorshift(0x1e7e1);
  const PAIR = /(?:^|\s)(?:level|lvl)=("?)([A-Za-z]+)\1(?=\s|$)/i;
  const KEYS = ['level', 'LEVEL', 'Level', 'lvl', 'LVL', 'Lvl', 'levels', 'xlevel', 'user', 'l', 'L', 'p', ''];
  const VALUES = ['warn', 'eRROR', 'Info', '"debug"', '"info', 'bogus', '', 'u1@example.com', 'fatal"'];
  const GLUE = [' ', '', '\t', '&', '?', '/', '=', '"'];
  const reference = (line: string): Level | undefined => {
    const m = PAIR.exec(line);
    return m ? normaliseLevel(m[2]) : undefined;
  };
  for (let i = 0; i < 20_000; i++) {
    let line = '';
    for (let n = Math.floor(rand() * 5); n > 0; n--) {
      line += GLUE[Math.floor(rand() * GLUE.length)]! + KEYS[Math.floor(rand() * KEYS.length)]!;
      if (rand() < 0.8) line += `=${VALUES[Math.floor(rand() * VALUES.length)]!}`;
    }
    t.is(detectLevel(line), reference(line), line);
  }
});

const NUMBER_CASES: readonly (readonly [unknown, Level | undefined])[] = [
  [10, 'TRACE'],
  [20, 'DEBUG'],
  [30, 'INFO'],
  [40, 'WARN'],
  [50, 'ERROR'],
  [60, 'FATAL'],
  [5, undefined],
  ['warning', 'WARN'],
  ['Critical', 'FATAL'],
  ['nope', undefined],
  [null, undefined],
];

for (const [value, level] of NUMBER_CASES) {
  test(`normaliseLevel: ${JSON.stringify(value)} → ${level ?? 'none'}`, (t) => {
    t.is(normaliseLevel(value), level);
  });
}

test('parseLine: a text line keeps its message and gets the read time', (t) => {
  t.deepEqual(parseLine('ERROR boom', 'app.log', NOW, false), { time: NOW, source: 'app.log', level: 'ERROR', message: 'ERROR boom' });
  t.deepEqual(parseLine('plain', 'app.log', NOW, false), { time: NOW, source: 'app.log', message: 'plain' });
});

test('parseLine: a pino line becomes a structured entry', (t) => {
  const line = JSON.stringify({ level: 50, time: 1700000000123, pid: 7, msg: 'failed', err: { code: 'E' } });
  t.deepEqual(parseLine(line, 'svc.log', NOW, false), {
    time: 1700000000123,
    source: 'svc.log',
    level: 'ERROR',
    message: 'failed',
    fields: { pid: 7, err: { code: 'E' } },
  });
});

test('parseLine: message, ts/timestamp and lvl/severity aliases', (t) => {
  const a = parseLine('{"message":"m","ts":"2024-01-01T00:00:00.500Z","lvl":"warning"}', 's', NOW, false);
  t.deepEqual(a, { time: Date.parse('2024-01-01T00:00:00.500Z'), source: 's', level: 'WARN', message: 'm' });
  const b = parseLine('{"msg":"m","timestamp":"not a time","severity":"CRITICAL","x":1}', 's', NOW, false);
  t.deepEqual(b, { time: NOW, source: 's', level: 'FATAL', message: 'm', fields: { timestamp: 'not a time', x: 1 } });
});

test('parseLine: JSON that is not an object, or broken JSON, stays text', (t) => {
  t.is(parseLine('[1,2]', 's', NOW, false).message, '[1,2]');
  t.is(parseLine('{"broken":', 's', NOW, false).message, '{"broken":');
  t.is(parseLine('{"broken":', 's', NOW, false).fields, undefined);
});

test('parseLine: raw never parses JSON', (t) => {
  const line = '{"msg":"m","level":"error"}';
  t.deepEqual(parseLine(line, 's', NOW, true), { time: NOW, source: 's', message: line });
});

// ---- line splitting (file and stdin sources) -------------------------------------------------

function split(chunks: readonly string[], max = 1024): { lines: string[]; splitter: LineSplitter } {
  const splitter = new LineSplitter(max);
  const lines: string[] = [];
  for (const c of chunks) splitter.push(Buffer.from(c), lines);
  return { lines, splitter };
}

test('LineSplitter: partial lines wait for their newline across chunks', (t) => {
  const { lines, splitter } = split(['a\nb', 'c', 'd\r\ne\n\nf']);
  t.deepEqual(lines, ['a', 'bcd', 'e']);
  t.is(splitter.pendingBytes, 1);
  splitter.flush(lines);
  t.deepEqual(lines, ['a', 'bcd', 'e', 'f']);
});

test('LineSplitter: a multi-byte character split across chunks survives', (t) => {
  const bytes = Buffer.from('héllo wörld\n');
  const splitter = new LineSplitter(1024);
  const lines: string[] = [];
  for (let i = 0; i < bytes.length; i++) splitter.push(bytes.subarray(i, i + 1), lines);
  t.deepEqual(lines, ['héllo wörld']);
});

test('LineSplitter: over-long lines are cut to max bytes and counted, in one chunk or many', (t) => {
  const one = split(['short\n' + 'x'.repeat(30) + '\nnext\n'], 10);
  t.deepEqual(one.lines, ['short', 'x'.repeat(10), 'next']);
  t.is(one.splitter.truncated, 1);
  const many = split(['yyyyyy', 'yyyyyy', 'yyyyyy', 'yy\nafter\n'], 10);
  t.deepEqual(many.lines, ['y'.repeat(10), 'after']);
  t.is(many.splitter.truncated, 1);
  // never cut inside a character
  const utf = split(['éééééé\n'], 5);
  t.deepEqual(utf.lines, ['éé']);
});

test('parseLine: a number past the Date range (epoch nanoseconds) is no time and stays a field', (t) => {
  const ns = 1.7e18;
  const e = parseLine(JSON.stringify({ msg: 'm', time: ns }), 's', NOW, false);
  t.deepEqual(e, { time: NOW, source: 's', message: 'm', fields: { time: ns } });
  t.is(formatJson(e), `{"time":"${new Date(NOW).toISOString()}","source":"s","message":"m","fields":{"time":${ns}}}`);
  t.is(parseLine('{"msg":"m","ts":8640000000000000}', 's', NOW, false).time, 8.64e15);
});
