// The condition language of `when` (DESIGN.md §24): a tokenizer, a parser to a tree, a printer
// (the tree back to text, for errors and the round-trip test), and a compiler to a plain
// function of the entry, built once; evaluating it allocates nothing.

import type { Entry, Level } from '../core/entry.js';
import { normaliseLevel } from '../core/entry.js';
import { compileGet, type Getter, type Path, PathSyntaxError, printPath, readPath, readQuoted } from './path.js';

export type Scalar = string | number | boolean;
export type Literal = Scalar | readonly Scalar[];

export type CmpOp = '==' | '!=' | '<' | '<=' | '>' | '>=' | '=~' | '!~' | 'in' | 'contains' | 'starts_with';

export type Operand = { readonly k: 'path'; readonly path: Path } | { readonly k: 'lit'; readonly value: Literal };

export type Condition =
  | { readonly k: 'or'; readonly a: Condition; readonly b: Condition }
  | { readonly k: 'and'; readonly a: Condition; readonly b: Condition }
  | { readonly k: 'not'; readonly a: Condition }
  | { readonly k: 'cmp'; readonly op: CmpOp; readonly left: Operand; readonly right: Operand }
  /** a bare path (or literal): true when present and not "", false, 0 or null */
  | { readonly k: 'test'; readonly value: Operand };

/** A condition that does not parse or compile: the reason and the 1-based column. */
export class ConditionError extends Error {
  constructor(
    readonly reason: string,
    readonly column: number,
  ) {
    super(`${reason} at column ${column}`);
    this.name = 'ConditionError';
  }
}

// ---- tokenizer ----

type Keyword = 'and' | 'or' | 'not' | 'in' | 'contains' | 'starts_with' | 'true' | 'false';
const KEYWORDS: ReadonlySet<string> = new Set<Keyword>(['and', 'or', 'not', 'in', 'contains', 'starts_with', 'true', 'false']);
const OPERATORS = ['==', '!=', '<=', '>=', '=~', '!~', '<', '>'] as const;

type Token =
  | { readonly t: 'path'; readonly path: Path; readonly at: number }
  | { readonly t: 'str'; readonly v: string; readonly at: number }
  | { readonly t: 'num'; readonly v: number; readonly at: number }
  | { readonly t: 'kw'; readonly v: Keyword; readonly at: number }
  | { readonly t: 'op'; readonly v: (typeof OPERATORS)[number]; readonly at: number }
  | { readonly t: 'punct'; readonly v: '(' | ')' | '[' | ']' | ','; readonly at: number }
  | { readonly t: 'end'; readonly at: number };

const NUMBER = /-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/y;
const WORD = /[A-Za-z_][A-Za-z0-9_]*/y;

/** The tokens of `text`; throws ConditionError at the first character that starts none. */
export function tokenize(text: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const fail = (reason: string, at: number): never => {
    throw new ConditionError(reason, at + 1);
  };
  while (i < text.length) {
    const c = text[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    if (c === '(' || c === ')' || c === '[' || c === ']' || c === ',') {
      out.push({ t: 'punct', v: c, at: i });
      i++;
      continue;
    }
    if (c === '"' || c === "'") {
      try {
        const { value, end } = readQuoted(text, i);
        out.push({ t: 'str', v: value, at: i });
        i = end;
      } catch (err) {
        if (err instanceof PathSyntaxError) fail(err.message, err.at);
        throw err;
      }
      continue;
    }
    const op = OPERATORS.find((o) => text.startsWith(o, i));
    if (op) {
      out.push({ t: 'op', v: op, at: i });
      i += op.length;
      continue;
    }
    NUMBER.lastIndex = i;
    const num = NUMBER.exec(text);
    if (num) {
      out.push({ t: 'num', v: Number(num[0]), at: i });
      i += num[0].length;
      continue;
    }
    WORD.lastIndex = i;
    const word = WORD.exec(text);
    if (word) {
      if (KEYWORDS.has(word[0])) {
        out.push({ t: 'kw', v: word[0] as Keyword, at: i });
        i += word[0].length;
        continue;
      }
      try {
        const { path, end } = readPath(text, i);
        out.push({ t: 'path', path, at: i });
        i = end;
      } catch (err) {
        if (err instanceof PathSyntaxError) fail(err.message, err.at);
        throw err;
      }
      continue;
    }
    fail(`unexpected character ${JSON.stringify(c)}`, i);
  }
  out.push({ t: 'end', at: text.length });
  return out;
}

// ---- parser ----

const CMP_KEYWORDS: ReadonlySet<string> = new Set(['in', 'contains', 'starts_with']);

function describe(tok: Token): string {
  switch (tok.t) {
    case 'end':
      return 'the end';
    case 'path':
      return printPath(tok.path);
    case 'str':
      return JSON.stringify(tok.v);
    case 'num':
      return String(tok.v);
    default:
      return JSON.stringify(tok.v);
  }
}

/** The tree of `text`; throws ConditionError naming the 1-based column. */
export function parseCondition(text: string): Condition {
  return parseWithColumns(text).tree;
}

/** The tree, and the 1-based column of the right side of each comparison (for compile errors). */
function parseWithColumns(text: string): { tree: Condition; columns: WeakMap<Condition, number> } {
  const columns = new WeakMap<Condition, number>();
  const toks = tokenize(text);
  let pos = 0;
  const peek = () => toks[pos]!;
  const fail = (reason: string, tok: Token = peek()): never => {
    throw new ConditionError(reason, tok.at + 1);
  };
  const isKw = (v: Keyword) => {
    const tok = peek();
    return tok.t === 'kw' && tok.v === v;
  };
  const isPunct = (v: string) => {
    const tok = peek();
    return tok.t === 'punct' && tok.v === v;
  };

  const parseOr = (): Condition => {
    let left = parseAnd();
    while (isKw('or')) {
      pos++;
      left = { k: 'or', a: left, b: parseAnd() };
    }
    return left;
  };
  const parseAnd = (): Condition => {
    let left = parseNot();
    while (isKw('and')) {
      pos++;
      left = { k: 'and', a: left, b: parseNot() };
    }
    return left;
  };
  const parseNot = (): Condition => {
    if (isKw('not')) {
      pos++;
      return { k: 'not', a: parseNot() };
    }
    return parseComparison();
  };
  const parseComparison = (): Condition => {
    if (isPunct('(')) {
      pos++;
      const inner = parseOr();
      if (!isPunct(')')) fail(`expected ")" but found ${describe(peek())}`);
      pos++;
      return inner;
    }
    const left = parseOperand();
    const tok = peek();
    let op: CmpOp | undefined;
    if (tok.t === 'op') op = tok.v;
    else if (tok.t === 'kw' && CMP_KEYWORDS.has(tok.v)) op = tok.v as CmpOp;
    if (op === undefined) return { k: 'test', value: left };
    pos++;
    const rightTok = peek();
    const right = parseOperand();
    if ((op === '=~' || op === '!~') && !(right.k === 'lit' && typeof right.value === 'string')) {
      fail(`the right side of ${op} must be a string holding a regular expression`, rightTok);
    }
    if (op === 'in' && !(right.k === 'lit' && Array.isArray(right.value))) fail('the right side of in must be a list', rightTok);
    const node: Condition = { k: 'cmp', op, left, right };
    columns.set(node, rightTok.at + 1);
    return node;
  };
  const parseScalar = (): Scalar => {
    const tok = peek();
    if (tok.t === 'str' || tok.t === 'num') {
      pos++;
      return tok.v;
    }
    if (tok.t === 'kw' && (tok.v === 'true' || tok.v === 'false')) {
      pos++;
      return tok.v === 'true';
    }
    return fail('expected a value');
  };
  const parseOperand = (): Operand => {
    const tok = peek();
    if (tok.t === 'path') {
      pos++;
      return { k: 'path', path: tok.path };
    }
    if (isPunct('[')) {
      pos++;
      const items: Scalar[] = [];
      if (!isPunct(']')) {
        for (;;) {
          items.push(parseScalar());
          if (isPunct(',')) {
            pos++;
            continue;
          }
          if (isPunct(']')) break;
          fail(`expected "," or "]" but found ${describe(peek())}`);
        }
      }
      pos++;
      return { k: 'lit', value: items };
    }
    return { k: 'lit', value: parseScalar() };
  };

  const tree = parseOr();
  if (peek().t !== 'end') fail(`unexpected ${describe(peek())}`);
  return { tree, columns };
}

// ---- printer ----

function printScalar(v: Scalar): string {
  return typeof v === 'string' ? JSON.stringify(v) : String(v);
}

export function printOperand(o: Operand): string {
  if (o.k === 'path') return printPath(o.path);
  if (Array.isArray(o.value)) return `[${(o.value as readonly Scalar[]).map(printScalar).join(', ')}]`;
  return printScalar(o.value as Scalar);
}

/** The condition as text that parses back to the same tree (parentheses only where needed). */
export function printCondition(c: Condition): string {
  const wrap = (x: Condition, when: boolean) => (when ? `(${printCondition(x)})` : printCondition(x));
  switch (c.k) {
    case 'or':
      return `${wrap(c.a, false)} or ${wrap(c.b, c.b.k === 'or')}`;
    case 'and':
      return `${wrap(c.a, c.a.k === 'or')} and ${wrap(c.b, c.b.k === 'or' || c.b.k === 'and')}`;
    case 'not':
      return `not ${wrap(c.a, c.a.k === 'or' || c.a.k === 'and')}`;
    case 'cmp':
      return `${printOperand(c.left)} ${c.op} ${printOperand(c.right)}`;
    case 'test':
      return printOperand(c.value);
  }
}

// ---- compiler ----

export type Predicate = (e: Entry) => boolean;

const SEVERITY: Readonly<Record<Level, number>> = { TRACE: 1, DEBUG: 2, INFO: 3, WARN: 4, ERROR: 5, FATAL: 6 };

/** true when present and not "", false, 0 or null */
export function truthy(v: unknown): boolean {
  return v !== undefined && v !== null && v !== '' && v !== false && v !== 0;
}

/** A number for a comparison: numbers as they are, numeric text as its number; else NaN. */
function asNumber(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v.trim() !== '') return Number(v);
  return NaN;
}

/** equal: same type and value, or a number and text that reads as that number */
function equal(a: unknown, b: unknown): boolean {
  if (a === undefined || b === undefined) return false;
  if (typeof a === typeof b) return a === b;
  if (typeof a === 'number' || typeof b === 'number') return asNumber(a) === asNumber(b);
  return false;
}

/** -1, 0, 1, or NaN when the two do not compare (missing, or a number with text that is none) */
function order(a: unknown, b: unknown): number {
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  const x = asNumber(a);
  const y = asNumber(b);
  if (Number.isNaN(x) || Number.isNaN(y)) return NaN;
  return x < y ? -1 : x > y ? 1 : 0;
}

/** A value as text for =~, contains, starts_with: strings, and numbers and booleans as written. */
function text(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return undefined;
}

const isLevelPath = (o: Operand) => o.k === 'path' && o.path.root === 'level';

/**
 * The getter of an operand. Where the other side of a comparison is `level`, a level name is
 * read as its severity, so `level >= 'warn'` orders TRACE < DEBUG < INFO < WARN < ERROR < FATAL.
 */
function operandGetter(o: Operand, bySeverity: boolean): Getter {
  if (o.k === 'path') {
    if (bySeverity && o.path.root === 'level') return (e) => (e.level === undefined ? undefined : SEVERITY[e.level]);
    return compileGet(o.path);
  }
  let value: unknown = o.value;
  if (bySeverity) {
    const sev = (v: Scalar) => {
      const level = normaliseLevel(v);
      return level === undefined ? v : SEVERITY[level];
    };
    value = Array.isArray(o.value) ? (o.value as readonly Scalar[]).map(sev) : sev(o.value as Scalar);
  }
  const constant = value;
  return () => constant;
}

function compileNode(c: Condition, columnOf: (c: Condition) => number): Predicate {
  switch (c.k) {
    case 'or': {
      const a = compileNode(c.a, columnOf);
      const b = compileNode(c.b, columnOf);
      return (e) => a(e) || b(e);
    }
    case 'and': {
      const a = compileNode(c.a, columnOf);
      const b = compileNode(c.b, columnOf);
      return (e) => a(e) && b(e);
    }
    case 'not': {
      const a = compileNode(c.a, columnOf);
      return (e) => !a(e);
    }
    case 'test': {
      const get = operandGetter(c.value, false);
      return (e) => truthy(get(e));
    }
    case 'cmp':
      return compileComparison(c, columnOf);
  }
}

function compileComparison(c: Extract<Condition, { k: 'cmp' }>, columnOf: (c: Condition) => number): Predicate {
  const bySeverity = (isLevelPath(c.left) || isLevelPath(c.right)) && c.op !== '=~' && c.op !== '!~' && c.op !== 'contains' && c.op !== 'starts_with';
  const left = operandGetter(c.left, bySeverity);
  const right = operandGetter(c.right, bySeverity);
  switch (c.op) {
    case '==':
      return (e) => equal(left(e), right(e));
    case '!=':
      return (e) => !equal(left(e), right(e));
    case '<':
      return (e) => order(left(e), right(e)) < 0;
    case '<=':
      return (e) => order(left(e), right(e)) <= 0;
    case '>':
      return (e) => order(left(e), right(e)) > 0;
    case '>=':
      return (e) => order(left(e), right(e)) >= 0;
    case '=~':
    case '!~': {
      const source = (c.right as { value: string }).value;
      let re: RegExp;
      try {
        re = new RegExp(source);
      } catch (err) {
        const reason = err instanceof Error ? err.message.replace(/^Invalid regular expression: \/[\s\S]*\/[a-z]*: /, '') : String(err);
        throw new ConditionError(`invalid regular expression ${JSON.stringify(source)}: ${reason.charAt(0).toLowerCase()}${reason.slice(1)}`, columnOf(c));
      }
      const match = c.op === '=~';
      return (e) => {
        const s = text(left(e));
        return s !== undefined && re.test(s) === match;
      };
    }
    case 'in': {
      const list = right(undefined as unknown as Entry) as readonly unknown[];
      return (e) => {
        const v = left(e);
        if (v === undefined) return false;
        for (let i = 0; i < list.length; i++) if (equal(v, list[i])) return true;
        return false;
      };
    }
    case 'contains':
      return (e) => {
        const v = left(e);
        const r = right(e);
        if (Array.isArray(v)) {
          for (let i = 0; i < v.length; i++) if (equal(v[i], r)) return true;
          return false;
        }
        const s = text(v);
        const t = text(r);
        return s !== undefined && t !== undefined && s.includes(t);
      };
    case 'starts_with':
      return (e) => {
        const s = text(left(e));
        const t = text(right(e));
        return s !== undefined && t !== undefined && s.startsWith(t);
      };
  }
}

/**
 * Parses and compiles `text` into a predicate; throws ConditionError with the column of the
 * fault (for a bad regular expression, the column of the string that holds it).
 */
export function compileCondition(text: string): Predicate {
  const { tree, columns } = parseWithColumns(text);
  return compileNode(tree, (c) => columns.get(c) ?? 1);
}
