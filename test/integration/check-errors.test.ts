// A file with several faults: `check` and a start both print every one, a line each, and exit 78.

import test from 'ava';
import { ownedTempDir, spawnOwnedNode } from '../helpers/node.js';

const pipeline = (name: string, extra = '') => `
[[pipelines]]
name = "${name}"
${extra}
[[pipelines.plugin_sources]]
type = "random"
[[pipelines.plugin_sinks]]
type = "null"
`;

const SCHEMA_FAULTS = `status_interval_ms = 50
${pipeline('a', '[pipelines.flow.format]\ntype = "raw"\nextra = 2')}
${pipeline('b', '[pipelines.flow.rate_limit]\nrate = "fast"')}
`;
const SCHEMA_LINES = [
  'logrelay: configuration error: status_interval_ms: must be >= 100, got 50',
  'logrelay: configuration error: pipelines[0].flow.format.extra: unknown key',
  'logrelay: configuration error: pipelines[1].flow.rate_limit.rate: must be a number, got string',
];

const CROSS_FAULTS = `${pipeline('a')}${pipeline('a')}[[pipelines.plugin_sinks]]\ntype = "null"\n`;
const CROSS_LINES = [
  'logrelay: configuration error: pipelines[1].name: duplicate pipeline name "a"',
  'logrelay: configuration error: pipelines[1].plugin_sinks[1].id: duplicate id "null"',
];

// names become directories (`<data_dir>/buffers/<pipeline>/<source id>/`): a `/` or a leading `.` is refused
const NAME_FAULTS = `${pipeline('../escape')}[[pipelines.plugin_sources]]\nid = "a/b"\ntype = "stdin"\n`;
const NAME_LINES = [
  'logrelay: configuration error: pipelines[0].name: must be 1 to 64 letters, digits, "_", "-" or "." and not start with ".", got "../escape"',
  'logrelay: configuration error: pipelines[0].plugin_sources[1].id: must be 1 to 64 letters, digits, "_", "-" or "." and not start with ".", got "a/b"',
];

const cases: [string, string, string[], string[]][] = [
  ['schema faults, check', SCHEMA_FAULTS, ['check'], SCHEMA_LINES],
  ['schema faults, start', SCHEMA_FAULTS, [], SCHEMA_LINES],
  ['cross-check faults, check', CROSS_FAULTS, ['check'], CROSS_LINES],
  ['names that are no directory names, check', NAME_FAULTS, ['check'], NAME_LINES],
];
for (const [name, text, command, lines] of cases) {
  test.serial(`every configuration error, one per line, exit 78: ${name}`, async (t) => {
    const dir = ownedTempDir(t);
    const node = spawnOwnedNode(t, [...command, '-c', dir.file('bad.toml', text)]);
    t.is((await node.finish()).code, 78); // ended, and stderr read to its end
    t.deepEqual(node.errText, lines);
    t.deepEqual(node.out, []);
    t.deepEqual(node.records, []);
  });
}
