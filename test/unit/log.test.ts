// The service log's lines: each key once, whatever a call passes beside its child logger's bindings.

import test from 'ava';
import { createLogger } from '../../src/core/log.js';
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
