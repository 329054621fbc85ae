// Test helpers for deploy/kubernetes (DESIGN.md §22): the objects `kubectl apply -k` would send,
// built from kustomization.yaml the way kustomize builds them (only the features the file uses;
// any other key is refused, so this reader cannot silently differ from kustomize), and views of
// the workloads: their containers, volumes, environment and the node configuration they mount.

import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { ROOT } from './node.js';

export const KUSTOMIZE_DIR = join(ROOT, 'deploy', 'kubernetes');

/** A manifest object, loosely typed for assertions. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
}

export interface Built {
  readonly objects: K8sObject[];
  /** every file of the directory the build read (kustomization.yaml included), by base name */
  readonly files: string[];
}

const KNOWN_KEYS = new Set(['apiVersion', 'kind', 'namespace', 'resources', 'generatorOptions', 'configMapGenerator']);
const CLUSTER_SCOPED = new Set(['Namespace']);

interface Kustomization {
  apiVersion: string;
  kind: string;
  namespace?: string;
  resources?: string[];
  generatorOptions?: { disableNameSuffixHash?: boolean };
  configMapGenerator?: { name: string; files: string[] }[];
}

/** Builds the kustomization in `dir` (see the module comment). */
export function buildKustomization(dir = KUSTOMIZE_DIR): Built {
  const files = ['kustomization.yaml'];
  const k = parseYaml(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as Kustomization;
  for (const key of Object.keys(k)) if (!KNOWN_KEYS.has(key)) throw new Error(`kustomization.yaml: ${key} is not built by this reader`);
  if (k.apiVersion !== 'kustomize.config.k8s.io/v1beta1' || k.kind !== 'Kustomization') throw new Error('kustomization.yaml: not a Kustomization');
  for (const key of Object.keys(k.generatorOptions ?? {})) if (key !== 'disableNameSuffixHash') throw new Error(`generatorOptions.${key} is not built by this reader`);
  if (k.configMapGenerator?.length && k.generatorOptions?.disableNameSuffixHash !== true) throw new Error('hashed ConfigMap names are not built by this reader');
  const objects: K8sObject[] = [];
  for (const resource of k.resources ?? []) {
    files.push(resource);
    for (const doc of parseAllDocuments(readFileSync(join(dir, resource), 'utf8'))) {
      if (doc.errors.length > 0) throw new Error(`${resource}: ${doc.errors[0]!.message}`);
      const value = doc.toJS() as K8sObject | null;
      if (value !== null) objects.push(value);
    }
  }
  for (const gen of k.configMapGenerator ?? []) {
    for (const key of Object.keys(gen)) if (key !== 'name' && key !== 'files') throw new Error(`configMapGenerator.${key} is not built by this reader`);
    const data: Record<string, string> = {};
    for (const spec of gen.files) {
      const [key, file] = spec.includes('=') ? (spec.split('=', 2) as [string, string]) : [basename(spec), spec];
      files.push(file);
      data[key] = readFileSync(join(dir, file), 'utf8');
    }
    objects.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: gen.name }, data });
  }
  if (k.namespace) {
    for (const o of objects) {
      if (CLUSTER_SCOPED.has(o.kind)) continue;
      if (o.metadata.namespace !== undefined && o.metadata.namespace !== k.namespace) throw new Error(`${o.kind}/${o.metadata.name}: namespace ${o.metadata.namespace}, not ${k.namespace}`);
      o.metadata.namespace = k.namespace;
    }
  }
  return { objects, files };
}

// ── Workload views ──────────────────────────────────────────────────────────────────────────────

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string } };
}

export interface ContainerPort {
  name?: string;
  containerPort: number;
}

export interface Probe {
  httpGet?: { path: string; port: number | string };
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  subPath?: string;
  subPathExpr?: string;
}

export interface Container {
  name: string;
  image: string;
  args?: string[];
  env?: EnvVar[];
  ports?: ContainerPort[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    privileged?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
  };
  volumeMounts?: VolumeMount[];
}

/** A Secret's key placed at a path of its volume (`items` of a Secret or projected source). */
export interface KeyToPath {
  key: string;
  path: string;
}

export interface Volume {
  name: string;
  configMap?: { name: string };
  secret?: { secretName: string; defaultMode?: number; items?: KeyToPath[] };
  projected?: { defaultMode?: number; sources: { secret?: { name: string; items?: KeyToPath[] }; configMap?: { name: string; items?: KeyToPath[] } }[] };
  hostPath?: { path: string; type?: string };
  emptyDir?: unknown;
}

export interface PodSpec {
  automountServiceAccountToken?: boolean;
  enableServiceLinks?: boolean;
  terminationGracePeriodSeconds?: number;
  tolerations?: { operator?: string; key?: string }[];
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  containers: Container[];
  volumes?: Volume[];
}

export interface Workload {
  readonly object: K8sObject;
  readonly kind: 'DaemonSet' | 'StatefulSet';
  readonly name: string;
  readonly selector: Record<string, string>;
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
  readonly pod: PodSpec;
  readonly container: Container;
  /** StatefulSet: its governing Service and replicas */
  readonly serviceName?: string;
  readonly replicas: number;
  /** StatefulSet: the names of its volumeClaimTemplates */
  readonly claims: string[];
}

/** The DaemonSets and StatefulSets, each with its (single) container. */
export function workloads(objects: readonly K8sObject[]): Workload[] {
  return objects
    .filter((o) => o.kind === 'DaemonSet' || o.kind === 'StatefulSet')
    .map((o) => {
      const spec = o.spec as {
        selector: { matchLabels: Record<string, string> };
        template: { metadata: { labels: Record<string, string>; annotations?: Record<string, string> }; spec: PodSpec };
        serviceName?: string;
        replicas?: number;
        volumeClaimTemplates?: { metadata: { name: string } }[];
      };
      if (spec.template.spec.containers.length !== 1) throw new Error(`${o.kind}/${o.metadata.name}: one container expected`);
      return {
        object: o,
        kind: o.kind as Workload['kind'],
        name: o.metadata.name,
        selector: spec.selector.matchLabels,
        labels: spec.template.metadata.labels,
        annotations: spec.template.metadata.annotations ?? {},
        pod: spec.template.spec,
        container: spec.template.spec.containers[0]!,
        serviceName: spec.serviceName,
        replicas: spec.replicas ?? 1,
        claims: (spec.volumeClaimTemplates ?? []).map((c) => c.metadata.name),
      };
    });
}

/** Stand-ins for the downward API fields a pod's environment reads. */
export const DOWNWARD_VALUES: Readonly<Record<string, string>> = {
  'spec.nodeName': 'node-a',
  'status.podIP': '10.244.1.7',
};

/** The names of the workload's pods: a StatefulSet's `<name>-<ordinal>`; a DaemonSet's one stand-in. */
export function podNamesOf(w: Workload): string[] {
  if (w.kind === 'StatefulSet') return Array.from({ length: w.replicas }, (_, i) => `${w.name}-${i}`);
  return [`${w.name}-x7k2p`];
}

/**
 * The container's environment as the pod would get it: literal values, and downward API fields
 * filled from `downward` (metadata.name is `pod`, by default the workload's first pod name).
 */
export function envOf(w: Workload, downward: Readonly<Record<string, string>> = DOWNWARD_VALUES, pod = podNamesOf(w)[0]!): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of w.container.env ?? []) {
    if (e.value !== undefined) out[e.name] = e.value;
    else if (e.valueFrom?.fieldRef) {
      const path = e.valueFrom.fieldRef.fieldPath;
      const v = path === 'metadata.name' ? pod : downward[path];
      if (v === undefined) throw new Error(`${w.name}: env ${e.name} reads ${path}, which has no stand-in`);
      out[e.name] = v;
    } else {
      throw new Error(`${w.name}: env ${e.name} has neither value nor fieldRef`);
    }
  }
  return out;
}

/** The container port a probe or Service targets (a number, or a port name). */
export function resolvePort(c: Container, port: number | string): number | undefined {
  if (typeof port === 'number') return port;
  return c.ports?.find((p) => p.name === port)?.containerPort;
}

/** The path after `-c` in the container's args. */
export function configPathOf(w: Workload): string {
  const args = w.container.args ?? [];
  const i = args.indexOf('-c');
  if (i < 0 || !args[i + 1]) throw new Error(`${w.name}: no -c FILE in args`);
  return args[i + 1]!;
}

/** The mount (and its volume) that holds `path`: the longest mountPath it lies under. */
export function mountOf(w: Workload, path: string): { mount: VolumeMount; volume: Volume | undefined } | undefined {
  const mounts = (w.container.volumeMounts ?? []).filter((m) => path === m.mountPath || path.startsWith(`${m.mountPath}/`));
  mounts.sort((a, b) => b.mountPath.length - a.mountPath.length);
  const mount = mounts[0];
  if (!mount) return undefined;
  return { mount, volume: w.pod.volumes?.find((v) => v.name === mount.name) };
}

/**
 * The Secret key a file of the container comes from: through a Secret volume (its `items`, or the
 * key of the same name) or a projected volume's Secret source; undefined when the file lies on
 * no Secret (or on a projected path no source provides).
 */
export function secretFileOf(w: Workload, path: string): { secretName: string; key: string; mount: VolumeMount; volume: Volume } | undefined {
  const found = mountOf(w, path);
  const volume = found?.volume;
  if (!found || !volume) return undefined;
  const rel = path.slice(found.mount.mountPath.length + 1);
  if (volume.secret) {
    const items = volume.secret.items;
    const key = items ? items.find((i) => i.path === rel)?.key : rel;
    return key === undefined ? undefined : { secretName: volume.secret.secretName, key, mount: found.mount, volume };
  }
  for (const source of volume.projected?.sources ?? []) {
    if (!source.secret) continue;
    const items = source.secret.items;
    const key = items ? items.find((i) => i.path === rel)?.key : rel;
    if (key !== undefined) return { secretName: source.secret.name, key, mount: found.mount, volume };
  }
  return undefined;
}

/** The TOML a workload runs: the ConfigMap key its `-c` path names, through the ConfigMap volume. */
export function configTomlOf(w: Workload, objects: readonly K8sObject[]): string {
  const path = configPathOf(w);
  const found = mountOf(w, path);
  const cmName = found?.volume?.configMap?.name;
  if (!found || !cmName) throw new Error(`${w.name}: ${path} is not on a ConfigMap volume`);
  const cm = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === cmName) as (K8sObject & { data?: Record<string, string> }) | undefined;
  const key = path.slice(found.mount.mountPath.length + 1);
  const toml = cm?.data?.[key];
  if (toml === undefined) throw new Error(`${w.name}: ConfigMap ${cmName} has no key ${key}`);
  return toml;
}

/**
 * The TOML with every mount path of the workload moved under `root` (`/etc/logrelay/tls/…` →
 * `<root>/etc/logrelay/tls/…`), longest first, so the node runs here on what the volumes hold.
 */
export function rerooted(w: Workload, text: string, root: string): string {
  const mounts = [...(w.container.volumeMounts ?? [])].sort((a, b) => b.mountPath.length - a.mountPath.length);
  let out = text;
  for (const m of mounts) out = out.split(`"${m.mountPath}`).join(`"${root}${m.mountPath}`);
  return out;
}

/** Does `host` match a certificate DNS name (a `*.` wildcard stands for one label)? */
export function dnsMatches(name: string, host: string): boolean {
  if (!name.startsWith('*.')) return name === host;
  const dot = host.indexOf('.');
  return dot > 0 && host.slice(dot + 1) === name.slice(2);
}
