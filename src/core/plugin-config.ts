// Validates a plugin's `config` table with the shared spec, turning faults into
// `failed to create <kind> <id>: <key>: <reason>`.

import { checkFields, type Fields } from './spec.js';
import { ConfigError, ConfigErrors, type PluginKind, PluginError, throwPluginFaults } from './errors.js';

/** One `[[pipelines.sources]]` or `[[pipelines.sinks]]` table: its `config` is the plugin's to validate. */
export interface PluginConfig {
  readonly id: string;
  readonly type: string;
  readonly config: Readonly<Record<string, unknown>>;
}

export function pluginConfig<T>(kind: PluginKind, plugin: PluginConfig, fields: Fields): T {
  try {
    return checkFields(fields, plugin.config, '') as T;
  } catch (err) {
    // every fault of the table, one PluginError each (`check` prints a line per fault)
    if (err instanceof ConfigErrors) throwPluginFaults(err.faults.map((f) => asPluginError(kind, plugin.id, f)));
    if (err instanceof ConfigError) throw asPluginError(kind, plugin.id, err);
    throw err;
  }
}

function asPluginError(kind: PluginKind, id: string, err: ConfigError): PluginError {
  return new PluginError(kind, id, err.path, err.message.slice(err.path.length + 2));
}

/** Buffer and queue keys every sink shares. */
export const SINK_QUEUE_FIELDS: Fields = {
  buffer_size: { t: 'number', def: 1000, int: true, min: 1, unit: 'entries', doc: "bound of the sink's input queue" },
  on_full: {
    t: 'string',
    def: 'drop',
    oneOf: ['drop', 'block'],
    doc: 'what a full input queue does with the next entry',
    values: {
      drop: "drop it for this sink and count the pipeline's `total_dropped_by_sink`; other sinks go on",
      block: 'pause the sources that can pause until the queue is below half; `random` counts `dropped_entries`',
    },
  },
};

/** A listener's or a peer's port; plugins add their own `doc`. */
export const PORT = { t: 'number', required: true, int: true, min: 1, max: 65535 } as const;
