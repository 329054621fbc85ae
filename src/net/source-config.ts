// Keys every listening source shares (DESIGN.md §7): where to listen, how big a batch, the disk
// buffer, TLS and auth: the chain sources, and the syslog, otlp and nats sources use them too.

import type { PluginConfig } from '../config/schema.js';
import type { Fields, PluginSpec } from '../config/spec.js';
import { BUFFER_FIELDS } from '../buffer/config.js';
import { PORT, pluginConfig } from '../core/plugin-config.js';
import { AUTH_FIELDS, type AuthConfig, TLS_FIELDS, type TlsConfig } from './tls.js';

export interface ChainSourceConfig {
  /** listen address, default "0.0.0.0" */
  readonly host: string;
  readonly port: number;
  /** most entries handed to the pipeline in one batch */
  readonly buffer_size: number;
  readonly tls: TlsConfig;
  readonly auth?: AuthConfig;
}

/** `buffer_size` of a chain source: most entries per emitted batch, default 1000. */
export const CHAIN_SOURCE_BUFFER_SIZE = {
  t: 'number',
  def: 1000,
  int: true,
  min: 1,
  unit: 'entries',
  doc: 'most entries handed to the pipeline in one batch',
} as const;

/** A chain source type's keys: host and port, the type's own keys, then tls and auth. */
export function chainSourceFields(own: Fields): Fields {
  return {
    host: { t: 'string', def: '0.0.0.0', doc: 'address to listen on' },
    port: { ...PORT, doc: 'port to listen on' },
    ...own,
    ...BUFFER_FIELDS,
    ...TLS_FIELDS,
    ...AUTH_FIELDS,
  };
}

/** Validates a chain source's config table against its type's spec (fields from chainSourceFields); see chainSinkConfig. */
export function chainSourceConfig<T extends ChainSourceConfig>(plugin: PluginConfig, spec: PluginSpec): T {
  return pluginConfig<T>('source', plugin, spec.fields);
}

/** The counters every listening source keeps (chain sources, the syslog source: DESIGN.md §9, §17). */
export function chainSourceCounters() {
  return {
    total_entries: 0,
    dropped_entries: 0,
    active_connections: 0,
    rejected_conns: 0,
    parse_errors: 0,
    tls_handshake_errors: 0,
    auth_rejected: 0,
  };
}
