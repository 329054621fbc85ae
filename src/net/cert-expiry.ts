// Certificate expiry (DESIGN.md §16): every certificate a plugin reads is noted here when the
// plugin is built; the worker logs the ones close to or past their notAfter at build and every
// 24 hours, and ships each plugin's earliest notAfter with its stats for the expiry metric.

import { X509Certificate } from 'node:crypto';
import type { Logger } from '../core/log.js';

/** How often certificates are checked again after the build, ms. */
export const CERT_CHECK_INTERVAL_MS = 24 * 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

interface NotedCertificate {
  readonly file: string;
  /** epoch ms */
  readonly notAfter: number;
}

interface PluginCertificates {
  readonly warnMs: number;
  readonly certs: NotedCertificate[];
}

/** By plugin id; one worker process builds one pipeline, so the id is enough. */
const noted = new Map<string, PluginCertificates>();

/** The notAfter (epoch ms) of every certificate in a PEM bundle; a block that does not parse is skipped. */
export function pemNotAfter(pem: Buffer | string): number[] {
  const text = typeof pem === 'string' ? pem : pem.toString('utf8');
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  const out: number[] = [];
  for (const block of blocks) {
    try {
      const at = Date.parse(new X509Certificate(block).validTo);
      if (Number.isFinite(at)) out.push(at);
    } catch {
      // not a certificate TLS would use either; the handshake reports it
    }
  }
  return out;
}

/** Notes the certificates of a PEM file a plugin read (cert_file, ca_file, client_ca_file). */
export function noteCertificates(pluginId: string, warnMs: number, file: string, pem: Buffer): void {
  let entry = noted.get(pluginId);
  if (!entry) {
    entry = { warnMs, certs: [] };
    noted.set(pluginId, entry);
  }
  for (const notAfter of pemNotAfter(pem)) entry.certs.push({ file, notAfter });
}

/** Per plugin id, the earliest notAfter among its certificates, in epoch seconds. */
export function certificateExpiry(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [id, { certs }] of noted) {
    if (certs.length > 0) out[id] = Math.min(...certs.map((c) => c.notAfter)) / 1000;
  }
  return out;
}

/** Logs WARN `Certificate expires soon` / ERROR `Certificate expired` for what `noted` holds. */
export function checkCertificates(log: Logger, pipeline: string, now = Date.now()): void {
  for (const [plugin, { warnMs, certs }] of noted) {
    for (const { file, notAfter } of certs) {
      const fields = { pipeline, plugin, file, not_after: new Date(notAfter).toISOString() };
      if (notAfter <= now) log.error(fields, 'Certificate expired');
      else if (notAfter - now <= warnMs) log.warn({ ...fields, days_left: Math.ceil((notAfter - now) / DAY_MS) }, 'Certificate expires soon');
    }
  }
}

/** Checks now and every 24 hours; returns the stop. */
export function watchCertificates(log: Logger, pipeline: string): () => void {
  checkCertificates(log, pipeline);
  const timer = setInterval(() => checkCertificates(log, pipeline), CERT_CHECK_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
