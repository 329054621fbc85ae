// Values that pass a type check but would break the runtime: infinite numbers, durations past
// what a Node timer takes, and nesting deeper than JSON.stringify can walk.

import test from 'ava';
import { decodeEntry, encodeEntry } from '../../src/core/entry-line.js';
import { loadConfig } from '../../src/config/load.js';
import { parseLine } from '../../src/core/entry.js';
import { formatJson, formatTxt } from '../../src/flow/format.js';
import { tempDir } from '../helpers/node.js';

const pipeline = (sourceConfig: string) => `
[[pipelines]]
name = "app"
[[pipelines.plugin_sources]]
type = "random"
config = { ${sourceConfig} }
[[pipelines.plugin_sinks]]
type = "null"
`;

function load(text: string) {
  const dir = tempDir();
  try {
    return loadConfig({ file: dir.file('c.toml', text), env: {}, flags: new Map() });
  } finally {
    dir.remove();
  }
}

test('a duration past 2^31 - 1 ms is refused with its path, not run as 1 ms', (t) => {
  t.throws(() => load(`shutdown_timeout_ms = 10000000000\n${pipeline('')}`), {
    message: 'shutdown_timeout_ms: must be <= 2147483647 (about 24.8 days), got 10000000000',
  });
  t.is(load(`shutdown_timeout_ms = 2147483647\n${pipeline('')}`).shutdown_timeout_ms, 2147483647);
});

test('inf and nan are refused wherever a number is expected', (t) => {
  t.throws(() => load(`status_interval_ms = inf\n${pipeline('')}`), { message: 'status_interval_ms: must be a finite number, got Infinity' });
  t.throws(() => load(`${pipeline('')}[pipelines.flow.rate_limit]\nrate = inf\n`), { message: /^pipelines\[0\]\.flow\.rate_limit\.rate: must be a finite number/ });
  t.throws(() => load(`status_interval_ms = nan\n${pipeline('')}`), { message: /^status_interval_ms: must be a number/ });
});

test('JSON nested deeper than JSON.stringify can write is plain text on a file line and a parse error on a link', (t) => {
  const deep = `{"message":"m","fields":{"x":${'['.repeat(6000)}${']'.repeat(6000)}}}`;
  const e = parseLine(deep, 's', 5, false);
  t.is(e.message, deep, 'taken as a text line, nothing lost');
  t.is(e.fields, undefined);
  t.notThrows(() => formatJson(e));
  t.notThrows(() => formatTxt(e));
  t.is(decodeEntry(deep, 'edge', 5, 's'), undefined);
  t.is(decodeEntry(`{"message":${'['.repeat(6000)}${']'.repeat(6000)}}`, 'edge', 5, 's'), undefined);
  // nesting a real log might have, in a long line, is still structured
  const ok = `{"message":"m","fields":{"x":${'['.repeat(50)}"${'y'.repeat(5000)}"${']'.repeat(50)}}}`;
  t.truthy(parseLine(ok, 's', 5, false).fields);
  const decoded = decodeEntry(ok, 'edge', 5, 's');
  t.truthy(decoded?.fields);
  t.notThrows(() => encodeEntry(decoded!, 5, 'p', { completed: false }));
  // brackets inside strings do not count
  t.truthy(parseLine(`{"message":"${'['.repeat(3000)}"}`, 's', 5, false).message.startsWith('['));
});
