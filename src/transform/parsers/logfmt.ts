// `format = "logfmt"`: `key=value` pairs separated by spaces; values bare or double-quoted with
// backslash escapes; a bare key is `true` (as go-logfmt reads it).

import type { Parsed } from './types.js';

const isSpace = (c: number) => c === 32 || c === 9;

/** The pairs of `text`; undefined when a quote is left open, a key is empty, or there is no pair. */
export function parseLogfmt(text: string): Parsed | undefined {
  const fields: Record<string, unknown> = {};
  let i = 0;
  let pairs = 0;
  const n = text.length;
  while (i < n) {
    while (i < n && isSpace(text.charCodeAt(i))) i++;
    if (i >= n) break;
    const keyStart = i;
    while (i < n && !isSpace(text.charCodeAt(i)) && text.charCodeAt(i) !== 61 /* = */ && text.charCodeAt(i) !== 34 /* " */) i++;
    if (i === keyStart) return undefined;
    const key = text.slice(keyStart, i);
    if (i >= n || text.charCodeAt(i) !== 61) {
      if (i < n && text.charCodeAt(i) === 34) return undefined;
      fields[key] = true;
      pairs++;
      continue;
    }
    i++; // =
    if (text.charCodeAt(i) === 34) {
      let value = '';
      let j = i + 1;
      let closed = false;
      let from = j;
      for (; j < n; j++) {
        const c = text.charCodeAt(j);
        if (c === 92 /* \ */) {
          value += text.slice(from, j);
          const e = text[j + 1];
          value += e === 'n' ? '\n' : e === 't' ? '\t' : e === 'r' ? '\r' : (e ?? '');
          j++;
          from = j + 1;
        } else if (c === 34) {
          value += text.slice(from, j);
          closed = true;
          break;
        }
      }
      if (!closed) return undefined;
      fields[key] = value;
      i = j + 1;
    } else {
      const start = i;
      while (i < n && !isSpace(text.charCodeAt(i))) i++;
      fields[key] = text.slice(start, i);
    }
    pairs++;
  }
  return pairs === 0 ? undefined : { fields, promote: true };
}
