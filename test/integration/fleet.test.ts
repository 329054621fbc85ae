// The fleet of compose.yaml run as local processes from the same deploy/ files (issue 8).

import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { loadConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { configFileOf, type Fleet, localEnv, nodeServices, pkiNames, readCompose, startFleet } from '../helpers/fleet.js';
import { childPids, ROOT, sleep, spawnNode, tempDir, waitFor } from '../helpers/node.js';
import { makePki } from '../helpers/pki.js';

const CHAIN_TYPES = new Set(['tcp_chain', 'http_chain']);

test.serial('every deploy/ file passes check and compose wires every chain sink to a matching chain source', async (t) => {
  const compose = readCompose();
  const dir = tempDir();
  t.teardown(() => dir.remove());
  const pki = makePki(join(dir.path, 'pki'), pkiNames(compose));
  const local = await localEnv(compose, dir.path, pki.dir);
  const services = nodeServices(compose);
  t.deepEqual(services.sort(), ['collector', 'edge', 'relay-a', 'relay-b']);
  const deployFiles = readdirSync(join(ROOT, 'deploy')).filter((f) => f.endsWith('.toml'));
  t.is(deployFiles.length, 3);
  const used = new Set(services.map((s) => configFileOf(compose.services[s]!)));
  for (const f of deployFiles) t.true(used.has(join(ROOT, 'deploy', f)), `deploy/${f} is used by a service`);

  // The container view: each service's config as compose's environment makes it.
  const configs = new Map<string, Config>();
  for (const name of services) {
    const service = compose.services[name]!;
    t.true(existsSync(configFileOf(service)), `${name}: ${configFileOf(service)} exists`);
    t.true(service.init, `${name}: init: true`);
    t.truthy(service.healthcheck?.test, `${name}: health check`);
    configs.set(name, loadConfig({ file: configFileOf(service), env: service.environment ?? {}, flags: new Map() }));
    // The local view: the project's own `check` builds every plugin (certificates read).
    const check = spawnNode(['check', ...(service.command ?? [])], { env: local.env[name] });
    const { code } = await check.exited;
    t.is(code, 0, `${name}: ${check.errText.join('\n')}`);
    t.regex(check.out.join(''), /^configuration ok: \d+ pipelines$/);
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

/** Messages written to the collector's file sink (JSON lines), with counts. */
function collected(fleet: Fleet): Map<string, number> {
  const dir = fleet.local.dirs.collector!.DATA_DIR!;
  const counts = new Map<string, number>();
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.log'))) {
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
      if (!line) continue;
      const m = (JSON.parse(line) as { message: string }).message;
      counts.set(m, (counts.get(m) ?? 0) + 1);
    }
  }
  return counts;
}

function missingOf(counts: Map<string, number>, prefix: string, total: number): number[] {
  const missing: number[] = [];
  for (let i = 1; i <= total; i++) if (!counts.has(`${prefix}-${String(i).padStart(6, '0')}`)) missing.push(i);
  return missing;
}

async function writeLines(file: string, prefix: string, from: number, to: number, perBatch: number, everyMs: number) {
  for (let i = from; i <= to; ) {
    let chunk = '';
    for (let k = 0; k < perBatch && i <= to; k++, i++) chunk += `${prefix}-${String(i).padStart(6, '0')}\n`;
    appendFileSync(file, chunk);
    if (everyMs > 0) await sleep(everyMs);
  }
}

for (const restart of [false, true]) {
  test.serial(`dual chain: relay-a killed mid-stream${restart ? ' and restarted later' : ''}, every line reaches the collector`, async (t) => {
    const dir = tempDir();
    t.teardown(() => dir.remove());
    const fleet = await startFleet(dir.path, ['--status_interval_ms=1000']);
    t.teardown(() => fleet.stopAll());
    const appLog = join(fleet.local.dirs.edge!.APP_LOG_DIR!, 'app.log');
    await writeLines(appLog, 'dual', 1, 1000, 20, 10);
    await waitFor(() => collected(fleet).has('dual-000500'), 'lines flow to the collector');
    await fleet.kill('relay-a');
    await writeLines(appLog, 'dual', 1001, 2000, 20, 10);
    if (restart) {
      await fleet.start('relay-a');
      await writeLines(appLog, 'dual', 2001, 3000, 20, 10);
    }
    const total = restart ? 3000 : 2000;
    try {
      await waitFor(() => missingOf(collected(fleet), 'dual', total).length === 0, `all ${total} lines at the collector`, 60_000);
    } catch (err) {
      const missing = missingOf(collected(fleet), 'dual', total);
      t.log(`missing ${missing.length}: ${missing.slice(0, 10).join(' ')} … ${missing.slice(-10).join(' ')}`);
      for (const [name, node] of fleet.nodes) t.log(name, JSON.stringify(node.records.filter((r) => r.level !== 'info').slice(-6)));
      throw err;
    }
    const counts = collected(fleet);
    const dups = [...counts.values()].filter((c) => c > 1).length;
    t.log(`${total} lines, ${dups} arrived more than once (dual chain: both relays forward each line)`);
    t.deepEqual(missingOf(counts, 'dual', total), []);
  });
}

test.serial('chain through relays: 100,000 lines written at the edge reach the collector complete over mutual TLS', async (t) => {
  const dir = tempDir();
  t.teardown(() => dir.remove());
  const fleet = await startFleet(dir.path);
  t.teardown(() => fleet.stopAll());
  const appLog = join(fleet.local.dirs.edge!.APP_LOG_DIR!, 'bulk.log');
  const t0 = Date.now();
  // 20,000 lines/s: an edge's chain sinks drop (counted) rather than stall when a burst outruns
  // a link, so the writer keeps a pace the links sustain on a loaded 2-core machine.
  await writeLines(appLog, 'bulk', 1, 100_000, 1000, 50);
  await waitFor(() => missingOf(collected(fleet), 'bulk', 100_000).length === 0, 'all 100,000 lines at the collector', 120_000);
  t.log(`100,000 lines edge → relays → collector in ${Date.now() - t0} ms`);
  const relayRecords = ['relay-a', 'relay-b'].flatMap((n) => fleet.node(n).records);
  t.deepEqual(
    relayRecords.filter((r) => r.msg === 'Authorization rejected'),
    [],
  );
});

test.serial('crash isolation in the fleet: SIGKILL of the edge app worker leaves audit delivering without a gap', async (t) => {
  const dir = tempDir();
  t.teardown(() => dir.remove());
  const fleet = await startFleet(dir.path);
  t.teardown(() => fleet.stopAll());
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
  const auditWriter = (async () => {
    while (!stopAudit && audits < 2000) {
      await writeLines(auditLog, 'audit', audits + 1, audits + 1, 1, 0);
      audits++;
      await sleep(25);
    }
  })();
  await writeLines(appLog, 'app', 1, 50, 10, 5);
  await waitFor(() => collected(fleet).has('app-000050') && arrivals.length > 10, 'both pipelines deliver');
  await sleep(1200); // positions reach the primary once a second
  const workers = await childPids(edge.child.pid!);
  const appWorker = Math.min(...workers); // pipelines fork in configuration order: app first
  const killedAt = Date.now();
  process.kill(appWorker, 'SIGKILL');
  await writeLines(appLog, 'app', 51, 150, 10, 20);
  const crash = await waitFor(() => edge.records.find((r) => r.msg === 'Pipeline process exited unexpectedly'), 'crash logged');
  t.is(crash.pipeline, 'app');
  await waitFor(() => missingOf(collected(fleet), 'app', 150).length === 0, 'app lines written after the kill arrive', 30_000);
  await sleep(1500);
  stopAudit = true;
  await auditWriter;
  const window = arrivals.filter((x) => x >= killedAt - 1000);
  let maxGap = 0;
  for (let i = 1; i < window.length; i++) maxGap = Math.max(maxGap, window[i]! - window[i - 1]!);
  t.true(window.length > 20);
  t.true(maxGap < 1000, `largest gap in audit arrivals after the kill: ${maxGap} ms`);
});
