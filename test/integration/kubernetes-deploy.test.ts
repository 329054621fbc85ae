// deploy/kubernetes run without a cluster (issue 29, points 2 and 3). Each pod's volumes are laid
// out under a temp dir the way kubelet lays them out (ConfigMap and Secret volumes with their
// `..data` links, host paths and claims as directories), the configuration's mount paths moved
// there; certificates come from a test CA with the names of the manifests' Certificates.
// Point 2: every ConfigMap passes `logrelay check` with the pod's environment.
// Point 3: the edge's configuration reads a synthetic /var/log/pods tree (CRI and docker
// json-file, split lines, kubelet rotation, gzip, a container restart, the edge pod replaced and
// resuming from its hostPath data_dir) and the relays and the collector run from theirs: every
// line reaches the collector's archive exactly once, and the collector's fleet view lists every
// node: each relay pod reports under a certificate of its own name, which its auth allows.
// Both need the file source keys of DESIGN.md §21 (include, container_format,
// kubernetes_metadata), which came with the merge of branch wip-lines.

import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { adminRequest, adminStatus, parseExposition, sampleValue } from '../helpers/admin.js';
import { atomicVolume, ContainerLog } from '../helpers/kubelet.js';
import { buildKustomization, configPathOf, envOf, type K8sObject, rerooted, type Volume, type Workload, workloads } from '../helpers/kubernetes.js';
import { freePort, ownedTempDir, type RunningNode, sleep, spawnNode, spawnOwnedNode, waitFor } from '../helpers/node.js';
import { issueCertificate, makePki, type Pki } from '../helpers/pki.js';

const { objects } = buildKustomization();
const all = workloads(objects);
const workload = (name: string): Workload => all.find((w) => w.name === name)!;
const certificates = objects.filter((o) => o.kind === 'Certificate') as (K8sObject & { spec: { secretName: string; commonName: string; dnsNames?: string[] } })[];

/** What cert-manager writes into the Secret of a Certificate: issued here by the test CA, once per Secret. */
const issuedSecrets = new Map<string, Record<string, string | Buffer>>();
function secretOf(secretName: string, pki: Pki): Record<string, string | Buffer> {
  const key = `${pki.ca}:${secretName}`;
  let secret = issuedSecrets.get(key);
  if (!secret) {
    const cert = certificates.find((c) => c.spec.secretName === secretName);
    if (!cert) throw new Error(`Secret ${secretName} is no Certificate's`);
    const issued = issueCertificate(pki, cert.spec.commonName, 90, cert.spec.dnsNames);
    secret = { 'ca.crt': readFileSync(pki.ca), 'tls.crt': issued.cert, 'tls.key': issued.key };
    issuedSecrets.set(key, secret);
  }
  return secret;
}

/** The files of a Secret or projected volume, from the Secrets as issued now. */
function secretVolumeFiles(w: Workload, volume: Volume, pki: Pki): Record<string, string | Buffer> {
  if (volume.secret) {
    const secret = secretOf(volume.secret.secretName, pki);
    const items = volume.secret.items ?? Object.keys(secret).map((key) => ({ key, path: key }));
    return Object.fromEntries(items.map((i) => [i.path, secret[i.key]!]));
  }
  // every source's items in one volume (kubelet's one ..data for all of them)
  const files: Record<string, string | Buffer> = {};
  for (const source of volume.projected?.sources ?? []) {
    if (!source.secret?.items) throw new Error(`${w.name}: volume ${volume.name}: only Secret sources with items are laid out here`);
    const secret = secretOf(source.secret.name, pki);
    for (const i of source.secret.items) files[i.path] = secret[i.key]!;
  }
  return files;
}

/**
 * Lays out the pod's volumes under `root` (see the module comment) and returns the path of its
 * configuration there. Called again, it updates the Secret volumes the way kubelet does.
 */
function layOut(w: Workload, root: string, pki: Pki): string {
  for (const m of w.container.volumeMounts ?? []) {
    const dir = join(root, m.mountPath);
    const volume = w.pod.volumes?.find((v) => v.name === m.name);
    if (volume?.configMap) {
      const cm = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === volume.configMap!.name) as K8sObject & { data: Record<string, string> };
      atomicVolume(dir, Object.fromEntries(Object.entries(cm.data).map(([k, v]) => [k, rerooted(w, v, root)])));
    } else if (volume?.secret || volume?.projected) {
      atomicVolume(dir, secretVolumeFiles(w, volume, pki));
    } else {
      mkdirSync(dir, { recursive: true }); // a host path or a claim
    }
  }
  return join(root, configPathOf(w));
}

/** The variables a configuration reads (`${NAME…}`). */
const variablesOf = (path: string): Set<string> => new Set([...readFileSync(path, 'utf8').matchAll(/\$\{(\w+)/g)].map((m) => m[1]!));

test.serial('every ConfigMap configuration passes `logrelay check` with the environment its pod gets', async (t) => {
  const dir = ownedTempDir(t);
  const pki = makePki(join(dir.path, 'pki'), ['bootstrap']);
  t.is(all.length, 3);
  for (const w of all) {
    const config = layOut(w, join(dir.path, w.name), pki);
    const check = spawnOwnedNode(t, ['check', '-c', config], { env: envOf(w) });
    const { code } = await check.finish(`check of ${w.name}`);
    t.is(code, 0, `${w.name}: ${check.errText.join('\n')}`);
    t.regex(check.out.join('\n'), /^configuration ok: 1 pipeline$/, w.name);
  }
  // the multiline preset the edge leaves commented is valid once uncommented
  const edge = workload('logrelay-edge');
  const config = join(dir.path, edge.name, configPathOf(edge));
  const text = readFileSync(config, 'utf8');
  const uncommented = text.replace(/^# (\[pipelines\.plugin_sources\.config\.multiline\])\n# (preset = .*)$/m, '$1\n$2');
  t.not(uncommented, text, 'the commented multiline table is found');
  const check = spawnOwnedNode(t, ['check', '-c', dir.file('edge-multiline.toml', uncommented)], { env: envOf(edge) });
  t.is((await check.finish('check of the edge with multiline')).code, 0, check.errText.join('\n'));
});

interface LocalPod {
  readonly name: string;
  readonly root: string;
  readonly config: string;
  readonly env: Record<string, string>;
  readonly adminPort: number;
}

/** A pod of `w` run here: its environment with `local` overrides, each of which its configuration must read. */
async function localPod(w: Workload, name: string, base: string, pki: Pki, local: Record<string, string>): Promise<LocalPod> {
  const root = join(base, name);
  const config = layOut(w, root, pki);
  const reads = variablesOf(config);
  const adminPort = await freePort();
  const overrides = { POD_IP: '127.0.0.1', ADMIN_PORT: String(adminPort), ...local };
  for (const key of Object.keys(overrides)) if (!reads.has(key)) throw new Error(`${name}: the configuration does not read ${key}`);
  const env: Record<string, string> = { ...envOf(w), ...overrides };
  if (w.kind === 'StatefulSet') env.POD_NAME = name;
  return { name, root, config, env, adminPort };
}

/** Every archived message (the collector's file sink, JSON lines) with how often it came. */
function archived(dir: string): { counts: Map<string, number>; entries: Record<string, unknown>[] } {
  const counts = new Map<string, number>();
  const entries: Record<string, unknown>[] = [];
  let files: string[] = [];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.log'));
  } catch {
    // not yet created
  }
  for (const f of files) {
    const text = readFileSync(join(dir, f), 'utf8');
    for (const line of text.slice(0, text.lastIndexOf('\n') + 1).split('\n')) {
      if (!line) continue;
      const e = JSON.parse(line) as Record<string, unknown>;
      entries.push(e);
      counts.set(String(e.message), (counts.get(String(e.message)) ?? 0) + 1);
    }
  }
  return { counts, entries };
}

const lineText = (i: number) => `line ${String(i).padStart(7, '0')}`;

test.serial('the edge ConfigMap reads a synthetic /var/log/pods tree with kubelet rotation; relays and collector from theirs: every line exactly once, every node in the fleet view, a relay renewed alone', async (t) => {
  t.timeout(240_000);
  const dir = ownedTempDir(t);
  const pki = makePki(join(dir.path, 'pki'), ['bootstrap']);
  const [collectorChain, stream, relay0, relay1] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const collector = await localPod(workload('collector'), 'collector-0', dir.path, pki, {
    CHAIN_HOST: '127.0.0.1',
    CHAIN_PORT: String(collectorChain),
    STREAM_HOST: '127.0.0.1',
    STREAM_PORT: String(stream),
  });
  const relays = await Promise.all(
    [relay0, relay1].map((port, i) =>
      localPod(workload('relay'), `relay-${i}`, dir.path, pki, {
        CHAIN_HOST: '127.0.0.1',
        CHAIN_PORT: String(port),
        COLLECTOR_HOST: '127.0.0.1',
        COLLECTOR_PORT: String(collectorChain),
      }),
    ),
  );
  const edge = await localPod(workload('logrelay-edge'), 'edge', dir.path, pki, {
    RELAY_A_HOST: '127.0.0.1',
    RELAY_A_PORT: String(relay0),
    RELAY_B_HOST: '127.0.0.1',
    RELAY_B_PORT: String(relay1),
  });

  const running: { pod: LocalPod; node: RunningNode }[] = [];
  t.teardown(() => {
    for (const r of running) r.node.signal('SIGKILL');
  });
  const start = async (pod: LocalPod) => {
    const node = spawnNode(['-c', pod.config], { env: pod.env });
    running.push({ pod, node });
    await waitFor(
      async () => node.child.exitCode !== null || (await adminRequest(pod.adminPort, '/readyz').catch(() => ({ status: 0 }))).status === 200,
      `${pod.name} ready (/readyz on its admin port)`,
      30_000,
    );
    if (node.child.exitCode !== null) throw new Error(`${pod.name} exited ${node.child.exitCode}: ${node.errText.join('\n')}`);
    t.is((await adminRequest(pod.adminPort, '/livez')).status, 200, `${pod.name}: /livez`);
    return node;
  };
  await start(collector);
  for (const r of relays) await start(r);

  // Logs already on the node when the edge starts, then more while it runs.
  const pods = join(edge.root, 'var', 'log', 'pods');
  const containers = [
    new ContainerLog(pods, 'shop', 'web-5d8f7c9b4-x2x7q', '0b6f0d6e-3c55-4d0c-9a52-6f1f1d4b2a11', 'nginx', 'cri'),
    new ContainerLog(pods, 'shop', 'worker-0', '5d2c8f0a-7e1b-4f3a-8c66-2b9d3e4f5a22', 'app', 'docker'),
    new ContainerLog(pods, 'kube-system', 'coredns-6f6b679f8f-q9k8p', '9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c33', 'coredns', 'cri'),
  ];
  let next = 0;
  const round = () => {
    for (const [k, c] of containers.entries()) {
      const batch: string[] = [];
      for (let i = 0; i < 30; i++) batch.push(lineText(next++));
      c.write(batch, k === 2 ? 'stderr' : 'stdout');
      // a long line the runtime wrote in three pieces
      const whole = lineText(next++);
      c.writeSplit([whole.slice(0, 4), whole.slice(4, 9), whole.slice(9)]);
    }
  };
  for (let r = 0; r < 5; r++) round();
  let edgeNode = await start(edge);
  const archive = join(collector.root, 'var', 'lib', 'logrelay', 'archive');
  const missing = (total: number) => {
    const { counts } = archived(archive);
    const out: number[] = [];
    for (let i = 0; i < total; i++) if (!counts.has(lineText(i))) out.push(i);
    return out;
  };
  const allArchived = (total: number) =>
    waitFor(() => missing(total).length === 0, `all ${total} lines in the collector's archive`, 60_000).catch((err: unknown) => {
      t.log(`missing ${missing(total).length}: ${missing(total).slice(0, 20).join(', ')}`);
      throw err;
    });

  const rotated: string[] = [];
  let restartedAt = 0;
  for (let r = 0; r < 30; r++) {
    round();
    if (r === 8 || r === 18) rotated.push(containers[0]!.rotate());
    if (r === 12) rotated.push(containers[2]!.rotate());
    if (r === 14) containers[1]!.restarted();
    // kubelet compresses a rotated file later (the .gz written, the plain one deleted)
    if (r === 14 || r === 24) ContainerLog.compress(rotated.shift()!);
    if (r === 16) {
      // The edge pod is replaced (an update, a deletion): its successor on the node resumes from
      // the positions in the hostPath data_dir instead of reading the node's logs again.
      await allArchived(next);
      t.is(await edgeNode.stop(20_000), 0, 'the old edge pod stops with 0');
      running.splice(running.findIndex((x) => x.node === edgeNode), 1);
      restartedAt = next;
      edgeNode = await start(edge);
    }
    await sleep(100);
  }

  // cert-manager renews relay-0's certificate: kubelet swaps the projected volume of every relay
  // pod (each mounts every relay's Secret). relay-0 reloads onto the new certificate, found in its
  // directory of the volume; relay-1's files did not change and it does not reload. No line lost.
  const relay0Cert = certificates.find((c) => c.spec.commonName === 'relay-0')!;
  const renewed = issueCertificate(pki, 'relay-0', 120, relay0Cert.spec.dnsNames);
  issuedSecrets.set(`${pki.ca}:${relay0Cert.spec.secretName}`, { 'ca.crt': readFileSync(pki.ca), 'tls.crt': renewed.cert, 'tls.key': renewed.key });
  for (const r of relays) layOut(workload('relay'), r.root, pki);
  const relayNode = (name: string) => running.find((r) => r.pod.name === name)!.node;
  const reloads = (name: string) => relayNode(name).records.filter((r) => r.msg === 'Configuration reloaded').length;
  await waitFor(() => reloads('relay-0') === 1, 'relay-0 reloads on the renewal of its certificate', 30_000);
  const expiry = async () =>
    sampleValue(parseExposition((await adminRequest(relays[0]!.adminPort, '/metrics')).body), 'logrelay_tls_certificate_expiry_timestamp_seconds', {
      pipeline: 'relay',
      component: 'collector',
    });
  await waitFor(async () => (await expiry()) === renewed.notAfter, "relay-0's link to the collector carries the renewed certificate", 30_000);
  for (let r = 0; r < 3; r++) {
    round();
    await sleep(100);
  }
  const total = next;
  await allArchived(total);
  t.is(reloads('relay-1'), 0, "relay-1 did not reload: its own certificate's files did not change");
  t.is(relayNode('relay-0').child.exitCode, null, 'relay-0 renewed in place, no restart');
  // each numbered line is one entry (the split ones joined): the successor read what came after it only
  const readBySuccessor = async () => (await adminStatus(edge.adminPort)).pipelines.containers?.counters.sources.pods?.total_entries;
  await waitFor(async () => (await readBySuccessor()) === total - restartedAt, `the successor edge read the ${total - restartedAt} entries written after it started`, 15_000).catch(
    async (err: unknown) => {
      t.log(`the successor read ${await readBySuccessor()} entries`);
      throw err;
    },
  );
  const { counts, entries } = archived(archive);
  t.deepEqual(
    [...counts].filter(([, n]) => n > 1),
    [],
    'no line twice',
  );
  t.is(counts.size, total, 'nothing but the lines written');

  // Kubernetes metadata from the paths, the stream from the runtime's format.
  const first = (i: number) => entries.find((e) => e.message === lineText(i)) as { source?: string; node?: string; fields?: { stream?: string; k8s?: Record<string, unknown> } };
  const web = first(0);
  t.is(web.source, 'nginx');
  t.is(web.node, envOf(workload('logrelay-edge')).NODE_NAME, 'node = the node name (downward API)');
  t.like(web.fields?.k8s, { namespace: 'shop', pod: 'web-5d8f7c9b4-x2x7q', pod_uid: '0b6f0d6e-3c55-4d0c-9a52-6f1f1d4b2a11', container: 'nginx', restart_count: 0 });
  t.is(web.fields?.stream, 'stdout');
  t.is(first(62).fields?.stream, 'stderr', 'coredns wrote to stderr');
  t.like(first(62).fields?.k8s, { namespace: 'kube-system', container: 'coredns' });
  const restartedLine = entries.find((e) => (e as { fields?: { k8s?: { container?: string; restart_count?: number } } }).fields?.k8s?.restart_count === 1);
  t.like((restartedLine as { fields?: { k8s?: unknown } } | undefined)?.fields?.k8s, { container: 'app', restart_count: 1 }, 'the restarted container: 1.log');

  // The fleet view: the collector takes every relay's reports and the edge's they forward (each
  // relay's certificate identity is its pod name, its node_name), so it lists all four nodes.
  const edgeName = envOf(workload('logrelay-edge')).NODE_NAME!;
  const nodes = ['collector-0', 'relay-0', 'relay-1', edgeName];
  const fleetView = async () => {
    const { status, body } = await adminRequest(collector.adminPort, '/fleet');
    if (status !== 200) throw new Error(`/fleet answered ${status}`);
    return new Map((JSON.parse(body) as { nodes: { node: string; state: string; via: string[] }[] }).nodes.map((n) => [n.node, n]));
  };
  const view = await waitFor(
    async () => {
      const v = await fleetView();
      return nodes.every((n) => v.get(n)?.state === 'live') ? v : undefined;
    },
    `the collector's /fleet lists ${nodes.join(', ')} live`,
    30_000,
  ).catch(async (err: unknown) => {
    t.log(JSON.stringify([...(await fleetView()).values()]));
    throw err;
  });
  t.deepEqual(view.get('relay-0')?.via, [], 'relay-0 reports itself');
  t.deepEqual(view.get('relay-1')?.via, [], 'relay-1 reports itself');
  const edgeVia = view.get(edgeName)?.via ?? [];
  t.true(edgeVia.length === 1 && ['relay-0', 'relay-1'].includes(edgeVia[0]!), `the edge's reports came through a relay: via ${JSON.stringify(edgeVia)}`);
  const reportCounters = (await adminStatus(collector.adminPort)).pipelines.collect?.counters.sources.relays;
  t.true((reportCounters?.reports_received ?? 0) > 0, 'the collector took reports from the relays');
  t.is(reportCounters?.reports_rejected, 0, 'and refused none');

  // Everyone stops cleanly, upstream first.
  for (const r of [...running].reverse()) t.is(await r.node.stop(20_000), 0, `${r.pod.name} stops with 0`);
  t.true(edgeNode.records.every((r) => r.msg !== 'Entries dropped'), 'the edge dropped nothing');
});
