// The otlp plugins' config (DESIGN.md §20): defaults, what is required, what may not be combined,
// checked when the plugin is built (checkOnly: nothing binds or connects).

import test from 'ava';
import { createLogger } from '../../src/core/log.js';
import { retryAfterMs } from '../../src/net/batch-poster.js';
import { createOtlpSink, OTLP_SINK } from '../../src/sinks/otlp.js';
import { createOtlpSource } from '../../src/sources/otlp.js';

const log = createLogger('silent', { write: () => undefined });
const sinkCtx = { pipeline: 'app', log, checkOnly: true, node: 'n' };
const sourceCtx = { pipeline: 'app', log, checkOnly: true, emit: () => undefined, idNode: undefined, isSaturated: () => false };
const sink = (config: Record<string, unknown>) => createOtlpSink({ id: 'o', type: 'otlp', config }, sinkCtx);
const source = (config: Record<string, unknown>) => createOtlpSource({ id: 'in', type: 'otlp', config }, sourceCtx);

test('sink: endpoint is required and must be an http(s) URL; TLS needs https', (t) => {
  t.throws(() => sink({}), { message: 'failed to create sink o: endpoint: is required' });
  t.throws(() => sink({ endpoint: 'collector:4318' }), { message: /endpoint: must be an http:\/\/ or https:\/\/ URL/ });
  t.throws(() => sink({ endpoint: 'ftp://collector/v1/logs' }), { message: /endpoint: must be an http:\/\/ or https:\/\/ URL/ });
  t.throws(() => sink({ endpoint: 'http://c:4318/v1/logs', tls: { enabled: true } }), { message: 'failed to create sink o: tls.enabled: needs an https:// endpoint' });
  // one rule: the scheme decides, and an explicit tls.enabled against it is refused
  t.throws(() => sink({ endpoint: 'https://c:4318/v1/logs', tls: { enabled: false } }), {
    message: 'failed to create sink o: tls.enabled: is false, but an https:// endpoint is TLS (the scheme decides: leave tls.enabled out)',
  });
  t.notThrows(() => sink({ endpoint: 'https://c:4318/v1/logs', tls: { enabled: true } }));
  t.regex((OTLP_SINK.fields.tls as { fields: Record<string, { doc?: string }> }).fields.enabled!.doc!, /scheme decides/);
  t.notThrows(() => sink({ endpoint: 'https://c:4318/v1/logs' }));
});

test('sink: settles on the answer, stamps ids, takes its defaults; headers must be strings', (t) => {
  const s = sink({ endpoint: 'http://127.0.0.1:4318/v1/logs' });
  t.true(s.settles);
  t.true(s.carriesIds);
  t.is(s.bufferSize, 1000);
  t.is(s.onFull, 'auto', 'a delivering sink blocks by default, dropping only for a dead link beside a live one');
  t.deepEqual(Object.keys(s.counters).sort(), ['batches_sent', 'connected', 'dropped_batches', 'retries']);
  t.throws(() => sink({ endpoint: 'http://c/v1/logs', encoding: 'thrift' }), { message: /encoding: must be one of "protobuf", "json"/ });
  t.throws(() => sink({ endpoint: 'http://c/v1/logs', compression: 'zstd' }), { message: /compression: must be one of "gzip", "none"/ });
  t.throws(() => sink({ endpoint: 'http://c/v1/logs', headers: { 'X-N': 1 } }), { message: 'failed to create sink o: headers.X-N: must be a string, got number' });
  t.throws(() => sink({ endpoint: 'http://c/v1/logs', headers: { 'bad name': 'x' } }), { message: /headers.bad name: is not a valid header name/ });
  t.throws(() => sink({ endpoint: 'http://c/v1/logs', backoff_min_ms: 500, backoff_max_ms: 100 }), { message: /backoff_max_ms: must be >= backoff_min_ms \(500\), got 100/ });
  t.throws(() => sink({ endpoint: 'http://c/v1/logs', max_in_flight: 0 }), { message: /max_in_flight: must be 1 to 64, got 0/ });
});

test('Retry-After as seconds or an HTTP date', (t) => {
  t.is(retryAfterMs('1'), 1000);
  t.is(retryAfterMs('0.5'), 500);
  t.is(retryAfterMs(new Date(Date.UTC(2030, 0, 1, 0, 0, 10)).toUTCString(), Date.UTC(2030, 0, 1)), 10_000);
  t.is(retryAfterMs('soon'), undefined);
  t.is(retryAfterMs(undefined), undefined);
});

test('source: port required, auth needs TLS with client certificates, defaults as §20', (t) => {
  t.throws(() => source({}), { message: 'failed to create source in: port: is required' });
  t.throws(() => source({ port: 4318, auth: { allow: ['a'] } }), { message: 'failed to create source in: auth: requires tls.enabled = true' });
  t.throws(() => source({ port: 4318, max_line_bytes: 10 }), { message: /max_line_bytes: must be >= 64/ });
  const s = source({ port: 4318 });
  t.true(s.pausable);
  t.true(s.acksUpstream);
  t.deepEqual(Object.keys(s.counters).sort(), ['active_connections', 'auth_rejected', 'dropped_entries', 'parse_errors', 'rejected_conns', 'rejected_requests', 'tls_handshake_errors', 'total_entries', 'total_requests']);
});
