// The configuration contract (DESIGN.md §3): the schema with every default, and the frozen types
// the rest of the program reads. Plugin `config` tables are validated by each plugin (sources/, sinks/).

import { AUTH_FIELDS, type AuthConfig, TLS_FIELDS, type TlsConfig } from '../net/tls.js';
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

export interface FlowConfig {
  readonly rate_limit?: RateLimitConfig;
  readonly filters: readonly FilterConfig[];
  readonly format: { readonly type: FormatType };
}

export interface PluginConfig {
  readonly id: string;
  readonly type: string;
  readonly config: Readonly<Record<string, unknown>>;
}

export interface PipelineConfig {
  readonly name: string;
  readonly flow: FlowConfig;
  readonly plugin_sources: readonly PluginConfig[];
  readonly plugin_sinks: readonly PluginConfig[];
}

/** The admin endpoint (DESIGN.md §16), served by the primary; applied at start only, like `logging`. */
export interface AdminConfig {
  readonly host: string;
  /** 0 = off */
  readonly port: number;
  readonly tls: TlsConfig;
  readonly auth?: AuthConfig;
}

export interface Config {
  readonly auto_reload: boolean;
  readonly status_reporter: boolean;
  readonly status_interval_ms: number;
  readonly quiet: boolean;
  readonly shutdown_timeout_ms: number;
  readonly logging: LoggingConfig;
  readonly admin: AdminConfig;
  readonly pipelines: readonly PipelineConfig[];
}

const plugin = (): Fields => ({
  id: { t: 'string', nonEmpty: true },
  type: { t: 'string', required: true },
  config: { t: 'free' },
});

export const CONFIG_FIELDS: Fields = {
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
  admin: {
    t: 'table',
    fields: {
      host: { t: 'string', def: '127.0.0.1', nonEmpty: true },
      port: { t: 'number', def: 0, int: true, min: 0, max: 65535 },
      ...TLS_FIELDS,
      ...AUTH_FIELDS,
    },
  },
  pipelines: {
    t: 'tables',
    min: 1,
    fields: {
      name: { t: 'string', required: true, nonEmpty: true },
      flow: {
        t: 'table',
        fields: {
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
