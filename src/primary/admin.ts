// The admin endpoint (DESIGN.md §16): /livez, /readyz, /metrics, /status, served by the primary
// from the counters the workers already send. It never touches entries. GET only; TLS and auth
// as on any listener.

import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { TLSSocket, TlsOptions } from 'node:tls';
import type { AdminConfig } from '../config/schema.js';
import { ConfigError, errorMessage } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { createHttpListener } from '../net/http-server.js';
import { createAuthorizer } from '../net/tls.js';
import { fleetViewPage } from '../ui/fleet-view.js';
import type { FleetTable } from './fleet.js';
import { createMetrics, METRICS_CONTENT_TYPE } from './metrics.js';
import { nodeStatus, readinessOf } from './node-status.js';
import type { Supervisor } from './supervisor.js';

/**
 * The endpoint serves probes and scrapes, not crowds: past this many connections the primary
 * (which also writes checkpoints and the service log) closes new ones at once.
 */
export const ADMIN_MAX_CONNECTIONS = 32;
/** A probe or scrape request is a few hundred bytes: 10 s for all of it. */
const ADMIN_REQUEST_TIMEOUT_MS = 10_000;

const PATHS = new Set(['/livez', '/readyz', '/metrics', '/status', '/fleet']);

/** A browser asks for a page (`Accept: text/html`); anything else (curl, top, the page's own fetch) gets JSON. */
const wantsHtml = (req: IncomingMessage): boolean => /\btext\/html\b/.test(req.headers.accept ?? '');

/** Reads the admin block's PEM files now; a fault names its key (exit 78 at start). */
function adminTlsOptions(cfg: AdminConfig): TlsOptions | undefined {
  const tls = cfg.tls;
  if (!tls.enabled) {
    if (cfg.auth) throw new ConfigError('admin.auth', 'requires tls.enabled = true');
    return undefined;
  }
  if (cfg.auth && !tls.client_ca_file) throw new ConfigError('admin.auth', 'requires tls.client_ca_file (client certificates)');
  const read = (key: 'cert_file' | 'key_file' | 'client_ca_file'): Buffer => {
    const path = tls[key];
    if (!path) throw new ConfigError(`admin.tls.${key}`, 'is required when tls is enabled');
    try {
      return readFileSync(path);
    } catch (err) {
      throw new ConfigError(`admin.tls.${key}`, `cannot read ${path}: ${errorMessage(err)}`);
    }
  };
  const opts: TlsOptions = { cert: read('cert_file'), key: read('key_file'), minVersion: tls.min_version === '1.2' ? 'TLSv1.2' : 'TLSv1.3' };
  if (tls.client_ca_file) {
    opts.ca = read('client_ca_file');
    opts.requestCert = true;
    opts.rejectUnauthorized = true;
  }
  return opts;
}

export interface AdminServer {
  /** the bound port (the configured one, or the kernel's pick for tests binding 0 elsewhere) */
  readonly port: number;
  /**
   * Reads the TLS files again and serves new connections with them (auto_reload saw them change,
   * e.g. cert-manager renewed the certificate); a fault is logged and the old ones stay.
   */
  reloadTls(): void;
  close(): Promise<void>;
}

/**
 * Starts the admin server when `cfg.port` is not 0 (resolves undefined otherwise). Throws a
 * ConfigError for a TLS fault; rejects with the listen error (EADDRINUSE, …) when it cannot bind.
 */
export async function startAdmin(cfg: AdminConfig, sup: Supervisor, log: Logger, fleet?: FleetTable): Promise<AdminServer | undefined> {
  if (cfg.port === 0) return undefined;
  const tlsOptions = adminTlsOptions(cfg);
  const metrics = createMetrics();
  const counters: Record<string, number> = { auth_rejected: 0 };
  // No pipeline: the record says `pipeline: null` rather than an empty name.
  const authorize = createAuthorizer({ auth: cfg.auth, log: log.child({ pipeline: null, plugin: 'admin' }), pipeline: '', plugin: 'admin', counters });
  const allowed = new WeakSet<object>();

  const send = (res: ServerResponse, code: number, type: string, body: string, headers: Record<string, string> = {}) => {
    res.writeHead(code, { 'Content-Type': type, 'Cache-Control': 'no-store', ...headers });
    res.end(body);
  };
  const json = (res: ServerResponse, code: number, value: unknown, headers?: Record<string, string>) =>
    send(res, code, 'application/json', `${JSON.stringify(value)}\n`, headers);

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    if (tlsOptions && cfg.auth && !allowed.has(req.socket)) {
      json(res, 403, { error: 'forbidden' }, { Connection: 'close' });
      return;
    }
    const path = (req.url ?? '/').split('?')[0]!;
    if (!PATHS.has(path) || (path === '/fleet' && !fleet)) {
      json(res, 404, { error: 'not found' });
      return;
    }
    if (req.method !== 'GET') {
      json(res, 405, { error: 'method not allowed' }, { Allow: 'GET' });
      return;
    }
    switch (path) {
      case '/livez':
        send(res, 200, 'text/plain; charset=utf-8', 'ok\n');
        return;
      case '/readyz': {
        const status = nodeStatus(sup);
        if (status.ready) json(res, 200, { ready: true });
        else json(res, 503, { ready: false, pipelines: Object.fromEntries(Object.entries(status.pipelines).map(([name, p]) => [name, readinessOf(p)])) });
        return;
      }
      case '/status':
        json(res, 200, nodeStatus(sup));
        return;
      case '/fleet': {
        if (wantsHtml(req)) {
          const page = fleetViewPage();
          send(res, 200, 'text/html; charset=utf-8', page.html, { 'Content-Security-Policy': page.csp, 'X-Content-Type-Options': 'nosniff' });
          return;
        }
        const now = Date.now();
        fleet!.sweep(now);
        json(res, 200, { nodes: fleet!.view(now), forgotten: { ...fleet!.forgotten } });
        return;
      }
      case '/metrics':
        if (fleet) fleet.sweep(Date.now());
        metrics.render(nodeStatus(sup), fleet?.sample(Date.now())).then(
          (text) => send(res, 200, METRICS_CONTENT_TYPE, text),
          (err: unknown) => send(res, 500, 'text/plain; charset=utf-8', `${errorMessage(err)}\n`),
        );
        return;
    }
  };

  const server = createHttpListener(tlsOptions, { requestTimeoutMs: ADMIN_REQUEST_TIMEOUT_MS, maxConnections: ADMIN_MAX_CONNECTIONS }, onRequest);
  if (tlsOptions) {
    server.on('secureConnection', (socket: TLSSocket) => {
      if (authorize(socket).ok) allowed.add(socket);
    });
    server.on('tlsClientError', () => undefined);
  }
  server.on('clientError', (_err, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: cfg.host, port: cfg.port }, () => {
      server.removeListener('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : cfg.port;
  log.info({ host: cfg.host, port, tls: !!tlsOptions }, 'Admin endpoint listening');
  return {
    port,
    reloadTls() {
      if (!tlsOptions) return;
      try {
        (server as HttpsServer).setSecureContext(adminTlsOptions(cfg)!);
        log.info({}, 'Admin endpoint certificates reloaded');
      } catch (err) {
        log.error({ error: errorMessage(err) }, 'Admin endpoint certificates not reloaded, keeping the old ones');
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
