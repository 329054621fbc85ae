// The `tls` and `auth` tables every listener and dialer shares (DESIGN.md §10): their types and
// field lists, on the ground floor because the config schema and the plugins both read them.
// What is done with them (contexts, identity checks) is net/tls.ts.

import type { Fields } from './spec.js';

export interface TlsConfig {
  readonly enabled: boolean;
  readonly cert_file?: string;
  readonly key_file?: string;
  /** listener: require and verify client certificates signed by this CA */
  readonly client_ca_file?: string;
  /** dialer: trust these roots instead of the system's */
  readonly ca_file?: string;
  /** dialer: the name to verify; defaults to the host */
  readonly server_name?: string;
  readonly min_version: '1.2' | '1.3';
  /** `expiry_warning_days` in ms: how long before a certificate's notAfter it is warned about (DESIGN.md §16); default 14 days */
  readonly expiry_warning_ms: number;
}

export type IdentityKind = 'cn' | 'san_dns' | 'san_uri' | 'san_email';

export interface AuthConfig {
  readonly allow: readonly string[];
  readonly identity: IdentityKind;
}

export const TLS_FIELDS: Fields = {
  tls: {
    t: 'table',
    doc: 'TLS for this listener or link; certificate files are read when the plugin is built (rotate them with SIGHUP)',
    fields: {
      enabled: { t: 'boolean', def: false, doc: 'use TLS' },
      cert_file: { t: 'string', doc: 'certificate (PEM); required on listeners when enabled, and on dialers for mutual TLS' },
      key_file: { t: 'string', doc: 'private key (PEM) of `cert_file`' },
      client_ca_file: { t: 'string', doc: 'listeners: require client certificates signed by this CA (PEM)' },
      ca_file: { t: 'string', doc: "dialers: trust these roots (PEM) instead of the system's" },
      server_name: { t: 'string', doc: 'dialers: the name the server certificate must carry; default the host' },
      min_version: { t: 'string', def: '1.3', oneOf: ['1.2', '1.3'], doc: 'oldest TLS version accepted' },
      expiry_warning_days: { t: 'number', def: 14, min: 0, unit: 'days', doc: 'warn (`Certificate expires soon`) when a certificate of the plugin expires within this many days' },
    },
  },
};

export const AUTH_FIELDS: Fields = {
  auth: {
    t: 'table',
    optional: true,
    doc: 'only clients whose certificate identity is listed connect; needs `tls.enabled` and `tls.client_ca_file`',
    fields: {
      allow: { t: 'strings', def: [], doc: 'identities allowed to connect (exact match)' },
      identity: {
        t: 'string',
        def: 'cn',
        oneOf: ['cn', 'san_dns', 'san_uri', 'san_email'],
        doc: 'which part of the client certificate is its identity (subject CN or a subject alternative name)',
      },
    },
  },
};
