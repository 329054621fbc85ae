// The `buffer` table of the sources that cannot replay (DESIGN.md §23): its keys, their checks,
// and the key under which a buffered source reports its acknowledged sequence as a position.

import type { PluginConfig } from '../core/plugin-config.js';
import { type Fields, isPlainObject } from '../config/spec.js';

export interface BufferConfig {
  readonly type: 'memory' | 'disk';
  /** `max_size_mb` of the table, in bytes */
  readonly max_size_bytes: number;
  /** `segment_size_mb` of the table, in bytes */
  readonly segment_size_bytes: number;
  readonly when_full: 'block' | 'drop_newest';
}

/**
 * The position key of a buffered source: its acknowledged sequence travels as `offset` (inode 0)
 * with the file positions, to the primary, the reload handover and the checkpoint (DESIGN.md §15).
 * No file path starts with `#`.
 */
export const BUFFER_POSITION_KEY = '#buffer';

/** `buffer` for syslog, stdin, otlp, tcp_chain and http_chain sources. */
export const BUFFER_FIELDS: Fields = {
  buffer: {
    t: 'table',
    doc: 'where entries wait between the source and the pipeline; a disk buffer makes them durable before the sender is told they are taken (needs `data_dir`)',
    fields: {
      type: {
        t: 'string',
        def: 'memory',
        oneOf: ['memory', 'disk'],
        doc: 'kind of buffer',
        values: {
          memory: 'none on disk: the pipeline queues only, acknowledged end to end (chain sources)',
          disk: 'a segment log under `<data_dir>/buffers/<pipeline>/<source id>/`, acknowledged once synced to disk',
        },
      },
      max_size_mb: { t: 'number', def: 256, min: 0.02, doc: 'most bytes on disk for this source; at least two segments' },
      segment_size_mb: { t: 'number', def: 16, min: 0.01, max: 1024, doc: 'size of one segment file (about: one append goes whole into one segment)' },
      when_full: {
        t: 'string',
        def: 'block',
        oneOf: ['block', 'drop_newest'],
        doc: 'what a full buffer does (one that cannot write always stops taking, as block)',
        values: {
          block: 'stop taking: tcp stops reading, http answers 503 with Retry-After; udp counts `buffer_full` drops',
          drop_newest: 'take and drop new entries, counted (`dropped_buffer_full`, reason `buffer_full`)',
        },
      },
    },
  },
};

/** True when the plugin asks for a disk buffer (its table is checked by its factory). */
export function wantsDiskBuffer(plugin: PluginConfig): boolean {
  const b = (plugin.config as Record<string, unknown> | undefined)?.buffer;
  return isPlainObject(b) && b.type === 'disk';
}
