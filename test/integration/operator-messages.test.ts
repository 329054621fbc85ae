// What a new operator meets first (issue 16): a listener whose address is taken exits 69 naming
// it, `check` counts in the singular, `--help` and `check --explain` tell the reference, and a
// file source waits for its directory with one warning.

import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import test from 'ava';
import { ownedTempDir, ROOT, sleep, spawnOwnedNode, waitFor } from '../helpers/node.js';

const pipeline = (name: string, source: string, sink: string) => `
[[pipelines]]
name = "${name}"
[[pipelines.plugin_sources]]
${source}
[[pipelines.plugin_sinks]]
${sink}
`;

/** A port the test itself holds, closed in teardown. */
async function busyPort(t: { teardown(fn: () => void): void }): Promise<number> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  return (server.address() as { port: number }).port;
}

const inUse: [string, (port: number) => string, string][] = [
  ['a tcp sink', (port) => pipeline('p', 'type = "random"', `id = "net"\ntype = "tcp"\nconfig = { host = "127.0.0.1", port = ${port} }`), 'sink net'],
  ['a tcp_chain source', (port) => pipeline('p', `id = "chain"\ntype = "tcp_chain"\nconfig = { host = "127.0.0.1", port = ${port} }`, 'type = "null"'), 'source chain'],
];
for (const [what, config, plugin] of inUse) {
  test.serial(`${what} whose address is in use at start exits 69 (not 78) naming host:port`, async (t) => {
    const port = await busyPort(t);
    const dir = ownedTempDir(t);
    const node = spawnOwnedNode(t, ['-c', dir.file('busy.toml', config(port))]);
    t.is((await node.finish('a node on a busy port')).code, 69);
    const failed = node.records.find((r) => r.msg === 'Failed to create pipeline');
    t.is(failed?.pipeline, 'p');
    t.is(failed?.error, `failed to create ${plugin}: port: cannot listen on 127.0.0.1:${port}: address already in use`);
  });
}

test.serial('a configuration fault next to a busy port still exits 78', async (t) => {
  const port = await busyPort(t);
  const dir = ownedTempDir(t);
  const text = pipeline('a', 'type = "random"', `type = "tcp"\nconfig = { host = "127.0.0.1", port = ${port} }`) + pipeline('b', 'type = "random"', 'type = "kafka"');
  const node = spawnOwnedNode(t, ['-c', dir.file('both.toml', text)]);
  t.is((await node.finish()).code, 78);
});

test.serial('check counts one pipeline in the singular', async (t) => {
  const dir = ownedTempDir(t);
  const node = spawnOwnedNode(t, ['check', '-c', dir.file('one.toml', pipeline('a', 'type = "random"', 'type = "null"'))]);
  t.is((await node.finish()).code, 0);
  t.deepEqual(node.out, ['configuration ok: 1 pipeline']);
});

test.serial('--help lists the commands, the override forms and the signals', async (t) => {
  const node = spawnOwnedNode(t, ['--help']);
  t.is((await node.finish()).code, 0);
  const help = node.out.join('\n');
  for (const command of ['run', 'check', 'tail']) t.regex(help, new RegExp(`^\\s+${command}\\b`, 'm'), command);
  t.regex(help, /--dotted\.key=value/);
  t.regex(help, /LOGGING_LEVEL=debug/);
  t.regex(help, /SIGHUP\s+reload/);
  t.regex(help, /SIGTERM, SIGINT\s+shut down/);
  t.regex(help, /check --explain KEY/);
  t.regex(help, /docs\/configuration\.md/);
  // every page of the operator's reference, and what 69 covers besides a busy port
  for (const page of readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md'))) t.true(help.includes(`docs/${page}`), `--help names docs/${page}`);
  t.regex(help, /69 [^\n]*unavailable at start[^]*data_dir locked by another node/);
});

test.serial('check --explain prints one key of the reference; an unknown key exits 2', async (t) => {
  const node = spawnOwnedNode(t, ['check', '--explain', 'sinks.http.heartbeat_interval_ms']);
  t.is((await node.finish()).code, 0);
  t.deepEqual(node.out, ['sinks.http.heartbeat_interval_ms', '  type: integer >= 1', '  default: 15000', '  unit: ms', '  a `: ping` comment is sent this often']);
  const unknown = spawnOwnedNode(t, ['check', '--explain', 'sinks.kafka.topic']);
  t.is((await unknown.finish()).code, 2);
  t.regex(unknown.errText.join('\n'), /no configuration key sinks\.kafka\.topic/);
});

test.serial('a file source whose directory does not exist warns once, keeps watching, and reads it once it appears', async (t) => {
  const dir = ownedTempDir(t);
  const logs = join(dir.path, 'not-yet');
  const text = pipeline('p', `id = "f"\ntype = "file"\nconfig = { directory = ${JSON.stringify(logs)}, check_interval_ms = 50, from = "start" }`, 'type = "stdout"');
  const node = spawnOwnedNode(t, ['-c', dir.file('wait.toml', text)]);
  const missing = () => node.records.filter((r) => r.msg === 'Directory does not exist, watching for it');
  await waitFor(() => missing().length > 0, 'the warning');
  await sleep(500); // ten more discovery rounds
  t.is(missing().length, 1);
  t.like(missing()[0], { level: 'warn', pipeline: 'p', plugin: 'f', directory: logs });
  mkdirSync(logs);
  writeFileSync(join(logs, 'app.log'), 'first line\n');
  await waitFor(() => node.out.includes('first line'), 'the line of a file in the directory that appeared');
  t.is(await node.stop(), 0);
});

test.serial('an include glob whose fixed prefix does not exist warns once with that directory, and reads it once it appears', async (t) => {
  const dir = ownedTempDir(t);
  const pods = join(dir.path, 'pods');
  const text = pipeline('p', `id = "f"\ntype = "file"\nconfig = { include = [${JSON.stringify(`${pods}/**/*.log`)}], check_interval_ms = 50, from = "start" }`, 'type = "stdout"');
  const node = spawnOwnedNode(t, ['-c', dir.file('glob.toml', text)]);
  const missing = () => node.records.filter((r) => r.msg === 'Directory does not exist, watching for it');
  await waitFor(() => missing().length > 0, 'the warning for the glob base');
  await sleep(500); // ten more discovery rounds
  t.is(missing().length, 1);
  t.like(missing()[0], { level: 'warn', pipeline: 'p', plugin: 'f', directory: pods });
  mkdirSync(join(pods, 'ns_pod_uid', 'app'), { recursive: true });
  writeFileSync(join(pods, 'ns_pod_uid', 'app', '0.log'), 'from the pod\n');
  await waitFor(() => node.out.includes('from the pod'), 'the line of a file under the base that appeared');
  await waitFor(() => node.records.some((r) => r.msg === 'Directory appeared' && r.directory === pods), 'INFO Directory appeared');
  t.is(await node.stop(), 0);
});
