// The line-assembly stages (src/lines/, DESIGN.md §21): CRI and docker json-file lines joined per
// stream, Kubernetes path metadata, multiline groups in the four modes and with the presets,
// bounds, timeouts, and the position a reader may start again from.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { ROOT } from '../helpers/node.js';
import type { PluginConfig } from '../../src/config/schema.js';
import { LineAssembler } from '../../src/lines/assembler.js';
import { ContainerLines, parseCri, parseDocker } from '../../src/lines/container.js';
import { entryOf } from '../../src/lines/entries.js';
import { containerLinkMeta, podLogMeta } from '../../src/lines/kubernetes.js';
import type { LineCounters, LogicalLine } from '../../src/lines/line.js';
import { MULTILINE_FIELDS, type MultilineConfig, MultilineGroups, multilineRules } from '../../src/lines/multiline.js';
import { fileSourceConfig } from '../../src/sources/file-config.js';

const zero = (): LineCounters => ({ parse_errors: 0, truncated_lines: 0, multiline_entries: 0, multiline_splits: 0, multiline_timeouts: 0 });
const T = '2026-11-25T10:45:00.123456789Z';

/** Runs `text` (lines ending in \n) through an assembler; returns what came out and the counters. */
function assemble(text: string, opts: { format?: 'none' | 'cri' | 'docker' | 'auto'; max?: number; multiline?: Partial<MultilineConfig> }, flush = true) {
  const counters = zero();
  const ml = opts.multiline ? multilineRules('source', 's', { timeout_ms: 1000, max_lines: 500, ...opts.multiline }, opts.max ?? 1 << 20) : undefined;
  const a = new LineAssembler({ format: opts.format ?? 'none', maxLineBytes: opts.max ?? 1 << 20, multiline: ml }, counters);
  // as the splitter gives them: empty lines are skipped
  const lines: string[] = [];
  const ends: number[] = [];
  let at = 0;
  for (const l of text.split('\n').slice(0, -1)) {
    at += Buffer.byteLength(l) + 1;
    if (l === '') continue;
    lines.push(l);
    ends.push(at);
  }
  const out: LogicalLine[] = [];
  a.push(lines, ends, 0, 0, out);
  const safe = a.resume(at).offset;
  if (flush) a.flush(at, 0, out);
  return { out, counters, safe, assembler: a };
}

test('CRI: a line in P parts joins up to its F; the streams join apart; time and stream are the first piece\'s', (t) => {
  const text = [
    `${T} stdout P hel`,
    `2026-11-25T10:45:01Z stderr P err-`,
    `2026-11-25T10:45:02Z stdout P lo `,
    `2026-11-25T10:45:03Z stderr F one`,
    `2026-11-25T10:45:04Z stdout F world`,
    `2026-11-25T10:45:05.5Z stdout F `,
  ].join('\n');
  const { out, counters } = assemble(`${text}\n`, { format: 'cri' });
  t.deepEqual(
    out.map((l) => [l.text, l.stream, l.time, l.nanos]),
    [
      ['err-one', 'stderr', Date.parse('2026-11-25T10:45:01Z'), undefined],
      ['hello world', 'stdout', Date.parse(T), T],
      ['', 'stdout', Date.parse('2026-11-25T10:45:05.5Z'), undefined],
    ],
  );
  t.is(counters.parse_errors, 0);
  // ids come from where the logical line ends: unique, and the same when read again
  t.is(new Set(out.map((l) => l.idAt)).size, 3);
});

test('CRI: a line not in the format, or with an invalid time, is kept as plain text and counted', (t) => {
  const { out, counters } = assemble(`garbage line\n2026-13-45T99:00:00Z stdout F bad time\n${T} stdout F good\n`, { format: 'cri' });
  t.deepEqual(
    out.map((l) => [l.text, l.stream]),
    [
      ['garbage line', undefined],
      ['2026-13-45T99:00:00Z stdout F bad time', undefined],
      ['good', 'stdout'],
    ],
  );
  t.is(counters.parse_errors, 2);
  t.is(parseCri(`${T} stdout X nope`), undefined);
  t.deepEqual(parseCri(`${T} stdout F:x tagged`)?.content, 'tagged');
});

test('docker json-file: a log without its trailing \\n joins the next piece of the same stream', (t) => {
  const d = (log: string, stream: string, time = '2026-11-25T10:45:00.000000001Z') => JSON.stringify({ log, stream, time });
  const text = [d('part one, ', 'stdout'), d('warn\n', 'stderr'), d('part two\n', 'stdout'), d('{"msg":"json inside","level":"error"}\n', 'stdout'), '{"not":"docker"}'].join('\n');
  const { out, counters } = assemble(`${text}\n`, { format: 'docker' });
  t.deepEqual(
    out.map((l) => [l.text, l.stream]),
    [
      ['warn', 'stderr'],
      ['part one, part two', 'stdout'],
      ['{"msg":"json inside","level":"error"}', 'stdout'],
      ['{"not":"docker"}', undefined],
    ],
  );
  t.is(counters.parse_errors, 1);
  t.is(out[0]!.nanos, '2026-11-25T10:45:00.000000001Z');
  // the content is then an ordinary line: JSON inside becomes a structured entry
  const e = entryOf(out[2]!, 'c', 0, false, undefined);
  t.is(e.message, 'json inside');
  t.is(e.level, 'ERROR');
  t.deepEqual(e.fields, { stream: 'stdout', time_nanos: '2026-11-25T10:45:00.000000001Z' });
  t.is(parseDocker('{"log":"x\\n","stream":"stdin","time":"2026-11-25T10:45:00Z"}'), undefined);
});

test('auto decides per file from its first line', (t) => {
  t.is(assemble(`${T} stdout F a\n`, { format: 'auto' }).out[0]!.stream, 'stdout');
  t.is(assemble(`${JSON.stringify({ log: 'a\n', stream: 'stderr', time: T })}\n`, { format: 'auto' }).out[0]!.stream, 'stderr');
  const plain = assemble(`plain\n${T} stdout F a\n`, { format: 'auto' });
  t.deepEqual(
    plain.out.map((l) => l.text),
    ['plain', `${T} stdout F a`],
  );
  t.is(plain.counters.parse_errors, 0);
});

test('a joined line over max_line_bytes is cut and counted; an open partial stops the safe position at its start', (t) => {
  const parts = Array.from({ length: 10 }, (_, i) => `${T} stdout P ${String(i).repeat(100)}`);
  const { out, counters } = assemble(`${parts.join('\n')}\n${T} stdout F end\n`, { format: 'cri', max: 250 });
  t.is(out.length, 1);
  t.is(out[0]!.text, '0'.repeat(100) + '1'.repeat(100) + '2'.repeat(50));
  t.is(counters.truncated_lines, 1);
  const open = assemble(`${T} stdout F done\n${T} stderr P open\n${T} stdout F after\n`, { format: 'cri' }, false);
  const firstEnd = Buffer.byteLength(`${T} stdout F done\n`);
  t.is(open.safe, firstEnd, 'the acknowledged position waits at the open partial');
  t.deepEqual(
    open.out.map((l) => l.text),
    ['done', 'after'],
  );
  const rest: LogicalLine[] = [];
  open.assembler.flush(999, 0, rest);
  t.deepEqual(
    rest.map((l) => [l.text, l.stream]),
    [['open', 'stderr']],
    'rotated away or deleted: the open partial goes as it is',
  );
});

test('Kubernetes metadata from /var/log/pods paths under any prefix, rotated names, and /var/log/containers links', (t) => {
  t.deepEqual(podLogMeta('/host/var/log/pods/shop_cart-7d9f_0b6a-11ee/app/3.log'), {
    namespace: 'shop',
    pod: 'cart-7d9f',
    pod_uid: '0b6a-11ee',
    container: 'app',
    restart_count: 3,
  });
  t.is(podLogMeta('/var/log/pods/shop_cart_uid/app/0.log.20261125-104500')?.restart_count, 0);
  t.is(podLogMeta('/var/log/app/0.log'), undefined);
  t.is(podLogMeta('/var/log/pods/no-underscores/app/0.log'), undefined);
  t.deepEqual(containerLinkMeta(`/var/log/containers/cart-7d9f_shop_app-${'a'.repeat(64)}.log`), { namespace: 'shop', pod: 'cart-7d9f', container: 'app' });
});

const JAVA = `2026-11-25 10:45:00 ERROR Request failed
java.lang.IllegalStateException: order 42 not found
\tat com.example.shop.OrderService.find(OrderService.java:88)
\tat com.example.shop.OrderController.get(OrderController.java:41)
\tat java.base/java.lang.Thread.run(Thread.java:1583)
Caused by: java.sql.SQLException: connection reset
\tat org.postgresql.core.v3.QueryExecutorImpl.execute(QueryExecutorImpl.java:356)
\t... 3 more
\tSuppressed: java.io.IOException: close failed
\t\tat org.postgresql.core.PGStream.close(PGStream.java:720)
2026-11-25 10:45:01 INFO next request`;

const PYTHON = `INFO starting
Traceback (most recent call last):
  File "/app/main.py", line 10, in <module>
    main()
  File "/app/main.py", line 6, in main
    raise ValueError("bad input")
ValueError: bad input
INFO still running`;

const GO = `level=info msg="serving"
panic: runtime error: index out of range [5] with length 3

goroutine 1 [running]:
main.lookup(...)
\t/app/main.go:12
main.main()
\t/app/main.go:20 +0x1d
exit status 2
level=info msg="restarted"`;

const texts = (text: string, preset: 'java' | 'python' | 'go') => assemble(`${text}\n`, { multiline: { preset } });

test('preset java: message, frames, Caused by, ... n more and Suppressed are one entry; the next line stays single', (t) => {
  const { out, counters } = texts(JAVA, 'java');
  const lines = JAVA.split('\n');
  t.deepEqual(
    out.map((l) => l.text),
    [lines[0], lines.slice(1, 10).join('\n'), lines[10]],
  );
  t.is(counters.multiline_entries, 1);
});

test('preset python: a traceback up to its exception line is one entry', (t) => {
  const lines = PYTHON.split('\n');
  t.deepEqual(
    texts(PYTHON, 'python').out.map((l) => l.text),
    [lines[0], lines.slice(1, 7).join('\n'), lines[7]],
  );
});

test('preset go: a panic and its goroutine dump are one entry', (t) => {
  // the splitter drops the empty line; the dump continues past it
  const lines = GO.split('\n').filter((l) => l !== '');
  t.deepEqual(
    texts(GO, 'go').out.map((l) => l.text),
    [lines[0], lines.slice(1, 8).join('\n'), lines[8]],
  );
});

test('preset go: the reference says what the preset does, function lines at column 0 and exit status included', (t) => {
  const doc = (MULTILINE_FIELDS.preset as { values: Record<string, string> }).values.go!;
  // each line of this dump after the panic continues it (the test above): the reference names its kind
  for (const kind of ['indented lines', '`goroutine N [state]:`', 'function lines at column 0', '`main.main()`', '`created by …`', '`[signal …`', '`exit status N`', 'any other line begins the next entry']) {
    t.true(doc.includes(kind), `the go preset's reference names ${kind}`);
  }
  const lines = GO.split('\n').filter((l) => l !== '');
  const entry = texts(GO, 'go').out[1]!.text.split('\n');
  t.true(entry.includes('main.main()') && entry.includes('exit status 2'), 'function lines at column 0 and exit status continue the dump');
  t.is(texts(GO, 'go').out[2]!.text, lines[8]!, 'a line at column 0 of another kind begins the next entry');
});

test('fields.time_nanos: set when the runtime\'s time is finer than the millisecond, as docs/sources.md says', (t) => {
  const nanosOf = (time: string) => assemble(`${time} stdout F x\n`, { format: 'cri' }).out[0]!.nanos;
  t.is(nanosOf('2026-11-25T10:45:00.123456789Z'), '2026-11-25T10:45:00.123456789Z');
  t.is(nanosOf('2026-11-25T10:45:00.123456Z'), '2026-11-25T10:45:00.123456Z');
  t.is(nanosOf('2026-11-25T10:45:01.5Z'), undefined);
  t.is(nanosOf('2026-11-25T10:45:01.500000000Z'), undefined);
  const page = readFileSync(join(ROOT, 'docs', 'sources.md'), 'utf8');
  t.regex(page, /finer than the millisecond[^]{0,200}`fields\.time_nanos`/);
  t.regex(page, /`10:45:01\.5Z` or `10:45:01\.500000000Z` none/);
});

test('the four modes with explicit patterns', (t) => {
  const run = (text: string, ml: Partial<MultilineConfig>) => assemble(`${text}\n`, { multiline: ml }).out.map((l) => l.text);
  t.deepEqual(run('a\n b\n c\nd\n e', { condition_pattern: '^\\s', mode: 'continue_through' }), ['a\n b\n c', 'd\n e']);
  t.deepEqual(run('one \\\ntwo \\\nthree\nfour', { start_pattern: '\\\\$', condition_pattern: '\\\\$', mode: 'continue_past' }), ['one \\\ntwo \\\nthree', 'four']);
  t.deepEqual(run('[1] a\nb\n[2] c\n[3] d\ne', { condition_pattern: '^\\[\\d+\\]', mode: 'halt_before' }), ['[1] a\nb', '[2] c', '[3] d\ne']);
  t.deepEqual(run('BEGIN x\ny;\nz;\nBEGIN w\nv;', { start_pattern: '^BEGIN', condition_pattern: ';$', mode: 'halt_with' }), ['BEGIN x\ny;', 'z;', 'BEGIN w\nv;']);
});

test('max_lines and max_bytes split an entry without losing a line; each part counts a split', (t) => {
  const body = ['start', ...Array.from({ length: 9 }, (_, i) => ` cont ${i}`)].join('\n');
  const byLines = assemble(`${body}\n`, { multiline: { condition_pattern: '^\\s', mode: 'continue_through', max_lines: 4 } });
  t.deepEqual(
    byLines.out.map((l) => l.text.split('\n').length),
    [4, 4, 2],
  );
  t.is(byLines.out.map((l) => l.text).join('\n'), body);
  t.is(byLines.counters.multiline_splits, 2);
  const byBytes = assemble(`${body}\n`, { multiline: { condition_pattern: '^\\s', mode: 'continue_through', max_bytes: 30 } });
  t.true(byBytes.out.every((l) => Buffer.byteLength(l.text) <= 30));
  t.is(byBytes.out.map((l) => l.text).join('\n'), body);
});

test('an entry quiet for timeout_ms is emitted and counted; the safe position waits at its first line until then', (t) => {
  const counters = zero();
  const g = new MultilineGroups(multilineRules('source', 's', { preset: 'java', timeout_ms: 500, max_lines: 500 }, 1000), counters);
  const out: LogicalLine[] = [];
  g.push({ text: 'Exception', start: 0, end: 10, idAt: 10 }, 1000, out);
  g.push({ text: '\tat x', start: 10, end: 16, idAt: 16 }, 1100, out);
  const starts: Record<string, number> = {};
  g.openStarts(starts);
  t.deepEqual(starts, { '': 0 });
  t.is(g.nextTimeout(), 1600);
  g.expire(1599, out);
  t.is(out.length, 0);
  g.expire(1600, out);
  t.deepEqual(
    out.map((l) => [l.text, l.start, l.end, l.idAt]),
    [['Exception\n\tat x', 0, 16, 10]],
  );
  t.is(counters.multiline_timeouts, 1);
  t.false(g.isOpen);
});

test('a pattern that does not compile names its key; a table that is neither a preset nor patterns with a mode is refused', (t) => {
  const rules = (ml: Partial<MultilineConfig>) => () => multilineRules('source', 'logs', { timeout_ms: 1000, max_lines: 500, ...ml }, 100);
  t.throws(rules({ condition_pattern: '(', mode: 'halt_before' }), { message: /^failed to create source logs: multiline\.condition_pattern: not a valid regular expression/ });
  t.throws(rules({ start_pattern: '[', condition_pattern: 'x', mode: 'halt_before' }), { message: /multiline\.start_pattern: not a valid/ });
  t.throws(rules({ mode: 'halt_before' }), { message: /multiline\.condition_pattern: is required without `preset`/ });
  t.throws(rules({ condition_pattern: 'x' }), { message: /multiline\.mode: is required/ });
  t.throws(rules({ preset: 'java', mode: 'halt_with' }), { message: /multiline\.mode: must not be set with `preset`/ });
});

test('ContainerLines keeps partial state per stream: an F of the other stream does not close it', (t) => {
  const c = new ContainerLines('cri', 1000, zero());
  const out: LogicalLine[] = [];
  c.push(`${T} stdout P a`, 0, 10, out);
  c.push(`${T} stderr F b`, 10, 20, out);
  t.deepEqual(
    out.map((l) => l.text),
    ['b'],
  );
  const starts: Record<string, number> = {};
  c.openStarts(starts);
  t.deepEqual(starts, { stdout: 0 });
});

test('file source config: exactly one path form, absolute globs, pattern only with directory, multiline faults named', (t) => {
  const config = (c: Record<string, unknown>) => () => fileSourceConfig({ id: 'pods', type: 'file', config: c } as unknown as PluginConfig);
  t.throws(config({}), { message: 'failed to create source pods: directory: set exactly one of `directory` (with `pattern`) and `include`' });
  t.throws(config({ directory: '/var/log', include: ['/var/log/pods/**/*.log'] }), { message: /^failed to create source pods: include: set exactly one/ });
  t.throws(config({ include: ['pods/*.log'] }), { message: /include\[0\]: must be an absolute path/ });
  t.throws(config({ include: ['/var/log/pods/*/*/*.log'], pattern: '*.log' }), { message: /pattern: only with `directory`/ });
  t.throws(config({ directory: '/var/log', container_format: 'containerd' }), { message: /container_format: must be one of "none", "cri", "docker", "auto"/ });
  t.throws(config({ directory: '/var/log', multiline: { condition_pattern: '(unclosed', mode: 'halt_before' } }), { message: /^failed to create source pods: multiline\.condition_pattern: not a valid regular expression/ });
  t.throws(config({ directory: '/var/log', multiline: { preset: 'cobol' } }), { message: /multiline\.preset: must be one of "java", "python", "go"/ });
  const { cfg, multiline } = fileSourceConfig({ id: 'pods', type: 'file', config: { include: ['/var/log/pods/*/*/*.log'], multiline: { preset: 'go' } } } as unknown as PluginConfig);
  t.deepEqual(cfg.exclude, ['**/*.gz', '**/*.tmp']);
  t.is(multiline?.maxBytes, cfg.max_line_bytes, 'max_bytes defaults to max_line_bytes');
});

test('the hand-read CRI time agrees with Date.parse, and refuses what Date.parse refuses', (t) => {
  for (const time of ['2026-11-25T10:45:00.123456789Z', '2026-11-25T10:45:00Z', '2026-11-25T10:45:00.5+02:00', '2026-11-25T10:45:00.12-01:30', '2024-02-29T23:59:59.999Z', '0050-06-01T00:00:00Z', '0004-02-29T12:00:00Z']) {
    t.is(parseCri(`${time} stdout F x`)?.time, Date.parse(time), time);
  }
  for (const time of ['2026-02-30T10:45:00Z', '0003-02-29T12:00:00Z', '2026-11-25T24:00:00Z', '2026-11-25T10:60:00Z', '2026-00-25T10:45:00Z']) t.is(parseCri(`${time} stdout F x`), undefined, time);
});
