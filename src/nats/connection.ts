// What the `nats` sink and source share (DESIGN.md §19): the connection keys (servers, TLS,
// credentials), the client options built from them once, and a connection kept up: the first
// connect retried with backoff, later losses left to the client's own reconnect (same backoff).

import { readFileSync } from 'node:fs';
import { connect, credsAuthenticator, type ConnectionOptions, type NatsConnection } from '@nats-io/transport-node';
import type { PluginConfig } from '../config/schema.js';
import type { Fields } from '../config/spec.js';
import { Backoff } from '../core/backoff.js';
import { errorMessage, type PluginKind, PluginError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { pluginConfig } from '../core/plugin-config.js';
import { clientTlsOptions, TLS_FIELDS, type TlsConfig } from '../net/tls.js';

export interface NatsConfig {
  /** `nats://host:port` (or `tls://`), at least one */
  readonly servers: readonly string[];
  readonly tls: TlsConfig;
  readonly credentials_file?: string;
  readonly user?: string;
  readonly password?: string;
  readonly token?: string;
}

/** Connection keys of both nats plugins; the type's own keys are added by natsConfig(). */
const NATS_FIELDS: Fields = {
  servers: { t: 'strings', doc: 'NATS servers to connect to, `nats://host:port` (or `tls://`); required' },
  credentials_file: { t: 'string', nonEmpty: true, doc: 'a NATS `.creds` file (JWT and NKey seed); one way of authenticating' },
  user: { t: 'string', nonEmpty: true, doc: 'user name, with `password`; one way of authenticating' },
  password: { t: 'string', doc: 'password of `user`' },
  token: { t: 'string', nonEmpty: true, doc: 'an authentication token; one way of authenticating' },
  ...TLS_FIELDS,
};

/** A nats plugin type's keys: the connection keys with the type's own added. */
export function natsFields(own: Fields): Fields {
  return { ...NATS_FIELDS, ...own };
}

/** Validates a nats plugin's config table: the connection keys and the type's own. */
export function natsConfig<T extends NatsConfig>(kind: PluginKind, plugin: PluginConfig, fields: Fields): T {
  const cfg = pluginConfig<T>(kind, plugin, fields);
  if (cfg.servers.length === 0) throw new PluginError(kind, plugin.id, 'servers', 'is required (a list of nats://host:port)');
  cfg.servers.forEach((s, i) => {
    let url: URL | undefined;
    try {
      url = new URL(s);
    } catch {
      url = undefined;
    }
    if (!url || !['nats:', 'tls:'].includes(url.protocol) || url.hostname === '') {
      throw new PluginError(kind, plugin.id, `servers[${i}]`, `must be nats://host:port, got ${JSON.stringify(s)}`);
    }
  });
  const ways = [cfg.credentials_file !== undefined, cfg.user !== undefined || cfg.password !== undefined, cfg.token !== undefined];
  if (ways.filter(Boolean).length > 1) {
    throw new PluginError(kind, plugin.id, 'credentials_file', 'use one of credentials_file, user/password, token');
  }
  if ((cfg.user === undefined) !== (cfg.password === undefined)) {
    throw new PluginError(kind, plugin.id, cfg.user === undefined ? 'user' : 'password', 'user and password go together');
  }
  return cfg;
}

/** Client options from a validated config; certificate and credential files are read now. */
export function natsConnectOptions(kind: PluginKind, id: string, cfg: NatsConfig, name: string, backoff: Backoff): ConnectionOptions {
  const opts: ConnectionOptions = {
    servers: [...cfg.servers],
    name,
    // after the first connect the client reconnects by itself, forever, on our backoff
    reconnect: true,
    maxReconnectAttempts: -1,
    reconnectDelayHandler: () => backoff.next(),
  };
  if (cfg.tls.enabled) {
    const tls = clientTlsOptions(kind, id, cfg.tls, cfg.tls.server_name ?? '');
    // without server_name the client verifies each server by the host it dials
    if (cfg.tls.server_name === undefined) delete tls!.servername;
    opts.tls = tls as ConnectionOptions['tls'];
  }
  if (cfg.credentials_file !== undefined) {
    let creds: Uint8Array;
    try {
      creds = readFileSync(cfg.credentials_file);
    } catch (err) {
      throw new PluginError(kind, id, 'credentials_file', `cannot read ${cfg.credentials_file}: ${errorMessage(err)}`);
    }
    opts.authenticator = credsAuthenticator(creds);
  } else if (cfg.user !== undefined) {
    opts.user = cfg.user;
    opts.pass = cfg.password;
  } else if (cfg.token !== undefined) {
    opts.token = cfg.token;
  }
  return opts;
}

/** `connected` (0 or 1) and `reconnects` (connections re-established after a loss, first connects retried included). */
export interface LinkCounters {
  connected: number;
  reconnects: number;
}

export interface NatsLinkOptions {
  readonly options: ConnectionOptions;
  readonly backoff: Backoff;
  readonly log: Logger;
  readonly counters: LinkCounters;
  /** a new connection is up (also after the client reconnected it: `fresh` false) */
  readonly onUp: (nc: NatsConnection, fresh: boolean) => void;
  /** the connection is down (the client reconnects, or a new one is dialed) */
  readonly onDown?: () => void;
}

/** One NATS connection kept up until close(). */
export class NatsLink {
  private nc: NatsConnection | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closing = false;
  /** a failure is logged at WARN once per outage, then at DEBUG */
  private outageLogged = false;
  private failed = false;
  /**
   * The connection is up. Its own flag, not `counters.connected`: a sink also lowers that while
   * its publishes keep failing over a live connection, and must go on publishing to find out
   * when they work again.
   */
  private isUp = false;

  constructor(private readonly o: NatsLinkOptions) {}

  get connection(): NatsConnection | undefined {
    return this.nc;
  }

  get up(): boolean {
    return this.isUp;
  }

  /** Failed to connect, or lost the connection and not back since (not while the first attempt is under way). */
  get down(): boolean {
    return this.failed && !this.isUp;
  }

  start(): void {
    if (this.closing || this.nc || this.timer) return;
    connect(this.o.options).then(
      (nc) => this.attach(nc),
      (err: unknown) => {
        this.outage('NATS server unreachable, retrying', err);
        this.retry();
      },
    );
  }

  private retry(): void {
    if (this.closing) return;
    this.o.counters.reconnects++;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.start();
    }, this.o.backoff.next());
  }

  private outage(msg: string, err: unknown): void {
    if (!this.closing) this.failed = true;
    const fields = { servers: this.o.options.servers, error: errorMessage(err) };
    if (this.outageLogged || this.closing) this.o.log.debug(fields, msg);
    else this.o.log.warn(fields, msg);
    this.outageLogged = true;
  }

  private attach(nc: NatsConnection): void {
    if (this.closing) {
      void nc.close();
      return;
    }
    this.nc = nc;
    const c = this.o.counters;
    c.connected = 1;
    this.isUp = true;
    this.outageLogged = false;
    this.o.backoff.reset();
    this.o.log.debug({ server: nc.getServer() }, 'NATS connected');
    this.o.onUp(nc, true);
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === 'disconnect') {
          c.connected = 0;
          this.isUp = false;
          this.outage('NATS connection lost, reconnecting', s.server);
          this.o.onDown?.();
        } else if (s.type === 'reconnect') {
          c.connected = 1;
          this.isUp = true;
          c.reconnects++;
          this.outageLogged = false;
          this.o.backoff.reset();
          this.o.log.debug({ server: s.server }, 'NATS reconnected');
          this.o.onUp(nc, false);
        }
      }
    })();
    void nc.closed().then((err) => {
      if (this.nc !== nc) return;
      this.nc = undefined;
      c.connected = 0;
      this.isUp = false;
      if (this.closing) return;
      this.outage('NATS connection closed, dialing again', err ?? 'closed');
      this.o.onDown?.();
      this.retry();
    });
  }

  /** Flushes what was published (acks included) and closes, giving up at `deadline` (epoch ms). */
  async close(deadline: number): Promise<void> {
    this.closing = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    const nc = this.nc;
    if (!nc) return;
    let t: NodeJS.Timeout | undefined;
    await Promise.race([
      nc.flush().catch(() => undefined),
      new Promise<void>((resolve) => (t = setTimeout(resolve, Math.max(100, deadline - Date.now())))),
    ]);
    clearTimeout(t);
    await nc.close().catch(() => undefined);
    this.nc = undefined;
    this.o.counters.connected = 0;
    this.isUp = false;
  }
}

/** Backoff for reconnects and retries: doubling from `min_ms` to `max_ms`, ±20 % jitter. */
export function natsBackoff(min_ms: number, max_ms: number): Backoff {
  return new Backoff({ min_ms, max_ms, jitter: 0.2 });
}
