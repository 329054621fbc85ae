// `null` sink: counts and discards (for benchmarks).

import { pluginConfig } from '../core/plugin-config.js';
import type { PluginSpec } from '../config/spec.js';
import type { Sink, SinkFactory } from './types.js';

export const NULL_SINK: PluginSpec = {
  doc: 'counts and discards (for benchmarks)',
  fields: {
    buffer_size: { t: 'number', def: 1000, int: true, min: 1, unit: 'entries', doc: "bound of the sink's input queue" },
  },
};

export const createNullSink: SinkFactory = (plugin): Sink => {
  const cfg = pluginConfig<{ buffer_size: number }>('sink', plugin, NULL_SINK.fields);
  return {
    id: plugin.id,
    type: 'null',
    counters: {},
    bufferSize: cfg.buffer_size,
    onFull: 'drop',
    write() {},
    async close() {},
  };
};
