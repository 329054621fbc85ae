// `null` sink: counts and discards (for benchmarks).

import { pluginConfig } from '../core/plugin-config.js';
import type { Sink, SinkFactory } from './types.js';

export const createNullSink: SinkFactory = (plugin): Sink => {
  const cfg = pluginConfig<{ buffer_size: number }>('sink', plugin, {
    buffer_size: { t: 'number', def: 1000, int: true, min: 1 },
  });
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
