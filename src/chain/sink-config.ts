// Keys every dialling sink shares (DESIGN.md §7): where to dial, how to back off, TLS; chain
// sinks add who we are (`node`).

import type { PluginConfig } from '../config/schema.js';
import type { Fields } from '../config/spec.js';
import { Backoff } from '../core/backoff.js';
import { PluginError } from '../core/errors.js';
import { PORT, pluginConfig, SINK_QUEUE_FIELDS } from '../core/plugin-config.js';
import { TLS_FIELDS, type TlsConfig } from '../net/tls.js';
import type { OnFull } from '../sinks/types.js';

/** A sink that dials its peer and reconnects with backoff (chain sinks, the syslog sink). */
export interface DialerSinkConfig {
  /** peer host, default "127.0.0.1" */
  readonly host: string;
  readonly port: number;
  readonly buffer_size: number;
  readonly on_full: OnFull;
  readonly backoff_min_ms: number;
  readonly backoff_max_ms: number;
  readonly tls: TlsConfig;
}

export interface ChainSinkConfig extends DialerSinkConfig {
  /** announced node name; default the host name */
  readonly node?: string;
}

const DIALER_SINK_FIELDS: Fields = {
  host: { t: 'string', def: '127.0.0.1', nonEmpty: true },
  port: PORT,
  ...SINK_QUEUE_FIELDS,
  backoff_min_ms: { t: 'number', def: 250, int: true, min: 1 },
  backoff_max_ms: { t: 'number', def: 30000, int: true, min: 1 },
  ...TLS_FIELDS,
};

export const CHAIN_SINK_FIELDS: Fields = { ...DIALER_SINK_FIELDS, node: { t: 'string', nonEmpty: true } };

/** Validates a chain sink's config table (with the type's own keys added). */
export function chainSinkConfig<T extends ChainSinkConfig>(plugin: PluginConfig, own: Fields): T {
  return dialerSinkConfig<T>(plugin, { ...CHAIN_SINK_FIELDS, ...own });
}

/** Validates a dialling sink's config table: the shared keys of DIALER_SINK_FIELDS and the type's own. */
export function dialerSinkConfig<T extends DialerSinkConfig>(plugin: PluginConfig, own: Fields): T {
  const cfg = pluginConfig<T>('sink', plugin, { ...DIALER_SINK_FIELDS, ...own });
  if (cfg.backoff_max_ms < cfg.backoff_min_ms) {
    throw new PluginError('sink', plugin.id, 'backoff_max_ms', `must be >= backoff_min_ms (${cfg.backoff_min_ms}), got ${cfg.backoff_max_ms}`);
  }
  return cfg;
}

/** Reconnect backoff: doubling from backoff_min_ms up to backoff_max_ms, each delay ±20 % jitter. */
export function chainBackoff(cfg: DialerSinkConfig): Backoff {
  return new Backoff({ min_ms: cfg.backoff_min_ms, max_ms: cfg.backoff_max_ms, jitter: 0.2 });
}
