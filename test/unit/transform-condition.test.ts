// The condition language of `when` (DESIGN.md §24): every operator, precedence, `not`,
// parentheses, level order, numbers vs strings, missing paths, quoted field names, regular
// expressions; syntax errors with their column; and a property: random trees print and parse back.

import test from 'ava';
import fc from 'fast-check';
import type { Entry } from '../../src/core/entry.js';
import { type Condition, compileCondition, ConditionError, type Operand, parseCondition, printCondition, type Scalar } from '../../src/transform/condition.js';
import type { Path } from '../../src/transform/path.js';

const ENTRY: Entry = {
  time: Date.parse('2024-05-06T07:08:09.010Z'),
  node: 'edge-1',
  source: 'nginx',
  level: 'WARN',
  message: 'GET /api/users 503',
  fields: { status: 503, code: '42', user: { name: 'ann', roles: ['admin', 'dev'] }, 'k8s.pod': 'web-1', empty: '', zero: 0, no: false, nil: null },
};

const CASES: readonly (readonly [string, boolean])[] = [
  // comparisons
  ['fields.status == 503', true],
  ['fields.status != 503', false],
  ['fields.status < 600', true],
  ['fields.status <= 503', true],
  ['fields.status > 503', false],
  ['fields.status >= 500', true],
  ["source == 'nginx'", true],
  ['source == "nginx"', true],
  ["source != 'nginx'", false],
  // strings compare as strings, numbers as numbers, numeric text as its number
  ["source < 'o'", true],
  ["source > 'o'", false],
  ['fields.code == 42', true],
  ['fields.code < 100', true],
  ["fields.code < '5'", true],
  ["fields.status == '503'", true],
  ["fields.status > 'abc'", false],
  // regular expressions
  ["message =~ '^GET /api'", true],
  ["message =~ 'POST'", false],
  ["message !~ 'POST'", true],
  ["message !~ '\\\\d{3}$'", false],
  ["fields.status =~ '^5'", true],
  // in, contains, starts_with
  ["source in ['nginx', 'apache']", true],
  ["source in ['apache']", false],
  ['fields.status in [500, 503]', true],
  ["message contains '/api/'", true],
  ["message contains 'xyz'", false],
  ["fields.user.roles contains 'admin'", true],
  ["fields.user.roles contains 'ops'", false],
  ["message starts_with 'GET'", true],
  ["message starts_with 'api'", false],
  // level order and names in any case
  ["level >= 'WARN'", true],
  ["level >= 'warn'", true],
  ["level > 'warning'", false],
  ["level >= 'ERROR'", false],
  ["level < 'error'", true],
  ["level == 'warning'", true],
  ["level in ['error', 'warn']", true],
  ["level in ['info', 'debug']", false],
  // bare paths: present and not "", false, 0 or null
  ['fields.status', true],
  ['fields.empty', false],
  ['fields.zero', false],
  ['fields.no', false],
  ['fields.nil', false],
  ['fields.missing', false],
  ['node', true],
  ['true', true],
  ['false', false],
  // missing paths: comparisons false, != true
  ['fields.missing == 1', false],
  ["fields.missing != 'x'", true],
  ['fields.missing < 1', false],
  ['fields.missing >= 0', false],
  ["fields.missing =~ '.*'", false],
  ["fields.missing in ['a']", false],
  ["fields.missing contains ''", false],
  ["fields.missing starts_with ''", false],
  ['fields.user.missing.deeper == 1', false],
  // quoted field names
  ['fields["k8s.pod"] == \'web-1\'', true],
  ["fields['k8s.pod'] starts_with 'web'", true],
  ['fields["user"].name == "ann"', true],
  // not, and, or, precedence, parentheses
  ["not source == 'nginx'", false],
  ['not not fields.status', true],
  ['not fields.missing', true],
  ["source == 'x' or source == 'nginx'", true],
  ["source == 'nginx' and fields.status == 500", false],
  // and binds tighter than or: true or (false and false)
  ["source == 'nginx' or fields.status == 1 and fields.status == 2", true],
  ["(source == 'nginx' or fields.status == 1) and fields.status == 2", false],
  // not binds tighter than and: (not false) and true
  ["not fields.missing and source == 'nginx'", true],
  ["not (fields.missing or source == 'nginx')", false],
  ["level >= 'warn' and (fields.status >= 500 or message contains 'timeout')", true],
  // both sides paths
  ['fields.code == fields.code', true],
  ['node != source', true],
];

for (const [text, want] of CASES) {
  test(`condition ${text} is ${want}`, (t) => {
    t.is(compileCondition(text)(ENTRY), want);
  });
}

const ERRORS: readonly (readonly [string, string, number])[] = [
  ["level >= ", 'expected a value', 10],
  ['fields.status == ', 'expected a value', 18],
  ["source == 'nginx' and", 'expected a value', 22],
  ['(fields.status == 1', 'expected ")"', 20],
  ['fields.status == 1)', 'unexpected ")"', 19],
  ['foo == 1', 'unknown path "foo"', 1],
  ["message =~ '('", 'invalid regular expression', 12],
  ['message =~ 1', 'the right side of =~ must be a string', 12],
  ["source in 'a'", 'the right side of in must be a list', 11],
  ["source == 'open", 'unterminated string', 11],
  ['source == 1 2', 'unexpected 2', 13],
  ['source # 1', 'unexpected character "#"', 8],
  ['fields. == 1', 'expected a field name', 8],
  ['message.x == 1', 'message has no fields under it', 8],
  ["[1, 2", 'expected "," or "]"', 6],
];

for (const [text, reason, column] of ERRORS) {
  test(`syntax error in ${JSON.stringify(text)}: ${reason} at column ${column}`, (t) => {
    const err = t.throws(() => compileCondition(text), { instanceOf: ConditionError });
    t.true(err.reason.startsWith(reason), err.message);
    t.is(err.column, column, err.message);
    t.true(err.message.endsWith(`at column ${column}`));
  });
}

test('an entry without fields: field paths are missing, never an exception', (t) => {
  const bare: Entry = { time: 0, source: 's', message: 'm' };
  t.false(compileCondition('fields.a == 1')(bare));
  t.true(compileCondition('fields.a != 1')(bare));
  t.false(compileCondition("level >= 'trace'")(bare));
  t.false(compileCondition('fields')(bare));
});

// ---- round trip ----

const ident = fc.stringMatching(/^[a-z_][a-z0-9_]{0,6}$/).filter((s) => !['and', 'or', 'not', 'in', 'contains', 'starts_with', 'true', 'false'].includes(s));
const anyKey = fc.oneof(ident, fc.string({ maxLength: 8 }));
const path: fc.Arbitrary<Path> = fc.oneof(
  fc.constantFrom<Path>({ root: 'time', keys: [] }, { root: 'node', keys: [] }, { root: 'source', keys: [] }, { root: 'level', keys: [] }, { root: 'message', keys: [] }),
  fc.array(anyKey, { minLength: 0, maxLength: 3 }).map((keys): Path => ({ root: 'fields', keys })),
);
const scalar: fc.Arbitrary<Scalar> = fc.oneof(
  fc.string({ maxLength: 10 }),
  fc.integer({ min: -1e9, max: 1e9 }),
  fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }).filter((n) => !Object.is(n, -0)),
  fc.boolean(),
);
const operand: fc.Arbitrary<Operand> = fc.oneof(
  path.map((p): Operand => ({ k: 'path', path: p })),
  scalar.map((v): Operand => ({ k: 'lit', value: v })),
  fc.array(scalar, { maxLength: 3 }).map((v): Operand => ({ k: 'lit', value: v })),
);
const comparison: fc.Arbitrary<Condition> = fc.oneof(
  fc
    .tuple(fc.constantFrom('==', '!=', '<', '<=', '>', '>=', 'contains', 'starts_with' as const), operand, operand)
    .map(([op, left, right]): Condition => ({ k: 'cmp', op, left, right })),
  fc.tuple(fc.constantFrom('=~', '!~' as const), operand, fc.constantFrom('^a', 'b+$', '\\d{3}', '(x|y)')).map(([op, left, re]): Condition => ({ k: 'cmp', op, left, right: { k: 'lit', value: re } })),
  fc.tuple(operand, fc.array(scalar, { maxLength: 3 })).map(([left, list]): Condition => ({ k: 'cmp', op: 'in', left, right: { k: 'lit', value: list } })),
  operand.map((value): Condition => ({ k: 'test', value })),
);
const { tree } = fc.letrec<{ tree: Condition }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    comparison,
    fc.tuple(tie('tree'), tie('tree')).map(([a, b]): Condition => ({ k: 'and', a, b })),
    fc.tuple(tie('tree'), tie('tree')).map(([a, b]): Condition => ({ k: 'or', a, b })),
    tie('tree').map((a): Condition => ({ k: 'not', a })),
  ),
}));

test('random conditions print and parse back to the same tree, and compile', (t) => {
  fc.assert(
    fc.property(tree, (c) => {
      const text = printCondition(c);
      t.deepEqual(parseCondition(text), c, text);
      compileCondition(text);
    }),
    { numRuns: 2000 },
  );
});
