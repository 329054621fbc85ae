// `null` sink: counts and discards (for benchmarks).

import { BUFFER_MAX_BYTES, pluginConfig } from '../core/plugin-config.js';
import type { PluginSpec } from '../config/spec.js';
import type { Sink, SinkFactory } from './types.js';

export const NULL_SINK: PluginSpec = {
  doc: 'counts and discards (for benchmarks)',
  fields: {
    buffer_size: { t: 'number', def: 1000, int: true, min: 1, unit: 'entries', doc: "bound of the sink's input queue" },
    buffer_max_bytes: BUFFER_MAX_BYTES,
  },
};

export const createNullSink: SinkFactory = (plugin): Sink => {
  const cfg = pluginConfig<{ buffer_size: number; buffer_max_bytes: number }>('sink', plugin, NULL_SINK.fields);
  return {
    id: plugin.id,
    type: 'null',
    counters: {},
    bufferSize: cfg.buffer_size,
    bufferMaxBytes: cfg.buffer_max_bytes,
    onFull: 'drop',
    write() {},
    async close() {},
  };
};
