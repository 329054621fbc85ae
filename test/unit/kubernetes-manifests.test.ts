// deploy/kubernetes (issue 29, point 1): every object `kubectl apply -k` would send validates
// against the Kubernetes schemas (kubernetes-models), survives a round trip through
// @kubernetes/client-node's serializer with no field lost (a field it does not know is dropped),
// and the cert-manager objects pass their own checker.

import { readdirSync } from 'node:fs';
import { ObjectSerializer } from '@kubernetes/client-node/dist/serializer.js';
import test from 'ava';
import { DaemonSet, StatefulSet } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Namespace, Service } from 'kubernetes-models/v1';
import { checkCertManager, goDurationHours } from '../helpers/cert-manager.js';
import { buildKustomization, type K8sObject, KUSTOMIZE_DIR } from '../helpers/kubernetes.js';

interface Model {
  validate(): void;
}
type ModelClass = new (data: never) => Model;

/** apiVersion/kind → its kubernetes-models class and client-node model name. */
const MODELS: Record<string, { model: ModelClass; serializer: string }> = {
  'v1/Namespace': { model: Namespace as unknown as ModelClass, serializer: 'V1Namespace' },
  'v1/Service': { model: Service as unknown as ModelClass, serializer: 'V1Service' },
  'v1/ConfigMap': { model: ConfigMap as unknown as ModelClass, serializer: 'V1ConfigMap' },
  'apps/v1/DaemonSet': { model: DaemonSet as unknown as ModelClass, serializer: 'V1DaemonSet' },
  'apps/v1/StatefulSet': { model: StatefulSet as unknown as ModelClass, serializer: 'V1StatefulSet' },
  'policy/v1/PodDisruptionBudget': { model: PodDisruptionBudget as unknown as ModelClass, serializer: 'V1PodDisruptionBudget' },
};

const built = buildKustomization();
const isCertManager = (o: K8sObject) => o.apiVersion.startsWith('cert-manager.io/');
const kubeObjects = built.objects.filter((o) => !isCertManager(o));
const modelOf = (o: K8sObject) => MODELS[`${o.apiVersion}/${o.kind}`];

/** The object after client-node read it into its typed model and wrote it back. */
const roundTrip = (o: K8sObject, type: string): unknown =>
  JSON.parse(JSON.stringify(ObjectSerializer.serialize(ObjectSerializer.deserialize(structuredClone(o), type), type)));

test('every file in deploy/kubernetes is part of the kustomization', (t) => {
  t.deepEqual(readdirSync(KUSTOMIZE_DIR).sort(), [...new Set(built.files)].sort());
});

test('the objects are the fleet of DESIGN.md §22', (t) => {
  const kinds = built.objects.map((o) => `${o.kind}/${o.metadata.name}`).sort();
  t.deepEqual(kinds, [
    'Certificate/logrelay-ca',
    'Certificate/logrelay-collector',
    'Certificate/logrelay-edge',
    'Certificate/logrelay-relay-0',
    'Certificate/logrelay-relay-1',
    'ConfigMap/logrelay-collector',
    'ConfigMap/logrelay-edge',
    'ConfigMap/logrelay-relay',
    'DaemonSet/logrelay-edge',
    'Issuer/logrelay-ca',
    'Issuer/logrelay-selfsigned',
    'Namespace/logrelay',
    'PodDisruptionBudget/collector',
    'PodDisruptionBudget/relay',
    'Service/collector',
    'Service/relay',
    'StatefulSet/collector',
    'StatefulSet/relay',
  ]);
  for (const o of built.objects) if (o.kind !== 'Namespace') t.is(o.metadata.namespace, 'logrelay', `${o.kind}/${o.metadata.name} in namespace logrelay`);
});

test('every Kubernetes object validates against its schema (kubernetes-models)', (t) => {
  for (const o of kubeObjects) {
    const m = modelOf(o);
    if (!m) {
      t.fail(`${o.apiVersion} ${o.kind} has no model here`);
      continue;
    }
    t.notThrows(() => new m.model(structuredClone(o) as never).validate(), `${o.kind}/${o.metadata.name}`);
  }
  // the check can fail: a container without a name, a port that is not a number
  const ds = structuredClone(kubeObjects.find((o) => o.kind === 'DaemonSet')!) as K8sObject & { spec: { template: { spec: { containers: Record<string, unknown>[] } } } };
  const c = ds.spec.template.spec.containers[0]!;
  delete c.name;
  c.ports = [{ containerPort: 'admin' }];
  const err = t.throws(() => new DaemonSet(ds as never).validate());
  t.regex(err?.message ?? '', /required property name/);
  t.regex(err?.message ?? '', /containerPort must be integer/);
});

test('every Kubernetes object survives a round trip through @kubernetes/client-node with no unknown field', (t) => {
  for (const o of kubeObjects) {
    const m = modelOf(o);
    if (!m) continue; // failed above
    t.deepEqual(roundTrip(o, m.serializer), JSON.parse(JSON.stringify(o)), `${o.kind}/${o.metadata.name}`);
  }
  // the check can fail: a misspelt field is dropped by the serializer
  const sts = structuredClone(kubeObjects.find((o) => o.kind === 'StatefulSet')!) as K8sObject & { spec: Record<string, unknown> };
  sts.spec.replica = 3;
  t.notDeepEqual(roundTrip(sts, 'V1StatefulSet'), JSON.parse(JSON.stringify(sts)));
});

test('cert-manager objects have their required fields, known fields only, and refer to each other', (t) => {
  const cm = built.objects.filter(isCertManager);
  t.deepEqual(checkCertManager(cm), []);
  const issuers = cm.filter((o) => o.kind === 'Issuer');
  const certs = cm.filter((o) => o.kind === 'Certificate') as (K8sObject & {
    spec: { secretName: string; isCA?: boolean; issuerRef: { name: string; kind?: string }; usages?: string[]; duration?: string; renewBefore?: string };
  })[];
  for (const c of certs) {
    t.truthy(
      issuers.find((i) => i.metadata.name === c.spec.issuerRef.name && (c.spec.issuerRef.kind ?? 'Issuer') === 'Issuer'),
      `${c.metadata.name}: its issuer ${c.spec.issuerRef.name} is in the manifests`,
    );
  }
  // the CA Issuer signs with the Secret of a CA certificate issued by the self-signed Issuer
  const caIssuer = issuers.find((i) => (i.spec as { ca?: unknown }).ca) as (K8sObject & { spec: { ca: { secretName: string } } }) | undefined;
  t.truthy(caIssuer, 'an Issuer with a CA');
  const caCert = certs.find((c) => c.spec.secretName === caIssuer?.spec.ca.secretName);
  t.true(caCert?.spec.isCA, 'the CA Issuer reads the Secret of an isCA Certificate');
  t.true(issuers.some((i) => i.metadata.name === caCert?.spec.issuerRef.name && 'selfSigned' in (i.spec as object)), 'the CA is self-signed');
  // one certificate for the edges, one per relay pod, one for the collector; all from the CA
  // Issuer, renewed well before they expire
  for (const name of ['edge', 'relay-0', 'relay-1', 'collector']) {
    const c = certs.find((x) => x.metadata.name === `logrelay-${name}`);
    t.is(c?.spec.issuerRef.name, caIssuer?.metadata.name, `${name}: issued by the CA`);
    t.true((goDurationHours(c?.spec.renewBefore ?? '') ?? 0) >= 14 * 24, `${name}: renewed before expiry_warning_days (14) warns`);
  }
  // the checker can fail
  const bad = structuredClone(certs.find((c) => c.metadata.name === 'logrelay-edge')!) as K8sObject & { spec: Record<string, unknown> };
  delete bad.spec.secretName;
  bad.spec.duration = '90d';
  bad.spec.privateKey = { algorithm: 'ECDSA', size: 2048 };
  bad.spec.dnsName = ['edge'];
  t.deepEqual(checkCertManager([bad]), [
    'Certificate/logrelay-edge: spec.dnsName: unknown field',
    'Certificate/logrelay-edge: spec.secretName: required',
    'Certificate/logrelay-edge: spec.duration: 90d is not a duration',
    'Certificate/logrelay-edge: spec.privateKey.size: ECDSA takes 256, 384 or 521',
  ]);
});
