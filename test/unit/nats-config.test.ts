// The nats plugins' config (DESIGN.md §19): what is required, what may not be combined, and the
// defaults, checked when the plugin is built (no connection is made: checkOnly).

import test from 'ava';
import { createLogger } from '../../src/core/log.js';
import { createNatsSink } from '../../src/sinks/nats.js';
import { createNatsSource } from '../../src/sources/nats.js';

const log = createLogger('silent', { write: () => undefined });
const sinkCtx = { pipeline: 'app', log, checkOnly: true, node: 'n' };
const sourceCtx = { pipeline: 'app', log, checkOnly: true, emit: () => undefined, idNode: undefined, isSaturated: () => false };
const sink = (config: Record<string, unknown>) => createNatsSink({ id: 'js', type: 'nats', config }, sinkCtx);
const source = (config: Record<string, unknown>) => createNatsSource({ id: 'in', type: 'nats', config }, sourceCtx);
const servers = ['nats://127.0.0.1:4222'];

test('sink: servers are required and must be nats:// URLs', (t) => {
  t.throws(() => sink({}), { message: 'failed to create sink js: servers: is required (a list of nats://host:port)' });
  t.throws(() => sink({ servers: ['http://x:1'] }), { message: 'failed to create sink js: servers[0]: must be nats://host:port, got "http://x:1"' });
  t.throws(() => sink({ servers: ['nonsense'] }), { message: /servers\[0\]: must be nats:\/\/host:port/ });
});

test('sink: settles on the publish ack, stamps ids, and takes its defaults', (t) => {
  const s = sink({ servers });
  t.true(s.settles);
  t.true(s.carriesIds);
  t.is(s.bufferSize, 1000);
  t.is(s.onFull, 'auto', 'a delivering sink blocks by default, dropping only for a dead link beside a live one');
  t.deepEqual(Object.keys(s.counters).sort(), ['connected', 'published', 'reconnects', 'retried', 'retries', 'unacked']);
  t.throws(() => sink({ servers, max_pending: 0 }), { message: 'failed to create sink js: max_pending: must be >= 1, got 0' });
  t.throws(() => sink({ servers, backoff_min_ms: 500, backoff_max_ms: 100 }), { message: /backoff_max_ms: must be >= backoff_min_ms \(500\), got 100/ });
  t.throws(() => sink({ servers, stream: 'X' }), { message: 'failed to create sink js: stream: unknown key' });
});

test('credentials: one way at a time; user and password together; an unreadable creds file names its key', (t) => {
  t.throws(() => sink({ servers, token: 'x', user: 'u', password: 'p' }), { message: /credentials_file: use one of credentials_file, user\/password, token/ });
  t.throws(() => sink({ servers, user: 'u' }), { message: 'failed to create sink js: password: user and password go together' });
  t.throws(() => sink({ servers, credentials_file: '/nonexistent.creds' }), { message: /credentials_file: cannot read \/nonexistent\.creds/ });
  t.notThrows(() => sink({ servers, user: 'u', password: 'p' }));
  t.notThrows(() => sink({ servers, token: 't' }));
});

test('source: stream and durable are required; max_ack_pending defaults to 1000', (t) => {
  t.throws(() => source({ servers, durable: 'd' }), { message: 'failed to create source in: stream: is required' });
  t.throws(() => source({ servers, stream: 'S' }), { message: 'failed to create source in: durable: is required' });
  const s = source({ servers, stream: 'S', durable: 'd' });
  t.true(s.pausable);
  t.deepEqual(Object.keys(s.counters).sort(), ['connected', 'dropped_entries', 'parse_errors', 'reconnects', 'total_entries', 'unacked']);
  t.throws(() => source({ servers, stream: 'S', durable: 'd', max_ack_pending: 0 }), { message: 'failed to create source in: max_ack_pending: must be >= 1, got 0' });
});
