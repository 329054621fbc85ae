// A small declarative schema: validates plain TOML data into typed values with defaults,
// refusing unknown keys with their full path. Used for the top-level file and for plugin configs.

import { ConfigError } from '../core/errors.js';

export type Spec =
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
  | { readonly t: 'free' };

export type Fields = Readonly<Record<string, Spec>>;

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

/** Validates `value` against `spec` at `path`; returns the value with defaults applied, frozen. */
export function check(spec: Spec, value: unknown, path: string): unknown {
  switch (spec.t) {
    case 'string': {
      if (value === undefined) {
        if (spec.required) throw new ConfigError(path, 'is required');
        return spec.def;
      }
      if (typeof value !== 'string') throw new ConfigError(path, `must be a string, got ${typeName(value)}`);
      if (spec.oneOf && !spec.oneOf.includes(value)) {
        throw new ConfigError(path, `must be one of ${spec.oneOf.map((v) => JSON.stringify(v)).join(', ')}, got ${JSON.stringify(value)}`);
      }
      if (spec.nonEmpty && value === '') throw new ConfigError(path, 'must not be empty');
      return value;
    }
    case 'number': {
      if (value === undefined) {
        if (spec.required) throw new ConfigError(path, 'is required');
        return spec.def;
      }
      if (typeof value === 'bigint') value = Number(value);
      if (typeof value !== 'number' || Number.isNaN(value)) throw new ConfigError(path, `must be a number, got ${typeName(value)}`);
      if (spec.int && !Number.isInteger(value)) throw new ConfigError(path, `must be an integer, got ${value}`);
      if (spec.min !== undefined && spec.max !== undefined && (value < spec.min || value > spec.max)) {
        throw new ConfigError(path, `must be ${spec.min} to ${spec.max}, got ${value}`);
      }
      if (spec.min !== undefined && value < spec.min) throw new ConfigError(path, `must be >= ${spec.min}, got ${value}`);
      if (spec.max !== undefined && value > spec.max) throw new ConfigError(path, `must be <= ${spec.max}, got ${value}`);
      return value;
    }
    case 'boolean': {
      if (value === undefined) return spec.def;
      if (typeof value !== 'boolean') throw new ConfigError(path, `must be a boolean, got ${typeName(value)}`);
      return value;
    }
    case 'strings': {
      if (value === undefined) return Object.freeze([...(spec.def ?? [])]);
      if (!Array.isArray(value)) throw new ConfigError(path, `must be an array of strings, got ${typeName(value)}`);
      value.forEach((item, i) => {
        if (typeof item !== 'string') throw new ConfigError(joinPath(path, i), `must be a string, got ${typeName(item)}`);
      });
      return Object.freeze([...value]);
    }
    case 'table': {
      if (value === undefined) {
        if (spec.optional) return undefined;
        value = {};
      }
      return checkFields(spec.fields, value, path);
    }
    case 'tables': {
      if (value === undefined) value = [];
      if (!Array.isArray(value)) throw new ConfigError(path, `must be an array of tables, got ${typeName(value)}`);
      if (spec.min !== undefined && value.length < spec.min) throw new ConfigError(path, `needs at least ${spec.min} entr${spec.min === 1 ? 'y' : 'ies'}`);
      return Object.freeze(value.map((item, i) => checkFields(spec.fields, item, joinPath(path, i))));
    }
    case 'free': {
      if (value === undefined) return Object.freeze({});
      if (!isPlainObject(value)) throw new ConfigError(path, `must be a table, got ${typeName(value)}`);
      return value;
    }
  }
}

export function checkFields(fields: Fields, value: unknown, path: string): Readonly<Record<string, unknown>> {
  if (!isPlainObject(value)) throw new ConfigError(path, `must be a table, got ${typeName(value)}`);
  for (const key of Object.keys(value)) {
    if (!(key in fields)) throw new ConfigError(joinPath(path, key), 'unknown key');
  }
  const out: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(fields)) {
    const v = check(spec, value[key], joinPath(path, key));
    if (v !== undefined) out[key] = v;
  }
  return Object.freeze(out);
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
