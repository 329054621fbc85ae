// `format = "regex"`: the named groups of one pattern, compiled once; a group that took no part is
// left out. The groups are read by their numbers (found once from the pattern's text): reading
// `match.groups` costs more than the match.

import { type Level, normaliseLevel, parseTime } from '../../core/entry.js';
import type { Parser } from './types.js';

/**
 * The capture number of each named group, in order, from the pattern's text: every `(` that is
 * not escaped, not in a character class and not `(?:`, `(?=`, `(?!`, `(?<=`, `(?<!` opens a
 * capture. Undefined when the count disagrees with the engine's (a pattern this reading misses).
 */
export function namedGroupNumbers(source: string): [name: string, n: number][] | undefined {
  const groups = captureOpenings(source);
  const out: [string, number][] = [];
  groups.forEach((g, k) => {
    if (g.name !== undefined) out.push([g.name, k + 1]);
  });
  const total = new RegExp(`${source}|`).exec('')!.length - 1;
  return total === groups.length ? out : undefined;
}

/** `source` with each `(?<name>` opening a plain `(` (escapes and character classes skipped as namedGroupNumbers does). */
export function unnamed(source: string): string {
  let out = '';
  let from = 0;
  for (const g of captureOpenings(source)) {
    if (g.name === undefined) continue;
    out += `${source.slice(from, g.at)}(`;
    from = g.nameEnd + 1;
  }
  return out + source.slice(from);
}

type Opening = { readonly at: number; readonly name?: undefined } | { readonly at: number; readonly name: string; readonly nameEnd: number };

/** Each capturing group's `(` in `source`, in order, with a named group's name and the index of its `>`. */
function captureOpenings(source: string): Opening[] {
  const out: Opening[] = [];
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === '\\') {
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      continue;
    }
    if (c === '[') inClass = true;
    else if (c === '(') {
      if (source[i + 1] !== '?') out.push({ at: i });
      else if (source[i + 2] === '<' && source[i + 3] !== '=' && source[i + 3] !== '!') {
        const nameEnd = source.indexOf('>', i + 3);
        out.push({ at: i, name: source.slice(i + 3, nameEnd), nameEnd });
        i = nameEnd;
      }
    }
  }
  return out;
}

/** What a group's name makes of its value when the parse promotes (see merge in transform/parse.ts). */
const FIELD = 0;
const MESSAGE = 1;
const TIME = 2;
const LEVEL = 3;

const kindOf = (name: string): number =>
  name === 'msg' || name === 'message' ? MESSAGE : name === 'time' || name === 'ts' || name === 'timestamp' ? TIME : name === 'level' || name === 'lvl' || name === 'severity' ? LEVEL : FIELD;

/**
 * @param promoteHere the entry's own parts (`msg`, `time`, `level` and their other names) are
 * picked out here as the parse step's merge would pick them out (the first that reads, in the
 * pattern's order; one that does not read stays a field), so the fields are made once, without
 * them, and not copied again: for a parse step without `types` (a conversion comes before the
 * picking out)
 */
export function regexParser(re: RegExp, promoteHere = false): Parser {
  const numbers = namedGroupNumbers(re.source);
  if (numbers === undefined) {
    return (text) => {
      const m = re.exec(text);
      if (m === null || m.groups === undefined) return undefined;
      const fields: Record<string, unknown> = {};
      for (const key in m.groups) {
        const v = m.groups[key];
        if (v !== undefined) fields[key] = v;
      }
      return { fields, promote: true };
    };
  }
  // The same pattern with its named groups unnamed, when nothing refers to a name (`\k<name>`):
  // the numbers are the same, and an exec builds no `groups` object (a five-group match on a
  // 200-byte line 0.22 → 0.15 µs on the shared machine).
  const plain = re.source.includes('\\k<') ? re : new RegExp(unnamed(re.source), re.flags);
  const names = numbers.map(([name]) => name);
  const at = numbers.map(([, n]) => n);
  const count = at.length;
  // The first eight groups are each stored from a place of its own in the code, so each store
  // always sees one name (one store in a loop sees them all and goes megamorphic): a five-group
  // regex parser 0.32–0.38 → 0.29–0.31 µs on the shared machine. The rest, if any, in a loop.
  if (promoteHere) {
    const kinds = names.map(kindOf);
    return (text) => {
      const m = plain.exec(text) as (string | undefined)[] | null;
      if (m === null) return undefined;
      let fields: Record<string, unknown> | undefined;
      let message: string | undefined;
      let time: number | undefined;
      let level: Level | undefined;
      for (let k = 0; k < count; k++) {
        const v = m[at[k]!];
        if (v === undefined) continue;
        const kind = kinds[k];
        if (kind === MESSAGE && message === undefined) {
          message = v;
          continue;
        }
        if (kind === TIME && time === undefined && (time = parseTime(v)) !== undefined) continue;
        if (kind === LEVEL && level === undefined && (level = normaliseLevel(v)) !== undefined) continue;
        (fields ??= {})[names[k]!] = v;
      }
      // nothing left for fields: an empty object promoted leaves the entry's fields as they are
      return fields === undefined ? { fields: {}, promote: true, time, level, message } : { fields, promote: false, time, level, message };
    };
  }
  const [n0 = '', n1 = '', n2 = '', n3 = '', n4 = '', n5 = '', n6 = '', n7 = ''] = names;
  const [a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0] = at;
  return (text) => {
    const m = plain.exec(text) as (string | undefined)[] | null;
    if (m === null) return undefined;
    const fields: Record<string, unknown> = {};
    let v: string | undefined;
    if (count > 0 && (v = m[a0]) !== undefined) fields[n0] = v;
    if (count > 1 && (v = m[a1]) !== undefined) fields[n1] = v;
    if (count > 2 && (v = m[a2]) !== undefined) fields[n2] = v;
    if (count > 3 && (v = m[a3]) !== undefined) fields[n3] = v;
    if (count > 4 && (v = m[a4]) !== undefined) fields[n4] = v;
    if (count > 5 && (v = m[a5]) !== undefined) fields[n5] = v;
    if (count > 6 && (v = m[a6]) !== undefined) fields[n6] = v;
    if (count > 7 && (v = m[a7]) !== undefined) fields[n7] = v;
    for (let k = 8; k < count; k++) {
      v = m[at[k]!];
      if (v !== undefined) fields[names[k]!] = v;
    }
    return { fields, promote: true };
  };
}
