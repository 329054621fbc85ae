// deploy/prometheus/ held to promtool (Debian package `prometheus`): the alert rules check, each
// rule has unit tests that make it fire and keep it quiet, the scrape configurations are valid
// and name exactly the compose fleet's nodes on their admin ports, and every metric the rules
// read is one the node exports (DESIGN.md §16).

import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { parse as parseYaml } from 'yaml';
import { FAMILY_NAMES } from '../../src/primary/metrics.js';
import { nodeServices, readCompose } from '../helpers/fleet.js';
import { ROOT } from '../helpers/node.js';
import { peerBinary } from '../helpers/peers.js';
import { metricNames, PENDING_FAMILIES } from '../helpers/promql.js';

const DIR = join(ROOT, 'deploy', 'prometheus');
const run = promisify(execFile);

interface RuleFile {
  groups: { name: string; rules: { alert?: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> }[] }[];
}
interface RuleTests {
  rule_files: string[];
  tests: { name: string; alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
}
interface ScrapeConfig {
  rule_files: string[];
  scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
}

const rules = () => parseYaml(readFileSync(join(DIR, 'alerts.yml'), 'utf8')) as RuleFile;
const alerts = () => rules().groups.flatMap((g) => g.rules).filter((r) => r.alert !== undefined);

const promtool = async (...args: string[]) => {
  try {
    const { stdout, stderr } = await run(peerBinary('promtool'), args, { cwd: DIR });
    return { code: 0, out: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
};

test('promtool check rules accepts alerts.yml', async (t) => {
  const { code, out } = await promtool('check', 'rules', 'alerts.yml');
  t.is(code, 0, out);
  t.regex(out, new RegExp(`SUCCESS: ${alerts().length} rules found`));
});

test('promtool test rules: every alert fires in its unit tests and is quiet in others', async (t) => {
  const { code, out } = await promtool('test', 'rules', 'alerts.test.yml');
  t.is(code, 0, out);
  const tests = parseYaml(readFileSync(join(DIR, 'alerts.test.yml'), 'utf8')) as RuleTests;
  t.deepEqual(tests.rule_files, ['alerts.yml']);
  const cases = tests.tests.flatMap((c) => c.alert_rule_test ?? []);
  for (const rule of alerts()) {
    const mine = cases.filter((c) => c.alertname === rule.alert);
    t.true(
      mine.some((c) => c.exp_alerts.length > 0),
      `${rule.alert} has a case where it fires`,
    );
    t.true(
      mine.some((c) => c.exp_alerts.length === 0),
      `${rule.alert} has a case where it stays quiet`,
    );
    t.truthy(rule.labels?.severity, `${rule.alert} has a severity`);
    t.truthy(rule.annotations?.summary, `${rule.alert} has a summary`);
  }
});

test('promtool test rules fails a wrong expectation (the check can fail)', async (t) => {
  const { mkdtempSync, writeFileSync, copyFileSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(join(tmpdir(), 'logrelay-rules-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  copyFileSync(join(DIR, 'alerts.yml'), join(dir, 'alerts.yml'));
  writeFileSync(
    join(dir, 'wrong.test.yml'),
    'rule_files: [alerts.yml]\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n      - series: \'logrelay_pipeline_up{pipeline="app"}\'\n        values: "1x5"\n    alert_rule_test:\n      - eval_time: 5m\n        alertname: LogrelayPipelineDown\n        exp_alerts: [{ exp_labels: { pipeline: app, severity: critical } }]\n',
  );
  const { code, out } = await promtool('test', 'rules', join(dir, 'wrong.test.yml'));
  t.not(code, 0, out);
  t.regex(out, /FAILED/);
});

for (const [file, profile] of [
  ['prometheus.yml', undefined],
  ['prometheus-nats.yml', 'nats'],
] as const) {
  test(`${file}: promtool check config passes; its targets are the ${profile ?? 'default'} compose nodes on their ADMIN_PORT`, async (t) => {
    const { code, out } = await promtool('check', 'config', file);
    t.is(code, 0, out);
    const cfg = parseYaml(readFileSync(join(DIR, file), 'utf8')) as ScrapeConfig;
    t.deepEqual(cfg.rule_files, ['alerts.yml']);
    const compose = readCompose();
    const expected = nodeServices(compose, profile).map((name) => {
      const port = compose.services[name]!.environment?.ADMIN_PORT;
      t.truthy(port, `${name} sets ADMIN_PORT`);
      return `${name}:${port}`;
    });
    t.true(expected.length >= 3, `compose nodes: ${expected.join(', ')}`);
    const targets = cfg.scrape_configs.flatMap((s) => s.static_configs.flatMap((c) => c.targets));
    t.deepEqual([...targets].sort(), [...expected].sort());
  });
}

test('every metric an alert reads is a family the node exports (or `up`, or one being added)', (t) => {
  const exported = new Set([...FAMILY_NAMES, ...PENDING_FAMILIES, 'up']);
  for (const rule of alerts()) {
    const names = metricNames(rule.expr);
    t.true(names.length > 0, `${rule.alert}: names a metric`);
    for (const name of names) t.true(exported.has(name), `${rule.alert}: ${name} is not exported`);
  }
});
