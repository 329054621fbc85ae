// Templates (DESIGN.md §24): strings with `{{ path }}` parts, compiled once into a function of
// the entry; a missing path gives "".

import type { Entry } from '../core/entry.js';
import { compileGet, type Getter, PathSyntaxError, readPath, textOf } from './path.js';

export type Template = (e: Entry) => string;

/** A template that does not compile: the reason and the 1-based column. */
export class TemplateError extends Error {
  constructor(
    readonly reason: string,
    readonly column: number,
  ) {
    super(`${reason} at column ${column}`);
    this.name = 'TemplateError';
  }
}

/** True when `text` has a `{{` part (a constant string needs no per-entry work). */
export const isTemplate = (text: string): boolean => text.includes('{{');

/** What no getter gives: a template's last value before its first entry. */
const missing = Symbol('missing');

/** A value whose text cannot change while it stays the same value (an object's can: it may be changed in place). */
const isPrimitive = (v: unknown): boolean => typeof v !== 'object' || v === null;

/** Compiles `text`; throws TemplateError. */
export function compileTemplate(text: string): Template {
  const literals: string[] = [];
  const getters: Getter[] = [];
  let i = 0;
  let lit = '';
  while (i < text.length) {
    const open = text.indexOf('{{', i);
    if (open < 0) break;
    lit += text.slice(i, open);
    let j = open + 2;
    while (text[j] === ' ') j++;
    let path;
    try {
      const read = readPath(text, j);
      path = read.path;
      j = read.end;
    } catch (err) {
      if (err instanceof PathSyntaxError) throw new TemplateError(err.message, err.at + 1);
      throw err;
    }
    while (text[j] === ' ') j++;
    if (!text.startsWith('}}', j)) throw new TemplateError('expected "}}"', j + 1);
    literals.push(lit);
    lit = '';
    getters.push(compileGet(path));
    i = j + 2;
  }
  lit += text.slice(i);
  if (getters.length === 0) return () => lit;
  const tail = lit;
  if (getters.length === 1) {
    const [head] = literals as [string];
    const [get] = getters as [Getter];
    // the last value and its text: entries in a row mostly give the same (a method, a source),
    // and the same string back lets a `set` step reuse its JSON (compared by identity, no copy)
    let lastValue: unknown = missing;
    let lastText = '';
    return (e) => {
      const v = get(e);
      if (v === lastValue && isPrimitive(v)) return lastText;
      lastValue = v;
      return (lastText = head + textOf(v) + tail);
    };
  }
  if (getters.length === 2) {
    // two parts (`{{ fields.k8s.namespace }}/{{ source }}`): as one, without the loop over arrays
    const [head, middle] = literals as [string, string];
    const [getA, getB] = getters as [Getter, Getter];
    let lastA: unknown = missing;
    let lastB: unknown = missing;
    let lastText = '';
    return (e) => {
      const a = getA(e);
      const b = getB(e);
      if (a === lastA && b === lastB && isPrimitive(a) && isPrimitive(b)) return lastText;
      lastA = a;
      lastB = b;
      return (lastText = head + textOf(a) + middle + textOf(b) + tail);
    };
  }
  const n = getters.length;
  const lastValues: unknown[] = Array.from({ length: n }, () => missing);
  const values: unknown[] = Array.from({ length: n }, () => undefined);
  let lastText = '';
  return (e) => {
    let same = true;
    for (let k = 0; k < n; k++) {
      const v = getters[k]!(e);
      values[k] = v;
      if (same && (v !== lastValues[k] || !isPrimitive(v))) same = false;
    }
    if (same) return lastText;
    let s = '';
    for (let k = 0; k < n; k++) {
      const v = values[k];
      lastValues[k] = v;
      s += literals[k]! + textOf(v);
    }
    return (lastText = s + tail);
  };
}
