// The keys the HTTP plugins share through net/http-ingest.ts and net/batch-poster.ts, on both
// of each kind (checkOnly: nothing binds or connects): `max_connections` on the http_chain and
// otlp sources, `max_in_flight` on the http_chain and otlp sinks, each with its default; the
// http_chain sink's `protocol_version`.

import test from 'ava';
import { createLogger } from '../../src/core/log.js';
import { createHttpChainSink, HTTP_CHAIN_SINK } from '../../src/sinks/http-chain.js';
import { createOtlpSink, OTLP_SINK } from '../../src/sinks/otlp.js';
import { createHttpChainSource, HTTP_CHAIN_SOURCE } from '../../src/sources/http-chain.js';
import { createOtlpSource, OTLP_SOURCE } from '../../src/sources/otlp.js';

const log = createLogger('silent', { write: () => undefined });
const sinkCtx = { pipeline: 'app', log, checkOnly: true, node: 'n' };
const sourceCtx = { pipeline: 'app', log, checkOnly: true, emit: () => undefined, idNode: undefined, isSaturated: () => false };

const defaultOf = (fields: Record<string, unknown>, key: string) => (fields[key] as { def?: unknown } | undefined)?.def;

test('both HTTP sources take max_connections (default 0 = unlimited) and refuse a negative one naming the key', (t) => {
  t.is(defaultOf(HTTP_CHAIN_SOURCE.fields, 'max_connections'), 0);
  t.is(defaultOf(OTLP_SOURCE.fields, 'max_connections'), 0);
  t.notThrows(() => createHttpChainSource({ id: 'in', type: 'http_chain', config: { port: 1, max_connections: 2 } }, sourceCtx));
  t.throws(() => createHttpChainSource({ id: 'in', type: 'http_chain', config: { port: 1, max_connections: -1 } }, sourceCtx), { message: /max_connections/ });
  t.throws(() => createOtlpSource({ id: 'in', type: 'otlp', config: { port: 1, max_connections: -1 } }, sourceCtx), { message: /max_connections/ });
});

test('both delivering HTTP sinks take max_in_flight (default 4, 1 to 64) naming the key when refused', (t) => {
  t.is(defaultOf(HTTP_CHAIN_SINK.fields, 'max_in_flight'), 4);
  t.is(defaultOf(OTLP_SINK.fields, 'max_in_flight'), 4);
  t.notThrows(() => createHttpChainSink({ id: 'o', type: 'http_chain', config: { host: '127.0.0.1', port: 1, max_in_flight: 1 } }, sinkCtx));
  t.throws(() => createHttpChainSink({ id: 'o', type: 'http_chain', config: { host: '127.0.0.1', port: 1, max_in_flight: 0 } }, sinkCtx), { message: /max_in_flight: must be 1 to 64, got 0/ });
  t.throws(() => createOtlpSink({ id: 'o', type: 'otlp', config: { endpoint: 'http://c/v1/logs', max_in_flight: 65 } }, sinkCtx), { message: /max_in_flight: must be 1 to 64, got 65/ });
});

test('the http_chain sink takes protocol_version (default 2, as tcp_chain) and refuses another naming the key', (t) => {
  t.is(defaultOf(HTTP_CHAIN_SINK.fields, 'protocol_version'), 2);
  t.notThrows(() => createHttpChainSink({ id: 'o', type: 'http_chain', config: { host: '127.0.0.1', port: 1, protocol_version: 1 } }, sinkCtx));
  t.throws(() => createHttpChainSink({ id: 'o', type: 'http_chain', config: { host: '127.0.0.1', port: 1, protocol_version: 3 } }, sinkCtx), { message: /protocol_version/ });
  // a sink starts in version 1 and switches only when its source said it reads version 2
  t.is(createHttpChainSink({ id: 'o', type: 'http_chain', config: { host: '127.0.0.1', port: 1 } }, sinkCtx).wireVersion?.(), 1);
});
