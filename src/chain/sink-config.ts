// Keys every chain sink shares (DESIGN.md §7): a dialling sink's (net/dialer-config.ts) and who
// we are (`node`).

import type { PluginConfig } from '../config/schema.js';
import type { Fields, PluginSpec } from '../config/spec.js';
import { PORT } from '../core/plugin-config.js';
import { DIALER_SINK_FIELDS, type DialerSinkConfig, dialerBackoff, dialerSinkConfig } from '../net/dialer-config.js';

export interface ChainSinkConfig extends DialerSinkConfig {
  /** announced node name; default `node_name` */
  readonly node?: string;
}

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

/** Validates a chain sink's config table against its type's spec (fields from chainSinkFields). */
export const chainSinkConfig: <T extends ChainSinkConfig>(plugin: PluginConfig, spec: PluginSpec) => T = dialerSinkConfig;

/** Reconnect backoff of a chain sink: a dialling sink's. */
export const chainBackoff = dialerBackoff;
