// Coded, located errors: a ConfigError names the key path (a ConfigErrors lists several); a PluginError names the plugin.

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

  /** Every fault this error reports, each `path: reason`, in file order: one line each for `check` and a failed start. */
  get messages(): readonly string[] {
    return [this.message];
  }
}

/**
 * Several configuration faults found in one pass, in file order. `path` is the first fault's and
 * `message` joins them all with `; ` (as a failed reload logs it), so code that handles a single
 * ConfigError keeps working.
 */
export class ConfigErrors extends ConfigError {
  constructor(readonly faults: readonly [ConfigError, ConfigError, ...ConfigError[]]) {
    super(faults[0].path, '');
    this.message = faults.map((f) => f.message).join('; ');
    this.name = 'ConfigErrors';
  }

  override get messages(): readonly string[] {
    return this.faults.flatMap((f) => f.messages);
  }
}

/** Throws the faults found, if any: a single one as itself, several as one ConfigErrors. */
export function throwConfigFaults(faults: readonly ConfigError[]): void {
  const [first, second, ...rest] = faults;
  if (first === undefined) return;
  throw second === undefined ? first : new ConfigErrors([first, second, ...rest]);
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
  /**
   * `unavailable`: the configuration is fine but a resource it names is not there (a listener's
   * address in use): exit 69 at start rather than 78 (DESIGN.md §2).
   */
  constructor(
    kind: PluginKind,
    id: string,
    key: string,
    reason: string,
    readonly unavailable = false,
  ) {
    super(`failed to create ${kind} ${id}: ${key}: ${reason}`);
    this.name = 'PluginError';
  }
}

/** Several faults of one plugin found in one pass (every TLS file it cannot read, not only the first). */
export class PluginErrors extends PluginError {
  constructor(readonly faults: readonly [PluginError, PluginError, ...PluginError[]]) {
    super('source', '', '', '', faults.some((f) => f.unavailable));
    this.message = faults.map((f) => f.message).join('; ');
    this.name = 'PluginErrors';
  }
}

/** Throws the plugin faults found, if any: a single one as itself, several as one PluginErrors. */
export function throwPluginFaults(faults: readonly PluginError[]): void {
  const [first, second, ...rest] = faults;
  if (first === undefined) return;
  throw second === undefined ? first : new PluginErrors([first, second, ...rest]);
}

/** Every message an error carries: one per fault of a ConfigErrors or PluginErrors, else its message. */
export function errorMessages(err: unknown): string[] {
  if (err instanceof PluginErrors) return err.faults.map((f) => f.message);
  if (err instanceof ConfigError) return [...err.messages];
  return [errorMessage(err)];
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
