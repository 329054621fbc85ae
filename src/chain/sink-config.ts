// Keys every dialling sink shares (DESIGN.md §7): where to dial, how to back off, TLS; chain
// sinks add who we are (`node`).

import type { PluginConfig } from '../config/schema.js';
import type { Fields, PluginSpec } from '../config/spec.js';
import { Backoff } from '../core/backoff.js';
import { PluginError } from '../core/errors.js';
import { PORT, pluginConfig, sinkQueueFields } from '../core/plugin-config.js';
import { TLS_FIELDS, type TlsConfig } from '../net/tls.js';
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

export interface ChainSinkConfig extends DialerSinkConfig {
  /** announced node name; default `node_name` */
  readonly node?: string;
}

const DIALER_SINK_FIELDS: Fields = {
  host: { t: 'string', def: '127.0.0.1', nonEmpty: true, doc: 'the peer to connect to' },
  port: { ...PORT, doc: "the peer's port" },
  ...sinkQueueFields('delivers'),
  backoff_min_ms: { t: 'number', def: 250, int: true, min: 1, doc: 'first reconnect delay; doubles per failure, ±20 % jitter' },
  backoff_max_ms: { t: 'number', def: 30000, int: true, min: 1, doc: 'longest reconnect delay' },
  ...TLS_FIELDS,
};

const CHAIN_SINK_FIELDS: Fields = {
  ...DIALER_SINK_FIELDS,
  host: { t: 'string', def: '127.0.0.1', nonEmpty: true, doc: 'the next node (its chain source) to connect to' },
  port: { ...PORT, doc: "the next node's chain source port" },
  node: { t: 'string', nonEmpty: true, doc: 'node name announced to the peer and stamped on entries there; default `node_name`' },
};

/** A chain sink type's keys: the shared ones (peer, node, queue, backoff, tls) with the type's own added. */
export function chainSinkFields(own: Fields): Fields {
  return { ...CHAIN_SINK_FIELDS, ...own };
}

/** A dialling sink type's keys (peer, queue, backoff, tls) with the type's own added. */
export function dialerSinkFields(own: Fields): Fields {
  return { ...DIALER_SINK_FIELDS, ...own };
}

/**
 * Validates a dialling sink's config table against its type's spec (fields from chainSinkFields
 * or dialerSinkFields). It takes the whole spec, not the type's own fields, so a caller written
 * for an `(plugin, ownFields)` form fails to compile instead of losing the shared keys.
 */
export function dialerSinkConfig<T extends DialerSinkConfig>(plugin: PluginConfig, spec: PluginSpec): T {
  const cfg = pluginConfig<T>('sink', plugin, spec.fields);
  if (cfg.backoff_max_ms < cfg.backoff_min_ms) {
    throw new PluginError('sink', plugin.id, 'backoff_max_ms', `must be >= backoff_min_ms (${cfg.backoff_min_ms}), got ${cfg.backoff_max_ms}`);
  }
  return cfg;
}

/** Validates a chain sink's config table against its type's spec (fields from chainSinkFields). */
export const chainSinkConfig: <T extends ChainSinkConfig>(plugin: PluginConfig, spec: PluginSpec) => T = dialerSinkConfig;

/** Reconnect backoff: doubling from backoff_min_ms up to backoff_max_ms, each delay ±20 % jitter. */
export function chainBackoff(cfg: DialerSinkConfig): Backoff {
  return new Backoff({ min_ms: cfg.backoff_min_ms, max_ms: cfg.backoff_max_ms, jitter: 0.2 });
}
