// A small declarative schema: validates plain TOML data into typed values with defaults,
// refusing unknown keys with their full path. Used for the top-level file and for plugin configs.
// A pass collects every fault it finds rather than stopping at the first.

import { ConfigError, throwConfigFaults } from './errors.js';

/**
 * What the operator's reference (docs/configuration.md, `check --explain`) says about a key.
 * `doc` is required by the reference generator, which names every key that lacks it.
 */
export interface KeyDoc {
  /** one line of meaning */
  readonly doc?: string;
  /** unit when the key's name does not say it (`_ms`, `_bytes`, `_mb`, `_hours`, `_days` do) */
  readonly unit?: string;
  /** meaning of each allowed value, for keys whose values choose a behaviour (formats, outputs) */
  readonly values?: Readonly<Record<string, string>>;
  /** what the reference says the default is, when it is computed at run time (the machine's host name) */
  readonly defDoc?: string;
}

export type Spec = KeyDoc &
  (
    | { readonly t: 'string'; readonly def?: string; readonly required?: boolean; readonly oneOf?: readonly string[]; readonly nonEmpty?: boolean }
    | {
        readonly t: 'number';
        readonly def?: number;
        readonly required?: boolean;
        readonly int?: boolean;
        readonly min?: number;
        readonly max?: number;
      }
    | { readonly t: 'boolean'; readonly def?: boolean }
    | { readonly t: 'strings'; readonly def?: readonly string[] }
    | { readonly t: 'table'; readonly fields: Fields; readonly optional?: boolean }
    | { readonly t: 'tables'; readonly fields: Fields; readonly min?: number }
    /**
     * An array of tables whose keys depend on one of them, `tag` (a transform step's `type`):
     * each table is checked against `common` plus its variant's fields.
     */
    | { readonly t: 'variants'; readonly tag: string; readonly common: Fields; readonly variants: Readonly<Record<string, PluginSpec>> }
    | { readonly t: 'free' }
  );

export type Fields = Readonly<Record<string, Spec>>;

/** A plugin type as the registries and the reference know it: one line of meaning and its `config` keys. */
export interface PluginSpec {
  readonly doc: string;
  readonly fields: Fields;
}

export function joinPath(base: string, key: string | number): string {
  if (typeof key === 'number') return `${base}[${key}]`;
  return base ? `${base}.${key}` : key;
}

function typeName(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  if (value instanceof Date) return 'date';
  return typeof value;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

/** Bytes in the MiB of `_mb` keys. */
export const MiB = 1024 * 1024;

/**
 * Keys whose name gives an operator's unit are converted once, here, to the unit the code works
 * in: the checked table carries `max_size_bytes` for the file's `max_size_mb`, `retention_ms` for
 * `retention_hours`, and no code after validation converts again. Faults still name the key as
 * the file spells it. The product is exact for `_mb` (a power of two), so `bytes / 2 ** 20` gives
 * back the operator's figure where a message quotes it.
 */
const CONVERTED_UNITS: readonly (readonly [suffix: string, to: string, factor: number])[] = [
  ['_mb', '_bytes', MiB],
  ['_hours', '_ms', 3_600_000],
  ['_days', '_ms', 86_400_000],
];

/** The key and factor a number key is carried under after validation; the key itself when its unit is the code's. */
function convertedKey(key: string): { readonly key: string; readonly factor: number } {
  for (const [suffix, to, factor] of CONVERTED_UNITS) if (key.endsWith(suffix)) return { key: key.slice(0, -suffix.length) + to, factor };
  return { key, factor: 1 };
}

/** The longest duration a Node timer takes (2^31 - 1 ms); every `_ms` key is bounded by it. */
export const MAX_DURATION_MS = 2_147_483_647;

/** Where a validation pass records its faults instead of throwing at the first one. */
type Faults = ConfigError[];

/**
 * Validates `value` against `spec` at `path`; returns the value with defaults applied, frozen.
 * A fault is pushed to `faults` (the result is then undefined or partial) and checking goes on.
 */
function check(spec: Spec, value: unknown, path: string, faults: Faults): unknown {
  const fault = (reason: string, at = path): undefined => {
    faults.push(new ConfigError(at, reason));
    return undefined;
  };
  switch (spec.t) {
    case 'string': {
      if (value === undefined) return spec.required ? fault('is required') : spec.def;
      if (typeof value !== 'string') return fault(`must be a string, got ${typeName(value)}`);
      if (spec.oneOf && !spec.oneOf.includes(value)) {
        return fault(`must be one of ${spec.oneOf.map((v) => JSON.stringify(v)).join(', ')}, got ${JSON.stringify(value)}`);
      }
      if (spec.nonEmpty && value === '') return fault('must not be empty');
      return value;
    }
    case 'number': {
      if (value === undefined) return spec.required ? fault('is required') : spec.def;
      if (typeof value === 'bigint') value = Number(value);
      if (typeof value !== 'number' || Number.isNaN(value)) return fault(`must be a number, got ${typeName(value)}`);
      if (!Number.isFinite(value)) return fault(`must be a finite number, got ${value}`);
      if (spec.int && !Number.isInteger(value)) return fault(`must be an integer, got ${value}`);
      // Node runs a longer timer after 1 ms: "wait very long" would become "do not wait"
      if (path.endsWith('_ms') && value > MAX_DURATION_MS) return fault(`must be <= ${MAX_DURATION_MS} (about 24.8 days), got ${value}`);
      if (spec.min !== undefined && spec.max !== undefined && (value < spec.min || value > spec.max)) {
        return fault(`must be ${spec.min} to ${spec.max}, got ${value}`);
      }
      if (spec.min !== undefined && value < spec.min) return fault(`must be >= ${spec.min}, got ${value}`);
      if (spec.max !== undefined && value > spec.max) return fault(`must be <= ${spec.max}, got ${value}`);
      return value;
    }
    case 'boolean': {
      if (value === undefined) return spec.def;
      if (typeof value !== 'boolean') return fault(`must be a boolean, got ${typeName(value)}`);
      return value;
    }
    case 'strings': {
      if (value === undefined) return Object.freeze([...(spec.def ?? [])]);
      if (!Array.isArray(value)) return fault(`must be an array of strings, got ${typeName(value)}`);
      value.forEach((item, i) => {
        if (typeof item !== 'string') fault(`must be a string, got ${typeName(item)}`, joinPath(path, i));
      });
      return Object.freeze([...value]);
    }
    case 'table': {
      if (value === undefined) {
        if (spec.optional) return undefined;
        value = {};
      }
      return checkTable(spec.fields, value, path, faults);
    }
    case 'tables': {
      if (value === undefined) value = [];
      if (!Array.isArray(value)) return fault(`must be an array of tables, got ${typeName(value)}`);
      if (spec.min !== undefined && value.length < spec.min) fault(`needs at least ${spec.min} entr${spec.min === 1 ? 'y' : 'ies'}`);
      return Object.freeze(value.map((item, i) => checkTable(spec.fields, item, joinPath(path, i), faults)));
    }
    case 'variants': {
      if (value === undefined) value = [];
      if (!Array.isArray(value)) return fault(`must be an array of tables, got ${typeName(value)}`);
      const names = Object.keys(spec.variants);
      return Object.freeze(
        value.map((item, i) => {
          const at = joinPath(path, i);
          if (!isPlainObject(item)) return fault(`must be a table, got ${typeName(item)}`, at);
          const tag = item[spec.tag];
          if (tag === undefined) return fault('is required', joinPath(at, spec.tag));
          if (typeof tag !== 'string' || !Object.hasOwn(spec.variants, tag)) {
            return fault(`must be one of ${names.map((v) => JSON.stringify(v)).join(', ')}, got ${JSON.stringify(tag)}`, joinPath(at, spec.tag));
          }
          return checkTable({ ...spec.common, ...spec.variants[tag]!.fields }, item, at, faults);
        }),
      );
    }
    case 'free': {
      if (value === undefined) return Object.freeze({});
      if (!isPlainObject(value)) return fault(`must be a table, got ${typeName(value)}`);
      return value;
    }
  }
}

/**
 * Checks a table's keys in the order the file gives them (so faults come out in file order),
 * then the keys it leaves out (defaults, or `is required`); the result keeps the schema's key order.
 */
function checkTable(fields: Fields, value: unknown, path: string, faults: Faults): Readonly<Record<string, unknown>> | undefined {
  if (!isPlainObject(value)) {
    faults.push(new ConfigError(path, `must be a table, got ${typeName(value)}`));
    return undefined;
  }
  const checked = new Map<string, unknown>();
  for (const key of Object.keys(value)) {
    const spec = Object.hasOwn(fields, key) ? fields[key] : undefined; // not `toString` and the like
    if (spec === undefined) faults.push(new ConfigError(joinPath(path, key), 'unknown key'));
    else checked.set(key, check(spec, value[key], joinPath(path, key), faults));
  }
  const out: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(fields)) {
    const v = checked.has(key) ? checked.get(key) : check(spec, undefined, joinPath(path, key), faults);
    if (v === undefined) continue;
    if (spec.t !== 'number') out[key] = v;
    else {
      const to = convertedKey(key);
      if (to.key !== key && Object.hasOwn(fields, to.key)) throw new Error(`${joinPath(path, key)} and ${to.key} would both be carried as ${to.key}`);
      out[to.key] = (v as number) * to.factor;
    }
  }
  return Object.freeze(out);
}

/**
 * Validates a table against `fields`; returns it with defaults applied, frozen. Throws every fault
 * found, in file order: a single ConfigError, or a ConfigErrors when there are several.
 */
export function checkFields(fields: Fields, value: unknown, path: string): Readonly<Record<string, unknown>> {
  const faults: Faults = [];
  const out = checkTable(fields, value, path, faults);
  throwConfigFaults(faults);
  return out!;
}

/** Every scalar key path outside arrays, with its spec: the source of env and flag overrides. */
export function scalarPaths(fields: Fields, prefix = ''): Map<string, Spec> {
  const out = new Map<string, Spec>();
  for (const [key, spec] of Object.entries(fields)) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (spec.t === 'table') {
      for (const [p, s] of scalarPaths(spec.fields, path)) out.set(p, s);
    } else if (spec.t === 'string' || spec.t === 'number' || spec.t === 'boolean') {
      out.set(path, spec);
    }
  }
  return out;
}

/** Paths of arrays of tables (`pipelines`), to tell "inside an array" from "unknown". */
export function arrayPaths(fields: Fields, prefix = ''): Set<string> {
  const out = new Set<string>();
  for (const [key, spec] of Object.entries(fields)) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (spec.t === 'table') for (const p of arrayPaths(spec.fields, path)) out.add(p);
    else if (spec.t === 'tables' || spec.t === 'strings') out.add(path);
  }
  return out;
}

/**
 * Why an override's value (from a flag or the environment, already parsed) does not fit the key
 * at `path`: the schema's reason, or undefined when it fits. Overrides are checked here, before
 * they meet the file, so their faults can name where they came from.
 */
export function overrideFault(spec: Spec, value: unknown, path: string): string | undefined {
  const faults: Faults = [];
  check(spec, value, path, faults);
  return faults[0]?.message.slice(path.length + 2);
}

/** Parses a string (from a flag or the environment) into the type the spec wants. */
export function parseScalar(spec: Spec, raw: string): string | number | boolean {
  if (spec.t === 'boolean') {
    if (raw === 'true' || raw === '1') return true;
    if (raw === 'false' || raw === '0') return false;
    throw new Error(`expected true or false, got ${JSON.stringify(raw)}`);
  }
  if (spec.t === 'number') {
    const n = raw.trim() === '' ? Number.NaN : Number(raw);
    if (Number.isNaN(n)) throw new Error(`expected a number, got ${JSON.stringify(raw)}`);
    return n;
  }
  return raw;
}
