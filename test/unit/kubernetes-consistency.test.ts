// deploy/kubernetes (issue 29, point 2): the manifests and the configurations they mount agree.
// Each workload's TOML is loaded with the environment its pod gets; chain sinks dial Services
// that exist, on ports that reach a chain source; probes ask the admin port; every mount names a
// volume and every Secret a Certificate; selectors match labels; least privilege holds. Each
// relay pod reports to the collector under a certificate of its own name (issue 42's fleet view).
// (`logrelay check` on the same files: test/integration/kubernetes-deploy.test.ts.)

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { loadConfig } from '../../src/config/load.js';
import type { Config, PluginConfig } from '../../src/config/schema.js';
import { tlsFilesOf } from '../../src/primary/watch.js';
import {
  buildKustomization,
  configPathOf,
  configTomlOf,
  DOWNWARD_VALUES,
  dnsMatches,
  envOf,
  type K8sObject,
  mountOf,
  podNamesOf,
  resolvePort,
  secretFileOf,
  type Workload,
  workloads,
} from '../helpers/kubernetes.js';
import { readCompose } from '../helpers/fleet.js';
import { ROOT, tempDir } from '../helpers/node.js';

const NAMESPACE = 'logrelay';
const CHAIN_TYPES = new Set(['tcp_chain', 'http_chain']);
/** the keys of a cert-manager Secret (kubernetes.io/tls plus ca.crt) */
const TLS_SECRET_KEYS = new Set(['tls.crt', 'tls.key', 'ca.crt']);

const { objects } = buildKustomization();
const all = workloads(objects);
const tmp = tempDir('logrelay-k8s-config-');
test.after.always(() => tmp.remove());

interface ServiceObject extends K8sObject {
  spec: { clusterIP?: string; selector: Record<string, string>; ports: { name?: string; port: number; targetPort?: number | string }[] };
}
interface CertificateObject extends K8sObject {
  spec: { secretName: string; commonName?: string; dnsNames?: string[]; usages?: string[] };
}
const services = objects.filter((o) => o.kind === 'Service') as ServiceObject[];
const certificates = objects.filter((o) => o.kind === 'Certificate') as CertificateObject[];
const pdbs = objects.filter((o) => o.kind === 'PodDisruptionBudget') as (K8sObject & { spec: { selector: { matchLabels: Record<string, string> } } })[];

const selects = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);

/** Each pod's configuration as its environment makes it (a StatefulSet's pods differ by POD_NAME). */
const configs = new Map<string, Config>(
  all.flatMap((w) =>
    podNamesOf(w).map((pod): [string, Config] => {
      const file = join(tmp.path, `${pod}.toml`);
      writeFileSync(file, configTomlOf(w, objects));
      return [pod, loadConfig({ file, env: envOf(w, undefined, pod), flags: new Map() })];
    }),
  ),
);
const configOf = (w: Workload, pod = podNamesOf(w)[0]!) => configs.get(pod)!;
const pluginsOf = (c: Config, kind: 'plugin_sources' | 'plugin_sinks'): PluginConfig[] => c.pipelines.flatMap((p) => p[kind]);

interface TlsBlock {
  cert_file?: string;
  key_file?: string;
  ca_file?: string;
  client_ca_file?: string;
  server_name?: string;
}
const tlsOf = (plugin: PluginConfig | undefined) => plugin?.config.tls as TlsBlock | undefined;

/** The Certificate whose Secret holds `file` in the workload's volumes. */
function certificateOf(w: Workload, file: string | undefined): CertificateObject | undefined {
  const secret = file === undefined ? undefined : secretFileOf(w, file)?.secretName;
  return certificates.find((c) => c.spec.secretName === secret);
}

/** The identity an `auth` block reads from a certificate (DESIGN.md §10: cn by default). */
function identitiesOf(cert: CertificateObject | undefined, identity: string): string[] {
  if (!cert) return [];
  if (identity === 'cn') return cert.spec.commonName === undefined ? [] : [cert.spec.commonName];
  if (identity === 'san_dns') return cert.spec.dnsNames ?? [];
  throw new Error(`auth.identity ${identity}: not read by this test`);
}

/** `svc`, `svc.ns[.svc[.cluster.local]]`, or a StatefulSet pod `pod.svc.ns.svc[…]`. */
function resolveHost(host: string): { service: string; pod?: string } | undefined {
  for (const suffix of [`.${NAMESPACE}.svc.cluster.local`, `.${NAMESPACE}.svc`, `.${NAMESPACE}`, '']) {
    if (!host.endsWith(suffix)) continue;
    const parts = host.slice(0, host.length - suffix.length).split('.');
    if (parts.length === 1) return { service: parts[0]! };
    if (parts.length === 2 && suffix !== '') return { pod: parts[0]!, service: parts[1]! };
  }
  return undefined;
}

test('the workloads run the configurations of their ConfigMaps, auto_reload on, mounted whole (no subPath)', (t) => {
  t.deepEqual(all.map((w) => `${w.kind}/${w.name}`).sort(), ['DaemonSet/logrelay-edge', 'StatefulSet/collector', 'StatefulSet/relay']);
  for (const w of all) {
    const c = configOf(w);
    t.true(c.auto_reload, `${w.name}: auto_reload`);
    const config = mountOf(w, configPathOf(w));
    t.truthy(config?.volume?.configMap, `${w.name}: -c names a file on a ConfigMap volume`);
    t.true(config?.mount.readOnly, `${w.name}: the configuration is mounted read-only`);
    for (const m of w.container.volumeMounts ?? []) {
      t.is(m.subPath, undefined, `${w.name}: ${m.mountPath} has no subPath (kubelet never updates one)`);
      t.is(m.subPathExpr, undefined, `${w.name}: ${m.mountPath} has no subPathExpr`);
    }
  }
});

test('every volume mount names a volume, every ConfigMap and Secret exists, every TLS file is in its Certificate Secret', (t) => {
  const configMaps = new Set(objects.filter((o) => o.kind === 'ConfigMap').map((o) => o.metadata.name));
  const secrets = new Set(certificates.map((c) => c.spec.secretName));
  for (const w of all) {
    const volumes = new Set([...(w.pod.volumes ?? []).map((v) => v.name), ...w.claims]);
    const mounted = new Set((w.container.volumeMounts ?? []).map((m) => m.name));
    for (const m of w.container.volumeMounts ?? []) t.true(volumes.has(m.name), `${w.name}: mount ${m.mountPath} names volume ${m.name}, which exists`);
    for (const v of volumes) t.true(mounted.has(v), `${w.name}: volume ${v} is mounted`);
    for (const v of w.pod.volumes ?? []) {
      if (v.configMap) t.true(configMaps.has(v.configMap.name), `${w.name}: ConfigMap ${v.configMap.name} is in the manifests`);
      if (v.secret) t.true(secrets.has(v.secret.secretName), `${w.name}: Secret ${v.secret.secretName} is a Certificate's secretName`);
      if (v.projected) {
        const paths = v.projected.sources.flatMap((s) => s.secret?.items?.map((i) => i.path) ?? []);
        t.is(new Set(paths).size, paths.length, `${w.name}: volume ${v.name} projects no path twice`);
        for (const source of v.projected.sources) {
          t.truthy(source.secret?.items, `${w.name}: volume ${v.name} projects Secrets with their items listed`);
          if (source.secret) t.true(secrets.has(source.secret.name), `${w.name}: Secret ${source.secret.name} is a Certificate's secretName`);
        }
      }
    }
    for (const pod of podNamesOf(w)) {
      const files = tlsFilesOf(configOf(w, pod));
      t.true(files.pipelines.length > 0, `${pod}: mutual TLS`);
      for (const f of [...files.pipelines, ...files.admin]) {
        const found = secretFileOf(w, f);
        t.truthy(found, `${pod}: ${f} is a key of a Secret volume`);
        t.true(found?.mount.readOnly, `${pod}: ${f} is mounted read-only`);
        t.true(TLS_SECRET_KEYS.has(found?.key ?? '?'), `${pod}: ${f} is a key cert-manager writes`);
        t.is(f.split('/').pop(), found?.key, `${pod}: ${f} is named after its key`);
      }
      // a certificate, its key and the CA that signed it come from one Secret
      for (const plugin of configOf(w, pod).pipelines.flatMap((p) => [...p.plugin_sources, ...p.plugin_sinks])) {
        const tls = tlsOf(plugin);
        if (!tls?.cert_file) continue;
        const secretOf = (f: string | undefined) => (f === undefined ? undefined : secretFileOf(w, f)?.secretName);
        const own = secretOf(tls.cert_file);
        for (const f of [tls.key_file, tls.ca_file, tls.client_ca_file]) if (f !== undefined) t.is(secretOf(f), own, `${pod}/${plugin.id}: ${f} from the Secret of its certificate`);
      }
    }
  }
});

test('selectors match the template labels; every Service and PodDisruptionBudget selects a workload', (t) => {
  for (const w of all) t.true(selects(w.selector, w.labels), `${w.name}: selector matches the pod template's labels`);
  for (const s of services) t.is(all.filter((w) => selects(s.spec.selector, w.labels)).length, 1, `Service ${s.metadata.name} selects one workload`);
  for (const p of pdbs) t.is(all.filter((w) => selects(p.spec.selector.matchLabels, w.labels)).length, 1, `PDB ${p.metadata.name} selects one workload`);
  for (const w of all.filter((x) => x.kind === 'StatefulSet')) {
    const s = services.find((x) => x.metadata.name === w.serviceName);
    t.is(s?.spec.clusterIP, 'None', `${w.name}: its governing Service ${w.serviceName} is headless`);
    t.true(s !== undefined && selects(s.spec.selector, w.labels), `${w.name}: its Service selects it`);
    t.true(pdbs.some((p) => selects(p.spec.selector.matchLabels, w.labels)), `${w.name}: a PodDisruptionBudget covers it`);
    t.true(w.claims.length > 0, `${w.name}: a PersistentVolumeClaim template`);
  }
});

test('probes and scrape annotations ask the admin port, which listens on the pod address', (t) => {
  for (const w of all) {
    const c = configOf(w);
    t.is(c.admin.port, 9598, `${w.name}: admin port 9598`);
    t.is(c.admin.host, DOWNWARD_VALUES['status.podIP']!, `${w.name}: admin on the pod address (POD_IP), not loopback`);
    const live = w.container.livenessProbe?.httpGet;
    const ready = w.container.readinessProbe?.httpGet;
    t.is(live?.path, '/livez', `${w.name}: liveness on /livez`);
    t.is(ready?.path, '/readyz', `${w.name}: readiness on /readyz`);
    t.is(resolvePort(w.container, live?.port ?? -1), c.admin.port, `${w.name}: liveness port = admin port`);
    t.is(resolvePort(w.container, ready?.port ?? -1), c.admin.port, `${w.name}: readiness port = admin port`);
    t.is(w.annotations['prometheus.io/scrape'], 'true', `${w.name}: scraped`);
    t.is(w.annotations['prometheus.io/port'], String(c.admin.port), `${w.name}: scrape port = admin port`);
    t.is(w.annotations['prometheus.io/path'], '/metrics', `${w.name}: scrape path`);
  }
});

test('chain sinks dial Services of the manifests, on ports that reach a chain source of theirs, with names their certificates carry', (t) => {
  let links = 0;
  for (const w of all) {
    for (const pod of podNamesOf(w)) for (const sink of pluginsOf(configOf(w, pod), 'plugin_sinks').filter((s) => CHAIN_TYPES.has(s.type))) {
      const where = `${pod}/${sink.id}`;
      const dialerCert = certificateOf(w, tlsOf(sink)?.cert_file);
      const host = String(sink.config.host);
      const port = Number(sink.config.port);
      const target = resolveHost(host);
      const service = services.find((s) => s.metadata.name === target?.service);
      if (!service || !target) {
        t.fail(`${where}: ${host} is not a Service of namespace ${NAMESPACE}`);
        continue;
      }
      const peer = all.find((x) => selects(service.spec.selector, x.labels));
      if (!peer) {
        t.fail(`${where}: Service ${service.metadata.name} selects no workload`);
        continue;
      }
      // a peer whose own downstream is down is not ready (its link is down) yet still takes entries:
      // the Service must keep its name while it is not ready
      t.true((service.spec as { publishNotReadyAddresses?: boolean }).publishNotReadyAddresses === true, `${where}: Service ${service.metadata.name} publishes not-ready addresses`);
      if (target.pod !== undefined) {
        t.is(peer.serviceName, service.metadata.name, `${where}: ${host} is a pod of the StatefulSet governed by ${service.metadata.name}`);
        const ordinal = Number(target.pod.slice(peer.name.length + 1));
        t.true(target.pod.startsWith(`${peer.name}-`) && Number.isInteger(ordinal) && ordinal < peer.replicas, `${where}: ${target.pod} is one of ${peer.name}'s ${peer.replicas} pods`);
      }
      const servicePort = service.spec.ports.find((p) => p.port === port);
      t.truthy(servicePort, `${where}: Service ${service.metadata.name} has port ${port}`);
      const containerPort = resolvePort(peer.container, servicePort?.targetPort ?? port);
      // the pod dialled, or (through the Service) any of them: the first stands for all
      const peerPod = target.pod ?? podNamesOf(peer)[0]!;
      const source = pluginsOf(configOf(peer, peerPod), 'plugin_sources').find((s) => s.type === sink.type && Number(s.config.port) === containerPort);
      t.truthy(source, `${where}: ${peer.name} has a ${sink.type} source on container port ${containerPort}`);
      // mutual TLS: the name dialled is on the peer's certificate, the dialer's identity is allowed
      const peerCert = certificateOf(peer, tlsOf(source)?.cert_file);
      const name = String(tlsOf(sink)?.server_name ?? host);
      t.true((peerCert?.spec.dnsNames ?? []).some((d) => dnsMatches(d, name)), `${where}: ${name} is a DNS name of ${peerCert?.metadata.name}`);
      t.true(peerCert?.spec.usages?.includes('server auth'), `${peerPod}: its certificate serves`);
      t.true(dialerCert?.spec.usages?.includes('client auth'), `${pod}: its certificate is a client's`);
      // client certificates required, from the CA that signs the dialer's (the ca.crt of its Secret)
      t.is(tlsOf(source)?.client_ca_file?.split('/').pop(), 'ca.crt', `${peerPod}: requires client certificates of the fleet's CA`);
      const auth = source?.config.auth as { allow?: string[] } | undefined;
      if (auth) t.true(auth.allow?.includes(dialerCert?.spec.commonName ?? '?'), `${peerPod} allows ${pod}'s identity ${dialerCert?.spec.commonName}`);
      // an allow list would stamp the shared tier identity over the edges' node names (§9)
      else t.is(w.kind, 'DaemonSet', `${peerPod}: only the edges' links go without an allow list`);
      links++;
    }
  }
  t.is(links, 4, 'edge → relay-0 and relay-1; relay-0 and relay-1 → collector');
  const edge = configOf(all.find((w) => w.kind === 'DaemonSet')!);
  const hosts = pluginsOf(edge, 'plugin_sinks').map((s) => String(s.config.host));
  t.is(new Set(hosts).size, 2, 'the edge dials two different relays');
  t.true(edge.pipelines.every((p) => p.fanout === 'balance'), 'edge: fanout = "balance"');
  const collector = configOf(all.find((w) => w.name === 'collector')!);
  t.true(collector.pipelines.every((p) => p.flow.dedup?.enabled), 'collector: dedup');
  const relay = all.find((w) => w.name === 'relay')!;
  t.deepEqual(
    (pluginsOf(collector, 'plugin_sources')[0]?.config.auth as { allow?: string[] } | undefined)?.allow,
    podNamesOf(relay).map((pod) => certificateOf(relay, tlsOf(pluginsOf(configOf(relay, pod), 'plugin_sinks')[0])?.cert_file)?.spec.commonName),
    'the collector admits the relays only',
  );
});

test('fleet reports reach the collector: each relay pod dials it under a certificate of its own, whose identity is allowed and is its node name', (t) => {
  // Behind `auth`, a chain source takes a node report only when its `node` is the peer's
  // identity or its `via` ends with it (docs/fleet.md). Edge reports pass a relay (no `auth`
  // there: see below) and reach the collector with `via` ending in that relay's node name; the
  // relay's own reports have its node name. So every pod that dials a source with `auth` must
  // present an identity that is allowed and equals its node_name.
  const dialled: { pod: string; identity: string; node: string }[] = [];
  for (const w of all) {
    for (const pod of podNamesOf(w)) {
      const config = configOf(w, pod);
      for (const sink of pluginsOf(config, 'plugin_sinks').filter((s) => CHAIN_TYPES.has(s.type))) {
        const target = resolveHost(String(sink.config.host));
        const service = services.find((s) => s.metadata.name === target?.service);
        const peer = service && all.find((x) => selects(service.spec.selector, x.labels));
        if (!peer) {
          t.fail(`${pod}/${sink.id}: dials no workload`); // said in detail above
          continue;
        }
        for (const peerPod of target?.pod !== undefined ? [target.pod] : podNamesOf(peer)) {
          const source = pluginsOf(configOf(peer, peerPod), 'plugin_sources').find((s) => s.type === sink.type);
          const auth = source?.config.auth as { allow?: string[]; identity?: string } | undefined;
          if (!auth) {
            // The edges share one certificate (CN edge) and report under their Kubernetes node
            // names: a relay takes their reports (and keeps their node on entries) because its
            // edge source has no allow list. Only the edges dial it.
            t.is(w.kind, 'DaemonSet', `${pod}/${sink.id}: a source without auth takes reports from the edges only`);
            t.not(config.node_name, certificateOf(w, tlsOf(sink)?.cert_file)?.spec.commonName, 'the edges report under node names, not their shared identity');
            continue;
          }
          const cert = certificateOf(w, tlsOf(sink)?.cert_file);
          const ids = identitiesOf(cert, auth.identity ?? 'cn');
          t.is(ids.length, 1, `${pod}/${sink.id}: one ${auth.identity ?? 'cn'} identity on ${cert?.metadata.name ?? 'its certificate'}`);
          const identity = ids[0] ?? '?';
          t.true(auth.allow?.includes(identity), `${peerPod} allows ${pod}'s identity ${identity}`);
          t.is(identity, config.node_name, `${pod}: its identity ${identity} is its node_name, so ${peerPod} takes its reports and the ones it forwards`);
          t.is(config.node_name, pod, `${pod}: node_name is the pod name`);
          dialled.push({ pod, identity, node: config.node_name });
        }
      }
    }
  }
  const relay = all.find((w) => w.name === 'relay')!;
  t.deepEqual(
    dialled.map((d) => d.pod),
    podNamesOf(relay),
    'every relay pod dials the collector behind auth',
  );
  t.is(new Set(dialled.map((d) => d.identity)).size, dialled.length, 'no two pods share an identity');
});

test('every container: resources, read-only root, no privilege escalation, capabilities dropped, no token, grace period above shutdown_timeout_ms', (t) => {
  for (const w of all) {
    const c = configOf(w);
    const sc = w.container.securityContext;
    for (const kind of ['requests', 'limits'] as const) {
      for (const r of ['cpu', 'memory']) t.truthy(w.container.resources?.[kind]?.[r], `${w.name}: ${kind}.${r}`);
    }
    t.true(sc?.readOnlyRootFilesystem, `${w.name}: readOnlyRootFilesystem`);
    t.false(sc?.allowPrivilegeEscalation, `${w.name}: no privilege escalation`);
    t.not(sc?.privileged, true, `${w.name}: not privileged`);
    t.deepEqual(sc?.capabilities?.drop, ['ALL'], `${w.name}: every capability dropped`);
    t.deepEqual(sc?.capabilities?.add ?? [], w.kind === 'DaemonSet' ? ['DAC_READ_SEARCH'] : [], `${w.name}: capabilities added back`);
    t.false(w.pod.automountServiceAccountToken, `${w.name}: no service account token`);
    t.false(w.pod.enableServiceLinks, `${w.name}: no service link variables (COLLECTOR_PORT=tcp://… would override the configuration's)`);
    t.true((w.pod.terminationGracePeriodSeconds ?? 30) * 1000 > c.shutdown_timeout_ms, `${w.name}: grace period above shutdown_timeout_ms`);
    if (w.kind === 'StatefulSet') t.true(w.pod.securityContext?.runAsNonRoot, `${w.name}: runs as non-root`);
  }
});

test('the edge: host logs read-only, data_dir its only writable host path, NODE_NAME, every node, the container source of §21', (t) => {
  const w = all.find((x) => x.kind === 'DaemonSet')!;
  const c = configOf(w);
  const spec = w.object.spec as { updateStrategy?: { type?: string; rollingUpdate?: { maxUnavailable?: number } } };
  t.is(spec.updateStrategy?.type, 'RollingUpdate');
  t.is(spec.updateStrategy?.rollingUpdate?.maxUnavailable, 1);
  t.true(w.pod.tolerations?.some((x) => x.operator === 'Exists' && x.key === undefined), 'tolerates every taint');
  t.is(w.container.env?.find((e) => e.name === 'NODE_NAME')?.valueFrom?.fieldRef?.fieldPath, 'spec.nodeName');
  t.is(c.node_name, DOWNWARD_VALUES['spec.nodeName']!, 'node_name is the node name');
  const data = mountOf(w, c.data_dir);
  t.is(data?.mount.mountPath, c.data_dir, 'data_dir is a mount of its own');
  t.deepEqual(data?.volume?.hostPath, { path: '/var/lib/logrelay', type: 'DirectoryOrCreate' }, 'data_dir on the host, so positions survive the pod');
  for (const m of w.container.volumeMounts ?? []) {
    const v = w.pod.volumes?.find((x) => x.name === m.name);
    if (v?.hostPath && m.mountPath !== c.data_dir) t.true(m.readOnly, `${m.mountPath}: a host path mounted read-only`);
  }
  for (const path of ['/var/log/pods', '/var/log/containers']) {
    const found = mountOf(w, path);
    t.is(found?.volume?.hostPath?.path, path, `${path} from the host`);
    t.true(found?.mount.readOnly, `${path} read-only`);
  }
  const sources = pluginsOf(c, 'plugin_sources');
  t.is(sources.length, 1);
  const source = sources[0]!.config as { include?: string[]; container_format?: string; kubernetes_metadata?: boolean; directory?: string };
  t.deepEqual(source.include, ['/var/log/pods/*/*/*.log']);
  t.is(source.directory, undefined);
  t.is(source.container_format, 'auto');
  t.true(source.kubernetes_metadata);
  for (const glob of source.include ?? []) t.is(mountOf(w, glob)?.mount.mountPath, '/var/log/pods', `${glob} lies in the /var/log/pods mount`);
  const text = configTomlOf(w, objects);
  t.regex(text, /^# \[pipelines\.plugin_sources\.config\.multiline\]\n# preset = "java"/m, 'a multiline preset, left commented');
  t.regex(text, /Multiline entries .* are left off/, 'with a note saying why');
});

test('the edge runs as compose runs it: its workers\' young generation (NODE_OPTIONS) and what each relay link holds', (t) => {
  const w = all.find((x) => x.kind === 'DaemonSet')!;
  const compose = readCompose().services.edge!.environment ?? {};
  t.is(compose.NODE_OPTIONS, '--max-semi-space-size=8', 'compose.yaml: the edge\'s semi-spaces (docs/capacity.md, "The shipped edges\' links")');
  t.is(envOf(w).NODE_OPTIONS, compose.NODE_OPTIONS, 'the DaemonSet gives its container the same');
  const sizes = (c: Config) => pluginsOf(c, 'plugin_sinks').filter((s) => s.type === 'tcp_chain').map((s) => s.config.buffer_size);
  const composeEdge = loadConfig({ file: join(ROOT, 'deploy/edge.toml'), env: { NODE_NAME: 'edge', RELAY_A_PORT: '7000', RELAY_B_PORT: '7000', ADMIN_PORT: '9598' }, flags: new Map() });
  t.deepEqual([...new Set(sizes(configOf(w)))], [5000]);
  t.deepEqual([...new Set(sizes(composeEdge))], [5000]);
});
