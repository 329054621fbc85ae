// Keys every dialling sink shares (DESIGN.md §7): where to dial, how to back off, TLS: the chain
// sinks (chain/sink-config.ts adds who we are, `node`) and the syslog sink.

import type { PluginConfig } from '../config/schema.js';
import type { Fields, PluginSpec } from '../config/spec.js';
import { Backoff } from '../core/backoff.js';
import { PluginError } from '../core/errors.js';
import { PORT, pluginConfig, sinkQueueFields } from '../core/plugin-config.js';
import { TLS_FIELDS, type TlsConfig } from './tls.js';
import type { OnFull } from '../core/queue.js';

/** A sink that dials its peer and reconnects with backoff (chain sinks, the syslog sink). */
export interface DialerSinkConfig {
  /** peer host, default "127.0.0.1" */
  readonly host: string;
  readonly port: number;
  readonly buffer_size: number;
  /** bound of the queue together with what the sink holds unacknowledged, bytes of formatted lines */
  readonly buffer_max_bytes: number;
  readonly on_full: OnFull;
  readonly backoff_min_ms: number;
  readonly backoff_max_ms: number;
  readonly tls: TlsConfig;
}

export const DIALER_SINK_FIELDS: Fields = {
  host: { t: 'string', def: '127.0.0.1', nonEmpty: true, doc: 'the peer to connect to' },
  port: { ...PORT, doc: "the peer's port" },
  ...sinkQueueFields('delivers'),
  backoff_min_ms: { t: 'number', def: 250, int: true, min: 1, doc: 'first reconnect delay; doubles per failure, ±20 % jitter' },
  backoff_max_ms: { t: 'number', def: 30000, int: true, min: 1, doc: 'longest reconnect delay' },
  ...TLS_FIELDS,
};

/** A dialling sink type's keys (peer, queue, backoff, tls) with the type's own added. */
export function dialerSinkFields(own: Fields): Fields {
  return { ...DIALER_SINK_FIELDS, ...own };
}

/**
 * Validates a dialling sink's config table against its type's spec (fields from dialerSinkFields,
 * or chainSinkFields in chain/sink-config.ts). It takes the whole spec, not the type's own
 * fields, so a caller written for an `(plugin, ownFields)` form fails to compile instead of losing
 * the shared keys.
 */
export function dialerSinkConfig<T extends DialerSinkConfig>(plugin: PluginConfig, spec: PluginSpec): T {
  const cfg = pluginConfig<T>('sink', plugin, spec.fields);
  if (cfg.backoff_max_ms < cfg.backoff_min_ms) {
    throw new PluginError('sink', plugin.id, 'backoff_max_ms', `must be >= backoff_min_ms (${cfg.backoff_min_ms}), got ${cfg.backoff_max_ms}`);
  }
  return cfg;
}

/** Reconnect backoff: doubling from backoff_min_ms up to backoff_max_ms, each delay ±20 % jitter. */
export function dialerBackoff(cfg: DialerSinkConfig): Backoff {
  return new Backoff({ min_ms: cfg.backoff_min_ms, max_ms: cfg.backoff_max_ms, jitter: 0.2 });
}
