// The configuration contract (DESIGN.md §3): the schema with every default, and the frozen types
// the rest of the program reads. Plugin `config` tables are validated by each plugin (sources/, sinks/).

import { hostname } from 'node:os';
import type { Fields } from './spec.js';

export type LogOutput = 'stderr' | 'stdout' | 'file' | 'none';
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type FormatType = 'raw' | 'json' | 'txt';

export interface LoggingFileConfig {
  readonly directory: string;
  readonly name: string;
  readonly max_size_mb: number;
  readonly max_total_size_mb: number;
  readonly retention_hours: number;
}

export interface LoggingConfig {
  readonly output: LogOutput;
  readonly level: LogLevel;
  readonly file: LoggingFileConfig;
}

export interface RateLimitConfig {
  /** entries per second; the limiter does not exist when <= 0 */
  readonly rate: number;
  /** bucket size; <= 0 means equal to rate */
  readonly burst: number;
  readonly policy: 'drop' | 'pass';
  /** 0 = no cap; enforced only when rate > 0 and policy = "drop" */
  readonly max_entry_size_bytes: number;
}

export interface FilterConfig {
  readonly type: 'include' | 'exclude';
  readonly logic: 'or' | 'and';
  readonly patterns: readonly string[];
}

export interface DedupConfig {
  readonly enabled: boolean;
  /** remember at most this many ids */
  readonly window_entries: number;
  /** and none longer than this, ms */
  readonly window_ms: number;
}

export interface FlowConfig {
  readonly dedup?: DedupConfig;
  readonly rate_limit?: RateLimitConfig;
  readonly filters: readonly FilterConfig[];
  readonly format: { readonly type: FormatType };
}

export interface PluginConfig {
  readonly id: string;
  readonly type: string;
  readonly config: Readonly<Record<string, unknown>>;
}

export type Fanout = 'all' | 'any';

export interface PipelineConfig {
  readonly name: string;
  /** all: every sink gets every entry; any: redundant paths (DESIGN.md §7) */
  readonly fanout: Fanout;
  readonly flow: FlowConfig;
  readonly plugin_sources: readonly PluginConfig[];
  readonly plugin_sinks: readonly PluginConfig[];
}

export interface Config {
  /** this node's name: default `node` of chain sinks, part of entry ids */
  readonly node_name: string;
  /** empty: no checkpoints */
  readonly data_dir: string;
  readonly checkpoint_interval_ms: number;
  readonly checkpoint_ttl_hours: number;
  readonly auto_reload: boolean;
  readonly status_reporter: boolean;
  readonly status_interval_ms: number;
  readonly quiet: boolean;
  readonly shutdown_timeout_ms: number;
  readonly logging: LoggingConfig;
  readonly pipelines: readonly PipelineConfig[];
}

const plugin = (): Fields => ({
  id: { t: 'string', nonEmpty: true },
  type: { t: 'string', required: true },
  config: { t: 'free' },
});

export const CONFIG_FIELDS: Fields = {
  node_name: { t: 'string', def: hostname(), nonEmpty: true },
  data_dir: { t: 'string', def: '' },
  checkpoint_interval_ms: { t: 'number', def: 1000, int: true, min: 10 },
  checkpoint_ttl_hours: { t: 'number', def: 168.0, min: 0 },
  auto_reload: { t: 'boolean', def: false },
  status_reporter: { t: 'boolean', def: true },
  status_interval_ms: { t: 'number', def: 30000, int: true, min: 100 },
  quiet: { t: 'boolean', def: false },
  shutdown_timeout_ms: { t: 'number', def: 5000, int: true, min: 0 },
  logging: {
    t: 'table',
    fields: {
      output: { t: 'string', def: 'stderr', oneOf: ['stderr', 'stdout', 'file', 'none'] },
      level: { t: 'string', def: 'info', oneOf: ['debug', 'info', 'warn', 'error'] },
      file: {
        t: 'table',
        fields: {
          directory: { t: 'string', def: './log', nonEmpty: true },
          name: { t: 'string', def: 'logrelay', nonEmpty: true },
          max_size_mb: { t: 'number', def: 100, min: 0.001 },
          max_total_size_mb: { t: 'number', def: 1000, min: 0.001 },
          retention_hours: { t: 'number', def: 168.0, min: 0 },
        },
      },
    },
  },
  pipelines: {
    t: 'tables',
    min: 1,
    fields: {
      name: { t: 'string', required: true, nonEmpty: true },
      fanout: { t: 'string', def: 'all', oneOf: ['all', 'any'] },
      flow: {
        t: 'table',
        fields: {
          dedup: {
            t: 'table',
            fields: {
              enabled: { t: 'boolean', def: false },
              window_entries: { t: 'number', def: 100000, int: true, min: 1 },
              window_ms: { t: 'number', def: 600000, int: true, min: 1 },
            },
          },
          rate_limit: {
            t: 'table',
            optional: true,
            fields: {
              rate: { t: 'number', def: 0 },
              burst: { t: 'number', def: 0 },
              policy: { t: 'string', def: 'pass', oneOf: ['drop', 'pass'] },
              max_entry_size_bytes: { t: 'number', def: 0, int: true, min: 0 },
            },
          },
          filters: {
            t: 'tables',
            fields: {
              type: { t: 'string', def: 'include', oneOf: ['include', 'exclude'] },
              logic: { t: 'string', def: 'or', oneOf: ['or', 'and'] },
              patterns: { t: 'strings', def: [] },
            },
          },
          format: {
            t: 'table',
            fields: { type: { t: 'string', def: 'raw', oneOf: ['raw', 'json', 'txt'] } },
          },
        },
      },
      plugin_sources: { t: 'tables', min: 1, fields: plugin() },
      plugin_sinks: { t: 'tables', min: 1, fields: plugin() },
    },
  },
};

/** The pipeline run when no configuration is given: random → stdout, raw. */
export const DEMO_CONFIG: Record<string, unknown> = {
  pipelines: [
    {
      name: 'demo',
      plugin_sources: [{ id: 'random', type: 'random' }],
      plugin_sinks: [{ id: 'out', type: 'stdout' }],
    },
  ],
};
