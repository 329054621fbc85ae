// The service log's lines: each key once, whatever a call passes beside its child logger's bindings.

import test from 'ava';
import { createLogger, isoNow } from '../../src/core/log.js';
import { repeatedKeys, topLevelKeys } from '../helpers/log-keys.js';

test('a log line has each key once: a key the child logger binds is not written again from the call', (t) => {
  const lines: string[] = [];
  const log = createLogger('info', { write: (l: string) => void lines.push(l) });
  const child = log.child({ pipeline: 'p', plugin: 's' });
  child.error({ pipeline: 'p', plugin: 's', error: 'EPIPE' }, 'Sink output closed, entries dropped');
  child.warn({ reason: 'x' }, 'plain');
  t.is(lines.length, 2);
  t.deepEqual(topLevelKeys(lines[0]!), ['level', 'time', 'pipeline', 'plugin', 'error', 'msg']);
  t.deepEqual(repeatedKeys(lines[1]!), []);
  t.deepEqual(repeatedKeys('{"a":1,"b":{"a":2},"c":[{"a":3}],"a":4}'), ['a'], 'the checker itself finds a repeat, and only at the top level');
});

test('a log line has its time as toISOString writes it, for any instant a Date holds', (t) => {
  for (const ms of [0, 1, 999, 1_700_000_000_123, Date.now(), 253_402_300_799_999, 253_402_300_800_000, -1, -62_198_755_200_000, -62_198_755_200_001, 8.64e15, -8.64e15]) {
    t.is(isoNow(ms), new Date(ms).toISOString(), String(ms));
  }
  const lines: string[] = [];
  createLogger('info', { write: (l: string) => void lines.push(l) }).info('x');
  const time = (JSON.parse(lines[0]!) as { time: string }).time;
  t.is(new Date(time).toISOString(), time);
});
