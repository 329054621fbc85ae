// The `nats` profile of compose.yaml run as local processes from the same deploy/ files:
// three nats-servers in a JetStream cluster, the one-shot that creates the stream
// (deploy/nats-stream.mjs), an edge publishing a file and two collectors sharing one durable
// consumer (deploy/edge-nats.toml, deploy/collector-nats.toml).

import { spawnSync } from 'node:child_process';
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { configFileOf, localEnv, nodeServices, readCompose } from '../helpers/fleet.js';
import { startNats } from '../helpers/nats.js';
import { ownedTempDir, ROOT, type RunningNode, spawnOwnedNode, waitFor, waitReady } from '../helpers/node.js';

/** How often each message was written by the collectors' file sinks in `dirs` (whole lines: a file read while its sink writes may end mid-line). */
function collected(dirs: readonly string[]): Map<string, number>[] {
  return dirs.map((dir) => {
    const counts = new Map<string, number>();
    for (const f of readdirSync(dir).filter((x) => x.endsWith('.log'))) {
      for (const line of readFileSync(join(dir, f), 'utf8').split('\n').slice(0, -1)) {
        if (!line) continue;
        const m = (JSON.parse(line) as { message: string }).message;
        counts.set(m, (counts.get(m) ?? 0) + 1);
      }
    }
    return counts;
  });
}

test.serial('compose profile nats: the stream one-shot, an edge and two collectors from deploy/ deliver every line once across the collectors', async (t) => {
  t.timeout(180_000);
  const compose = readCompose();
  const dir = ownedTempDir(t);
  const local = await localEnv(compose, dir.path, join(dir.path, 'pki'), 'nats');
  const services = nodeServices(compose, 'nats');
  t.deepEqual([...services].sort(), ['collector-nats-a', 'collector-nats-b', 'edge-nats']);
  const natsNames = Object.keys(compose.services).filter((n) => /^nats-\d$/.test(n));
  t.deepEqual(natsNames, ['nats-1', 'nats-2', 'nats-3']);
  const ports = natsNames.map((n) => local.ports.get(`${n}:4222`)!);
  t.true(ports.every((p) => p > 0), 'every nats server has a local port');
  const servers = await startNats(t, 3, ports);

  // the one-shot that creates the stream, with compose's environment but local servers
  const oneShot = compose.services['nats-stream']!;
  t.deepEqual(oneShot.entrypoint, ['node', 'deploy/nats-stream.mjs']);
  const env = { ...process.env, ...oneShot.environment, NATS_SERVERS: servers.map((s) => s.url).join(',') };
  const made = spawnSync(process.execPath, ['deploy/nats-stream.mjs'], { cwd: ROOT, env, encoding: 'utf8', timeout: 90_000 });
  t.is(made.status, 0, `nats-stream: ${made.stderr}`);
  t.regex(made.stdout, /^stream LOGS: subjects logs\.>, replicas 3\n$/);

  const nodes = new Map<string, RunningNode>();
  for (const name of services) {
    const service = compose.services[name]!;
    const check = spawnOwnedNode(t, ['check', ...service.command!], { env: local.env[name] });
    t.is((await check.finish(`check of ${name}`)).code, 0, `${name}: ${check.errText.join('\n')}`);
    const node = spawnOwnedNode(t, [...service.command!, '--logging.level=debug', '--status_interval_ms=500'], { env: local.env[name] });
    nodes.set(name, node);
    await waitReady(node, name, 30_000);
  }
  t.truthy(configFileOf(compose.services['edge-nats']!).endsWith('deploy/edge-nats.toml'));

  const total = 5000;
  let text = '';
  for (let i = 1; i <= total; i++) text += `nats-${String(i).padStart(6, '0')}\n`;
  appendFileSync(join(local.dirs['edge-nats']!.APP_LOG_DIR!, 'app.log'), text);
  const dataDirs = ['collector-nats-a', 'collector-nats-b'].map((n) => local.dirs[n]!.DATA_DIR!);
  await waitFor(() => collected(dataDirs).reduce((n, c) => n + c.size, 0) >= total, `all ${total} lines across the collectors' files`, 90_000);
  const [a, b] = collected(dataDirs) as [Map<string, number>, Map<string, number>];
  const missing: number[] = [];
  for (let i = 1; i <= total; i++) {
    const m = `nats-${String(i).padStart(6, '0')}`;
    if (!a.has(m) && !b.has(m)) missing.push(i);
  }
  t.deepEqual(missing, []);
  t.is([...a.keys()].filter((m) => b.has(m)).length, 0, 'no line written by both collectors');
  t.is([...a.values(), ...b.values()].filter((n) => n > 1).length, 0, 'no line twice');
  t.log(`shares: ${a.size} / ${b.size}`);
  for (const node of nodes.values()) t.is(await node.stop(), 0);
});
