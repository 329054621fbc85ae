// Coded, located errors: a ConfigError names the key path; a PluginError names the plugin.

/** A configuration fault; `path` is the full key path, e.g. `pipelines[0].flow.format.type`. */
export class ConfigError extends Error {
  readonly code = 'E_CONFIG';
  constructor(
    readonly path: string,
    reason: string,
  ) {
    super(path ? `${path}: ${reason}` : reason);
    this.name = 'ConfigError';
  }
}

/** A command-line fault (exit 2). */
export class UsageError extends Error {
  readonly code = 'E_USAGE';
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export type PluginKind = 'source' | 'sink';

/** Thrown by plugin constructors: `failed to create sink <id>: <key>: <reason>`. */
export class PluginError extends Error {
  readonly code = 'E_PLUGIN';
  constructor(kind: PluginKind, id: string, key: string, reason: string) {
    super(`failed to create ${kind} ${id}: ${key}: ${reason}`);
    this.name = 'PluginError';
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
