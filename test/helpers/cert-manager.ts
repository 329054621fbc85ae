// A checker for cert-manager.io/v1 Issuer and Certificate objects: no schema package exists for
// them, so this holds the fields of the v1 API and the rules its admission webhook applies
// (required fields, enums, durations, key sizes), and refuses every field it does not know.

import type { K8sObject } from './kubernetes.js';

type Shape = { readonly [field: string]: Shape | 'string' | 'boolean' | 'number' | 'strings' | 'any' };

const ISSUER_REF: Shape = { name: 'string', kind: 'string', group: 'string' };

const ISSUER_SPEC: Shape = {
  selfSigned: { crlDistributionPoints: 'strings' },
  ca: { secretName: 'string', crlDistributionPoints: 'strings', ocspServers: 'strings', issuingCertificateURLs: 'strings' },
  acme: 'any',
  vault: 'any',
  venafi: 'any',
};

const CERTIFICATE_SPEC: Shape = {
  subject: 'any',
  literalSubject: 'string',
  commonName: 'string',
  duration: 'string',
  renewBefore: 'string',
  renewBeforePercentage: 'number',
  dnsNames: 'strings',
  ipAddresses: 'strings',
  uris: 'strings',
  emailAddresses: 'strings',
  otherNames: 'any',
  secretName: 'string',
  secretTemplate: 'any',
  keystores: 'any',
  issuerRef: ISSUER_REF,
  isCA: 'boolean',
  usages: 'strings',
  privateKey: { rotationPolicy: 'string', encoding: 'string', algorithm: 'string', size: 'number' },
  signatureAlgorithm: 'string',
  encodeUsagesInRequest: 'boolean',
  revisionHistoryLimit: 'number',
  additionalOutputFormats: 'any',
  nameConstraints: 'any',
};

const USAGES = new Set([
  'signing', 'digital signature', 'content commitment', 'key encipherment', 'key agreement', 'data encipherment', 'cert sign',
  'crl sign', 'encipher only', 'decipher only', 'any', 'server auth', 'client auth', 'code signing', 'email protection', 's/mime',
  'ipsec end system', 'ipsec tunnel', 'ipsec user', 'timestamping', 'ocsp signing', 'microsoft sgc', 'netscape sgc',
]);

const UNIT_NS: Record<string, number> = { ns: 1, us: 1e3, µs: 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };

/** A Go duration string (`2160h`, `1h30m`) in hours; undefined when it does not parse. */
export function goDurationHours(text: string): number | undefined {
  if (!/^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/.test(text)) return undefined;
  let ns = 0;
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) ns += Number(m[1]) * UNIT_NS[m[2]!]!;
  return ns / 3600e9;
}

function checkShape(value: unknown, shape: Shape | 'string' | 'boolean' | 'number' | 'strings' | 'any', path: string, errors: string[]): void {
  if (shape === 'any') return;
  if (shape === 'strings') {
    if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) errors.push(`${path}: must be a list of strings`);
    return;
  }
  if (typeof shape === 'string') {
    if (typeof value !== shape) errors.push(`${path}: must be a ${shape}`);
    return;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    errors.push(`${path}: must be an object`);
    return;
  }
  for (const [k, v] of Object.entries(value)) {
    const sub = shape[k];
    if (sub === undefined) errors.push(`${path}.${k}: unknown field`);
    else checkShape(v, sub, `${path}.${k}`, errors);
  }
}

/** Every fault of the cert-manager objects among `objects`, as `<Kind>/<name>: <path>: <reason>`; empty when all are valid. */
export function checkCertManager(objects: readonly K8sObject[]): string[] {
  const errors: string[] = [];
  for (const o of objects.filter((x) => x.apiVersion.startsWith('cert-manager.io/'))) {
    const where = `${o.kind}/${o.metadata?.name}`;
    const own: string[] = [];
    if (o.apiVersion !== 'cert-manager.io/v1') own.push(`apiVersion: ${o.apiVersion} is not served (cert-manager.io/v1)`);
    if (typeof o.metadata?.name !== 'string' || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(o.metadata.name)) own.push('metadata.name: not a DNS subdomain');
    for (const k of Object.keys(o)) if (!['apiVersion', 'kind', 'metadata', 'spec'].includes(k)) own.push(`${k}: unknown field`);
    const spec = o.spec as Record<string, unknown> | undefined;
    if (o.kind === 'Issuer' || o.kind === 'ClusterIssuer') {
      checkShape(spec, ISSUER_SPEC, 'spec', own);
      const types = Object.keys(spec ?? {}).filter((k) => k in ISSUER_SPEC);
      if (types.length !== 1) own.push(`spec: exactly one issuer type expected, got ${types.join(', ') || 'none'}`);
      const ca = spec?.ca as { secretName?: unknown } | undefined;
      if (ca && typeof ca.secretName !== 'string') own.push('spec.ca.secretName: required');
    } else if (o.kind === 'Certificate') {
      checkShape(spec, CERTIFICATE_SPEC, 'spec', own);
      const s = (spec ?? {}) as {
        secretName?: string;
        issuerRef?: { name?: string; kind?: string; group?: string };
        commonName?: string;
        dnsNames?: string[];
        ipAddresses?: string[];
        uris?: string[];
        emailAddresses?: string[];
        otherNames?: unknown[];
        literalSubject?: string;
        duration?: string;
        renewBefore?: string;
        usages?: string[];
        privateKey?: { algorithm?: string; size?: number; rotationPolicy?: string; encoding?: string };
      };
      if (!s.secretName) own.push('spec.secretName: required');
      if (!s.issuerRef?.name) own.push('spec.issuerRef.name: required');
      if (s.issuerRef?.kind !== undefined && !['Issuer', 'ClusterIssuer'].includes(s.issuerRef.kind) && s.issuerRef.group === 'cert-manager.io') {
        own.push(`spec.issuerRef.kind: ${s.issuerRef.kind} is not a cert-manager issuer kind`);
      }
      const names = [s.dnsNames, s.ipAddresses, s.uris, s.emailAddresses, s.otherNames].some((l) => (l?.length ?? 0) > 0);
      if (!s.commonName && !s.literalSubject && !names) own.push('spec: at least one of commonName, dnsNames, uris, emailAddresses, ipAddresses or otherNames must be set');
      if (s.commonName !== undefined && s.commonName.length > 64) own.push('spec.commonName: longer than 64 characters');
      const duration = s.duration === undefined ? 2160 : goDurationHours(s.duration);
      const renew = s.renewBefore === undefined ? undefined : goDurationHours(s.renewBefore);
      if (duration === undefined) own.push(`spec.duration: ${s.duration} is not a duration`);
      else if (duration < 1) own.push('spec.duration: must be at least 1h');
      if (s.renewBefore !== undefined && renew === undefined) own.push(`spec.renewBefore: ${s.renewBefore} is not a duration`);
      if (renew !== undefined && duration !== undefined && renew >= duration) own.push('spec.renewBefore: must be less than spec.duration');
      for (const u of s.usages ?? []) if (!USAGES.has(u)) own.push(`spec.usages: unknown usage ${JSON.stringify(u)}`);
      const pk = s.privateKey;
      if (pk) {
        const alg = pk.algorithm ?? 'RSA';
        if (!['RSA', 'ECDSA', 'Ed25519'].includes(alg)) own.push(`spec.privateKey.algorithm: ${alg} is not RSA, ECDSA or Ed25519`);
        if (alg === 'ECDSA' && pk.size !== undefined && ![256, 384, 521].includes(pk.size)) own.push(`spec.privateKey.size: ECDSA takes 256, 384 or 521`);
        if (alg === 'RSA' && pk.size !== undefined && (pk.size < 2048 || pk.size > 8192)) own.push('spec.privateKey.size: RSA takes 2048 to 8192');
        if (pk.rotationPolicy !== undefined && !['Never', 'Always'].includes(pk.rotationPolicy)) own.push('spec.privateKey.rotationPolicy: Never or Always');
        if (pk.encoding !== undefined && !['PKCS1', 'PKCS8'].includes(pk.encoding)) own.push('spec.privateKey.encoding: PKCS1 or PKCS8');
      }
    } else {
      own.push(`kind: ${o.kind} is not checked here`);
    }
    for (const e of own) errors.push(`${where}: ${e}`);
  }
  return errors;
}
