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

/**
 * A sink's table: the plugin, and its place among the pipeline's routes (DESIGN.md §24). On the
 * ground floor because config/ and the route checks of transform/, a floor below it, both read it.
 */
export interface SinkConfig extends PluginConfig {
  /** a condition: the sink gets only the entries for which it holds */
  readonly when?: string;
  /** the sink gets the entries no `when` sink took */
  readonly else?: boolean;
  /** the id of the sink that gets what this one would drop for good */
  readonly dead_letter?: string;
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

/**
 * The byte bound of every sink's queue (DESIGN.md §25), counted over the formatted lines of what
 * is queued together with what the sink holds unacknowledged; whichever bound is reached first
 * (this or `buffer_size`) counts as full.
 */
export const BUFFER_MAX_BYTES = {
  t: 'number',
  def: 16777216,
  int: true,
  min: 1024,
  doc: "bound of the sink's input queue together with what it holds unacknowledged, in bytes of formatted lines; whichever of this and `buffer_size` is reached first counts as full",
} as const;

/** Whether a sink delivers entries somewhere (its `on_full` defaults to `auto`) or shows them (`drop`). */
export type SinkRole = 'delivers' | 'shows';

/** Buffer and queue keys every sink shares; `role` chooses the default of `on_full` (DESIGN.md §25). */
export function sinkQueueFields(role: SinkRole): Fields {
  return {
    buffer_size: { t: 'number', def: 1000, int: true, min: 1, unit: 'entries', doc: "bound of the sink's input queue" },
    buffer_max_bytes: BUFFER_MAX_BYTES,
    on_full: {
      t: 'string',
      def: role === 'delivers' ? 'auto' : 'drop',
      oneOf: ['auto', 'block', 'drop'],
      doc:
        role === 'delivers'
          ? 'what a full input queue does with the next entry; the default `auto` loses nothing while the link is up'
          : 'what a full input queue does with the next entry; the default `drop` keeps a slow viewer from stalling delivery',
      values: {
        auto: "`block`, except while this sink's link is down (it failed to connect, or lost its connection and has not reconnected) and another sink of the pipeline is live: then `drop`, counted as `dropped_link_down`; a sink without a link (`file`) always blocks",
        block: 'pause the sources that can pause until the queue is below half; `random` counts `dropped_entries`',
        drop: "drop it for this sink and count the pipeline's `total_dropped_by_sink`; other sinks go on",
      },
    },
  };
}

/** A listener's or a peer's port; plugins add their own `doc`. */
export const PORT = { t: 'number', required: true, int: true, min: 1, max: 65535 } as const;
