// Include/exclude filters on "<source> <level> <message>", compiled once at build.

import type { FilterConfig } from '../config/schema.js';
import { ConfigError, errorMessage } from '../core/errors.js';
import type { Entry } from '../core/entry.js';

export interface CompiledFilter {
  readonly include: boolean;
  readonly all: boolean;
  readonly patterns: readonly RegExp[];
}

/** V8's reason alone: "Invalid regular expression: /(a/: Unterminated group" → "unterminated group". */
function regexReason(err: unknown): string {
  const reason = errorMessage(err).replace(/^Invalid regular expression: \/[\s\S]*\/[a-z]*: /, '');
  return reason.charAt(0).toLowerCase() + reason.slice(1);
}

/** Compiles every pattern; an invalid one fails the build naming `filters[i].patterns[j]`. */
export function compileFilters(filters: readonly FilterConfig[]): CompiledFilter[] {
  return filters.map((f, i) => ({
    include: f.type === 'include',
    all: f.logic === 'and',
    patterns: f.patterns.map((p, j) => {
      try {
        return new RegExp(p);
      } catch (err) {
        throw new ConfigError(`filters[${i}].patterns[${j}]`, `invalid regular expression ${JSON.stringify(p)}: ${regexReason(err)}`);
      }
    }),
  }));
}

/** The text filters match on: non-empty parts joined by one space. */
export function matchText(entry: Entry): string {
  let s = entry.source;
  if (entry.level) s = s ? `${s} ${entry.level}` : entry.level;
  if (entry.message) s = s ? `${s} ${entry.message}` : entry.message;
  return s;
}

/** Verdict of one filter: true passes. */
export function passes(filter: CompiledFilter, text: string): boolean {
  if (filter.patterns.length === 0) return true;
  const matched = filter.all ? filter.patterns.every((re) => re.test(text)) : filter.patterns.some((re) => re.test(text));
  return filter.include ? matched : !matched;
}
