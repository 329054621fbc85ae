// auto_reload on Kubernetes volumes (DESIGN.md §22, issue 29): kubelet never writes a mounted
// ConfigMap or Secret file, it swaps the `..data` symlink to a new directory. A node follows that
// for its configuration file (point 4) and for the TLS files the configuration names, as when
// cert-manager renews a certificate (point 5).

import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'node:tls';
import test from 'ava';
import { adminRequest, parseExposition, sampleValue } from '../helpers/admin.js';
import { chainSinkToml, chainSourceToml, QUICK_BACKOFF, tlsBlock } from '../helpers/chain.js';
import { appendLines, Tally } from '../helpers/exactly-once.js';
import { atomicVolume } from '../helpers/kubelet.js';
import { childPids, freePort, isAlive, ownedTempDir, type RunningNode, spawnOwnedNode, waitFor, waitReady, within } from '../helpers/node.js';
import { issueCertificate, makePki } from '../helpers/pki.js';
import { fileSourceToml, sinkToml } from '../helpers/toml.js';

const reloaded = (node: RunningNode) => node.records.filter((r) => r.msg === 'Configuration reloaded').length;

/** auto_reload on; a random source printing `words` words per line every 20 ms. */
const wordsConfig = (words: number) => `auto_reload = true
shutdown_timeout_ms = 2000
[[pipelines]]
name = "a"
[[pipelines.plugin_sources]]
type = "random"
config = { interval_ms = 20, length = ${words} }
[[pipelines.plugin_sinks]]
type = "stdout"
`;

const linesOf = (node: RunningNode, words: number, from = 0) => node.out.slice(from).filter((l) => l.split(' ').length === words).length;

test.serial('ConfigMap volume: a kubelet atomic update reloads within 2 s; a broken one keeps the old generation running and logs the error', async (t) => {
  t.timeout(120_000);
  const dir = ownedTempDir(t);
  const volume = atomicVolume(join(dir.path, 'config'), { 'logrelay.toml': wordsConfig(3) });
  const node = spawnOwnedNode(t, ['-c', volume.path('logrelay.toml')]);
  await waitFor(() => linesOf(node, 3) > 0, 'the first generation prints');
  const first = await waitFor(async () => {
    const pids = await childPids(node.child.pid!);
    return pids.length === 1 ? pids : undefined;
  }, 'one worker');

  // The update: new payload directory, `..data_tmp`, renamed over `..data`, the old one removed.
  volume.update({ 'logrelay.toml': wordsConfig(5) });
  const swapped = Date.now();
  t.is(readdirSync(volume.dir).filter((n) => n.startsWith('..') && n !== '..data').length, 1, 'one payload directory left, as kubelet leaves it');
  // The watch's part: the new generation is forked within 2 s of the swap.
  await waitFor(
    async () => (await childPids(node.child.pid!)).some((p) => !first.includes(p)),
    'a new generation forked within 2 s of the ..data swap',
    2000,
  );
  await waitFor(() => reloaded(node) === 1, 'Configuration reloaded', 30_000);
  t.log(`swap → "Configuration reloaded": ${Date.now() - swapped} ms`);
  await waitFor(() => linesOf(node, 5) > 0, 'the new configuration runs');
  const second = await waitFor(async () => {
    const pids = await childPids(node.child.pid!);
    return pids.length === 1 && !first.includes(pids[0]!) ? pids : undefined;
  }, 'the old generation gone');

  // A broken update: refused, logged, the running generation untouched.
  volume.update({ 'logrelay.toml': 'auto_reload = true\n[[pipelines]]\nname = \n' });
  const failure = await waitFor(
    () => node.records.find((r) => r.msg === 'Failed to bootstrap new service, keeping old service running'),
    'the broken update is refused and logged',
    30_000,
  );
  t.is(failure.level, 'error');
  t.regex(String(failure.error), /\S/, 'the error says why');
  const outAfter = node.out.length;
  await waitFor(() => linesOf(node, 5, outAfter) >= 10, 'the old generation keeps printing after the refusal');
  t.true(isAlive(second[0]!), 'the running worker was not replaced');
  t.deepEqual(await childPids(node.child.pid!), second);
  t.is(reloaded(node), 1);

  // The watch still follows the volume after the refusal and the removed directories.
  volume.update({ 'logrelay.toml': wordsConfig(7) });
  await waitFor(() => reloaded(node) === 2, 'the next good update reloads', 30_000);
  await waitFor(() => linesOf(node, 7) > 0, 'the third configuration runs');
  t.is(await node.stop(), 0);
});

/** The expiry metric of `component` in `pipeline`, or undefined while not reported. */
async function expiryOf(adminPort: number, pipeline: string, component: string): Promise<number | undefined> {
  const { status, body } = await adminRequest(adminPort, '/metrics');
  if (status !== 200) return undefined;
  return sampleValue(parseExposition(body), 'logrelay_tls_certificate_expiry_timestamp_seconds', { pipeline, component });
}

/** The serial number of the certificate the server on `port` presents to a new connection. */
async function servedSerial(port: number, ca: string, cert: string, key: string): Promise<string> {
  const socket = connect({ host: '127.0.0.1', port, ca, cert, key, servername: 'collector' });
  try {
    await within(
      new Promise<void>((resolve, reject) => {
        socket.once('secureConnect', resolve);
        socket.once('error', reject);
      }),
      10_000,
      () => new Error('TLS handshake with the collector'),
    );
    return socket.getPeerCertificate().serialNumber;
  } finally {
    socket.destroy();
  }
}

test.serial('certificate renewal: a Secret volume swap puts the new certificate in force without a restart or a lost line, and the expiry metric follows', async (t) => {
  t.timeout(180_000);
  const dir = ownedTempDir(t);
  // deploy/pki.sh writes ca.crt beside the certificates it issues; the renewals come from issueCertificate
  const pki = makePki(join(dir.path, 'pki'), ['bootstrap']);
  const ca = readFileSync(pki.ca, 'utf8');
  // cert-manager's Secret keys: ca.crt, tls.crt, tls.key
  const secret = (c: { cert: string; key: string }) => ({ 'ca.crt': ca, 'tls.crt': c.cert, 'tls.key': c.key });
  const collector1 = issueCertificate(pki, 'collector', 20);
  const collector2 = issueCertificate(pki, 'collector', 90);
  const edge1 = issueCertificate(pki, 'edge', 30);
  const edge2 = issueCertificate(pki, 'edge', 120);
  const collectorTls = atomicVolume(join(dir.path, 'collector-tls'), secret(collector1));
  const edgeTls = atomicVolume(join(dir.path, 'edge-tls'), secret(edge1));
  const [chainPort, collectorAdmin, edgeAdmin] = [await freePort(), await freePort(), await freePort()];
  const head = (adminPort: number) => `auto_reload = true
status_interval_ms = 500
shutdown_timeout_ms = 3000
[admin]
host = "127.0.0.1"
port = ${adminPort}
`;
  const collectorToml = `${head(collectorAdmin)}
[[pipelines]]
name = "collect"
[pipelines.flow.format]
type = "json"
[pipelines.flow.dedup]
enabled = true
${chainSourceToml('in', 'tcp_chain', chainPort)}${tlsBlock('pipelines.plugin_sources.config', {
    cert_file: collectorTls.path('tls.crt'),
    key_file: collectorTls.path('tls.key'),
    client_ca_file: collectorTls.path('ca.crt'),
  })}${sinkToml('out', 'stdout', 'buffer_size = 5000\non_full = "block"')}`;
  const logs = join(dir.path, 'logs');
  const edgeToml = `node_name = "edge"
${head(edgeAdmin)}[[pipelines]]
name = "app"
${fileSourceToml('app', logs, 'pattern = "*.log"\nfrom = "start"\ncheck_interval_ms = 200')}${chainSinkToml(
    'collector',
    'tcp_chain',
    chainPort,
    'edge',
    `${QUICK_BACKOFF}buffer_size = 2000\non_full = "block"\n`,
  )}${tlsBlock('pipelines.plugin_sinks.config', {
    server_name: 'collector',
    ca_file: edgeTls.path('ca.crt'),
    cert_file: edgeTls.path('tls.crt'),
    key_file: edgeTls.path('tls.key'),
  })}`;
  mkdirSync(logs);
  const appLog = join(logs, 'app.log');
  appendLines(appLog, 0, 0);
  const collector = spawnOwnedNode(t, ['-c', dir.file('collector.toml', collectorToml), '--logging.level=debug']);
  await waitReady(collector, 'collector');
  const edge = spawnOwnedNode(t, ['-c', dir.file('edge.toml', edgeToml), '--logging.level=debug']);
  await waitReady(edge, 'edge').catch((err: unknown) => {
    t.log(edge.errText.join('\n'), JSON.stringify(edge.records.filter((r) => r.level !== 'debug')));
    throw err;
  });
  const tally = new Tally(() => collector);

  // Lines keep coming through both renewals.
  let written = 0;
  let writing = true;
  const writer = (async () => {
    while (writing) {
      appendLines(appLog, written, written + 20);
      written += 20;
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  t.teardown(() => {
    writing = false;
  });

  await waitFor(() => tally.distinct >= 200, 'lines flow edge → collector over mutual TLS', 30_000);
  await waitFor(async () => (await expiryOf(collectorAdmin, 'collect', 'in')) === collector1.notAfter, 'the collector reports the first notAfter');
  await waitFor(async () => (await expiryOf(edgeAdmin, 'app', 'collector')) === edge1.notAfter, 'the edge reports the first notAfter');
  t.is(await servedSerial(chainPort, ca, edge1.cert, edge1.key), collector1.serial);

  // cert-manager renewed the collector's certificate; kubelet swaps the Secret volume.
  const collectorPid = collector.child.pid;
  collectorTls.update(secret(collector2));
  await waitFor(() => reloaded(collector) === 1, 'the collector reloads on the Secret swap', 30_000);
  await waitFor(async () => (await expiryOf(collectorAdmin, 'collect', 'in')) === collector2.notAfter, 'the expiry metric moves to the new notAfter');
  t.is(await servedSerial(chainPort, ca, edge1.cert, edge1.key), collector2.serial, 'a new connection gets the new certificate');
  t.is(collector.child.pid, collectorPid);
  t.is(collector.child.exitCode, null, 'no restart: the same primary serves it');
  const before = tally.distinct;
  await waitFor(() => tally.distinct >= before + 200, 'delivery goes on after the collector renewal', 30_000);

  // The edge's client certificate renewed the same way.
  edgeTls.update(secret(edge2));
  await waitFor(() => reloaded(edge) === 1, 'the edge reloads on its Secret swap', 30_000);
  await waitFor(async () => (await expiryOf(edgeAdmin, 'app', 'collector')) === edge2.notAfter, 'the edge expiry metric moves to the new notAfter');
  t.is(edge.child.exitCode, null);
  const after = tally.distinct;
  await waitFor(() => tally.distinct >= after + 200, 'delivery goes on after the edge renewal', 30_000);

  writing = false;
  await writer;
  await waitFor(() => tally.missing(written).length === 0, `all ${written} lines at the collector`, 60_000).catch((err: unknown) => {
    t.log(`missing: ${tally.missing(written).slice(0, 20).join(', ')}`);
    throw err;
  });
  t.is(tally.duplicates, 0, 'no line twice');
  t.is(reloaded(collector), 1);
  t.is(edge.records.filter((r) => r.msg === 'Failed to bootstrap new service, keeping old service running').length, 0);
  t.is(await edge.stop(), 0);
  t.is(await collector.stop(), 0);
});

test.serial('admin endpoint certificate renewal: a Secret volume swap serves new admin connections with the new certificate, without a reload', async (t) => {
  t.timeout(90_000);
  const dir = ownedTempDir(t);
  const pki = makePki(join(dir.path, 'pki'), ['bootstrap']);
  const ca = readFileSync(pki.ca, 'utf8');
  const first = issueCertificate(pki, 'collector', 20);
  const renewed = issueCertificate(pki, 'collector', 90);
  const volume = atomicVolume(join(dir.path, 'admin-tls'), { 'ca.crt': ca, 'tls.crt': first.cert, 'tls.key': first.key });
  const adminPort = await freePort();
  const node = spawnOwnedNode(t, [
    '-c',
    dir.file(
      'node.toml',
      `auto_reload = true
shutdown_timeout_ms = 2000
[admin]
host = "127.0.0.1"
port = ${adminPort}
[admin.tls]
enabled = true
cert_file = ${JSON.stringify(volume.path('tls.crt'))}
key_file = ${JSON.stringify(volume.path('tls.key'))}
${wordsConfig(3).slice(wordsConfig(3).indexOf('[[pipelines]]'))}`,
    ),
  ]);
  await waitFor(() => linesOf(node, 3) > 0, 'the node runs');
  // the collector certificate carries 127.0.0.1 and `collector`: servedSerial names the latter
  t.is(await servedSerial(adminPort, ca, first.cert, first.key), first.serial);
  volume.update({ 'ca.crt': ca, 'tls.crt': renewed.cert, 'tls.key': renewed.key });
  await waitFor(() => node.records.some((r) => r.msg === 'Admin endpoint certificates reloaded'), 'the admin endpoint takes the new certificate', 30_000);
  t.is(await servedSerial(adminPort, ca, first.cert, first.key), renewed.serial, 'a new admin connection gets the new certificate');
  t.is(reloaded(node), 0, 'the pipelines were not reloaded for it');
  t.is(await node.stop(), 0);
});
