// TLS contexts and identity allow lists for every listener and dialer (DESIGN.md §10).
// Certificate files are read when the plugin is built, so a reload (SIGHUP) rotates them.

import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import type { ConnectionOptions, SecureVersion, TLSSocket, TlsOptions } from 'node:tls';
import type { Counters } from '../core/counters.js';
import { errorMessage, type PluginKind, PluginError, throwPluginFaults } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import type { AuthConfig, IdentityKind, TlsConfig } from '../core/tls-config.js';
import { noteCertificates } from './cert-expiry.js';
import { remoteOf } from './session.js';

export { AUTH_FIELDS, type AuthConfig, type IdentityKind, TLS_FIELDS, type TlsConfig } from '../core/tls-config.js';

/** Reads a PEM file of a plugin's tls block; a certificate file is noted for its expiry (§16). */
function readPem(kind: PluginKind, id: string, key: string, path: string | undefined, tls: TlsConfig): Buffer {
  if (!path) throw new PluginError(kind, id, `tls.${key}`, 'is required when tls is enabled');
  let pem: Buffer;
  try {
    pem = readFileSync(path);
  } catch (err) {
    throw new PluginError(kind, id, `tls.${key}`, `cannot read ${path}: ${errorMessage(err)}`);
  }
  if (key !== 'key_file') noteCertificates(id, tls.expiry_warning_ms, path, pem);
  return pem;
}

/**
 * Reads several PEM files of one plugin; every file that is missing or unreadable is reported,
 * not only the first (`check` prints them all).
 */
function readPems(kind: PluginKind, id: string, tls: TlsConfig, wanted: ReadonlyArray<readonly [string, string | undefined]>): Buffer[] {
  const faults: PluginError[] = [];
  const pems: Buffer[] = [];
  for (const [key, path] of wanted) {
    try {
      pems.push(readPem(kind, id, key, path, tls));
    } catch (err) {
      if (!(err instanceof PluginError)) throw err;
      faults.push(err);
    }
  }
  throwPluginFaults(faults);
  return pems;
}

const version = (v: '1.2' | '1.3'): SecureVersion => (v === '1.2' ? 'TLSv1.2' : 'TLSv1.3');

/** Server options for a listener, or undefined when TLS is off. Reads the files now. */
export function serverTlsOptions(kind: PluginKind, id: string, tls: TlsConfig): TlsOptions | undefined {
  if (!tls.enabled) return undefined;
  const wanted: Array<readonly [string, string | undefined]> = [
    ['cert_file', tls.cert_file],
    ['key_file', tls.key_file],
  ];
  if (tls.client_ca_file) wanted.push(['client_ca_file', tls.client_ca_file]);
  const [cert, key, ca] = readPems(kind, id, tls, wanted);
  const opts: TlsOptions = { cert, key, minVersion: version(tls.min_version) };
  if (ca) {
    opts.ca = ca;
    opts.requestCert = true;
    opts.rejectUnauthorized = true;
  }
  return opts;
}

/** Client options for a dialer, or undefined when TLS is off. Reads the files now. */
export function clientTlsOptions(kind: PluginKind, id: string, tls: TlsConfig, host: string): ConnectionOptions | undefined {
  if (!tls.enabled) return undefined;
  const name = tls.server_name ?? host;
  const opts: ConnectionOptions = { minVersion: version(tls.min_version) };
  // SNI may not carry an IP address (RFC 6066; Node warns with DEP0123): an IP name is only verified.
  if (isIP(name) === 0) opts.servername = name;
  else if (name !== host) opts.checkServerIdentity = (_host, cert) => process.getBuiltinModule('node:tls').checkServerIdentity(name, cert);
  const mutual = Boolean(tls.cert_file || tls.key_file);
  const wanted: Array<readonly [string, string | undefined]> = [];
  if (tls.ca_file) wanted.push(['ca_file', tls.ca_file]);
  if (mutual) wanted.push(['cert_file', tls.cert_file], ['key_file', tls.key_file]);
  const pems = readPems(kind, id, tls, wanted);
  if (tls.ca_file) opts.ca = pems.shift();
  if (mutual) [opts.cert, opts.key] = pems;
  // Node checks IP-address names only against IP SANs; server_name decides what is verified.
  return opts;
}

/** An auth block needs TLS with client certificates, else the plugin fails to build. */
export function checkAuthConfig(kind: PluginKind, id: string, tls: TlsConfig, auth: AuthConfig | undefined): void {
  if (!auth) return;
  if (!tls.enabled) throw new PluginError(kind, id, 'auth', 'requires tls.enabled = true');
  if (!tls.client_ca_file) throw new PluginError(kind, id, 'auth', 'requires tls.client_ca_file (client certificates)');
}

/** A listener's TLS options (undefined when TLS is off) and the check for its accepted TLS sockets. */
export interface ServerSecurity {
  readonly tlsOptions: TlsOptions | undefined;
  readonly authorize: (socket: TLSSocket) => AuthResult;
}

/**
 * What every listening plugin builds from its `tls` and `auth` keys: the auth block checked
 * against TLS, the server options (files read now) and the authorizer counting in `counters`.
 */
export function serverSecurity(
  kind: PluginKind,
  id: string,
  cfg: { readonly tls: TlsConfig; readonly auth?: AuthConfig },
  ctx: { readonly log: Logger; readonly pipeline: string },
  counters: Counters,
): ServerSecurity {
  checkAuthConfig(kind, id, cfg.tls, cfg.auth);
  const tlsOptions = serverTlsOptions(kind, id, cfg.tls);
  const authorize = createAuthorizer({ auth: cfg.auth, log: ctx.log, pipeline: ctx.pipeline, plugin: id, counters });
  return { tlsOptions, authorize };
}

/**
 * Splits an X.509 subjectAltName string as Node renders it ("DNS:a, URI:b", with values that
 * contain separators JSON-quoted). A real tokenizer, so a crafted value cannot inject an entry.
 */
function altNames(san: string | undefined): { type: string; value: string }[] {
  const out: { type: string; value: string }[] = [];
  if (!san) return out;
  let i = 0;
  while (i < san.length) {
    const colon = san.indexOf(':', i);
    if (colon < 0) break;
    const type = san.slice(i, colon).trim();
    let j = colon + 1;
    let value: string;
    if (san[j] === '"') {
      let k = j + 1;
      while (k < san.length && san[k] !== '"') k += san[k] === '\\' ? 2 : 1;
      try {
        value = JSON.parse(san.slice(j, k + 1)) as string;
      } catch {
        value = san.slice(j + 1, k);
      }
      j = k + 1;
    } else {
      const comma = san.indexOf(',', j);
      const end = comma < 0 ? san.length : comma;
      value = san.slice(j, end);
      j = end;
    }
    out.push({ type, value });
    const next = san.indexOf(',', j);
    if (next < 0) break;
    i = next + 1;
  }
  return out;
}

/** The identities of the chosen kind in the peer's certificate. */
export function peerIdentities(socket: TLSSocket, kind: IdentityKind): string[] {
  const cert = socket.getPeerX509Certificate();
  if (!cert) return [];
  if (kind === 'cn') {
    return cert.subject
      .split('\n')
      .filter((l) => l.startsWith('CN='))
      .map((l) => l.slice(3));
  }
  const type = kind === 'san_dns' ? 'DNS' : kind === 'san_uri' ? 'URI' : 'email';
  return altNames(cert.subjectAltName)
    .filter((a) => a.type === type)
    .map((a) => a.value);
}

export interface AuthorizerOptions {
  readonly auth: AuthConfig | undefined;
  readonly log: Logger;
  readonly pipeline: string;
  readonly plugin: string;
  /** gets `auth_rejected` */
  readonly counters: Counters;
}

/** Outcome of an authorisation: allowed (with identity when an auth block is set) or rejected. */
export type AuthResult = { readonly ok: true; readonly identity?: string } | { readonly ok: false };

/**
 * Returns a check for accepted TLS sockets. Without an auth block every (handshaken) peer passes.
 * A rejection is counted in `auth_rejected` and logged as WARN `Authorization rejected`.
 */
export function createAuthorizer(opts: AuthorizerOptions): (socket: TLSSocket) => AuthResult {
  const auth = opts.auth;
  if (!auth) return () => ({ ok: true });
  const allow = new Set(auth.allow);
  // A child logger that already binds pipeline/plugin would otherwise write each key twice.
  const bound = opts.log.bindings();
  const where: Record<string, string> = {};
  if (bound.pipeline === undefined) where.pipeline = opts.pipeline;
  if (bound.plugin === undefined) where.plugin = opts.plugin;
  return (socket) => {
    const ids = peerIdentities(socket, auth.identity);
    const identity = ids.find((id) => allow.has(id));
    if (identity !== undefined) return { ok: true, identity };
    opts.counters.auth_rejected = (opts.counters.auth_rejected ?? 0) + 1;
    opts.log.warn({ ...where, identity: ids[0] ?? null, remote: remoteOf(socket) }, 'Authorization rejected');
    return { ok: false };
  };
}
