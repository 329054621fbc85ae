// Splits the command line into sade's part and the `--dotted.key=value` configuration
// overrides, typed by the schema. Faults are usage errors (exit 2).

import { ARRAY_PATHS, SCALAR_PATHS } from './config/load.js';
import { overrideFault, parseScalar } from './config/spec.js';
import { errorMessage, UsageError } from './core/errors.js';

/** Where `logrelay top` looks without a URL: the admin endpoint's address in the compose files. */
export const DEFAULT_ADMIN_URL = 'http://127.0.0.1:9598';

/** Options that belong to the commands themselves, not to the configuration. */
const COMMAND_OPTIONS = new Set(['c', 'config', 'h', 'help', 'v', 'version', 'ca', 'cert', 'key', 'explain', 'once', 'fleet']);

/**
 * The commands' boolean flags. sade (mri) does not know they take no value and reads
 * `--once URL` as once=URL; they are moved after the positional arguments, where nothing follows
 * them, and `--once=true`/`--once=false` are read here.
 */
const COMMAND_FLAGS = new Set(['help', 'version', 'once']);

export interface SplitArgs {
  readonly rest: string[];
  readonly overrides: Map<string, string | number | boolean>;
}

export function splitArgs(argv: readonly string[]): SplitArgs {
  const rest: string[] = [];
  const flags: string[] = [];
  const overrides = new Map<string, string | number | boolean>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      rest.push(...flags, ...argv.slice(i));
      return { rest, overrides };
    }
    if (!arg.startsWith('--')) {
      rest.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const key = arg.slice(2, eq < 0 ? undefined : eq);
    if (COMMAND_FLAGS.has(key)) {
      const value = eq < 0 ? 'true' : arg.slice(eq + 1);
      if (value !== 'true' && value !== 'false') throw new UsageError(`--${key} takes no value (or true/false), not ${JSON.stringify(value)}`);
      if (value === 'true' && !flags.includes(`--${key}`)) flags.push(`--${key}`);
      continue;
    }
    if (COMMAND_OPTIONS.has(key)) {
      rest.push(arg);
      continue;
    }
    const parts = key.split('.');
    for (let n = 1; n < parts.length; n++) {
      const prefix = parts.slice(0, n).join('.');
      if (ARRAY_PATHS.has(prefix)) throw new UsageError(`--${key}: keys inside arrays (${prefix}) cannot be set from the command line`);
    }
    const spec = SCALAR_PATHS.get(key);
    if (!spec) throw new UsageError(`unknown option --${key}`);
    let raw: string;
    if (eq >= 0) raw = arg.slice(eq + 1);
    else if (spec.t === 'boolean' && !['true', 'false'].includes(argv[i + 1] ?? '')) raw = 'true';
    else {
      const next = argv[i + 1];
      if (next === undefined) throw new UsageError(`--${key} needs a value`);
      raw = next;
      i++;
    }
    let value: string | number | boolean;
    try {
      value = parseScalar(spec, raw);
    } catch (err) {
      throw new UsageError(`--${key}: ${errorMessage(err)}`);
    }
    const fault = overrideFault(spec, value, key);
    if (fault !== undefined) throw new UsageError(`--${key}: ${fault}`);
    overrides.set(key, value);
  }
  rest.push(...flags);
  return { rest, overrides };
}
