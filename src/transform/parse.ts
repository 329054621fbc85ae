// The `parse` step (DESIGN.md §24): reads a field's text as json, logfmt, a regex, an access log
// line or a syslog message; merges what it read into the entry or writes it under `target`.

import { type Entry, normaliseLevel, parseTime } from '../core/entry.js';
import { parseApacheCommon, parseNginxCombined } from './parsers/access-log.js';
import { parseJson } from './parsers/json.js';
import { parseLogfmt } from './parsers/logfmt.js';
import { regexParser } from './parsers/regex.js';
import { parseSyslogText } from './parsers/syslog.js';
import type { Parsed, Parser } from './parsers/types.js';
import { compileGet, compileSet, touched } from './path.js';
import type { ParseConfig, ParseFormat, ValueType } from './spec.js';
import { pathAt, type Step, type StepContext } from './step.js';
import { readTime } from './time.js';

const PARSERS: Readonly<Record<Exclude<ParseFormat, 'regex'>, Parser>> = {
  json: parseJson,
  logfmt: parseLogfmt,
  nginx_combined: parseNginxCombined,
  apache_common: parseApacheCommon,
  syslog: parseSyslogText,
};

const VALUE_TYPES: readonly ValueType[] = ['int', 'float', 'bool', 'time'];
const INT = /^[+-]?\d+$/;
const FLOAT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const BOOLS: Readonly<Record<string, boolean>> = { true: true, false: false, TRUE: true, FALSE: false, True: true, False: false, '1': true, '0': false, yes: true, no: false };

/** A value converted to `type`; undefined when it does not convert. */
export function convert(v: unknown, type: ValueType): unknown {
  switch (type) {
    case 'int':
      if (typeof v === 'number') return Number.isInteger(v) ? v : undefined;
      return typeof v === 'string' && INT.test(v) ? Number(v) : undefined;
    case 'float':
      if (typeof v === 'number') return v;
      return typeof v === 'string' && FLOAT.test(v) ? Number(v) : undefined;
    case 'bool':
      if (typeof v === 'boolean') return v;
      return typeof v === 'string' && Object.hasOwn(BOOLS, v) ? BOOLS[v] : undefined;
    case 'time': {
      const t = readTime(v);
      return t === undefined ? undefined : new Date(t).toISOString();
    }
  }
}

// the keys promoted to the entry's own parts (§4), compared directly: a Set lookup per key and
// kind cost a regex parse of five groups a fifth of its time
const isMessageKey = (k: string): boolean => k === 'msg' || k === 'message';
const isTimeKey = (k: string): boolean => k === 'time' || k === 'ts' || k === 'timestamp';
const isLevelKey = (k: string): boolean => k === 'level' || k === 'lvl' || k === 'severity';

/** Merges into the entry: the entry's own parts, then the rest into `fields`, replacing equal keys. */
function merge(e: Entry, p: Parsed): void {
  touched(e);
  if (!p.promote && e.fields === undefined) {
    // nothing to pick out and nothing to merge with: the parsed object becomes the fields
    e.fields = p.fields;
    if (p.text !== undefined) e.fieldsText = p.text;
    setOwnParts(e, p);
    return;
  }
  let fields: Record<string, unknown> | undefined;
  let gotMessage = false;
  let gotTime = false;
  let gotLevel = false;
  for (const key in p.fields) {
    const value = p.fields[key];
    if (p.promote) {
      if (!gotMessage && isMessageKey(key) && typeof value === 'string') {
        e.message = value;
        gotMessage = true;
        continue;
      }
      if (!gotTime && isTimeKey(key)) {
        const t = parseTime(value);
        if (t !== undefined) {
          e.time = t;
          gotTime = true;
          continue;
        }
      }
      if (!gotLevel && isLevelKey(key)) {
        const level = normaliseLevel(value);
        if (level) {
          e.level = level;
          gotLevel = true;
          continue;
        }
      }
    }
    if (fields === undefined) {
      // a container line's fields may be shared in shape (plainFields): made the entry's own
      fields = e.fields === undefined ? {} : e.plainFields ? { ...e.fields } : e.fields;
      e.plainFields = undefined;
      e.fields = fields;
    }
    fields[key] = value;
  }
  setOwnParts(e, p);
}

/** The time, level and message a format reads as the entry's own (access logs, syslog). */
function setOwnParts(e: Entry, p: Parsed): void {
  if (p.time !== undefined) e.time = p.time;
  if (p.level !== undefined) e.level = p.level;
  if (p.message !== undefined) e.message = p.message;
}

export function createParseStep(cfg: ParseConfig, ctx: StepContext): Step {
  const counters = { processed: 0, parse_failed: 0, bad_values: 0 };
  let parser: Parser | undefined;
  if (cfg.format === 'regex') {
    if (cfg.pattern === undefined) ctx.fault('pattern', 'is required when format = "regex"');
    else {
      try {
        const re = new RegExp(cfg.pattern);
        if (!/\(\?<[A-Za-z_$][\w$]*>/.test(cfg.pattern)) ctx.fault('pattern', 'has no named group (such as (?<status>\\d+)): nothing would become a field');
        parser = regexParser(re, Object.keys(cfg.types).length === 0);
      } catch (err) {
        ctx.fault('pattern', `invalid regular expression ${JSON.stringify(cfg.pattern)}: ${(err as Error).message.replace(/^Invalid regular expression: \/[\s\S]*\/[a-z]*: /, '')}`);
      }
    }
  } else {
    if (cfg.pattern !== undefined) ctx.fault('pattern', 'applies only when format = "regex"');
    parser = PARSERS[cfg.format];
  }
  const fieldPath = pathAt(ctx, 'field', cfg.field);
  const targetPath = cfg.target === '' ? undefined : pathAt(ctx, 'target', cfg.target, true);
  const types: [string, ValueType][] = [];
  for (const [name, type] of Object.entries(cfg.types)) {
    if (typeof type !== 'string' || !VALUE_TYPES.includes(type as ValueType)) {
      ctx.fault(`types.${name}`, `must be one of ${VALUE_TYPES.map((t) => JSON.stringify(t)).join(', ')}, got ${JSON.stringify(type)}`);
    } else types.push([name, type as ValueType]);
  }
  const get = fieldPath ? compileGet(fieldPath) : () => undefined;
  const setTarget = targetPath ? compileSet(targetPath) : undefined;
  const maxBytes = cfg.max_bytes;
  const onError = cfg.on_error;
  const setTag = compileSet({ root: 'fields', keys: ['parse_error'] });
  const id = ctx.id;
  const fail = (e: Entry): boolean => {
    counters.parse_failed++;
    if (onError === 'drop') return false;
    if (onError === 'tag') setTag(e, id);
    return true;
  };
  return {
    counters,
    run(e, now) {
      counters.processed++;
      const text = get(e);
      if (typeof text !== 'string') return fail(e);
      // a character takes at least one byte and at most three (UTF-16 unit → UTF-8)
      if (text.length > maxBytes || (text.length * 3 > maxBytes && Buffer.byteLength(text) > maxBytes)) return fail(e);
      const parsed = parser!(text, now);
      if (parsed === undefined) return fail(e);
      // a conversion changes what the parser's text of the fields says
      if (types.length > 0) parsed.text = undefined;
      for (let i = 0; i < types.length; i++) {
        const [name, type] = types[i]!;
        if (!Object.hasOwn(parsed.fields, name)) continue;
        const v = convert(parsed.fields[name], type);
        if (v === undefined) counters.bad_values++;
        else parsed.fields[name] = v;
      }
      if (setTarget) {
        const out: Record<string, unknown> = { ...parsed.fields };
        if (parsed.time !== undefined && !('time' in out)) out.time = new Date(parsed.time).toISOString();
        if (parsed.level !== undefined) out.level = parsed.level;
        if (parsed.message !== undefined) out.message = parsed.message;
        setTarget(e, out);
      } else merge(e, parsed);
      // the parser looked at the message: the json format need not look again
      if (parsed.quotedAscii === true && text === e.message) e.quotedAscii = text;
      return true;
    },
  };
}
