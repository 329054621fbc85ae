// The admin endpoint (DESIGN.md §16, issue 15) on real nodes: /metrics held to a strict
// exposition parser with values equal to /status and counters that never go down; /readyz through
// a crash backoff and a reload handover while /livez stays 200; `Entries dropped` told once;
// a certificate close to its expiry warned about and exported; other methods and paths refused;
// chain links log up (INFO) and down (WARN) once per transition.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, get as httpGet } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import test from 'ava';
import { DROP_REASONS } from '../../src/core/drops.js';
import { FAMILY_NAMES } from '../../src/primary/metrics.js';
import { chainReceiverToml, chainSinkToml, mutePeer, QUICK_BACKOFF } from '../helpers/chain.js';
import { adminRequest, adminStatus, type Family, parseExposition, sampleValue } from '../helpers/admin.js';
import { freePort, type RunningNode, sleep, startOwnedNode, type Teardown, tempDir, waitFor } from '../helpers/node.js';
import { makePki } from '../helpers/pki.js';
import { localPluginToml, randomSourceToml, sinkToml } from '../helpers/toml.js';

const ALLOWED_LABELS = new Set(['pipeline', 'component', 'type', 'reason']);
/** Families whose own labels the contract names besides the four. */
const OWN_LABELS: Readonly<Record<string, readonly string[]>> = {
  logrelay_build_info: ['version', 'node'],
  logrelay_reloads_total: ['result'],
  logrelay_fleet_nodes: ['state'],
  logrelay_fleet_node_last_seen_timestamp_seconds: ['node'],
  logrelay_fleet_node_lag_bytes: ['node'],
  logrelay_link_bytes_total: ['stage'],
};

const adminHead = (port: number, extra = '') => `shutdown_timeout_ms = ${extra.includes('shutdown_timeout_ms') ? '' : '1000\n'}${extra}\n[admin]\nport = ${port}\n`;

/**
 * Starts a node whose admin endpoint listens on a free port; resolves once /readyz says 200, or,
 * for a node with a dead link (never ready), once /readyz answers 503 naming only `link_down`.
 */
async function startWithAdmin(t: Teardown, pipelines: string, head = ''): Promise<{ node: RunningNode; port: number }> {
  const port = await freePort();
  const node = startOwnedNode(t, `${head || adminHead(port)}${head ? `\n[admin]\nport = ${port}\n` : ''}${pipelines}`);
  const started = async () => {
    const res = await adminRequest(port, '/readyz').catch(() => ({ status: 0, body: '' }));
    if (res.status === 200) return true;
    if (res.status !== 503) return false;
    const states = Object.values((JSON.parse(res.body) as { pipelines: Record<string, string> }).pipelines);
    return states.length > 0 && states.every((s) => s === 'running' || s === 'link_down') && states.includes('link_down');
  };
  await waitFor(started, 'node ready (or running with a dead link)', 30_000);
  return { node, port };
}

const pipeline = (name: string, body: string) => `\n[[pipelines]]\nname = "${name}"\n${body}`;

/** A pipeline whose chain sink dials a port nobody listens on and drops when its small queue is full. */
const lossyPipeline = (deadPort: number, count: number) =>
  pipeline('lossy', `${randomSourceToml(`interval_ms = 10\nentries_per_tick = 20\ncount = ${count}`)}${localPluginToml('sinks', 'link', 'tcp_chain', deadPort, 'node = "t"\nbuffer_size = 100\non_full = "drop"\nbackoff_min_ms = 100\nbackoff_max_ms = 200\n')}`);

const scrape = async (port: number): Promise<Map<string, Family>> => {
  const res = await adminRequest(port, '/metrics');
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  if (!res.type.startsWith('text/plain; version=0.0.4')) throw new Error(`/metrics content type ${res.type}`);
  return parseExposition(res.body);
};

test.serial('/metrics: strict exposition, every §16 family with only allowed labels, values equal /status, counters never decrease', async (t) => {
  const deadPort = await freePort();
  const { port } = await startWithAdmin(
    t,
    pipeline('app', `[pipelines.flow.rate_limit]\nrate = 500.0\npolicy = "drop"\n${randomSourceToml('interval_ms = 5\nentries_per_tick = 20\ncount = 6000')}${sinkToml('out', 'null')}`) +
      lossyPipeline(deadPort, 3000),
  );
  // While traffic flows: every counter sample is at least what the previous scrape showed.
  const seen = new Map<string, number>();
  let scrapes = 0;
  const total = () => adminStatus(port).then((s) => s.pipelines.app!.counters.sources.random?.total_entries ?? 0);
  while ((await total()) < 6000 && scrapes < 200) {
    const families = await scrape(port);
    scrapes++;
    for (const f of families.values()) {
      if (f.type !== 'counter') continue;
      for (const s of f.samples) {
        const key = `${s.name}${JSON.stringify(s.labels)}`;
        t.true(s.value >= (seen.get(key) ?? 0), `${key} went down`);
        seen.set(key, s.value);
      }
    }
    await sleep(150);
  }
  t.true(scrapes >= 3, `scraped ${scrapes} times during traffic`);

  // Traffic over: counters settle, then /metrics and /status show the same values.
  let before = '';
  await waitFor(async () => {
    const now = JSON.stringify((await adminStatus(port)).pipelines.app!.counters);
    const same = now === before;
    before = now;
    if (!same) await sleep(1100);
    return same;
  }, 'counters settle', 30_000);
  const families = await scrape(port);
  const status = await adminStatus(port);

  for (const name of FAMILY_NAMES) t.true(families.has(name), `family ${name} present`);
  t.true([...families.keys()].some((n) => n.startsWith('process_')) && [...families.keys()].some((n) => n.startsWith('nodejs_')), 'process metrics');
  for (const f of families.values()) {
    if (!f.name.startsWith('logrelay_')) continue;
    const allowed = new Set([...ALLOWED_LABELS, ...(OWN_LABELS[f.name] ?? [])]);
    for (const s of f.samples) for (const l of Object.keys(s.labels)) t.true(allowed.has(l), `${f.name} has label ${l}`);
    if (f.name.endsWith('_total')) t.is(f.type, 'counter', `${f.name} is a counter`);
  }
  for (const s of families.get('logrelay_dropped_entries_total')!.samples) t.true((DROP_REASONS as readonly string[]).includes(s.labels.reason!), `reason ${s.labels.reason}`);

  const app = status.pipelines.app!;
  const lossy = status.pipelines.lossy!;
  t.is(sampleValue(families, 'logrelay_config_generation'), status.generation);
  t.is(sampleValue(families, 'logrelay_source_entries_total', { pipeline: 'app', component: 'random', type: 'random' }), 6000);
  t.is(sampleValue(families, 'logrelay_source_entries_total', { pipeline: 'app', component: 'random' }), app.counters.sources.random!.total_entries);
  t.is(sampleValue(families, 'logrelay_sink_entries_total', { pipeline: 'app', component: 'out', type: 'null' }), app.counters.sinks.out!.total_processed);
  t.is(sampleValue(families, 'logrelay_filtered_entries_total', { pipeline: 'app' }), app.filtered_entries);
  t.is(sampleValue(families, 'logrelay_pipeline_up', { pipeline: 'app' }), 1);
  t.is(sampleValue(families, 'logrelay_pipeline_restarts_total', { pipeline: 'lossy' }), lossy.restarts);
  t.is(sampleValue(families, 'logrelay_chain_connected', { pipeline: 'lossy', component: 'link' }), 0);
  t.is(lossy.links.link, 'down');
  for (const p of ['app', 'lossy']) {
    for (const d of status.pipelines[p]!.drops) {
      t.is(sampleValue(families, 'logrelay_dropped_entries_total', { pipeline: p, component: d.component, reason: d.reason }), d.count, `${p} ${d.component} ${d.reason}`);
    }
  }
  const rateLimited = app.drops.find((d) => d.reason === 'rate_limited')!.count;
  t.true(rateLimited > 0, 'the rate limiter dropped');
  t.is(rateLimited, app.counters.rate_limit!.dropped_total! - app.counters.rate_limit!.dropped_by_size_total!);
  t.is(app.counters.sinks.out!.total_processed! + rateLimited, 6000, 'every entry delivered or counted as rate_limited');
  t.true(lossy.drops.find((d) => d.reason === 'queue_full')!.count > 0, 'the stalled chain sink dropped');
});

test.serial('Entries dropped: one WARN with reason and count within a second of the loss, no second one within a minute', async (t) => {
  const deadPort = await freePort();
  const { node } = await startWithAdmin(t, lossyPipeline(deadPort, 0));
  const dropped = () => node.records.filter((r) => r.msg === 'Entries dropped' && r.pipeline === 'lossy');
  const first = await waitFor(() => dropped()[0], 'first Entries dropped', 20_000);
  t.is(first.level, 'warn');
  t.is(first.plugin, 'link');
  t.is(first.reason, 'queue_full');
  t.true(typeof first.count === 'number' && first.count > 0, `count ${String(first.count)}`);
  // The queue of 100 is full some 50 ms after the start; the line comes at the next stats tick
  // (1 s), plus slack for a loaded machine.
  const started = node.records.find((r) => r.msg === 'Starting pipeline' && r.pipeline === 'lossy')!;
  const after = Date.parse(String(first.time)) - Date.parse(String(started.time));
  t.true(after <= 2500, `first line ${after} ms after the start`);
  // The source keeps producing 2,000 entries/s into a full queue: losses go on, lines do not.
  await sleep(8000);
  t.is(dropped().length, 1, 'one line per reason per minute');
});

test.serial('/readyz: 503 during crash backoff and reload handover, 200 otherwise; /livez 200 throughout', async (t) => {
  const mutePort = await mutePeer(t);
  const { node, port } = await startWithAdmin(
    t,
    pipeline('app', `${randomSourceToml('interval_ms = 50')}${sinkToml('out', 'null')}`) +
      // Held entries the peer never acknowledges keep the old generation draining for 3 s.
      pipeline('held', `${randomSourceToml('interval_ms = 20\nentries_per_tick = 5')}${localPluginToml('sinks', 'link', 'tcp_chain', mutePort, 'node = "t"\nbackoff_min_ms = 100\nbackoff_max_ms = 200\n')}`),
    'shutdown_timeout_ms = 3000\n',
  );
  const live: number[] = [];
  let watching = true;
  const liveness = (async () => {
    while (watching) {
      live.push((await adminRequest(port, '/livez').catch(() => ({ status: 0 }))).status);
      await sleep(50);
    }
  })();
  t.teardown(() => {
    watching = false;
  });
  const readyz = async () => {
    const res = await adminRequest(port, '/readyz');
    return { status: res.status, body: JSON.parse(res.body) as { ready: boolean; pipelines?: Record<string, string> } };
  };
  // ready once the link to the peer is up
  t.deepEqual(await waitFor(async () => {
    const r = await readyz();
    return r.status === 200 ? r : undefined;
  }, '/readyz 200 with the link up'), { status: 200, body: { ready: true } });

  // Crash: SIGKILL the app worker; readiness drops while it waits in backoff, then comes back.
  const pid = await waitFor(async () => (await adminStatus(port)).pipelines.app!.pid, 'app worker pid');
  process.kill(pid, 'SIGKILL');
  const states = new Set<string>();
  const down = await waitFor(async () => {
    const r = await readyz();
    if (r.status === 503) states.add(r.body.pipelines!.app!);
    return r.status === 503 ? r : undefined;
  }, '/readyz 503 after the crash', 10_000);
  t.false(down.body.ready);
  t.is(down.body.pipelines!.held, 'running');
  await waitFor(async () => {
    const r = await readyz();
    if (r.status === 503) states.add(r.body.pipelines!.app!);
    return r.status === 200;
  }, '/readyz 200 after the restart', 20_000);
  t.true(states.has('backoff'), `states seen: ${[...states].join(', ')}`);
  t.is((await adminStatus(port)).pipelines.app!.restarts, 1);

  // Reload: the old generation's drain of held entries takes shutdown_timeout_ms; not ready meanwhile.
  node.signal('SIGHUP');
  const handover = await waitFor(async () => {
    const r = await readyz();
    return r.status === 503 ? r : undefined;
  }, '/readyz 503 during the reload', 10_000);
  t.is(handover.body.pipelines!.app, 'reloading');
  await waitFor(() => node.records.some((r) => r.msg === 'Configuration reloaded'), 'reloaded', 20_000);
  await waitFor(async () => (await readyz()).status === 200, '/readyz 200 after the reload', 10_000);
  t.is((await adminStatus(port)).generation, 2);

  watching = false;
  await liveness;
  t.true(live.length > 10, `${live.length} liveness probes`);
  t.deepEqual([...new Set(live)], [200], '/livez answered 200 every time');
});

test.serial('a certificate that expires in 5 days: WARN with days_left, expiry metric equals its notAfter', async (t) => {
  const dir = tempDir('logrelay-admin-cert-');
  t.teardown(() => dir.remove());
  const pki = makePki(join(dir.path, 'pki'), ['base']);
  const key = join(dir.path, 'soon.key');
  const csr = join(dir.path, 'soon.csr');
  const crt = join(dir.path, 'soon.crt');
  execFileSync('openssl', ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=soon', '-keyout', key, '-out', csr], { stdio: 'ignore' });
  execFileSync('openssl', ['x509', '-req', '-in', csr, '-CA', pki.ca, '-CAkey', pki.caKey, '-CAcreateserial', '-days', '5', '-out', crt], { stdio: 'ignore' });
  const enddate = execFileSync('openssl', ['x509', '-noout', '-enddate', '-in', crt], { encoding: 'utf8' }).trim().replace(/^notAfter=/, '');
  const notAfter = Date.parse(enddate) / 1000;

  const sinkPort = await freePort();
  const { node, port } = await startWithAdmin(
    t,
    pipeline('tls', `${randomSourceToml('interval_ms = 1000')}${localPluginToml('sinks', 'secure', 'tcp', sinkPort, `[pipelines.plugin_sinks.config.tls]\nenabled = true\ncert_file = "${crt}"\nkey_file = "${key}"\n`)}`),
  );
  const warn = await waitFor(() => node.records.find((r) => r.msg === 'Certificate expires soon'), 'Certificate expires soon', 10_000);
  t.is(warn.level, 'warn');
  t.is(warn.pipeline, 'tls');
  t.is(warn.plugin, 'secure');
  t.is(warn.file, crt);
  t.is(warn.days_left, 5);
  t.is(Date.parse(String(warn.not_after)) / 1000, notAfter);
  t.false(node.records.some((r) => r.msg === 'Certificate expired'));
  const value = await waitFor(async () => sampleValue(await scrape(port), 'logrelay_tls_certificate_expiry_timestamp_seconds', { pipeline: 'tls', component: 'secure' }), 'expiry metric');
  t.is(value, notAfter);
});

test.serial('other methods answer 405, unknown paths 404; 1,000 concurrent scrapes leave delivery whole', async (t) => {
  const { port } = await startWithAdmin(t, pipeline('app', `${randomSourceToml('interval_ms = 5\nentries_per_tick = 20\ncount = 20000')}${sinkToml('out', 'null')}`));
  // Over as many kept-alive connections as the endpoint takes (ADMIN_MAX_CONNECTIONS, 32): the
  // requests queue in the client, not as sockets in the primary (test/integration/slow-clients.test.ts).
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  t.teardown(() => agent.destroy());
  const scrapeOver = () =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      httpGet({ host: '127.0.0.1', port, path: '/metrics', agent }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      }).on('error', reject);
    });
  const answers = await Promise.all(Array.from({ length: 1000 }, scrapeOver));
  t.deepEqual([...new Set(answers.map((a) => a.status))], [200]);
  for (const a of answers.slice(0, 10)) parseExposition(a.body);
  const status = await waitFor(async () => {
    const s = await adminStatus(port);
    return s.pipelines.app!.counters.sinks.out!.total_processed === 20000 ? s : undefined;
  }, 'all 20,000 entries delivered', 30_000);
  t.true(status.pipelines.app!.drops.every((d) => d.count === 0), 'nothing dropped');

  for (const path of ['/livez', '/readyz', '/metrics', '/status']) {
    for (const method of ['POST', 'PUT', 'DELETE']) t.is((await adminRequest(port, path, method)).status, 405, `${method} ${path}`);
    t.is((await adminRequest(port, path)).status, 200, `GET ${path}`);
  }
  for (const path of ['/', '/metric', '/status/x', '/../etc/passwd']) t.is((await adminRequest(port, path)).status, 404, `GET ${path}`);
  t.is((await adminRequest(port, '/nope', 'POST')).status, 404);
});

for (const link of ['tcp_chain', 'http_chain'] as const) {
  test.serial(`${link} sink: INFO Chain link up and WARN Chain link down, once per transition`, async (t) => {
    const port = await freePort();
    const receiverToml = chainReceiverToml(link, port);
    const receiver = startOwnedNode(t, receiverToml);
    await waitFor(() => receiver.records.some((r) => r.msg === 'Starting pipeline'), 'receiver started');
    const sender = startOwnedNode(t, `[[pipelines]]\nname = "send"\n${randomSourceToml('interval_ms = 50')}${chainSinkToml('link', link, port, 'sender', QUICK_BACKOFF)}`);
    const lines = (msg: string) => sender.records.filter((r) => r.msg === msg && r.plugin === 'link');
    const up = await waitFor(() => lines('Chain link up')[0], 'link up', 20_000);
    t.is(up.level, 'info');
    t.is(up.remote, `127.0.0.1:${port}`);

    receiver.signal('SIGKILL');
    await receiver.exited;
    const down = await waitFor(() => lines('Chain link down')[0], 'link down', 20_000);
    t.is(down.level, 'warn');
    t.is(typeof down.error, 'string');

    const again = startOwnedNode(t, receiverToml);
    await waitFor(() => again.records.some((r) => r.msg === 'Starting pipeline'), 'receiver started again');
    await waitFor(() => lines('Chain link up').length === 2, 'link up again', 30_000);
    await sleep(1500);
    t.is(lines('Chain link down').length, 1, 'one down line for one outage, however many attempts failed');
    t.is(lines('Chain link up').length, 2);
  });
}

test.serial('admin tls and auth: an allowed client certificate reads /metrics, another one gets 403, none fails the handshake', async (t) => {
  const dir = tempDir('logrelay-admin-tls-');
  t.teardown(() => dir.remove());
  const pki = makePki(join(dir.path, 'pki'), ['node', 'ops', 'other']);
  const port = await freePort();
  const node = startOwnedNode(
    t,
    `[admin]\nport = ${port}\n[admin.tls]\nenabled = true\ncert_file = "${pki.cert('node')}"\nkey_file = "${pki.key('node')}"\nclient_ca_file = "${pki.ca}"\n[admin.auth]\nallow = ["ops"]\n` +
      pipeline('app', `${randomSourceToml('interval_ms = 1000')}${sinkToml('out', 'null')}`),
  );
  const get = (who?: string) =>
    new Promise<number | string>((resolve) => {
      const req = httpsRequest(
        { host: '127.0.0.1', port, path: '/metrics', agent: false, ca: readFileSync(pki.ca), servername: 'localhost', ...(who ? { cert: readFileSync(pki.cert(who)), key: readFileSync(pki.key(who)) } : {}) },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', (err) => resolve(err.message));
      req.end();
    });
  await waitFor(async () => (await get('ops')) === 200, 'an allowed client reads /metrics', 30_000);
  t.is(await get('other'), 403);
  t.is(typeof (await get()), 'string', 'no client certificate: the handshake fails');
  const rejected = await waitFor(() => node.records.find((r) => r.msg === 'Authorization rejected'), 'Authorization rejected logged');
  t.like(rejected, { level: 'warn', plugin: 'admin', identity: 'other' });
});
