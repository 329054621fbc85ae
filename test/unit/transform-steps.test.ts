// Each transform step type against its row of DESIGN.md §24, edge cases included: parse of
// every format on real samples, types, on_error, max_bytes; set with templates, if_missing,
// time and level; rename, delete, keep; redact patterns, presets, Luhn, hash, nested values;
// drop; sample (1 in N within ±3σ, keys together, the same on two nodes); throttle per key.

import { createHash } from 'node:crypto';
import test from 'ava';
import fc from 'fast-check';
import type { Entry } from '../../src/core/entry.js';
import { ConfigError } from '../../src/core/errors.js';
import { createLogger } from '../../src/core/log.js';
import { checkFields } from '../../src/core/spec.js';
import { compileTransforms, type Transforms } from '../../src/transform/index.js';
import { namedGroupNumbers, regexParser, unnamed } from '../../src/transform/parsers/regex.js';
import { hasCardRun, luhn } from '../../src/transform/redact.js';
import { TRANSFORM_COMMON_FIELDS, TRANSFORM_SPECS, type TransformConfig, type TransformType } from '../../src/transform/spec.js';

const silent = createLogger('silent', { write() {} });
const NOW = Date.parse('2024-05-06T07:08:09.010Z');

/** A step table as the configuration gives it, defaults applied by the schema. */
function step(cfg: Record<string, unknown> & { type: TransformType }): TransformConfig {
  return checkFields({ ...TRANSFORM_COMMON_FIELDS, ...TRANSFORM_SPECS[cfg.type].fields }, cfg, 'step') as TransformConfig;
}

function chain(...steps: (Record<string, unknown> & { type: TransformType })[]): Transforms {
  return compileTransforms(steps.map(step), 'pipelines[0].flow.transforms', 'p', silent);
}

const entry = (message: string, extra: Partial<Entry> = {}): Entry => ({ time: NOW, source: 'app', message, ...extra });

/** Runs one entry through; the entry (changed in place) and whether it passed. */
function through(t: Transforms, e: Entry): { e: Entry; passed: boolean } {
  const passed = t.run(e, NOW);
  return { e, passed };
}

// ---- parse ----

test('parse nginx_combined: a real line with - bytes, - user and referrer, and a quoted user agent with spaces', (t) => {
  const line = '93.184.216.34 - - [12/Mar/2024:10:15:32 +0100] "GET /index.html?q=a HTTP/1.1" 304 - "-" "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)"';
  const { e } = through(chain({ type: 'parse', format: 'nginx_combined' }), entry(line));
  t.is(e.message, line, 'the message stays the line');
  t.is(e.time, Date.UTC(2024, 2, 12, 9, 15, 32));
  t.deepEqual(e.fields, {
    client: '93.184.216.34',
    method: 'GET',
    path: '/index.html?q=a',
    protocol: 'HTTP/1.1',
    status: 304,
    user_agent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)',
  });
});

test('parse nginx_combined: user, bytes and referrer present', (t) => {
  const line = '10.0.0.7 - bob [01/Jan/2024:00:00:00 +0000] "POST /api/v1/login HTTP/2.0" 201 512 "https://example.com/" "curl/8.5.0"';
  const { e } = through(chain({ type: 'parse', format: 'nginx_combined' }), entry(line));
  t.deepEqual(e.fields, { client: '10.0.0.7', user: 'bob', method: 'POST', path: '/api/v1/login', protocol: 'HTTP/2.0', status: 201, bytes: 512, referrer: 'https://example.com/', user_agent: 'curl/8.5.0' });
});

test('parse apache_common: the classic line, and one with - bytes', (t) => {
  const tr = chain({ type: 'parse', format: 'apache_common' });
  const { e } = through(tr, entry('127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326'));
  t.is(e.time, Date.parse('2000-10-10T20:55:36Z'));
  t.deepEqual(e.fields, { client: '127.0.0.1', user: 'frank', method: 'GET', path: '/apache_pb.gif', protocol: 'HTTP/1.0', status: 200, bytes: 2326 });
  const { e: e2 } = through(tr, entry('192.168.1.20 - - [10/Oct/2000:13:55:36 +0000] "HEAD / HTTP/1.0" 404 -'));
  t.deepEqual(e2.fields, { client: '192.168.1.20', method: 'HEAD', path: '/', protocol: 'HTTP/1.0', status: 404 });
  t.is(tr.counters.parse_0!.parse_failed, 0);
});

test('parse logfmt: quoted values with spaces and escapes, bare keys, level and msg become the entry\'s', (t) => {
  const line = 'ts=2024-01-02T03:04:05.678Z level=warn msg="disk almost full" path="/var/lib/my data" note="say \\"hi\\"" retry used=93.5';
  const { e } = through(chain({ type: 'parse', format: 'logfmt', types: { used: 'float' } }), entry(line));
  t.is(e.message, 'disk almost full');
  t.is(e.level, 'WARN');
  t.is(e.time, Date.parse('2024-01-02T03:04:05.678Z'));
  t.deepEqual(e.fields, { path: '/var/lib/my data', note: 'say "hi"', retry: true, used: 93.5 });
});

test('parse logfmt: an unterminated quote is a failure', (t) => {
  const tr = chain({ type: 'parse', format: 'logfmt', on_error: 'tag' });
  const { e } = through(tr, entry('a=1 b="open'));
  t.deepEqual(e.fields, { parse_error: 'parse_0' });
  t.is(tr.counters.parse_0!.parse_failed, 1);
});

test('parse syslog: RFC 5424 with structured data sets time, level, message and fields.syslog', (t) => {
  const line = '<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog 8710 ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"] An application event log entry';
  const { e } = through(chain({ type: 'parse', format: 'syslog' }), entry(line));
  t.is(e.time, Date.parse('2003-10-11T22:14:15.003Z'));
  t.is(e.level, 'INFO');
  t.is(e.message, 'An application event log entry');
  t.deepEqual(e.fields, {
    syslog: {
      facility: 'local4',
      hostname: 'mymachine.example.com',
      app_name: 'evntslog',
      procid: '8710',
      msgid: 'ID47',
      structured_data: { 'exampleSDID@32473': { iut: '3', eventSource: 'Application', eventID: '1011' } },
    },
  });
});

test('parse syslog: RFC 3164', (t) => {
  const { e, passed } = through(chain({ type: 'parse', format: 'syslog' }), entry('<34>Oct 11 22:14:15 mymachine su: \'su root\' failed for lonvick on /dev/pts/8'));
  t.true(passed);
  t.is(e.level, 'FATAL');
  t.is(e.message, "'su root' failed for lonvick on /dev/pts/8");
  t.like(e.fields, { syslog: { facility: 'auth', hostname: 'mymachine', app_name: 'su' } });
});

test('parse json: msg, ts and level of the message become the entry\'s; the rest merges into fields, replacing equal keys', (t) => {
  const line = '{"msg":"user logged in","ts":"2024-01-02T03:04:05.678Z","level":"error","user":"ann","stream":"new"}';
  const { e } = through(chain({ type: 'parse', format: 'json' }), entry(line, { fields: { stream: 'stdout', keep: 1 } }));
  t.is(e.message, 'user logged in');
  t.is(e.time, Date.parse('2024-01-02T03:04:05.678Z'));
  t.is(e.level, 'ERROR');
  t.deepEqual(e.fields, { stream: 'new', keep: 1, user: 'ann' });
});

test('parse into a target: everything goes under it, the entry\'s own parts untouched', (t) => {
  const { e } = through(chain({ type: 'parse', format: 'json', target: 'fields.payload' }), entry('{"msg":"x","a":1}'));
  t.is(e.message, '{"msg":"x","a":1}');
  t.deepEqual(e.fields, { payload: { msg: 'x', a: 1 } });
});

test('parse regex: named groups become fields; types convert int, float, bool, time; a bad value counts bad_values and stays text', (t) => {
  const tr = chain({
    type: 'parse',
    format: 'regex',
    pattern: '^(?<ip>\\S+) took (?<ms>\\S+)ms code=(?<code>\\S+) ok=(?<ok>\\S+) at=(?<at>\\S+)(?: (?<opt>x))?$',
    types: { ms: 'float', code: 'int', ok: 'bool', at: 'time' },
  });
  const { e } = through(tr, entry('10.1.2.3 took 12.5ms code=200 ok=true at=2024-01-02T03:04:05Z'));
  t.deepEqual(e.fields, { ip: '10.1.2.3', ms: 12.5, code: 200, ok: true, at: '2024-01-02T03:04:05.000Z' });
  const { e: e2 } = through(tr, entry('10.1.2.3 took fast ms code=2x ok=maybe at=never'));
  t.is(e2.fields, undefined, 'no match: a failure, kept unchanged');
  const { e: e3 } = through(tr, entry('10.1.2.3 took fastms code=2x ok=maybe at=never'));
  t.deepEqual(e3.fields, { ip: '10.1.2.3', ms: 'fast', code: '2x', ok: 'maybe', at: 'never' });
  t.deepEqual(tr.counters.parse_0, { processed: 3, parse_failed: 1, bad_values: 4 });
});

test('parse on_error: keep passes unchanged, drop drops, tag sets fields.parse_error to the step id; all count parse_failed', (t) => {
  const keep = chain({ type: 'parse', format: 'json', on_error: 'keep' });
  const r1 = through(keep, entry('not json'));
  t.true(r1.passed);
  t.deepEqual(r1.e, entry('not json'));
  const drop = chain({ type: 'parse', format: 'json', on_error: 'drop' });
  t.false(through(drop, entry('not json')).passed);
  const tag = chain({ type: 'parse', id: 'json_in', format: 'json', on_error: 'tag' });
  t.deepEqual(through(tag, entry('[1,2]')).e.fields, { parse_error: 'json_in' });
  for (const tr of [keep, drop]) t.is(Object.values(tr.counters)[0]!.parse_failed, 1);
  t.is(tag.counters.json_in!.parse_failed, 1);
});

test('parse max_bytes: longer text is not parsed and counts parse_failed; UTF-8 bytes, not characters', (t) => {
  const tr = chain({ type: 'parse', format: 'json', max_bytes: 12 });
  t.deepEqual(through(tr, entry('{"a":"bcd"}')).e.fields, { a: 'bcd' }, '11 bytes: parsed');
  t.is(through(tr, entry('{"a":"bcdef"}')).e.fields, undefined, '13 bytes: not parsed');
  t.is(through(tr, entry('{"a":"ééé"}')).e.fields, undefined, '11 characters, 14 bytes: not parsed');
  t.is(tr.counters.parse_0!.parse_failed, 2);
});

test('parse regex: up to eight groups and past eight, some taking no part, give the named groups in order, the absent left out', (t) => {
  for (const count of [1, 5, 8, 9, 12]) {
    const names = Array.from({ length: count }, (_, i) => `g${i}`);
    // every third group optional and absent from the text; a plain group between them is no field
    const pattern = names.map((n, i) => (i % 3 === 2 ? `(?:(?<${n}>Q\\d))?` : `(?<${n}>[a-z]${i})-(x)?`)).join('');
    const text = names.map((_, i) => (i % 3 === 2 ? '' : `k${i}-`)).join('');
    const re = new RegExp(pattern);
    const groups = re.exec(text)?.groups;
    t.truthy(groups, pattern);
    const want = Object.fromEntries(Object.entries(groups!).filter(([, v]) => v !== undefined));
    const { e } = through(chain({ type: 'parse', format: 'regex', pattern }), entry(text));
    t.is(JSON.stringify(e.fields), JSON.stringify(want), `${count} groups`);
  }
});

test('parse: a bad regex, a regex without named groups, a pattern without regex, a bad type fail the build naming the key', (t) => {
  const err = t.throws(() =>
    chain(
      { type: 'parse', format: 'regex', pattern: '(' },
      { type: 'parse', format: 'regex', pattern: '\\d+' },
      { type: 'parse', format: 'json', pattern: 'x', types: { a: 'date' } },
    ),
  );
  t.true(err instanceof ConfigError);
  const text = err!.message;
  t.regex(text, /pipelines\[0\]\.flow\.transforms\[0\]\.pattern: invalid regular expression/);
  t.regex(text, /transforms\[1\]\.pattern: has no named group/);
  t.regex(text, /transforms\[2\]\.pattern: applies only when format = "regex"/);
  t.regex(text, /transforms\[2\]\.types\.a: must be one of "int", "float", "bool", "time", got "date"/);
});

// ---- set ----

test('set: templates with paths (a missing one gives ""), numbers, booleans; a missing fields parent is created', (t) => {
  const tr = chain({ type: 'set', fields: { 'fields.route': '{{ fields.k8s.namespace }}/{{ source }}', 'fields.a.b.c': 7, 'fields.flag': true, 'fields["k8s.pod"]': 'p-{{ fields.missing }}' } });
  const { e } = through(tr, entry('m', { fields: { k8s: { namespace: 'prod' } } }));
  t.deepEqual(e.fields, { k8s: { namespace: 'prod' }, route: 'prod/app', a: { b: { c: 7 } }, flag: true, 'k8s.pod': 'p-' });
});

test('set if_missing writes only absent paths', (t) => {
  const tr = chain({ type: 'set', if_missing: true, fields: { 'fields.env': 'prod', 'fields.team': 'core', node: 'n1' } });
  const { e } = through(tr, entry('m', { fields: { env: 'dev' } }));
  t.deepEqual(e.fields, { env: 'dev', team: 'core' });
  t.is(e.node, 'n1');
});

test('set time: RFC 3339, epoch seconds, epoch milliseconds, the common log format; anything else counts bad_values', (t) => {
  const cases: [unknown, number | undefined][] = [
    ['2024-01-02T03:04:05.678+02:00', Date.parse('2024-01-02T01:04:05.678Z')],
    [1_700_000_000, 1_700_000_000_000],
    [1_700_000_000_123, 1_700_000_000_123],
    ['10/Oct/2000:13:55:36 -0700', Date.parse('2000-10-10T20:55:36Z')],
    ['{{ fields.t }}', Date.parse('2001-02-03T04:05:06Z')],
    ['yesterday', undefined],
  ];
  for (const [value, want] of cases) {
    const tr = chain({ type: 'set', fields: { time: value } });
    const { e } = through(tr, entry('m', { fields: { t: '2001-02-03T04:05:06Z' } }));
    t.is(e.time, want ?? NOW, String(value));
    t.is(tr.counters.set_0!.bad_values, want === undefined ? 1 : 0);
  }
});

test('set level normalises as §4; an unknown name is left out and counts bad_values', (t) => {
  const tr = chain({ type: 'set', fields: { level: '{{ fields.sev }}' } });
  t.is(through(tr, entry('m', { fields: { sev: 'warning' } })).e.level, 'WARN');
  t.is(through(tr, entry('m', { fields: { sev: 'crit' } })).e.level, undefined);
  t.is(through(tr, entry('m', { level: 'INFO', fields: { sev: 'ERR' } })).e.level, 'ERROR');
  t.is(tr.counters.set_0!.bad_values, 1);
});

test('set on a container line does not change the metadata object other lines of its file share', (t) => {
  const k8s = { namespace: 'prod', pod_name: 'web-1' };
  const a = entry('a', { fields: { stream: 'stdout', k8s }, plainFields: true });
  const b = entry('b', { fields: { stream: 'stdout', k8s }, plainFields: true });
  through(chain({ type: 'set', fields: { 'fields.k8s.namespace': 'changed' } }), a);
  t.deepEqual(a.fields, { stream: 'stdout', k8s: { namespace: 'changed', pod_name: 'web-1' } });
  t.is(a.plainFields, undefined);
  t.deepEqual(b.fields, { stream: 'stdout', k8s: { namespace: 'prod', pod_name: 'web-1' } });
});

test('a changed entry forgets the chain line it was decoded from', (t) => {
  const e = entry('m', { raw: '{"time":…}', rawNodeAt: 3, rawIdAt: 5 });
  through(chain({ type: 'set', fields: { message: 'new' } }), e);
  t.is(e.raw, undefined);
  t.is(e.message, 'new');
});

// ---- rename, delete, keep ----

test('rename moves values, nested and quoted paths included; a missing old path does nothing', (t) => {
  const tr = chain({ type: 'rename', fields: { 'fields.usr': 'fields.user.name', 'fields["k8s.pod"]': 'fields.pod', 'fields.lvl': 'level', 'fields.none': 'fields.x' } });
  const { e } = through(tr, entry('m', { fields: { usr: 'ann', 'k8s.pod': 'web-1', lvl: 'error', other: 1 } }));
  t.deepEqual(e.fields, { other: 1, user: { name: 'ann' }, pod: 'web-1' });
  t.is(e.level, 'ERROR');
});

test('delete removes fields, nested ones included; delete and keep take only paths under fields.', (t) => {
  const tr = chain({ type: 'delete', fields: ['fields.a', 'fields.b.c', 'fields.none'] });
  t.deepEqual(through(tr, entry('m', { fields: { a: 1, b: { c: 2, d: 3 }, e: 4 } })).e.fields, { b: { d: 3 }, e: 4 });
  const err = t.throws(() => chain({ type: 'delete', fields: ['message'] }, { type: 'keep', fields: [] }));
  t.regex(err!.message, /transforms\[0\]\.fields\[0\]: "message" is not a path under fields\./);
  t.regex(err!.message, /transforms\[1\]\.fields: is required/);
});

test('keep removes every field not listed, nested paths kept whole', (t) => {
  const tr = chain({ type: 'keep', fields: ['fields.a', 'fields.k8s.namespace', 'fields.none'] });
  const { e } = through(tr, entry('m', { fields: { a: 1, b: 2, k8s: { namespace: 'prod', pod: 'x' } } }));
  t.deepEqual(e.fields, { a: 1, k8s: { namespace: 'prod' } });
  t.is(through(tr, entry('m', { fields: { b: 2 } })).e.fields, undefined);
});

// ---- redact ----

test('luhn: valid card numbers pass, changed digits fail', (t) => {
  for (const n of ['4111111111111111', '5500005555555559', '340000000000009', '6011000000000004', '4222222222222']) t.true(luhn(n), n);
  for (const n of ['4111111111111112', '1234567812345678', '5500005555555558']) t.false(luhn(n), n);
});

test('redact credit_card: Luhn-valid numbers masked (spaces and dashes too), 16-digit order numbers that fail Luhn kept', (t) => {
  const tr = chain({ type: 'redact', presets: ['credit_card'] });
  const { e } = through(tr, entry('paid with 4111 1111 1111 1111 and 5500-0055-5555-5559, order 1234567812345678, amex 340000000000009'));
  t.is(e.message, 'paid with [REDACTED] and [REDACTED], order 1234567812345678, amex [REDACTED]');
  t.is(tr.counters.redact_0!.redacted, 3);
});

test('redact presets: email, ipv4, bearer_token keeps Bearer, jwt, aws_access_key', (t) => {
  const jwt = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';
  const cases: [string, string, string][] = [
    ['email', 'mail ann.lee+x@example.co.uk now', 'mail [REDACTED] now'],
    ['ipv4', 'from 192.168.10.254:443 and 10.0.0.1, not 999.1.1.1 or 1.2.3.4.5', 'from [REDACTED]:443 and [REDACTED], not 999.1.1.1 or 1.2.3.4.5'],
    ['bearer_token', 'Authorization: Bearer abc.DEF-123_x~+/= next', 'Authorization: Bearer [REDACTED] next'],
    ['jwt', `token=${jwt};`, 'token=[REDACTED];'],
    ['aws_access_key', 'key AKIAIOSFODNN7EXAMPLE used', 'key [REDACTED] used'],
  ];
  for (const [preset, input, want] of cases) {
    const tr = chain({ type: 'redact', presets: [preset] });
    t.is(through(tr, entry(input)).e.message, want, preset);
  }
});

test('redact email: the matches the pattern finds searched globally, each extended left over its local part', (t) => {
  // the reference: the pattern's own global search, each match extended to the left
  const RE = /@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g;
  const local = /[A-Za-z0-9._%+-]/;
  const reference = (s: string): string => {
    let out = '';
    let copied = 0;
    RE.lastIndex = 0;
    for (let m = RE.exec(s); m !== null; m = RE.exec(s)) {
      let start = m.index;
      while (start > copied && local.test(s[start - 1]!)) start--;
      if (start === m.index) continue;
      out += `${s.slice(copied, start)}[REDACTED]`;
      copied = m.index + m[0].length;
    }
    return copied === 0 ? s : out + s.slice(copied);
  };
  const tr = chain({ type: 'redact', presets: ['email'] });
  const text = fc.array(fc.constantFrom('a', 'Z', '9', '.', '-', '_', '+', '@', '@@', ' ', '&', 'ex.com', '@b.io', 'u@x.org'), { maxLength: 40 }).map((parts) => parts.join(''));
  fc.assert(
    fc.property(text, (s) => through(tr, entry(s)).e.message === reference(s)),
    { numRuns: 20_000 },
  );
  t.pass();
});

test('redact email, replaced or hashed: the whole address, its local part included, each match counted', (t) => {
  const replaced = chain({ type: 'redact', presets: ['email'] });
  const e = entry('from ann.lee+x@example.co.uk to bo@b.io');
  through(replaced, e);
  t.is(e.message, 'from [REDACTED] to [REDACTED]');
  t.is(replaced.counters.redact_0!.redacted, 2);
  const hashed = chain({ type: 'redact', presets: ['email'], hash: true, salt: 's3' });
  const h = (m: string) => `sha256:${createHash('sha256').update(`s3${m}`).digest('hex').slice(0, 16)}`;
  const f = entry('from ann.lee+x@example.co.uk to bo@b.io');
  through(hashed, f);
  t.is(f.message, `from ${h('ann.lee+x@example.co.uk')} to ${h('bo@b.io')}`);
  t.is(hashed.counters.redact_0!.redacted, 2);
});

test('redact patterns with hash: sha256: and 16 hex digits of salt + match; nested objects and arrays scanned; counts matches', (t) => {
  const tr = chain({ type: 'redact', fields: ['message', 'fields.user'], patterns: ['user-\\d+'], hash: true, salt: 's3' });
  const h = `sha256:${createHash('sha256').update('s3user-42').digest('hex').slice(0, 16)}`;
  const shared = { id: 'user-42', tags: ['user-42', 'ok', { deep: 'x user-42 y' }] };
  const e = entry('login user-42', { fields: { user: shared, other: 'user-42' } });
  through(tr, e);
  t.is(e.message, `login ${h}`);
  t.deepEqual(e.fields, { user: { id: h, tags: [h, 'ok', { deep: `x ${h} y` }] }, other: 'user-42' });
  t.is(shared.id, 'user-42', 'the original nested object is not changed in place');
  t.is(tr.counters.redact_0!.redacted, 4);
});

test('redact needs patterns or presets; a bad pattern and an unknown preset name their keys', (t) => {
  const err = t.throws(() => chain({ type: 'redact' }, { type: 'redact', patterns: ['('], presets: ['ssn'] }));
  t.regex(err!.message, /transforms\[0\]: needs at least one of patterns, presets/);
  t.regex(err!.message, /transforms\[1\]\.patterns\[0\]: invalid regular expression/);
  t.regex(err!.message, /transforms\[1\]\.presets\[0\]: must be one of/);
});

// ---- drop, when ----

test('drop drops what its when holds for and counts dropped; without when it fails the build', (t) => {
  const tr = chain({ type: 'drop', when: "level == 'debug'" });
  t.false(through(tr, entry('a', { level: 'DEBUG' })).passed);
  t.true(through(tr, entry('b', { level: 'INFO' })).passed);
  t.deepEqual(tr.counters.drop_0, { processed: 1, dropped: 1 });
  t.throws(() => chain({ type: 'drop' }), { message: /transforms\[0\]\.when: is required/ });
});

test('a step whose when is false passes the entry unchanged and is not counted as processed', (t) => {
  const tr = chain({ type: 'set', when: 'fields.x', fields: { message: 'changed' } });
  t.is(through(tr, entry('same')).e.message, 'same');
  t.is(through(tr, entry('same', { fields: { x: 1 } })).e.message, 'changed');
  t.is(tr.counters.set_0!.processed, 1);
});

test('a bad when names the step key and the column; duplicate step ids fail', (t) => {
  const err = t.throws(() => chain({ type: 'set', when: "level >= 'warn' and", fields: { 'fields.a': 1 } }, { type: 'set', id: 'set_0', fields: { 'fields.a': 1 } }));
  t.regex(err!.message, /pipelines\[0\]\.flow\.transforms\[0\]\.when: expected a value at column 20/);
  t.regex(err!.message, /transforms\[1\]\.id: duplicate step id "set_0"/);
});

// ---- sample ----

const N = 100_000;
const within3Sigma = (kept: number, rate: number) => {
  const p = 1 / rate;
  const sigma = Math.sqrt(N * p * (1 - p));
  return Math.abs(kept - N * p) <= 3 * sigma;
};

test('sample without a key keeps 1 in N within ±3σ over 100,000 entries', (t) => {
  const tr = chain({ type: 'sample', rate: 10 });
  let kept = 0;
  for (let i = 0; i < N; i++) if (tr.run(entry('m'), NOW)) kept++;
  t.true(within3Sigma(kept, 10), `kept ${kept}`);
  t.is(tr.counters.sample_0!.sampled_out, N - kept);
});

test('sample with a key: 100,000 keys give 1 in N within ±3σ; one key\'s entries are all kept or all dropped; two nodes agree', (t) => {
  const nodeA = chain({ type: 'sample', rate: 10, key: '{{ fields.trace }}' });
  const nodeB = chain({ type: 'sample', rate: 10, key: '{{ fields.trace }}' });
  let kept = 0;
  for (let i = 0; i < N; i++) {
    const a = nodeA.run(entry('m', { fields: { trace: `trace-${i}` } }), NOW);
    const b = nodeB.run(entry('other text', { fields: { trace: `trace-${i}` } }), NOW + 5000);
    t.is(a, b);
    if (a) kept++;
  }
  t.true(within3Sigma(kept, 10), `kept ${kept}`);
  for (let k = 0; k < 200; k++) {
    const verdicts = new Set<boolean>();
    for (let j = 0; j < 20; j++) verdicts.add(nodeA.run(entry(`line ${j}`, { fields: { trace: `t${k}` } }), NOW + j));
    t.is(verdicts.size, 1, `key t${k}`);
  }
});

test('sample with a key: the verdict of a key is fixed (a hash of the value alone, no seed)', (t) => {
  // pinned: a change of the hash would make nodes of two versions disagree
  const tr = chain({ type: 'sample', rate: 4, key: '{{ source }}' });
  const verdicts = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map((s) => tr.run({ time: 0, source: s, message: '' }, 0));
  t.deepEqual(verdicts, [true, false, false, false, false, false, false, false]);
});

// ---- throttle ----

test('throttle: a token bucket per key; burst at once, then rate per second', (t) => {
  const tr = chain({ type: 'throttle', rate: 2, key: '{{ fields.ns }}' });
  const run = (ns: string, at: number) => tr.run(entry('m', { fields: { ns } }), at);
  t.deepEqual([1, 2, 3, 4].map(() => run('a', NOW)), [true, true, false, false]);
  t.deepEqual([1, 2].map(() => run('b', NOW)), [true, true], 'another key has its own bucket');
  t.deepEqual([1, 2].map(() => run('a', NOW + 500)), [true, false], 'half a second: one token');
  t.is(tr.counters.throttle_0!.throttled, 3);
});

test('throttle: beyond max_keys the least recently used key is forgotten', (t) => {
  const tr = chain({ type: 'throttle', rate: 1, key: '{{ fields.ns }}', max_keys: 2 });
  const run = (ns: string) => tr.run(entry('m', { fields: { ns } }), NOW);
  t.true(run('a'));
  t.false(run('a'), 'a is empty');
  t.true(run('b'));
  t.false(run('b'), 'b is empty');
  t.false(run('a'), 'a used: now b is the least recently used');
  t.true(run('c'), 'c evicts b');
  t.true(run('b'), 'b was forgotten: a new full bucket (evicting a)');
  t.true(run('a'), 'a was forgotten too');
});

test('throttle: WARN Entries throttled at most once a minute per key, not per entry', (t) => {
  const lines: string[] = [];
  const log = createLogger('warn', { write: (s: string) => lines.push(s) });
  const tr = compileTransforms([step({ type: 'throttle', rate: 1, key: '{{ fields.ns }}' })], 't', 'p', log);
  for (let i = 0; i < 500; i++) tr.run(entry('m', { fields: { ns: 'a' } }), NOW + i);
  for (let i = 0; i < 500; i++) tr.run(entry('m', { fields: { ns: 'b' } }), NOW + i);
  const warns = () => lines.map((l) => JSON.parse(l) as { msg: string; key: string; pipeline: string; step: string });
  t.deepEqual(
    warns().map((w) => [w.msg, w.key, w.pipeline, w.step]),
    [
      ['Entries throttled', 'a', 'p', 'throttle_0'],
      ['Entries throttled', 'b', 'p', 'throttle_0'],
    ],
  );
  for (let i = 0; i < 100; i++) tr.run(entry('m', { fields: { ns: 'a' } }), NOW + 60_000 + i);
  t.is(warns().length, 3, 'a minute later, one more for a');
});

test('regex parse reads named groups by number: escaped parentheses, classes, non-capturing groups and look-arounds counted right', (t) => {
  t.deepEqual(namedGroupNumbers('^(?<a>x)(y)(?<b>[(]z)\\((?:q)(?<c>w)?'), [
    ['a', 1],
    ['b', 3],
    ['c', 4],
  ]);
  t.deepEqual(namedGroupNumbers('(?<=a)(?<x>b)(?!c)(d)(?<y>e)'), [
    ['x', 1],
    ['y', 3],
  ]);
  t.deepEqual(namedGroupNumbers('[\\]()](?<n>1)'), [['n', 1]]);
  const tr = chain({ type: 'parse', format: 'regex', pattern: '^(?<a>x)(y)(?<b>[(]z)\\((?:q)(?<c>w)?' });
  t.deepEqual(through(tr, entry('xy(z(q')).e.fields, { a: 'x', b: '(z' });
});

test('regex parse matches with its groups unnamed: the same fields as the named pattern\'s groups, on random text; a \\k<name> back-reference keeps the names', (t) => {
  t.is(unnamed('^(?<a>x)(y)(?<b>[(?<c>]z)\\(?<d>(?<=q)(?<e>w)?'), '^(x)(y)([(?<c>]z)\\(?<d>(?<=q)(w)?');
  const patterns = [
    '^(?<time>\\S+) (?<level>[A-Z]+) (?<app>[^\\[]+)\\[(?<pid>\\d+)\\]: request id=(?<id>\\d+) ',
    '(?<a>x)?(y)(?<b>[(]z)?\\((?:q)(?<c>w)?',
    '(?<=a)(?<x>b+)(?!c)(d)?(?<y>e*)',
    '(?<q>["x])(?<body>[^"]*)\\k<q>',
    '(?<one>a)(?<two>b)?(?<three>c)?(?<four>d)?(?<five>e)?(?<six>f)?(?<seven>g)?(?<eight>h)?(?<nine>i)?(?<ten>j)?',
  ];
  const text = fc.array(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'x', 'y', 'z', 'q', 'w', '(', '"', ' ', '[', ']', '2023-11-14T22:13:20.000Z INFO api[12]: request id=7 ', 'INFO', '1'), { maxLength: 30 }).map((p) => p.join(''));
  for (const pattern of patterns) {
    const re = new RegExp(pattern);
    const parse = regexParser(re);
    fc.assert(
      fc.property(text, (s) => {
        const m = re.exec(s);
        const expected = m?.groups === undefined ? undefined : Object.fromEntries(Object.entries(m.groups).filter(([, v]) => v !== undefined));
        const got = parse(s, 0)?.fields;
        t.deepEqual(got === undefined ? undefined : Object.entries(got), expected === undefined ? undefined : Object.entries(expected), `${pattern} on ${JSON.stringify(s)}`);
      }),
      { numRuns: 2_000 },
    );
  }
});

test('the card pre-check passes every text the card pattern could match in, and skips text without 13 digits in a row', (t) => {
  for (const s of ['4111111111111111', 'x 4111 1111 1111 1111 y', '5500-0055-5555-5559', '4-1-1-1-1-1-1-1-1-1-1-1-1', '340000000000009']) t.true(hasCardRun(s), s);
  for (const s of ['123456789012', '4111  1111 1111 1111', '10.0.0.1 id=123456 status=200', '41-11-11-11-11-1', '']) t.false(hasCardRun(s), s);
});

test('the card pre-check says what /\\d(?:[ -]?\\d){12}/ says, on any text of digits, separators and letters', (t) => {
  const RUN = /\d(?:[ -]?\d){12}/;
  const text = fc.array(fc.constantFrom('0', '4', '9', ' ', '-', 'x', '.', '  ', '--', '1111', '4111 1111 1111'), { maxLength: 60 }).map((parts) => parts.join(''));
  fc.assert(
    fc.property(text, (s) => hasCardRun(s) === RUN.test(s)),
    { numRuns: 20_000 },
  );
  t.pass();
});
