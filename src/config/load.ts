// Loads the configuration: file text → ${…} interpolation → TOML → env and flag overrides →
// schema validation → cross-checks. Start and reload both come through here.

import { readFileSync } from 'node:fs';
import { parse as parseToml } from 'smol-toml';
import { ConfigError, errorMessage, throwConfigFaults } from '../core/errors.js';
import { type Config, CONFIG_FIELDS, DEMO_CONFIG } from './schema.js';
import { arrayPaths, checkFields, isPlainObject, overrideFault, parseScalar, scalarPaths, type Spec } from './spec.js';
import { validateConfig } from './validate.js';

/** A typed override from the command line: dotted path → value. */
export type Overrides = ReadonlyMap<string, string | number | boolean>;

export const SCALAR_PATHS: ReadonlyMap<string, Spec> = scalarPaths(CONFIG_FIELDS);
export const ARRAY_PATHS: ReadonlySet<string> = arrayPaths(CONFIG_FIELDS);

const VAR = /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:-|-|:\?)([^}]*))?\}/g;

/** Replaces `${NAME}`, `${NAME:-d}`, `${NAME-d}`, `${NAME:?msg}` and `$$`; comment-only lines are left alone. */
export function interpolate(text: string, env: NodeJS.ProcessEnv): string {
  const lines = text.split('\n');
  return lines
    .map((line, i) => {
      if (line.trimStart().startsWith('#')) return line;
      return line.replace(VAR, (whole, name: string | undefined, op: string | undefined, arg: string | undefined) => {
        if (whole === '$$') return '$';
        const where = `line ${i + 1}: \${${name}}`;
        const value = env[name!];
        let out: string;
        if (op === ':-') out = value === undefined || value === '' ? arg! : value;
        else if (op === '-') out = value === undefined ? arg! : value;
        else if (op === ':?') {
          if (value === undefined || value === '') throw new ConfigError('', `${where}: ${arg || 'variable is not set'}`);
          out = value;
        } else {
          if (value === undefined) throw new ConfigError('', `${where}: variable ${name} is not set and has no default`);
          out = value;
        }
        if (/[\r\n"]/.test(out)) throw new ConfigError('', `${where}: value of ${name} contains a newline or a double quote`);
        return out;
      });
    })
    .join('\n');
}

function setPath(root: Record<string, unknown>, dotted: string, value: unknown): void {
  const parts = dotted.split('.');
  let node = root;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (!isPlainObject(next)) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts.at(-1)!] = value;
}

/** Environment overrides: `LOGGING_LEVEL` → `logging.level`, derived from the schema (no prefix). */
export function envOverrides(env: NodeJS.ProcessEnv): Map<string, string | number | boolean> {
  const out = new Map<string, string | number | boolean>();
  const faults: ConfigError[] = [];
  for (const [path, spec] of SCALAR_PATHS) {
    const name = path.toUpperCase().replaceAll('.', '_');
    const raw = env[name];
    if (raw === undefined) continue;
    try {
      const value = parseScalar(spec, raw);
      const fault = overrideFault(spec, value, path);
      if (fault !== undefined) throw new Error(fault);
      out.set(path, value);
    } catch (err) {
      faults.push(new ConfigError(path, `environment variable ${name}: ${errorMessage(err)}`));
    }
  }
  throwConfigFaults(faults);
  return out;
}

export interface LoadOptions {
  /** path of the TOML file; undefined runs the demo pipeline */
  readonly file?: string;
  readonly env: NodeJS.ProcessEnv;
  readonly flags: Overrides;
}

/**
 * Reads and validates the whole configuration. Throws a ConfigError naming the key path: the
 * first fault for an unreadable file, a TOML syntax error or a missing `${VAR}` (nothing after
 * them can be checked); else every fault of the first stage that has any (environment overrides,
 * schema, cross-checks), in file order, as a ConfigErrors when there are several.
 */
export function loadConfig(opts: LoadOptions): Config {
  let raw: Record<string, unknown>;
  if (opts.file === undefined) {
    raw = structuredClone(DEMO_CONFIG);
  } else {
    let text: string;
    try {
      text = readFileSync(opts.file, 'utf8');
    } catch (err) {
      throw new ConfigError('', `cannot read ${opts.file}: ${errorMessage(err)}`);
    }
    try {
      raw = parseToml(interpolate(text, opts.env)) as Record<string, unknown>;
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      throw new ConfigError('', `${opts.file}: ${errorMessage(err)}`);
    }
  }
  for (const [path, value] of envOverrides(opts.env)) setPath(raw, path, value);
  for (const [path, value] of opts.flags) setPath(raw, path, value);
  const config = checkFields(CONFIG_FIELDS, raw, '') as unknown as Config;
  // Cross-checks run only on a configuration the schema passed: they compare typed names and
  // ports, and a clash reported next to the schema fault that caused it would only mislead.
  return validateConfig(config);
}
