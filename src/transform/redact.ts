// The `redact` step (DESIGN.md §24): replaces every match of patterns and presets in the string
// values of paths (nested objects and arrays included) by a replacement or a salted hash.
// Rules are compiled once; a value is copied only where something in it changed.

import { QUOTED_ASCII } from '../core/entry-json.js';
import { compileGet, compileSet, type Getter, type Setter } from './path.js';
import type { RedactConfig, RedactPreset } from './spec.js';
import { pathAt, type Step, type StepContext } from './step.js';

/** The Luhn check of a run of digits (separators already removed). */
export function luhn(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

interface Rule {
  readonly re: RegExp;
  /** the match's first group is kept in front of the replacement (`Bearer `) */
  readonly keepsFirstGroup?: true;
  /** a match that this says no to is left as it is (a card number that fails Luhn) */
  readonly accept?: (match: string) => boolean;
  /** text without this cannot match: the pattern is not run on it */
  readonly needs?: string;
  /**
   * The pattern matches from a character that cannot start a run (an email's `@`) and the match
   * extends to the left over the characters this accepts (at least one): scanning from each
   * character of a long run for one that might start a match costs far more. `needs` is then the
   * pattern's first character, where it is tried.
   */
  readonly extendsLeft?: (code: number) => boolean;
  /** a quick test text must pass for the pattern to be run on it (a necessary condition) */
  readonly possible?: (s: string) => boolean;
}

/**
 * 13 digits with at most one space or dash between two of them: /\d(?:[ -]?\d){12}/ with its
 * repetition written out, which the engine runs as one pass (0.13 µs a 200-byte access log line,
 * against 1 µs for the repetition and 0.35 for a scan by charCodeAt of the runs of digits,
 * spaces and dashes around every 13th character).
 */
const CARD_RUN = new RegExp(`\\d${'[ -]?\\d'.repeat(12)}`);

/** True when `s` has what a card number needs: the same as /\d(?:[ -]?\d){12}/.test(s). */
export function hasCardRun(s: string): boolean {
  return CARD_RUN.test(s);
}

/** Characters of an email's local part (as the preset reads it): letters, digits, `._%+-`. */
const isLocalPart = (c: number): boolean =>
  (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 46 || c === 95 || c === 37 || c === 43 || c === 45;

const PRESETS: Readonly<Record<RedactPreset, Rule>> = {
  // 13–19 digits, single spaces or dashes between them, not inside a longer run of digits
  credit_card: { re: /(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d])/g, accept: (m) => luhn(m.replace(/[ -]/g, '')), possible: hasCardRun },
  jwt: { re: /\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g, needs: 'eyJ' },
  bearer_token: { re: /\b(Bearer\s+)[A-Za-z0-9\-._~+/]+=*/gi, keepsFirstGroup: true },
  aws_access_key: { re: /\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b/g },
  // the look-behind starts a match only where a run of address characters starts: without it a
  // long run is scanned again from each of its characters
  email: { re: /@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g, needs: '@', extendsLeft: isLocalPart },
  ipv4: { re: /(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?![\d.]*\d)/g },
};

/** Applied in this order whatever order the presets are listed in: a bearer JWT is one match. */
const PRESET_ORDER: readonly RedactPreset[] = ['bearer_token', 'jwt', 'credit_card', 'aws_access_key', 'email', 'ipv4'];

/**
 * `s` with each match of `sticky` (tried only where `anchor`, its first character, is), extended to
 * the left over `extendsLeft`, replaced by `replace`. The same matches as the pattern searched
 * globally, found by indexOf instead of the regular expression's own scan (an email in a 200-byte
 * line: 0.3 µs by the scan).
 */
function replaceExtended(s: string, sticky: RegExp, anchor: string, extendsLeft: (code: number) => boolean, replace: (s: string, start: number, end: number) => string): string {
  let out = '';
  let copied = 0;
  // p only grows (past an empty match too): the loop ends by the length of s
  for (let p = s.indexOf(anchor); p >= 0; ) {
    sticky.lastIndex = p;
    // test, not exec: where the match ends is all that is read (no match array made)
    if (!sticky.test(s)) {
      p = s.indexOf(anchor, p + 1);
      continue;
    }
    const end = sticky.lastIndex;
    let start = p;
    while (start > copied && extendsLeft(s.charCodeAt(start - 1))) start--;
    if (start !== p) {
      out += s.slice(copied, start) + replace(s, start, end);
      copied = end;
    }
    p = s.indexOf(anchor, end > p ? end : p + 1);
  }
  return copied === 0 ? s : out + s.slice(copied);
}

export function createRedactStep(cfg: RedactConfig, ctx: StepContext): Step {
  const counters = { processed: 0, redacted: 0 };
  const rules: Rule[] = [];
  if (cfg.patterns.length === 0 && cfg.presets.length === 0) ctx.fault('', 'needs at least one of patterns, presets');
  cfg.patterns.forEach((p, j) => {
    try {
      rules.push({ re: new RegExp(p, 'g') });
    } catch (err) {
      ctx.fault(`patterns[${j}]`, `invalid regular expression ${JSON.stringify(p)}: ${(err as Error).message.replace(/^Invalid regular expression: \/[\s\S]*\/[a-z]*: /, '')}`);
    }
  });
  cfg.presets.forEach((p, j) => {
    if (!Object.hasOwn(PRESETS, p)) ctx.fault(`presets[${j}]`, `must be one of ${PRESET_ORDER.map((x) => JSON.stringify(x)).join(', ')}, got ${JSON.stringify(p)}`);
  });
  for (const name of PRESET_ORDER) if (cfg.presets.includes(name)) rules.push(PRESETS[name]);
  const targets: { get: Getter; set: Setter }[] = [];
  cfg.fields.forEach((text, j) => {
    const path = pathAt(ctx, `fields[${j}]`, text);
    if (path) targets.push({ get: compileGet(path), set: compileSet(path) });
  });

  const { replacement, salt } = cfg;
  // what a match becomes is printable ASCII without `\`: a text known to be such (Entry.quotedAscii) stays such
  const keepsQuotedAscii = cfg.hash || QUOTED_ASCII.test(replacement);
  // node:crypto taken once, when a hashing step is compiled: the primary validates every
  // pipeline's steps and never needs it (~2 MiB of its RSS)
  const createHash = cfg.hash ? process.getBuiltinModule('node:crypto').createHash : undefined;
  const masked = createHash ? (m: string) => `sha256:${createHash('sha256').update(salt + m).digest('hex').slice(0, 16)}` : () => replacement;
  // one replacer per rule, made once: the per-entry path allocates no closure, nor an array of
  // the groups (a replace passes the first group, or the offset, second: read only when kept)
  const replacers = rules.map((rule) => (match: string, first?: unknown): string => {
    if (match === '' || (rule.accept && !rule.accept(match))) return match;
    counters.redacted++;
    if (rule.keepsFirstGroup === true) {
      const kept = first as string;
      return kept + masked(match.slice(kept.length));
    }
    return masked(match);
  });

  // the patterns that extend to the left, made sticky: tried at each of their first character;
  // their match (never empty) is cut out of the text only when its replacement reads it
  const stickies = rules.map((rule) => (rule.extendsLeft ? new RegExp(rule.re.source, 'y') : undefined));
  const extendedReplacers = rules.map((rule, i): ((s: string, start: number, end: number) => string) =>
    createHash === undefined && rule.accept === undefined && rule.keepsFirstGroup === undefined
      ? () => {
          counters.redacted++;
          return replacement;
        }
      : (s, start, end) => replacers[i]!(s.slice(start, end)),
  );
  const redactString = (s: string): string => {
    for (let i = 0; i < rules.length; i++) {
      const rule = rules[i]!;
      if (rule.extendsLeft !== undefined) {
        s = replaceExtended(s, stickies[i]!, rule.needs!, rule.extendsLeft, extendedReplacers[i]!);
        continue;
      }
      if (rule.needs !== undefined && !s.includes(rule.needs)) continue;
      if (rule.possible !== undefined && !rule.possible(s)) continue;
      const re = rule.re;
      re.lastIndex = 0;
      s = s.replace(re, replacers[i]!);
    }
    return s;
  };
  /** the value with its strings redacted: the same value when nothing changed, else a copy */
  const redactValue = (v: unknown, depth: number): unknown => {
    if (typeof v === 'string') return redactString(v);
    if (typeof v !== 'object' || v === null || depth > 64) return v;
    if (Array.isArray(v)) {
      let out: unknown[] | undefined;
      for (let i = 0; i < v.length; i++) {
        const r = redactValue(v[i], depth + 1);
        if (r !== v[i]) (out ??= v.slice())[i] = r;
      }
      return out ?? v;
    }
    let out: Record<string, unknown> | undefined;
    const o = v as Record<string, unknown>;
    for (const k in o) {
      const r = redactValue(o[k], depth + 1);
      if (r !== o[k]) (out ??= { ...o })[k] = r;
    }
    return out ?? v;
  };

  return {
    counters,
    run(e) {
      counters.processed++;
      for (let i = 0; i < targets.length; i++) {
        const t = targets[i]!;
        const v = t.get(e);
        if (v === undefined) continue;
        const r = redactValue(v, 0);
        if (r === v) continue;
        const known = v === e.quotedAscii;
        t.set(e, r);
        if (known && keepsQuotedAscii) e.quotedAscii = r as string;
      }
      return true;
    },
  };
}
