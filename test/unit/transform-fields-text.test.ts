// What a transform step knows of an entry's JSON and hands on (Entry.fieldsText: the fields' text
// an access log parse makes along with them, extended by keys a `set` step adds; Entry.quotedAscii:
// the message looked at and found printable ASCII without `\`) gives what encoding the entry anew
// gives, byte for byte, after any steps: property tests over random access log lines, quotes,
// backslashes, control characters, lone surrogates and numbers past 2^53 included.

import test from 'ava';
import fc from 'fast-check';
import type { Entry } from '../../src/core/entry.js';
import { QUOTED_ASCII, quotedAsciiJson } from '../../src/core/entry-json.js';
import { encodeFrames, framedItem } from '../../src/core/entry-frame.js';
import { encodeEntry } from '../../src/core/entry-line.js';
import { createLogger } from '../../src/core/log.js';
import { checkFields } from '../../src/core/spec.js';
import { formatJson } from '../../src/flow/format.js';
import { compileTransforms, type Transforms } from '../../src/transform/index.js';
import { TRANSFORM_COMMON_FIELDS, TRANSFORM_SPECS, type TransformType } from '../../src/transform/spec.js';

const silent = createLogger('silent', { write() {} });
const NOW = Date.parse('2024-05-06T07:08:09.010Z');

type StepTable = Record<string, unknown> & { type: TransformType };

function chain(steps: readonly StepTable[]): Transforms {
  const cfgs = steps.map((cfg) => checkFields({ ...TRANSFORM_COMMON_FIELDS, ...TRANSFORM_SPECS[cfg.type].fields }, cfg, 'step'));
  return compileTransforms(cfgs as never, 'pipelines[0].flow.transforms', 'p', silent);
}

/** The entry as the encoders see it without what the steps knew: encoded anew. */
const withoutText = (e: Entry): Entry => {
  const copy = { ...e };
  delete copy.fieldsText;
  delete copy.quotedAscii;
  return copy;
};

/** What JSON needs escaped or a line may carry: quotes, backslashes, controls, non-ASCII, lone surrogates. */
const odd = fc.constantFrom('"', '\\', '\u0000', '\u001f', '\t', '\u007f', 'é', '\u2028', '\ud83d', '\ude00', '😀', '-', '0', '/');
const ascii = fc.string({ unit: fc.constantFrom(...'abcXYZ019./:?=&%_-'.split('')), minLength: 1, maxLength: 12 });
/** a part of a line: mostly plain, now and then with odd characters (a space too, so that the pattern fails or takes another split) */
const part = fc.oneof(
  { weight: 12, arbitrary: ascii },
  { weight: 3, arbitrary: fc.array(fc.oneof(ascii, odd), { minLength: 1, maxLength: 5 }).map((a) => a.join('')) },
  { weight: 1, arbitrary: fc.array(fc.oneof(ascii, odd, fc.constant(' ')), { minLength: 1, maxLength: 5 }).map((a) => a.join('')) },
  { weight: 1, arbitrary: fc.constant('-') },
);
const quoted = fc.oneof(part, fc.constant('Mozilla/5.0 (X11; Linux x86_64)'), fc.constant(''));
const digits = fc.oneof(
  fc.constantFrom('0', '-', '007', '123456789012345', '1234567890123456', '99999999999999999999', '9'.repeat(400)),
  fc.integer({ min: 0, max: 10_000_000 }).map(String),
);
const status = fc.oneof({ weight: 9, arbitrary: fc.integer({ min: 100, max: 599 }).map(String) }, { weight: 1, arbitrary: fc.constantFrom('000', '042', '20', '2000') });
const clfTime = fc.oneof({ weight: 9, arbitrary: fc.constantFrom('10/Oct/2000:13:55:36 -0700', '14/Nov/2023:22:13:20 +0000') }, { weight: 1, arbitrary: fc.constantFrom('31/Feb/2024:00:00:00 +0000', 'not a time') });

const accessLine = fc
  .record({ client: part, ident: part, user: part, time: clfTime, method: part, path: part, protocol: fc.option(quoted), status, bytes: digits, referrer: quoted, agent: quoted, tail: fc.boolean() })
  .map(
    (p) =>
      `${p.client} ${p.ident} ${p.user} [${p.time}] "${p.method} ${p.path}${p.protocol === null ? '' : ` ${p.protocol}`}" ${p.status} ${p.bytes}` +
      (p.tail ? ` "${p.referrer}" "${p.agent}"` : ''),
  );

const value = fc.oneof(
  fc.string({ unit: fc.oneof(fc.constantFrom('a', 'b', ' ', '{', '}'), odd), maxLength: 6 }).filter((s) => !s.includes('{{')),
  fc.constantFrom('{{ fields.method }}', '{{ source }}/{{ fields.path }}', '{{ fields.status }}', '{{ fields }}'),
  fc.oneof(fc.integer(), fc.double(), fc.constantFrom(Number.NaN, -0, 1e21)),
  fc.boolean(),
);
/** paths a step writes: new keys, keys the parser gives, digits alone, __proto__, nested, the entry's own parts */
const target = fc.constantFrom('fields.service', 'fields.route', 'fields.a', 'fields.b', 'fields.c', 'fields.status', 'fields.bytes', 'fields.user', 'fields["a b"]', 'fields["7"]', 'fields.__proto__', 'fields.x.y', 'message', 'level', 'time');

const laterStep: fc.Arbitrary<StepTable> = fc.oneof(
  fc.record({ type: fc.constant('set' as const), fields: fc.dictionary(fc.constantFrom('fields.service', 'fields.route', 'fields.a', 'fields["a b"]'), value, { minKeys: 1, maxKeys: 3 }), if_missing: fc.boolean() }),
  fc.record({ type: fc.constant('set' as const), fields: fc.dictionary(target, value, { minKeys: 1, maxKeys: 3 }), if_missing: fc.boolean() }),
  fc.record({ type: fc.constant('rename' as const), fields: fc.constant({ 'fields.method': 'fields.verb' }) }),
  fc.record({ type: fc.constant('delete' as const), fields: fc.constant(['fields.user']) }),
  fc.record({ type: fc.constant('keep' as const), fields: fc.constant(['fields.status', 'fields.path']) }),
  fc.record({
    type: fc.constant('redact' as const),
    patterns: fc.constantFrom(['[0-9]{3}'], ['\\S+'], ['"']),
    presets: fc.constantFrom([], ['email', 'credit_card'], ['ipv4']),
    replacement: fc.constantFrom('[REDACTED]', 'a"b', 'back\\slash', 'é', ''),
    hash: fc.boolean(),
    fields: fc.constantFrom(['message'], ['fields.path'], ['fields'], ['message', 'fields.method']),
  }),
  fc.record({ type: fc.constant('set' as const), fields: fc.record({ message: fc.constantFrom('{{ fields.path }}', 'x"y', 'tab\there', '{{ message }}!') }) }),
);

/** The entry's chain protocol version 2 frame, copied out of the writer's slab. */
const frameOf = (e: Entry): Buffer => {
  const item = framedItem({ ...e, id: 'x-1' }, '', undefined);
  encodeFrames([item], 0, 1, NOW, 'f');
  return Buffer.from(item.frameBuf!.subarray(item.frameAt, item.frameEnd));
};

test('the fields text and message verdict an access log parse and later steps keep give what encoding the entry anew gives, in the json format, the chain line and the version 2 frame', (t) => {
  let withText = 0;
  let quoted = 0;
  fc.assert(
    fc.property(fc.constantFrom('nginx_combined', 'apache_common'), accessLine, fc.array(laterStep, { maxLength: 3 }), (format, line, steps) => {
      const tr = chain([{ type: 'parse', format }, ...steps]);
      const e: Entry = { time: NOW, source: 'app', message: line };
      tr.run(e, NOW);
      if (e.fieldsText !== undefined) withText++;
      if (e.quotedAscii === e.message) quoted++;
      const slow = withoutText(e);
      if (e.fieldsText !== undefined) t.is(`${e.fieldsText}}`, JSON.stringify(e.fields), line);
      t.is(formatJson(e), formatJson(slow));
      const out = { completed: false };
      t.is(encodeEntry({ ...e, id: 'x-1' }, NOW, 'f', out), encodeEntry({ ...slow, id: 'x-1' }, NOW, 'f', out));
      t.deepEqual(frameOf(e), frameOf(slow), 'the version 2 frame');
    }),
    { numRuns: 3_000 },
  );
  t.true(withText > 300, `only ${withText} of 3,000 runs kept a fields text`);
  t.true(quoted > 300, `only ${quoted} of 3,000 runs kept the message's verdict`);
});

test('an access log parse and set steps adding keys keep the text; a step changing a key it has drops it', (t) => {
  const line = '10.0.0.7 - bob [01/Jan/2024:00:00:00 +0000] "POST /api/v1/login HTTP/2.0" 201 512 "https://example.com/" "curl/8.5.0"';
  const run = (...steps: StepTable[]): Entry => {
    const e: Entry = { time: NOW, source: 'app', message: line };
    chain([{ type: 'parse', format: 'nginx_combined' }, ...steps]).run(e, NOW);
    return e;
  };
  const kept = run({ type: 'set', fields: { 'fields.service': 'shop', 'fields.route': '{{ source }}/{{ fields.method }}' } }, { type: 'set', if_missing: true, fields: { 'fields.bytes': 0 } }, { type: 'redact', presets: ['email'] });
  t.is(`${kept.fieldsText}}`, JSON.stringify(kept.fields));
  t.is(run({ type: 'set', fields: { 'fields.status': 500 } }).fieldsText, undefined, 'a replaced value');
  t.is(run({ type: 'set', fields: { 'fields.x.y': 1 } }).fieldsText, undefined, 'a nested write');
  const typed: Entry = { time: NOW, source: 'app', message: line };
  chain([{ type: 'parse', format: 'nginx_combined', types: { status: 'int' } }]).run(typed, NOW);
  t.is(typed.fieldsText, undefined, 'a parse with types');
  t.is(run({ type: 'delete', fields: ['fields.user'] }).fieldsText, undefined, 'a delete');
});

test('a text of printable ASCII without \\ is written as JSON.stringify writes it, quotes escaped', (t) => {
  fc.assert(
    fc.property(fc.string({ unit: fc.constantFrom(' ', '"', 'a', '~', '!', '[', ']', '{', '}', '/') }), (s) => {
      t.true(QUOTED_ASCII.test(s));
      t.is(quotedAsciiJson(s), JSON.stringify(s));
    }),
    { numRuns: 5_000 },
  );
});

test('a regex parse that picks out the entry\'s own parts itself (no types) gives the entry the merge picking them out gives', (t) => {
  const names = ['time', 'ts', 'timestamp', 'level', 'lvl', 'severity', 'msg', 'message', 'a', 'b'];
  const token = fc.constantFrom('2023-11-14T22:13:20.123Z', '2023-11-14T22:13:21.999Z', 'not-a-time', 'INFO', 'warn', 'xyz', '30', 'hello', '');
  const startFields = fc.constantFrom(undefined, { a: 'old', z: 1 }, { stream: 'stdout' });
  fc.assert(
    fc.property(fc.uniqueArray(fc.constantFrom(...names), { minLength: 1, maxLength: 6 }), fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }), fc.array(token, { minLength: 6, maxLength: 6 }), startFields, (groups, optional, tokens, fields) => {
      const pattern = `^${groups.map((g, i) => (optional[i] ? `(?:(?<${g}>[^ ]*) )?` : `(?<${g}>[^ ]*) `)).join('')}`;
      const text = `${tokens.slice(0, groups.length).join(' ')} `;
      const run = (types: Record<string, string>): Entry => {
        const e: Entry = { time: NOW, source: 'app', message: text };
        if (fields !== undefined) {
          e.fields = { ...fields };
          if ('stream' in fields) e.plainFields = true;
        }
        chain([{ type: 'parse', format: 'regex', pattern, types }]).run(e, NOW);
        // a part written undefined is as absent
        for (const k of Object.keys(e) as (keyof Entry)[]) if (e[k] === undefined) delete e[k];
        return e;
      };
      // a type for a key no group has: the fields are picked out by the merge, as before
      t.deepEqual(run({}), run({ no_such_group: 'int' }), `${pattern} on ${JSON.stringify(text)}`);
    }),
    { numRuns: 3_000 },
  );
});
