// Creates a CA and per-name certificates at test time with deploy/pki.sh (the same script
// compose's `pki` service runs).

import { execFileSync } from 'node:child_process';
import { randomBytes, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './node.js';

export interface Pki {
  readonly dir: string;
  readonly ca: string;
  /** the CA's key, which deploy/pki.sh keeps out of `dir` (in `<dir>-ca`) */
  readonly caKey: string;
  cert(name: string): string;
  key(name: string): string;
}

/** Writes `dir/ca.crt` (the CA key goes to `<dir>-ca/`) and `dir/<name>.crt|.key` for each name (CN and SANs = name, plus localhost, 127.0.0.1). */
export function makePki(dir: string, names: readonly string[]): Pki {
  execFileSync('sh', [join(ROOT, 'deploy', 'pki.sh'), dir, ...names], { stdio: 'ignore' });
  return {
    dir,
    ca: join(dir, 'ca.crt'),
    caKey: join(`${dir.replace(/\/+$/, '')}-ca`, 'ca.key'),
    cert: (name) => join(dir, `${name}.crt`),
    key: (name) => join(dir, `${name}.key`),
  };
}

export interface IssuedCertificate {
  readonly cert: string;
  readonly key: string;
  /** notAfter, epoch seconds */
  readonly notAfter: number;
  /** serial number, upper-case hex as node:crypto prints it */
  readonly serial: string;
}

/**
 * A fresh key and a certificate for `name` signed by the PKI's CA, valid `days` days (as
 * cert-manager issues one on renewal): CN and SANs as deploy/pki.sh gives them, plus `dnsNames`
 * (a Certificate's, wildcards included).
 */
export function issueCertificate(pki: Pki, name: string, days: number, dnsNames: readonly string[] = []): IssuedCertificate {
  const work = mkdtempSync(join(tmpdir(), 'logrelay-issue-'));
  try {
    const ext = join(work, 'ext');
    const extra = dnsNames.filter((d) => d !== name && d !== 'localhost').map((d) => `DNS:${d},`).join('');
    writeFileSync(ext, `subjectAltName=DNS:${name},${extra}DNS:localhost,IP:127.0.0.1,URI:spiffe://logrelay/${name},email:${name}@logrelay.test\nextendedKeyUsage=serverAuth,clientAuth\n`);
    const key = join(work, 'key');
    const csr = join(work, 'csr');
    const crt = join(work, 'crt');
    execFileSync('openssl', ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', `/CN=${name}`, '-keyout', key, '-out', csr], { stdio: 'ignore' });
    const serial = `0x${randomBytes(12).toString('hex')}`;
    execFileSync('openssl', ['x509', '-req', '-in', csr, '-CA', pki.ca, '-CAkey', pki.caKey, '-set_serial', serial, '-days', String(days), '-extfile', ext, '-out', crt], { stdio: 'ignore' });
    const cert = readFileSync(crt, 'utf8');
    const x509 = new X509Certificate(cert);
    return { cert, key: readFileSync(key, 'utf8'), notAfter: Date.parse(x509.validTo) / 1000, serial: x509.serialNumber };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
