// deploy/prometheus/ and deploy/grafana/ against the real thing (issue 30 point 2): a real
// `prometheus` server (Debian package, temp dir, loopback port, 1 s scrape and evaluation)
// scrapes a running node, reads back its series through the HTTP API, and fires
// LogrelayPipelineRestarting when a pipeline is killed into crash backoff; every expression of
// the Grafana dashboard names only metrics that node exports.

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { parseExposition } from '../helpers/admin.js';
import { adminRequest, adminStatus } from '../helpers/admin.js';
import { freePort, ownedTempDir, ROOT, startOwnedNode, type Teardown, waitFor } from '../helpers/node.js';
import { peerBinary } from '../helpers/peers.js';
import { metricNames } from '../helpers/promql.js';
import { localPluginToml, randomSourceToml, sinkToml } from '../helpers/toml.js';

interface PromResult<T> {
  status: string;
  data: T;
}
interface Alert {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
}

/** Starts prometheus on a free loopback port with `config`; resolves its base URL once /-/ready. */
async function startPrometheus(t: Teardown & { log(...v: unknown[]): void }, config: (dir: string) => string): Promise<string> {
  const dir = ownedTempDir(t, 'logrelay-prom-');
  const port = await freePort();
  const file = dir.file('prometheus.yml', config(dir.path));
  const proc = spawn(peerBinary('prometheus'), [`--config.file=${file}`, `--storage.tsdb.path=${join(dir.path, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  proc.stderr.setEncoding('utf8').on('data', (c: string) => (stderr = (stderr + c).slice(-4000)));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  t.teardown(async () => {
    proc.kill('SIGTERM');
    await exited;
  });
  const base = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => {
      if (proc.exitCode !== null) throw new Error(`prometheus exited ${proc.exitCode}: ${stderr}`);
      return (await fetch(`${base}/-/ready`).catch(() => undefined))?.status === 200;
    },
    'prometheus ready',
    30_000,
  );
  return base;
}

async function api<T>(base: string, path: string): Promise<T> {
  const res = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(5000) });
  const body = (await res.json()) as PromResult<T>;
  if (body.status !== 'success') throw new Error(`${path}: ${JSON.stringify(body)}`);
  return body.data;
}
const query = (base: string, q: string) => api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(base, `/api/v1/query?query=${encodeURIComponent(q)}`);

test.serial('a real Prometheus scrapes a node with the deploy rules; killing a pipeline into crash backoff fires LogrelayPipelineRestarting; the dashboard names only exported metrics', async (t) => {
  const adminPort = await freePort();
  const deadPort = await freePort();
  startOwnedNode(
    t,
    `[admin]\nport = ${adminPort}\n` +
      `\n[[pipelines]]\nname = "app"\n${randomSourceToml('interval_ms = 20')}${sinkToml('out', 'null')}` +
      // a chain link that stays down and a listener: their families have samples too
      `\n[[pipelines]]\nname = "held"\n${randomSourceToml('interval_ms = 50')}${localPluginToml('sinks', 'link', 'tcp_chain', deadPort, 'node = "t"\nbackoff_min_ms = 100\nbackoff_max_ms = 200\n')}`,
  );
  // every pipeline running; `held` is named link_down on /readyz (its link never comes up)
  await waitFor(
    async () => {
      const res = await adminRequest(adminPort, '/readyz').catch(() => ({ status: 0, body: '{}' }));
      return res.status === 503 && JSON.stringify((JSON.parse(res.body) as { pipelines?: unknown }).pipelines) === '{"app":"running","held":"link_down"}';
    },
    'node running, the held link down',
    30_000,
  );

  const base = await startPrometheus(
    t,
    () => `global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - ${JSON.stringify(join(ROOT, 'deploy', 'prometheus', 'alerts.yml'))}
scrape_configs:
  - job_name: logrelay
    static_configs:
      - targets: ["127.0.0.1:${adminPort}"]
`,
  );

  // The node's series are scraped: every sample name of its /metrics is in Prometheus.
  const exposition = parseExposition((await adminRequest(adminPort, '/metrics')).body);
  const sampled = new Set([...exposition.values()].flatMap((f) => f.samples.map((s) => s.name)));
  const logrelaySampled = [...sampled].filter((n) => n.startsWith('logrelay_'));
  t.true(logrelaySampled.length >= 10, `logrelay families with samples: ${logrelaySampled.join(', ')}`);
  await waitFor(
    async () => {
      const names = new Set(await api<string[]>(base, '/api/v1/label/__name__/values'));
      return logrelaySampled.every((n) => names.has(n));
    },
    'every logrelay series of the node in Prometheus',
    30_000,
  );
  const up = await query(base, 'up{job="logrelay"}');
  t.is(up.result[0]?.value[1], '1', 'the target is up');
  const built = await query(base, 'logrelay_build_info');
  t.is(built.result[0]?.metric.version, JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version);
  const pipelinesUp = await query(base, 'logrelay_pipeline_up');
  t.deepEqual(pipelinesUp.result.map((r) => `${r.metric.pipeline}=${r.value[1]}`).sort(), ['app=1', 'held=1']);
  const alertsNow = await api<{ alerts: Alert[] }>(base, '/api/v1/alerts');
  t.false(
    alertsNow.alerts.some((a) => a.labels.alertname === 'LogrelayPipelineRestarting'),
    'no restart alert before any crash',
  );

  // Crash the app pipeline four times: the backoff doubles (250 ms, 500 ms, 1 s, 2 s), long
  // enough at the end for a 1 s scrape to see it down.
  const kills = 4;
  let pid = 0;
  for (let k = 0; k < kills; k++) {
    pid = await waitFor(async () => {
      const p = (await adminStatus(adminPort)).pipelines.app!;
      return p.state === 'running' && p.pid !== pid ? p.pid : undefined;
    }, `app worker running (kill ${k + 1})`, 30_000);
    process.kill(pid, 'SIGKILL');
  }
  const firing = await waitFor(
    async () => (await api<{ alerts: Alert[] }>(base, '/api/v1/alerts')).alerts.find((a) => a.labels.alertname === 'LogrelayPipelineRestarting' && a.state === 'firing'),
    'LogrelayPipelineRestarting firing',
    30_000,
  );
  t.is(firing.labels.pipeline, 'app');
  t.is(firing.labels.severity, 'warning');
  const restarts = await waitFor(async () => {
    const r = await query(base, 'logrelay_pipeline_restarts_total{pipeline="app"}');
    return r.result[0]?.value[1] === String(kills) ? r : undefined;
  }, `Prometheus sees ${kills} restarts`, 30_000);
  t.is(restarts.result.length, 1);
  const down = await query(base, 'min_over_time(logrelay_pipeline_up{pipeline="app"}[5m])');
  t.is(down.result[0]?.value[1], '0', 'a scrape saw the pipeline down in its backoff');
  const held = await query(base, 'increase(logrelay_pipeline_restarts_total{pipeline="held"}[10m])');
  t.is(Number(held.result[0]?.value[1]), 0, 'the other pipeline never restarted');

  // The dashboard: every expression (and template query) names only metrics the node exports.
  const exported = new Set([...exposition.keys(), ...sampled]);
  const dashboard = readFileSync(join(ROOT, 'deploy', 'grafana', 'logrelay.json'), 'utf8');
  const dash = JSON.parse(dashboard) as { panels: { title: string; targets: { expr: string }[] }[]; templating: { list: { query?: unknown; definition?: string }[] } };
  const exprs = dash.panels.flatMap((p) => p.targets.map((tg) => ({ where: p.title, expr: tg.expr })));
  for (const v of dash.templating.list) if (v.definition) exprs.push({ where: 'template', expr: v.definition.replace(/^label_values\((.*),\s*\w+\)$/, '$1') });
  t.true(exprs.length >= 15, `${exprs.length} expressions`);
  const used = new Set<string>();
  for (const { where, expr } of exprs) {
    const names = metricNames(expr);
    t.true(names.length > 0, `${where}: ${expr} names a metric`);
    for (const n of names) {
      used.add(n);
      t.true(exported.has(n), `${where}: ${n} is not exported by the node`);
    }
  }
  // and every expression parses as PromQL in the real server (template variables filled in)
  for (const { where, expr } of exprs) {
    const filled = expr.replaceAll('$__rate_interval', '1m').replaceAll('$instance', '.*');
    const res = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(filled)}`);
    t.is(res.status, 200, `${where}: ${filled} is accepted by Prometheus: ${await res.text()}`);
  }
  t.log(`dashboard: ${exprs.length} expressions over ${used.size} metrics; Prometheus held ${logrelaySampled.length} logrelay series names`);
});
