// Test helpers for the nats plugins (DESIGN.md §19): Debian's nats-server with JetStream, in the
// foreground on loopback free ports with temp store dirs (one server, or a cluster of three),
// killed and started again on demand; streams created through the JetStream manager API, as an
// operator would; and the TOML of the nats sink and source.

import { type ChildProcess, spawn } from 'node:child_process';
import { connect as netConnect } from 'node:net';
import { JetStreamApiCodes, JetStreamApiError, jetstreamManager, type StreamInfo } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { freePort, nodeStarter, ownedTempDir, type RunningNode, sleep, type Teardown, type TempDir, tempDir, waitFor, waitReady } from './node.js';
import { fileSourceToml, sinkToml } from './toml.js';
import { peerBinary } from './peers.js';

export interface NatsServer {
  readonly name: string;
  readonly port: number;
  readonly url: string;
  /** its stderr (the server's own log), for failure messages */
  readonly log: string[];
  readonly running: boolean;
  /** its process id while it runs */
  readonly pid: number | undefined;
  /** Starts it (again, on the same store dir and ports); resolves once it accepts connections. */
  start(): Promise<void>;
  /** Sends `signal` (SIGKILL by default) and waits for the process to end. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = netConnect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

/**
 * `count` nats-servers with JetStream: one alone, or a cluster (named `c`) routed to each other;
 * on `clientPorts` when given (else free ones).
 * The test's teardown SIGKILLs them and removes their store dirs.
 */
export async function startNats(t: Teardown, count = 1, clientPorts?: readonly number[]): Promise<NatsServer[]> {
  const bin = peerBinary('nats-server');
  const ports = clientPorts ?? (await Promise.all(Array.from({ length: count }, () => freePort())));
  const clusterPorts = count > 1 ? await Promise.all(Array.from({ length: count }, () => freePort())) : [];
  const servers = ports.map((port, i): NatsServer => {
    const name = `n${i}`;
    const dir = tempDir(`logrelay-nats-${name}-`);
    const log: string[] = [];
    let child: ChildProcess | undefined;
    const args = ['-p', String(port), '-a', '127.0.0.1', '-sd', dir.path, '-js', '-n', name];
    if (count > 1) {
      const routes = clusterPorts.filter((_, j) => j !== i).map((p) => `nats://127.0.0.1:${p}`);
      args.push('--cluster', `nats://127.0.0.1:${clusterPorts[i]}`, '--routes', routes.join(','), '--cluster_name', 'c');
    }
    const server: NatsServer = {
      name,
      port,
      url: `nats://127.0.0.1:${port}`,
      log,
      get running() {
        return child !== undefined && child.exitCode === null && child.signalCode === null;
      },
      get pid() {
        return server.running ? child!.pid : undefined;
      },
      async start() {
        if (server.running) return;
        const c = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
        child = c;
        c.stderr!.setEncoding('utf8');
        c.stderr!.on('data', (chunk: string) => log.push(...chunk.split('\n').filter(Boolean)));
        await waitFor(
          async () => {
            if (c.exitCode !== null) throw new Error(`nats-server ${name} exited ${c.exitCode}: ${log.slice(-5).join(' | ')}`);
            return canConnect(port);
          },
          `nats-server ${name} listens on ${port}`,
          20_000,
        );
      },
      async kill(signal = 'SIGKILL') {
        const c = child;
        if (!c || !server.running) return;
        const gone = new Promise<void>((resolve) => c.once('exit', () => resolve()));
        c.kill(signal);
        await gone;
      },
    };
    t.teardown(async () => {
      await server.kill();
      dir.remove();
    });
    return server;
  });
  await Promise.all(servers.map((s) => s.start()));
  return servers;
}

/** A client connection to `servers` for the test itself, closed in teardown. */
export async function natsClient(t: Teardown, servers: readonly NatsServer[]): Promise<NatsConnection> {
  const nc = await connect({ servers: servers.map((s) => s.url), maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  t.teardown(() => void nc.close());
  return nc;
}

/**
 * Creates stream `name` on `subjects` with `replicas` (what an operator does: the plugins never
 * create streams); retried while a new cluster elects its JetStream leader.
 */
export async function createStream(nc: NatsConnection, name: string, subjects: string[], replicas = 1): Promise<StreamInfo> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const jsm = await jetstreamManager(nc);
      return await jsm.streams.add({ name, subjects, num_replicas: replicas, duplicate_window: 120_000_000_000 });
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(250);
    }
  }
}

/**
 * Waits (bounded) until a clustered stream answers again with a leader and all `replicas`
 * current. After a server of the cluster is killed and started again, the JetStream API may not
 * answer for some seconds while the meta group and the stream's group catch the returning server
 * up; a request made then times out (what stop 53's CI run met reading the stream at once).
 */
export async function streamSettled(nc: NatsConnection, name: string, replicas: number, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  for (;;) {
    try {
      const jsm = await jetstreamManager(nc, { timeout: 2000 });
      const { cluster } = await jsm.streams.info(name);
      const current = (cluster?.replicas ?? []).filter((p) => p.current && !p.offline).length + (cluster?.leader ? 1 : 0);
      last = `leader ${cluster?.leader ?? 'none'}, ${current} of ${replicas} current`;
      if (cluster?.leader && current >= replicas) return;
    } catch (err) {
      last = (err as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`stream ${name} not settled after ${timeoutMs} ms: ${last}`);
    await sleep(250);
  }
}

/** Entries the stream holds now: the lines of every message (a sink's batch is one message of NDJSON). */
export async function streamEntries(nc: NatsConnection, name: string): Promise<number> {
  const jsm = await jetstreamManager(nc);
  const { first_seq: first, last_seq: last, messages } = (await jsm.streams.info(name)).state;
  if (messages === 0) return 0;
  let entries = 0;
  for (let seq = first; seq <= last; seq++) {
    // a sequence with no message (deleted) is skipped; any other failure fails the count,
    // rather than counting fewer entries than the stream holds
    const m = await jsm.streams.getMessage(name, { seq }).catch((err: Error) => {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.NoMessageFound) return null;
      throw err;
    });
    if (m) entries += m.string().split('\n').filter((l) => l.length > 0).length;
  }
  return entries;
}

/** Messages the stream holds now. */
export async function streamMessages(nc: NatsConnection, name: string): Promise<number> {
  const jsm = await jetstreamManager(nc);
  return (await jsm.streams.info(name)).state.messages;
}

/** A nats sink table `id` publishing to `servers` (on `subject`, when given); `config` lines follow. */
export const natsSinkToml = (id: string, servers: readonly NatsServer[], config = ''): string => `[[pipelines.plugin_sinks]]
id = "${id}"
type = "nats"
[pipelines.plugin_sinks.config]
servers = ${JSON.stringify(servers.map((s) => s.url))}
backoff_min_ms = 100
backoff_max_ms = 1000
${config}
`;

/** A nats source table `id` on `stream` and consumer `durable`; `config` lines follow. */
export const natsSourceToml = (id: string, servers: readonly NatsServer[], stream: string, durable: string, config = ''): string => `[[pipelines.plugin_sources]]
id = "${id}"
type = "nats"
[pipelines.plugin_sources.config]
servers = ${JSON.stringify(servers.map((s) => s.url))}
stream = "${stream}"
durable = "${durable}"
${config}
`;

const HEAD = 'status_interval_ms = 300\nshutdown_timeout_ms = 3000\n';

/** An edge: file source on `dir` (`*.log`, from the start) → nats sink `js` on subject logs.app. */
export function natsEdgeToml(dir: string, servers: readonly NatsServer[], sinkConfig = 'buffer_size = 2000\non_full = "block"'): string {
  return `${HEAD}node_name = "edge"
[[pipelines]]
name = "app"
${fileSourceToml('app', dir, 'pattern = "*.log"\nfrom = "start"\ncheck_interval_ms = 200')}${natsSinkToml('js', servers, `subject = "logs.app"\n${sinkConfig}`)}`;
}

/** A collector: nats source `in` on stream LOGS, consumer `collectors` → stdout as JSON (blocking). */
export function natsCollectorToml(servers: readonly NatsServer[], sourceConfig = 'buffer_size = 200'): string {
  return `${HEAD}
[[pipelines]]
name = "collect"
[pipelines.flow.format]
type = "json"
${natsSourceToml('in', servers, 'LOGS', 'collectors', sourceConfig)}${sinkToml('out', 'stdout', 'buffer_size = 5000\non_full = "block"')}`;
}

export interface NatsNodes {
  readonly dir: TempDir;
  start(name: string, toml: string): Promise<RunningNode>;
}

/** Nodes of a test, started at debug (status reports) and waited for; SIGKILLed in teardown. */
export function natsNodes(t: { teardown(fn: () => unknown): void }): NatsNodes {
  const dir = ownedTempDir(t, 'logrelay-nats-');
  const running: RunningNode[] = [];
  const starter = nodeStarter(dir, running);
  t.teardown(async () => {
    for (const n of running) n.child.kill('SIGKILL');
    await Promise.all(running.map((n) => n.exited));
  });
  return {
    dir,
    async start(name, toml) {
      const node = starter(name, toml, ['--logging.level=debug']);
      await waitReady(node, name, 30_000);
      return node;
    },
  };
}

