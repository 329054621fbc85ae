// The fleet of compose.yaml run as local processes from the same deploy/ files (issue 8).

import { spawnSync } from 'node:child_process';
import { appendFileSync, closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { loadConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { configFileOf, type Fleet, localEnv, nodeServices, pkiNames, readCompose, startFleet } from '../helpers/fleet.js';
import { childPids, ownedTempDir, pidsHolding, ROOT, sleep, spawnOwnedNode, waitFor } from '../helpers/node.js';
import { latestStatus } from '../helpers/status.js';
import { makePki } from '../helpers/pki.js';

const CHAIN_TYPES = new Set(['tcp_chain', 'http_chain']);

test.serial('every deploy/ file passes check and compose wires every chain sink to a matching chain source', async (t) => {
  const compose = readCompose();
  const dir = ownedTempDir(t);
  const pki = makePki(join(dir.path, 'pki'), pkiNames(compose));
  const local = await localEnv(compose, dir.path, pki.dir);
  const services = nodeServices(compose);
  t.deepEqual(services.sort(), ['collector', 'edge', 'relay-a', 'relay-b']);
  const deployFiles = readdirSync(join(ROOT, 'deploy')).filter((f) => f.endsWith('.toml'));
  t.is(deployFiles.length, 5);
  const used = new Set([...services, ...nodeServices(compose, 'nats')].map((s) => configFileOf(compose.services[s]!)));
  for (const f of deployFiles) t.true(used.has(join(ROOT, 'deploy', f)), `deploy/${f} is used by a service`);

  // The container view: each service's config as compose's environment makes it.
  const configs = new Map<string, Config>();
  for (const name of services) {
    const service = compose.services[name]!;
    t.true(existsSync(configFileOf(service)), `${name}: ${configFileOf(service)} exists`);
    t.true(service.init, `${name}: init: true`);
    t.truthy(service.healthcheck?.test, `${name}: health check`);
    // Issue 15: every node serves its admin endpoint on 9598, not published, and is healthy when ready.
    t.regex(service.healthcheck?.test?.join(' ') ?? '', /\/readyz/, `${name}: health check asks /readyz`);
    t.is(service.environment?.ADMIN_PORT, '9598', `${name}: admin endpoint on 9598`);
    t.false((service.ports ?? []).some((p) => p.includes('9598')), `${name}: admin port not published`);
    t.false((service.volumes ?? []).some((v) => v.startsWith('pki-ca:')), `${name}: the CA key volume is not mounted`);
    t.deepEqual(
      (service.volumes ?? []).filter((v) => v.startsWith('pki')),
      [`pki-${name}:/pki:ro`],
      `${name}: mounts only its own certificates`,
    );
    configs.set(name, loadConfig({ file: configFileOf(service), env: service.environment ?? {}, flags: new Map() }));
    // The local view: the project's own `check` builds every plugin (certificates read).
    const check = spawnOwnedNode(t, ['check', ...(service.command ?? [])], { env: local.env[name] });
    const { code } = await check.finish(`check of ${name}`);
    t.is(code, 0, `${name}: ${check.errText.join('\n')}`);
    t.regex(check.out.join(''), /^configuration ok: \d+ pipelines?$/);
  }
  let links = 0;
  for (const [name, config] of configs) {
    for (const p of config.pipelines) {
      for (const sink of p.plugin_sinks.filter((s) => CHAIN_TYPES.has(s.type))) {
        const host = String(sink.config.host);
        const port = Number(sink.config.port);
        t.true(host in compose.services, `${name}/${p.name}/${sink.id}: host ${host} is a compose service`);
        const target = configs.get(host);
        const source = target?.pipelines.flatMap((tp) => tp.plugin_sources).find((s) => s.type === sink.type && Number(s.config.port) === port);
        t.truthy(source, `${name}/${p.name}/${sink.id}: ${host} has a ${sink.type} source on port ${port}`);
        const tls = sink.config.tls as { enabled?: boolean; cert_file?: string } | undefined;
        t.true(tls?.enabled === true && typeof tls.cert_file === 'string', `${name}/${sink.id}: mutual TLS`);
        const allow = (source?.config.auth as { allow?: string[] } | undefined)?.allow ?? [];
        t.true(allow.includes(String(sink.config.node)), `${host} allows ${sink.config.node}`);
        links++;
      }
    }
  }
  t.is(links, 6, 'edge: 2 pipelines × 2 relays; each relay: 1 link to the collector');
  // Compose's own check where a compose client exists; otherwise say so and go on.
  const composeCmd = [
    ['docker', ['compose']],
    ['docker-compose', []],
  ].find(([cmd, args]) => spawnSync(cmd as string, [...(args as string[]), 'version'], { stdio: 'ignore' }).status === 0) as
    | [string, string[]]
    | undefined;
  if (composeCmd) {
    const r = spawnSync(composeCmd[0], [...composeCmd[1], '-f', join(ROOT, 'compose.yaml'), 'config', '--quiet'], { encoding: 'utf8' });
    t.is(r.status, 0, `compose config: ${r.stderr}`);
  } else {
    t.log('docker compose / docker-compose not available here: compose config not run; compose.yaml parsed with yaml instead');
  }
  const deps = compose.services.edge?.depends_on ?? {};
  t.is(deps['relay-a']?.condition, 'service_healthy');
  t.is(compose.services.collector?.depends_on?.pki?.condition, 'service_completed_successfully');
});

/**
 * Reads the collector's file sink (JSON lines) as it grows: each call parses only the whole lines
 * added since the last one and returns every message so far with how often it arrived.
 */
function collectorReader(fleet: Fleet): () => Map<string, number> {
  const dir = fleet.local.dirs.collector!.DATA_DIR!;
  const counts = new Map<string, number>();
  const consumed = new Map<string, number>();
  return () => {
    for (const f of readdirSync(dir).filter((x) => x.endsWith('.log'))) {
      const path = join(dir, f);
      const from = consumed.get(f) ?? 0;
      const size = statSync(path).size;
      if (size <= from) continue;
      const buf = Buffer.alloc(size - from);
      const fd = openSync(path, 'r');
      try {
        readSync(fd, buf, 0, buf.length, from);
      } finally {
        closeSync(fd);
      }
      const whole = buf.lastIndexOf(10) + 1;
      for (const line of buf.subarray(0, whole).toString('utf8').split('\n')) {
        if (!line) continue;
        const m = (JSON.parse(line) as { message: string }).message;
        counts.set(m, (counts.get(m) ?? 0) + 1);
      }
      consumed.set(f, from + whole);
    }
    return counts;
  };
}

function missingOf(counts: Map<string, number>, prefix: string, total: number): number[] {
  const missing: number[] = [];
  for (let i = 1; i <= total; i++) if (!counts.has(`${prefix}-${String(i).padStart(6, '0')}`)) missing.push(i);
  return missing;
}

const numberedLines = (prefix: string, from: number, to: number): string => {
  let text = '';
  for (let i = from; i <= to; i++) text += `${prefix}-${String(i).padStart(6, '0')}\n`;
  return text;
};

async function writeLines(file: string, prefix: string, from: number, to: number, perBatch: number, everyMs: number) {
  for (let i = from; i <= to; i += perBatch) {
    appendFileSync(file, numberedLines(prefix, i, Math.min(to, i + perBatch - 1)));
    if (everyMs > 0) await sleep(everyMs);
  }
}

for (const restart of [false, true]) {
  test.serial(`dual chain: relay-a killed mid-stream${restart ? ' and restarted later' : ''}, every line reaches the collector`, async (t) => {
    // the fleet's start (up to 4 × 30 s), the restart (30 s) and the waits below
    t.timeout(300_000);
    const dir = ownedTempDir(t);
    const fleet = await startFleet(dir.path, ['--status_interval_ms=1000']);
    t.teardown(() => fleet.stopAll());
    const collected = collectorReader(fleet);
    const appLog = join(fleet.local.dirs.edge!.APP_LOG_DIR!, 'app.log');
    await writeLines(appLog, 'dual', 1, 1000, 20, 10);
    await waitFor(() => collected().has('dual-000500'), 'lines flow to the collector');
    if (!restart) {
      // Each node's compose health check, run as compose would with the node's environment: all ready.
      const compose = readCompose();
      for (const name of nodeServices(compose)) {
        const [, node, ...args] = compose.services[name]!.healthcheck!.test!;
        t.is(node, 'node');
        const r = spawnSync(process.execPath, args, { env: { ...process.env, ...fleet.local.env[name] }, timeout: 10_000 });
        t.is(r.status, 0, `${name}: health check passes`);
      }
    }
    await fleet.kill('relay-a');
    await writeLines(appLog, 'dual', 1001, 2000, 20, 10);
    if (restart) {
      await fleet.start('relay-a');
      await writeLines(appLog, 'dual', 2001, 3000, 20, 10);
    }
    const total = restart ? 3000 : 2000;
    try {
      await waitFor(() => missingOf(collected(), 'dual', total).length === 0, `all ${total} lines at the collector`, 60_000);
    } catch (err) {
      const missing = missingOf(collected(), 'dual', total);
      t.log(`missing ${missing.length}: ${missing.slice(0, 10).join(' ')} … ${missing.slice(-10).join(' ')}`);
      for (const [name, node] of fleet.nodes) t.log(name, JSON.stringify(node.records.filter((r) => r.level !== 'info').slice(-6)));
      throw err;
    }
    const counts = collected();
    const dups = [...counts.values()].filter((c) => c > 1).length;
    t.deepEqual(missingOf(counts, 'dual', total), []);
    // both relays forward each line; the collector's dedup keeps one copy (DESIGN.md §13, §14)
    t.is(dups, 0, `${dups} of ${total} lines arrived more than once`);
  });
}

test.serial('chain through relays: 100,000 lines written at the edge reach the collector complete over mutual TLS', async (t) => {
  // the fleet's start (up to 4 × 30 s), the paced writing (up to 180 s) and the last wait (60 s)
  t.timeout(420_000);
  const dir = ownedTempDir(t);
  const fleet = await startFleet(dir.path);
  t.teardown(() => fleet.stopAll());
  const collected = collectorReader(fleet);
  const appLog = join(fleet.local.dirs.edge!.APP_LOG_DIR!, 'bulk.log');
  const t0 = Date.now();
  // An edge's chain sinks drop (counted) rather than stall when their queue (20,000) is full, so
  // the writer paces itself by the collector: at most LEAD lines ahead of what has arrived there.
  // Each link delivers in order, so the link that brought the most is at most LEAD + CHUNK behind
  // the writer and never drops; whatever the machine's speed, every line gets through.
  const total = 100_000;
  const CHUNK = 1000;
  const LEAD = 5000;
  const deadline = Date.now() + 180_000;
  for (let from = 1; from <= total; from += CHUNK) {
    await waitFor(
      () => collected().size >= from - 1 - LEAD,
      `the collector within ${LEAD} lines of the writer before line ${from}`,
      Math.max(0, deadline - Date.now()),
    );
    appendFileSync(appLog, numberedLines('bulk', from, Math.min(total, from + CHUNK - 1)));
  }
  await waitFor(() => missingOf(collected(), 'bulk', total).length === 0, `all ${total} lines at the collector`, 60_000);
  t.log(`100,000 lines edge → relays → collector in ${Date.now() - t0} ms`);
  // the edge's workers run with the young generation compose gives the edge (NODE_OPTIONS), not
  // the 16 MiB semi-space a worker gets by default (docs/capacity.md, "The shipped edges' links")
  const edgeWorkers = await childPids(fleet.node('edge').child.pid!);
  t.true(edgeWorkers.length >= 1);
  for (const pid of edgeWorkers) {
    const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    t.true(environ.includes('NODE_OPTIONS=--max-semi-space-size=8'), `edge worker ${pid}: NODE_OPTIONS of compose.yaml`);
    t.false(cmdline.some((a) => a.startsWith('--max-semi-space-size')), `edge worker ${pid}: no semi-space flag of its own: ${cmdline.join(' ')}`);
  }
  const relayRecords = ['relay-a', 'relay-b'].flatMap((n) => fleet.node(n).records);
  t.deepEqual(
    relayRecords.filter((r) => r.msg === 'Authorization rejected'),
    [],
  );
});

test.serial('crash isolation in the fleet: SIGKILL of the edge app worker leaves audit delivering without a gap', async (t) => {
  // the fleet's start (up to 4 × 30 s) and the waits below
  t.timeout(300_000);
  const dir = ownedTempDir(t);
  // status reports (at debug) tell when the edge's primary holds the app source's position
  const fleet = await startFleet(dir.path, ['--status_interval_ms=200', '--logging.level=debug']);
  t.teardown(() => fleet.stopAll());
  const collected = collectorReader(fleet);
  const edge = fleet.node('edge');
  const appLog = join(fleet.local.dirs.edge!.APP_LOG_DIR!, 'app.log');
  const auditLog = join(fleet.local.dirs.edge!.AUDIT_LOG_DIR!, 'audit.log');
  // Arrival times at the collector, from its live stream.
  const streamPort = fleet.local.ports.get('collector:8080')!;
  const arrivals: number[] = [];
  const { EventSource } = await import('eventsource');
  const es = new EventSource(`http://127.0.0.1:${streamPort}/stream`);
  t.teardown(() => es.close());
  es.onmessage = (ev) => {
    if (String(ev.data).includes('"audit-')) arrivals.push(Date.now());
  };
  let stopAudit = false;
  let audits = 0;
  let auditFailure: unknown;
  const auditWriter = (async () => {
    while (!stopAudit && audits < 2000) {
      await writeLines(auditLog, 'audit', audits + 1, audits + 1, 1, 0);
      audits++;
      await sleep(25);
    }
  })().catch((err: unknown) => {
    auditFailure = err;
  });
  // stopped before the directories go (teardowns run last registered first)
  t.teardown(async () => {
    stopAudit = true;
    await auditWriter;
  });
  await writeLines(appLog, 'app', 1, 50, 10, 5);
  await waitFor(() => collected().has('app-000050') && arrivals.length > 10, 'both pipelines deliver');
  // Positions travel with the counters in the worker's stats: once a report shows all 50 lines
  // (11 bytes each) read, the primary holds the position past them.
  await waitFor(() => Number(latestStatus(edge, 'app')?.['sources.app.bytes_read']) >= 50 * 11, 'a status report with the 50 app lines read');
  const workers = await childPids(edge.child.pid!);
  t.is(workers.length, 2);
  // the app pipeline's worker is the one that holds app.log open
  const holding = pidsHolding(workers, appLog);
  t.is(holding.length, 1, `one worker holds ${appLog}: ${holding.join(' ')}`);
  const appWorker = holding[0]!;
  const killedAt = Date.now();
  process.kill(appWorker, 'SIGKILL');
  await writeLines(appLog, 'app', 51, 150, 10, 20);
  const crash = await waitFor(() => edge.records.find((r) => r.msg === 'Pipeline process exited unexpectedly'), 'crash logged');
  t.is(crash.pipeline, 'app');
  await waitFor(() => missingOf(collected(), 'app', 150).length === 0, 'app lines written after the kill arrive', 30_000);
  await sleep(1500); // audit lines keep coming a while after the app lines
  stopAudit = true;
  await auditWriter;
  t.is(auditFailure, undefined, 'the audit writer ran to its end');
  const window = arrivals.filter((x) => x >= killedAt - 1000);
  let maxGap = 0;
  for (let i = 1; i < window.length; i++) maxGap = Math.max(maxGap, window[i]! - window[i - 1]!);
  t.true(window.length > 20);
  t.true(maxGap < 1000, `largest gap in audit arrivals after the kill: ${maxGap} ms`);
});

interface FleetRow {
  node: string;
  state: string;
  last_seen: string;
  via: string[];
  report: { node: string; interval_ms: number; pipelines: { name: string }[] };
}

/** The collector's /fleet as JSON, by node name. */
async function fleetView(fleet: Fleet): Promise<Map<string, FleetRow>> {
  const port = fleet.local.env.collector!.ADMIN_PORT!;
  const res = await fetch(`http://127.0.0.1:${port}/fleet`, { headers: { Accept: 'application/json' } });
  if (res.status !== 200) throw new Error(`/fleet answered ${res.status}`);
  const body = (await res.json()) as { nodes: FleetRow[] };
  return new Map(body.nodes.map((n) => [n.node, n]));
}

const FLEET_NODES = ['collector', 'edge', 'relay-a', 'relay-b'];
const allLive = (view: Map<string, FleetRow>) => FLEET_NODES.every((n) => view.get(n)?.state === 'live');

test.serial('fleet view: the collector lists every node with its path, an edge stopped turns silent and live again, a relay restart leaves all live, entries exactly once and no report among them', async (t) => {
  t.timeout(300_000);
  const INTERVAL = 1000;
  const dir = ownedTempDir(t);
  const fleet = await startFleet(dir.path, [`--report_interval_ms=${INTERVAL}`]);
  t.teardown(() => fleet.stopAll());
  const edgeStarted = Date.now();
  const collected = collectorReader(fleet);
  const appLog = join(fleet.local.dirs.edge!.APP_LOG_DIR!, 'app.log');

  // 1. every node within two intervals of the last one's start, with the path its reports took
  const first = await waitFor(async () => {
    const view = await fleetView(fleet);
    return allLive(view) ? view : undefined;
  }, 'all four nodes live at the collector', 2 * INTERVAL);
  t.log(`all four listed ${Date.now() - edgeStarted} ms after the edge started`);
  t.deepEqual(first.get('collector')!.via, [], 'the collector lists itself');
  t.deepEqual(first.get('relay-a')!.via, []);
  t.deepEqual(first.get('relay-b')!.via, []);
  const edgeVia = first.get('edge')!.via;
  t.true(edgeVia.length === 1 && ['relay-a', 'relay-b'].includes(edgeVia[0]!), `edge via ${JSON.stringify(edgeVia)}`);
  t.is(first.get('edge')!.report.interval_ms, INTERVAL);
  t.deepEqual(first.get('edge')!.report.pipelines.map((p) => p.name).sort(), ['app', 'audit']);

  let written = 0;
  const write = async (n: number) => {
    await writeLines(appLog, 'fleet', written + 1, written + n, 20, 10);
    written += n;
  };
  await write(300);

  // 2. the edge's primary stopped: silent within 3 intervals (and a little for the poll), live after SIGCONT
  const edge = fleet.node('edge');
  edge.signal('SIGSTOP');
  const stoppedAt = Date.now();
  try {
    await waitFor(async () => (await fleetView(fleet)).get('edge')?.state === 'silent', 'edge silent after SIGSTOP', 3 * INTERVAL + 1500);
    t.log(`edge silent ${Date.now() - stoppedAt} ms after SIGSTOP`);
    const view = await fleetView(fleet);
    t.is(view.get('relay-a')!.state, 'live', 'the others stay live');
    t.is(view.get('relay-b')!.state, 'live');
  } finally {
    edge.signal('SIGCONT');
  }
  await waitFor(async () => (await fleetView(fleet)).get('edge')?.state === 'live', 'edge live after SIGCONT', 3 * INTERVAL);
  await write(300);

  // 3. relay-a killed and restarted: reports take relay-b meanwhile, then every node is live again
  await fleet.kill('relay-a');
  await write(300);
  await waitFor(async () => {
    const view = await fleetView(fleet);
    return view.get('edge')?.state === 'live' && view.get('edge')?.via[0] === 'relay-b';
  }, 'the edge reports through relay-b while relay-a is down', 5 * INTERVAL);
  await fleet.start('relay-a');
  await write(300);
  await waitFor(async () => allLive(await fleetView(fleet)), 'every node live after relay-a restarted', 10 * INTERVAL);

  // entries: every one exactly once; nothing in the archive that is not one of them
  await waitFor(() => missingOf(collected(), 'fleet', written).length === 0, `all ${written} lines at the collector`, 60_000);
  const counts = collected();
  t.deepEqual([...counts.entries()].filter(([, n]) => n > 1), [], 'no line twice');
  t.deepEqual(
    [...counts.keys()].filter((m) => !/^fleet-\d{6}$/.test(m)),
    [],
    'the archive holds entries only: no report became one',
  );
  const metrics = await (await fetch(`http://127.0.0.1:${fleet.local.env.collector!.ADMIN_PORT}/metrics`)).text();
  t.regex(metrics, /logrelay_fleet_nodes\{state="live"\} 4/);
  t.regex(metrics, /logrelay_fleet_node_last_seen_timestamp_seconds\{node="edge"\} \d/);
});
