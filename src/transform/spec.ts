// The keys of `[[pipelines.flow.transforms]]` (DESIGN.md §24): those every step has, and each
// step type's own, as the configuration schema and the generated reference read them.

import type { Fields, PluginSpec } from '../core/spec.js';

export type TransformType = 'parse' | 'set' | 'rename' | 'delete' | 'keep' | 'redact' | 'drop' | 'sample' | 'throttle';

export type ParseFormat = 'json' | 'logfmt' | 'regex' | 'nginx_combined' | 'apache_common' | 'syslog';
export type ValueType = 'int' | 'float' | 'bool' | 'time';
export type RedactPreset = 'email' | 'ipv4' | 'credit_card' | 'bearer_token' | 'jwt' | 'aws_access_key';

/** One step as validated: the common keys and its type's own (defaults applied). */
export interface TransformConfig {
  readonly type: TransformType;
  /** names the step's counters; default `<type>_<index>` */
  readonly id?: string;
  /** a condition (see condition.ts); the step runs only on entries for which it holds */
  readonly when?: string;
  readonly [key: string]: unknown;
}

export interface ParseConfig extends TransformConfig {
  readonly format: ParseFormat;
  readonly field: string;
  readonly target: string;
  readonly pattern?: string;
  readonly types: Readonly<Record<string, unknown>>;
  readonly on_error: 'keep' | 'drop' | 'tag';
  readonly max_bytes: number;
}

export interface SetConfig extends TransformConfig {
  readonly fields: Readonly<Record<string, unknown>>;
  readonly if_missing: boolean;
}

export interface RenameConfig extends TransformConfig {
  readonly fields: Readonly<Record<string, unknown>>;
}

export interface PathListConfig extends TransformConfig {
  readonly fields: readonly string[];
}

export interface RedactConfig extends TransformConfig {
  readonly fields: readonly string[];
  readonly patterns: readonly string[];
  readonly presets: readonly string[];
  readonly replacement: string;
  readonly hash: boolean;
  readonly salt: string;
}

export interface SampleConfig extends TransformConfig {
  readonly rate: number;
  readonly key: string;
}

export interface ThrottleConfig extends TransformConfig {
  readonly rate: number;
  readonly burst: number;
  readonly key: string;
  readonly max_keys: number;
}

export const TRANSFORM_COMMON_FIELDS: Fields = {
  type: { t: 'string', required: true, doc: 'the step type (see the step sections below)' },
  id: { t: 'string', nonEmpty: true, doc: "names the step's counters (`transforms.<id>.processed` in the status report, `component` in /metrics); default `<type>_<index>`" },
  when: { t: 'string', doc: 'a condition: the step runs only on entries for which it holds, others pass unchanged (see docs/transforms.md)' },
};

export const TRANSFORM_SPECS: Readonly<Record<TransformType, PluginSpec>> = {
  parse: {
    doc: 'parses the text of a field into fields; counts `parse_failed`',
    fields: {
      format: {
        t: 'string',
        required: true,
        oneOf: ['json', 'logfmt', 'regex', 'nginx_combined', 'apache_common', 'syslog'],
        doc: 'how the text is read',
        values: {
          json: 'a JSON object; `msg`/`message`, `time`/`ts`/`timestamp` and `level`/`lvl`/`severity` become the entry\'s',
          logfmt: '`key=value` pairs, values optionally double-quoted; a bare key is `true`',
          regex: 'the named groups of `pattern` become fields',
          nginx_combined: "nginx's `combined` access log line: client, user, time, method, path, protocol, status, bytes, referrer, user_agent",
          apache_common: "Apache's common log format: client, user, time, method, path, protocol, status, bytes",
          syslog: 'an RFC 5424 or RFC 3164 message: time, level and message, the rest in `fields.syslog`',
        },
      },
      field: { t: 'string', def: 'message', nonEmpty: true, doc: 'the path whose text is parsed' },
      target: { t: 'string', def: '', doc: 'a path under `fields` that receives everything parsed; "" merges into `fields` (and sets message, time, level)' },
      pattern: { t: 'string', doc: '`format = "regex"` only: a JavaScript regular expression with named groups' },
      types: { t: 'free', doc: 'a table of parsed field name → `"int"`, `"float"`, `"bool"` or `"time"`; a value that does not convert counts `bad_values` and stays text' },
      on_error: {
        t: 'string',
        def: 'keep',
        oneOf: ['keep', 'drop', 'tag'],
        doc: 'what happens to an entry whose text does not parse (every case counts `parse_failed`)',
        values: { keep: 'pass it unchanged', drop: 'drop it (done at once, not a loss)', tag: 'pass it with `fields.parse_error` = the step id' },
      },
      max_bytes: { t: 'number', def: 65536, int: true, min: 1, doc: 'longer text is not parsed (counted `parse_failed`)' },
    },
  },
  set: {
    doc: 'writes values to paths: templates (`"{{ fields.k8s.namespace }}/{{ source }}"`), numbers or booleans',
    fields: {
      fields: { t: 'free', doc: 'required: a table of path → template, number or boolean' },
      if_missing: { t: 'boolean', def: false, doc: 'write only paths that are absent' },
    },
  },
  rename: {
    doc: 'moves values from one path to another; a missing old path does nothing',
    fields: { fields: { t: 'free', doc: 'required: a table of old path → new path' } },
  },
  delete: {
    doc: 'removes fields',
    fields: { fields: { t: 'strings', doc: 'required: the paths to remove, each under `fields.`' } },
  },
  keep: {
    doc: 'removes every field but those listed (an allow list)',
    fields: { fields: { t: 'strings', doc: 'required: the paths to keep, each under `fields.`' } },
  },
  redact: {
    doc: 'replaces what matches patterns or presets in string values; counts `redacted` (matches replaced)',
    fields: {
      fields: { t: 'strings', def: ['message'], doc: 'paths whose string values are scanned, values nested in objects and arrays included' },
      patterns: { t: 'strings', def: [], doc: 'JavaScript regular expressions; at least one of `patterns`, `presets`' },
      presets: { t: 'strings', def: [], doc: 'any of `email`, `ipv4`, `credit_card` (Luhn-checked), `bearer_token` (keeps the word `Bearer`), `jwt`, `aws_access_key`' },
      replacement: { t: 'string', def: '[REDACTED]', doc: 'what a match becomes' },
      hash: { t: 'boolean', def: false, doc: 'a match becomes `sha256:` + the first 16 hex digits of SHA-256 of `salt` + the match, instead of `replacement`' },
      salt: { t: 'string', def: '', doc: 'prefixed to each match before hashing' },
    },
  },
  drop: {
    doc: 'drops the entries its `when` (required) holds for; counted `dropped`, not a loss',
    fields: {},
  },
  sample: {
    doc: 'keeps 1 in `rate` entries (or keys); counts `sampled_out`',
    fields: {
      rate: { t: 'number', required: true, min: 1, unit: 'entries', doc: 'keep 1 in this many' },
      key: { t: 'string', def: '', doc: 'a template; entries with one key value are kept or dropped together, the same on every node; "" draws every entry alone' },
    },
  },
  throttle: {
    doc: 'a token bucket per key value; entries over it are dropped and counted `throttled`',
    fields: {
      rate: { t: 'number', required: true, min: 0.000001, unit: 'entries/s', doc: 'refill rate per key' },
      burst: { t: 'number', def: 0, min: 0, unit: 'entries', doc: 'bucket size; 0 means equal to `rate`' },
      key: { t: 'string', required: true, doc: 'a template naming the bucket, e.g. `"{{ fields.k8s.namespace }}"`' },
      max_keys: { t: 'number', def: 10000, int: true, min: 1, doc: 'most buckets kept; beyond it the least recently used is forgotten' },
    },
  },
};
