// Defaults that lose nothing (issue 40, acceptance 1): the README's edge example, unchanged but for
// its directory and port, delivers a burst whole to a slower receiver; `on_full = "auto"` blocks a
// random source into a dead link (the source counts `dropped_entries`), drops for a dead link only
// while another sink is live (`dropped_link_down`); a stdout sink still drops and counts.
// Links dialled at start (acceptance 2): an unreachable downstream is told and named by /readyz.

import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { freePort, ownedTempDir, ROOT, spawnOwnedNode, startNodeInDir, waitFor, waitReady } from '../helpers/node.js';
import { makePki } from '../helpers/pki.js';
import { latestCounter, latestStatus } from '../helpers/status.js';
import { adminRequest } from '../helpers/admin.js';
import { fileSourceToml, localPluginToml, randomSourceToml, sinkToml } from '../helpers/toml.js';

const readmeExample = (heading: string): string => {
  const examples = [...readFileSync(join(ROOT, 'README.md'), 'utf8').matchAll(/```toml\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const found = examples.find((e) => e.startsWith(`# ${heading}\n`));
  if (!found) throw new Error(`the README has no example starting "# ${heading}"`);
  return found;
};

test.serial("the README's edge example, unchanged, delivers a 1,000,000-line burst with 0 drops to a slower receiver", async (t) => {
  t.timeout(300_000);
  const dir = ownedTempDir(t, 'logrelay-edge-burst-');
  const pki = makePki(join(dir.path, 'pki'), ['edge-01', 'relay']);
  const port = await freePort();
  const edge = readmeExample('edge');
  t.notRegex(edge, /on_full/, 'the example leaves on_full to its default');
  const logDir = join(dir.path, 'app');
  mkdirSync(logDir);
  const edgeToml = `status_interval_ms = 500\n${edge.replace('/var/log/app', logDir).replace('port = 7000', `port = ${port}`)}`;
  // the relay of the README, its sink a line counter; decoding chain lines with TLS it is slower
  // than a file read (with `on_full = "drop"` the edge loses about half of the burst)
  const relayToml = `status_interval_ms = 500\n${readmeExample('relay')
    .replace('port = 7000', `port = ${port}\nhost = "127.0.0.1"`)
    .replace(/\[\[pipelines\.plugin_sinks\]\][\s\S]*$/, sinkToml('out', 'null'))}`;
  const env = { PKI_DIR: pki.dir, RELAY_HOST: '127.0.0.1' };
  const relay = spawnOwnedNode(t, ['-c', dir.file('relay.toml', relayToml), '--logging.level=debug'], { env });
  await waitReady(relay, 'relay');
  const sender = spawnOwnedNode(t, ['-c', dir.file('edge.toml', edgeToml), '--logging.level=debug'], { env });
  await waitReady(sender, 'edge');
  const total = Number(process.env.BURST ?? 1_000_000);
  const chunk = Math.min(total, 100_000);
  for (let from = 0; from < total; from += chunk) {
    let text = '';
    for (let i = from; i < from + chunk; i++) text += `burst line ${String(i).padStart(7, '0')} of the edge example\n`;
    appendFileSync(join(logDir, 'app.log'), text);
  }
  await waitFor(
    () => latestCounter(relay, 'relay', 'sinks.out.total_processed') === total,
    `all ${total} lines at the relay`,
    240_000,
  ).catch((err: unknown) => {
    t.log(JSON.stringify(latestStatus(sender, 'forward')), JSON.stringify(latestStatus(relay, 'relay')), sender.records.filter((r) => r.level !== 'debug').slice(-8), relay.records.slice(-8));
    throw err;
  });
  const s = await waitFor(() => {
    const r = latestStatus(sender, 'forward');
    return r && r['sinks.relay.total_processed'] === total ? r : undefined;
  }, 'the edge reports every line taken by its chain sink');
  t.is(s.total_dropped_by_sink, 0, 'nothing dropped for a full queue');
  t.is(s['sinks.relay.dropped_queue_full'], 0);
  t.is(s['sinks.relay.dropped_link_down'], 0);
  t.false(sender.records.some((r) => r.msg === 'Entries dropped'), 'no drop was told');
});

test.serial('auto: a random source into a dead link (its only sink) blocks: the source counts dropped_entries, the sink drops nothing', async (t) => {
  const dir = ownedTempDir(t, 'logrelay-auto-dead-');
  const dead = await freePort();
  const node = startNodeInDir(
    t,
    dir,
    `[[pipelines]]\nname = "p"\n${randomSourceToml('interval_ms = 5\nentries_per_tick = 50')}${sinkToml('link', 'tcp_chain', `host = "127.0.0.1"\nport = ${dead}\nbuffer_size = 100\nbackoff_min_ms = 100\nbackoff_max_ms = 200`)}`,
  );
  const s = await waitFor(() => {
    const r = latestStatus(node, 'p');
    return r && Number(r['sources.random.dropped_entries']) > 0 ? r : undefined;
  }, 'the random source counts dropped_entries (it cannot pause)');
  t.is(s.total_dropped_by_sink, 0);
  t.is(s['sinks.link.dropped_link_down'], 0, 'no other sink is live: the dead link blocks');
  t.is(s['sinks.link.connected'], 0);
});

test.serial('auto: a dead link beside a live sink drops for itself (dropped_link_down, told), the live sink gets everything', async (t) => {
  const dir = ownedTempDir(t, 'logrelay-auto-beside-');
  const dead = await freePort();
  const total = 5000;
  const node = startNodeInDir(
    t,
    dir,
    `[[pipelines]]\nname = "p"\n${randomSourceToml(`interval_ms = 5\nentries_per_tick = 50\ncount = ${total}`)}${sinkToml('link', 'tcp_chain', `host = "127.0.0.1"\nport = ${dead}\nbuffer_size = 100\nbackoff_min_ms = 100\nbackoff_max_ms = 200`)}${sinkToml('live', 'null')}`,
  );
  const s = await waitFor(() => {
    const r = latestStatus(node, 'p');
    return r && r['sinks.live.total_processed'] === total ? r : undefined;
  }, 'the live sink took every entry');
  t.is(s['sources.random.dropped_entries'], 0, 'the dead link never paused the source');
  t.true(Number(s['sinks.link.dropped_link_down']) > 0, 'the dead link dropped what it could not hold');
  t.is(s['sinks.link.dropped_queue_full'], 0);
  const told = await waitFor(() => node.records.find((r) => r.msg === 'Entries dropped' && r.reason === 'link_down'), 'WARN Entries dropped, reason link_down');
  t.is(told.level, 'warn');
});

test.serial('a stdout sink keeps on_full = "drop" by default: a stalled reader drops and counts', async (t) => {
  const dir = ownedTempDir(t, 'logrelay-stdout-drop-');
  const total = 20_000;
  const node = startNodeInDir(t, dir, `[[pipelines]]\nname = "p"\n${randomSourceToml(`interval_ms = 5\nentries_per_tick = 200\ncount = ${total}\nlength = 40`)}${sinkToml('out', 'stdout', 'buffer_size = 10')}`);
  node.child.stdout!.pause();
  const s = await waitFor(() => {
    const r = latestStatus(node, 'p');
    return r && r['sources.random.total_entries'] === total && Number(r['sinks.out.dropped_queue_full']) > 0 ? r : undefined;
  }, 'the stalled stdout sink drops, counted', 30_000);
  t.is(s['sources.random.dropped_entries'], 0, 'a showing sink never pauses the sources');
  node.child.stdout!.resume();
});

/** What `/readyz` says, or undefined while it does not answer. */
async function readyz(port: number): Promise<{ status: number; pipelines: Record<string, string> } | undefined> {
  const res = await adminRequest(port, '/readyz').catch(() => undefined);
  if (!res) return undefined;
  return { status: res.status, pipelines: (JSON.parse(res.body) as { pipelines?: Record<string, string> }).pipelines ?? {} };
}

const unreachable: [string, string, (port: number) => string][] = [
  ['tcp_chain', 'Chain link cannot connect, retrying', (port) => sinkToml('link', 'tcp_chain', `host = "127.0.0.1"\nport = ${port}\nbackoff_min_ms = 100\nbackoff_max_ms = 200`)],
  ['http_chain', 'Chain link cannot connect, retrying', (port) => sinkToml('link', 'http_chain', `host = "127.0.0.1"\nport = ${port}\nbackoff_min_ms = 100\nbackoff_max_ms = 200`)],
  ['otlp', 'OTLP export cannot connect, retrying', (port) => sinkToml('link', 'otlp', `endpoint = "http://127.0.0.1:${port}/v1/logs"\nbackoff_min_ms = 100\nbackoff_max_ms = 200`)],
  ['nats', 'NATS server unreachable, retrying', (port) => sinkToml('link', 'nats', `servers = ["nats://127.0.0.1:${port}"]\nsubject = "logs.app"\nbackoff_min_ms = 100\nbackoff_max_ms = 200`)],
];
for (const [type, line, sink] of unreachable) {
  test.serial(`a ${type} sink whose downstream is unreachable says so and /readyz names its pipeline within 2 s of the start, before any entry`, async (t) => {
    const dir = ownedTempDir(t, `logrelay-dial-${type}-`);
    const [admin, dead] = await Promise.all([freePort(), freePort()]);
    mkdirSync(join(dir.path, 'in'));
    const node = startNodeInDir(t, dir, `[admin]\nport = ${admin}\n[[pipelines]]\nname = "quiet"\n${fileSourceToml('f', join(dir.path, 'in'))}${sink(dead)}[[pipelines]]\nname = "other"\n${randomSourceToml('count = 1')}${sinkToml('out', 'null')}`);
    const started = await waitFor(() => node.records.find((r) => r.msg === 'Starting pipeline' && r.pipeline === 'quiet'), 'pipeline quiet started');
    const t0 = Date.parse(String(started.time));
    const named = await waitFor(async () => {
      const r = await readyz(admin);
      return r?.status === 503 && r.pipelines.quiet === 'link_down' ? Date.now() : undefined;
    }, '/readyz 503 naming pipeline quiet as link_down');
    const warned = await waitFor(() => node.records.find((r) => r.msg === line && r.pipeline === 'quiet'), `WARN ${line}`);
    t.is(warned.level, 'warn');
    t.true(Date.parse(String(warned.time)) - t0 <= 2000, `the line came ${Date.parse(String(warned.time)) - t0} ms after the start`);
    t.true(named - t0 <= 2000, `/readyz named the pipeline ${named - t0} ms after the start`);
    t.is(latestCounter(node, 'quiet', 'sources.f.total_entries') ?? 0, 0, 'no entry was written');
    t.not((await readyz(admin))?.pipelines.other, 'link_down', 'a pipeline without links is not named link_down');
  });
}

test.serial('/readyz answers 200 once the links of a chain sink are up', async (t) => {
  const dir = ownedTempDir(t, 'logrelay-dial-up-');
  const [admin, port] = await Promise.all([freePort(), freePort()]);
  mkdirSync(join(dir.path, 'in'));
  startNodeInDir(t, dir, `[admin]\nport = ${admin}\n[[pipelines]]\nname = "recv"\n${localPluginToml('sources', 'link', 'tcp_chain', port)}${sinkToml('out', 'null')}[[pipelines]]\nname = "send"\n${fileSourceToml('f', join(dir.path, 'in'))}${sinkToml('link', 'tcp_chain', `host = "127.0.0.1"\nport = ${port}\nbackoff_min_ms = 100\nbackoff_max_ms = 200`)}`);
  const ready = await waitFor(async () => {
    const r = await readyz(admin);
    return r?.status === 200 ? r : undefined;
  }, '/readyz 200 with the link up');
  t.deepEqual(ready.pipelines, {});
});
