// `format = "regex"`: the named groups of one pattern, compiled once; a group that took no part is
// left out. The groups are read by their numbers (found once from the pattern's text): reading
// `match.groups` costs more than the match.

import type { Parser } from './types.js';

/**
 * The capture number of each named group, in order, from the pattern's text: every `(` that is
 * not escaped, not in a character class and not `(?:`, `(?=`, `(?!`, `(?<=`, `(?<!` opens a
 * capture. Undefined when the count disagrees with the engine's (a pattern this reading misses).
 */
export function namedGroupNumbers(source: string): [name: string, n: number][] | undefined {
  const out: [string, number][] = [];
  let n = 0;
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
      if (source[i + 1] !== '?') n++;
      else if (source[i + 2] === '<' && source[i + 3] !== '=' && source[i + 3] !== '!') {
        n++;
        const end = source.indexOf('>', i + 3);
        out.push([source.slice(i + 3, end), n]);
      }
    }
  }
  const total = new RegExp(`${source}|`).exec('')!.length - 1;
  return total === n ? out : undefined;
}

export function regexParser(re: RegExp): Parser {
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
  const names = numbers.map(([name]) => name);
  const at = numbers.map(([, n]) => n);
  return (text) => {
    const m = re.exec(text);
    if (m === null) return undefined;
    const fields: Record<string, unknown> = {};
    for (let k = 0; k < at.length; k++) {
      const v = m[at[k]!];
      if (v !== undefined) fields[names[k]!] = v;
    }
    return { fields, promote: true };
  };
}
