// Topology runner: reads compose.yaml and runs each service's node as a local process with its
// deploy/ file, mapping service host names to 127.0.0.1 and container ports to free local ports
// through the same environment variables compose sets. The PKI comes from the same script.

import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { freePort, ROOT, type RunningNode, spawnNode, waitFor } from './node.js';
import { makePki, type Pki } from './pki.js';

export interface ComposeService {
  readonly command?: string[];
  readonly entrypoint?: string[];
  readonly environment?: Record<string, string>;
  readonly depends_on?: Record<string, { condition: string }>;
  readonly init?: boolean;
  readonly healthcheck?: { test?: string[]; disable?: boolean };
  readonly volumes?: string[];
  readonly ports?: string[];
  /** compose profiles the service belongs to; none: it runs by default */
  readonly profiles?: string[];
}

export interface Compose {
  readonly services: Record<string, ComposeService>;
  readonly volumes?: Record<string, unknown>;
}

export function readCompose(): Compose {
  return parseYaml(readFileSync(join(ROOT, 'compose.yaml'), 'utf8'), { merge: true }) as Compose;
}

/**
 * Services that run a node (have a `-c FILE` command), in dependency order: those compose runs
 * by default, or with `profile` those of that profile (`docker compose --profile nats up`).
 */
export function nodeServices(compose: Compose, profile?: string): string[] {
  const inProfile = (s: ComposeService) => (profile === undefined ? s.profiles === undefined : s.profiles?.includes(profile) === true);
  const names = Object.keys(compose.services).filter((n) => compose.services[n]!.command?.includes('-c') && inProfile(compose.services[n]!));
  const order: string[] = [];
  const visit = (n: string) => {
    if (order.includes(n) || !names.includes(n)) return;
    for (const dep of Object.keys(compose.services[n]!.depends_on ?? {})) visit(dep);
    order.push(n);
  };
  names.forEach(visit);
  return order;
}

export function configFileOf(service: ComposeService): string {
  const cmd = service.command ?? [];
  return join(ROOT, cmd[cmd.indexOf('-c') + 1]!);
}

/** Names the pki service writes certificates for (its entrypoint's arguments after the directory). */
export function pkiNames(compose: Compose): string[] {
  const ep = compose.services.pki?.entrypoint ?? [];
  return ep.slice(ep.indexOf('/pki') + 1);
}

export interface LocalEnv {
  /** per service: the environment the local process gets */
  readonly env: Record<string, Record<string, string>>;
  /** `service:containerPort` → local port */
  readonly ports: Map<string, number>;
  /** per service: `<VAR>_DIR` → local directory */
  readonly dirs: Record<string, Record<string, string>>;
}

/**
 * Maps compose environments to local ones: a `X_HOST` naming a service becomes 127.0.0.1 and its
 * `X_PORT` the local port of that service's container port; any other `*_PORT` is the service's
 * own listener; `PKI_DIR` is the local PKI; other `*_DIR` paths get a temp directory each.
 * Nothing listens beyond loopback: every `${X_HOST…}` the service's deploy file reads is
 * 127.0.0.1 too (its default may be 0.0.0.0), and a compose `X_HOST` naming no service is refused.
 */
export async function localEnv(compose: Compose, root: string, pkiDir: string, profile?: string): Promise<LocalEnv> {
  const ports = new Map<string, number>();
  const portFor = async (service: string, port: string) => {
    const key = `${service}:${port}`;
    if (!ports.has(key)) ports.set(key, await freePort());
    return ports.get(key)!;
  };
  const env: Record<string, Record<string, string>> = {};
  const dirs: Record<string, Record<string, string>> = {};
  for (const name of nodeServices(compose, profile)) {
    const src = compose.services[name]!.environment ?? {};
    const out: Record<string, string> = {};
    for (const m of readFileSync(configFileOf(compose.services[name]!), 'utf8').matchAll(/\$\{(\w+_HOST)\b/g)) out[m[1]!] = '127.0.0.1';
    dirs[name] = {};
    for (const [key, value] of Object.entries(src)) {
      if (key.endsWith('_HOST')) {
        if (!(value in compose.services)) throw new Error(`${name}: ${key}=${value} names no compose service, so it has no local address`);
        out[key] = '127.0.0.1';
      } else if (key.endsWith('_PORT')) {
        const hostVar = `${key.slice(0, -'_PORT'.length)}_HOST`;
        const target = src[hostVar] ?? name;
        out[key] = String(await portFor(target, value));
      } else if (key === 'PKI_DIR') {
        out[key] = pkiDir;
      } else if (key.endsWith('_DIR')) {
        const dir = join(root, name, key.toLowerCase());
        mkdirSync(dir, { recursive: true });
        out[key] = dir;
        dirs[name][key] = dir;
      } else {
        out[key] = value;
      }
    }
    env[name] = out;
  }
  return { env, ports, dirs };
}

export interface Fleet {
  readonly pki: Pki;
  readonly local: LocalEnv;
  readonly nodes: Map<string, RunningNode>;
  node(name: string): RunningNode;
  start(name: string): Promise<RunningNode>;
  kill(name: string, signal?: NodeJS.Signals): Promise<void>;
  stopAll(): Promise<void>;
}

/**
 * Starts every node service in dependency order, each once its pipelines have started; when one
 * fails to start, the ones already running are stopped before the error goes on.
 */
export async function startFleet(root: string, extraArgs: readonly string[] = []): Promise<Fleet> {
  const compose = readCompose();
  const pki = makePki(join(root, 'pki'), pkiNames(compose));
  const local = await localEnv(compose, root, pki.dir);
  const nodes = new Map<string, RunningNode>();
  const fleet: Fleet = {
    pki,
    local,
    nodes,
    node(name) {
      const n = nodes.get(name);
      if (!n) throw new Error(`service ${name} is not running`);
      return n;
    },
    async start(name) {
      const service = compose.services[name]!;
      const node = spawnNode([...(service.command ?? []), ...extraArgs], { env: local.env[name] });
      nodes.set(name, node);
      const pipelines = (readFileSync(configFileOf(service), 'utf8').match(/^\[\[pipelines\]\]/gm) ?? []).length;
      await waitFor(
        () => node.records.filter((r) => r.msg === 'Starting pipeline').length >= pipelines || node.child.exitCode !== null,
        `${name} started`,
        30_000,
      );
      if (node.child.exitCode !== null) {
        // why, from its stderr and its service log's errors (a bind failure is logged, then exit 69)
        const errors = node.records.filter((r) => r.level === 'error' || r.level === 'fatal').map((r) => JSON.stringify(r));
        throw new Error(`${name} exited ${node.child.exitCode}: ${[...node.errText, ...errors].join('\n')}`);
      }
      return node;
    },
    async kill(name, signal = 'SIGKILL') {
      const node = fleet.node(name);
      node.signal(signal);
      await node.exited;
      nodes.delete(name);
    },
    async stopAll() {
      // Downstream last, so upstream drains find their peers.
      // Each node is stopped even when one before it failed to; the first failure goes on.
      const order = nodeServices(compose).reverse();
      let failure: unknown;
      for (const name of order) {
        const node = nodes.get(name);
        nodes.delete(name);
        if (node) await node.stop(15_000).catch((err: unknown) => (failure ??= err));
      }
      if (failure) throw failure;
    },
  };
  try {
    for (const name of nodeServices(compose)) await fleet.start(name);
  } catch (err) {
    await fleet.stopAll().catch(() => undefined);
    throw err;
  }
  return fleet;
}
