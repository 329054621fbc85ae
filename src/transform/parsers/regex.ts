// `format = "regex"`: the named groups of one pattern, compiled once; a group that took no part is left out.

import type { Parser } from './types.js';

export function regexParser(re: RegExp): Parser {
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
