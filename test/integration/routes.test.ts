// Routing through a running node (DESIGN.md §24): errors to one file sink, everything to an
// archive, `else` to a third; `when` sinks under `fanout = "any"` as the redundant paths of their
// route; `unrouted` counted; and route faults refused by `check` and at start, every one listed.

import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { adminRequest, adminStatus, parseExposition, sampleValue } from '../helpers/admin.js';
import { freePort, ownedTempDir, spawnOwnedNode, startOwnedNode, waitFor } from '../helpers/node.js';
import { fileSourceToml, sinkToml } from '../helpers/toml.js';

/** The messages of the json lines a file sink wrote (its first file). */
function written(dir: string): { message: string; level?: string }[] {
  const file = join(dir, 'out.1.log');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { message: string; level?: string });
}

const routedSink = (id: string, directory: string, route: string): string =>
  `[[pipelines.plugin_sinks]]\nid = "${id}"\ntype = "file"\n${route}\n[pipelines.plugin_sinks.config]\ndirectory = ${JSON.stringify(directory)}\nname = "out"\n`;

const LINES = ['level=error msg="disk failed" n=1', 'level=info msg="started" n=2', 'level=warn msg="slow" n=3', 'level=fatal msg="gone" n=4', 'level=debug msg="tick" n=5'];

test.serial('errors to one sink, everything to the archive, else to a third; two when sinks under fanout = "any"; unrouted counted', async (t) => {
  t.timeout(60_000);
  const dir = ownedTempDir(t);
  const inDir = join(dir.path, 'in');
  mkdirSync(inDir);
  writeFileSync(join(inDir, 'app.log'), `${LINES.join('\n')}\n`);
  const out = (name: string) => join(dir.path, name);
  const admin = await freePort();
  const toml = `status_interval_ms = 60000
[admin]
port = ${admin}
[[pipelines]]
name = "routes"
[pipelines.flow.format]
type = "json"
[[pipelines.flow.transforms]]
type = "parse"
format = "logfmt"
${fileSourceToml('f', inDir, 'from = "start"')}${routedSink('errors', out('errors'), `when = "level >= 'error'"`)}${routedSink('archive', out('archive'), '')}${routedSink('rest', out('rest'), 'else = true')}
[[pipelines]]
name = "paths"
fanout = "any"
[pipelines.flow.format]
type = "json"
[[pipelines.flow.transforms]]
type = "parse"
format = "logfmt"
${fileSourceToml('f', inDir, 'from = "start"')}${routedSink('err_a', out('err_a'), `when = "level >= 'error'"`)}${routedSink('err_b', out('err_b'), `when = "level >= 'error'"`)}${routedSink('warn', out('warn'), `when = "level == 'warn'"`)}
`;
  startOwnedNode(t, toml);
  const messages = (name: string) => written(out(name)).map((e) => e.message);
  await waitFor(() => messages('archive').length === 5 && messages('warn').length === 1 && messages('err_a').length === 2 && messages('err_b').length === 2, 'every sink wrote its route', 30_000);
  t.deepEqual(messages('errors'), ['disk failed', 'gone']);
  t.deepEqual(messages('archive'), ['disk failed', 'started', 'slow', 'gone', 'tick']);
  t.deepEqual(messages('rest'), ['started', 'slow', 'tick'], 'else: what no when sink took');
  // fanout = "any" applies among the sinks an entry is routed to: both paths of the error route
  // take each error entry (while both have room), and neither gets another route's entries
  t.deepEqual(messages('err_a'), ['disk failed', 'gone']);
  t.deepEqual(messages('err_b'), ['disk failed', 'gone']);
  t.deepEqual(messages('warn'), ['slow']);
  const status = await waitFor(async () => {
    const s = await adminStatus(admin).catch(() => undefined);
    const c = s?.pipelines.paths?.counters as { unrouted?: number } | undefined;
    const r = s?.pipelines.routes?.counters as { transforms?: Record<string, Record<string, number>> } | undefined;
    // each pipeline's worker ships its counters on its own second: wait for both
    return c?.unrouted === 2 && r?.transforms?.parse_0?.processed === 5 ? s : undefined;
  }, 'the paths pipeline counts its 2 unrouted entries (info, debug), the routes pipeline its 5 parsed');
  const routes = status.pipelines.routes!.counters as { unrouted?: number; transforms?: Record<string, Record<string, number>> };
  t.is(routes.unrouted, 0, 'with an archive sink every entry is routed');
  t.deepEqual(routes.transforms, { parse_0: { processed: 5, parse_failed: 0, bad_values: 0 } });
  t.is(status.pipelines.paths!.counters.sinks.err_a!.skipped, 0);
  // the step's counters in /metrics, by outcome
  const metrics = parseExposition((await adminRequest(admin, '/metrics')).body);
  t.is(sampleValue(metrics, 'logrelay_transform_events_total', { pipeline: 'routes', component: 'parse_0', outcome: 'processed' }), 5);
  t.is(sampleValue(metrics, 'logrelay_transform_events_total', { pipeline: 'routes', component: 'parse_0', outcome: 'parse_failed' }), 0);
});

const BAD = `
[[pipelines]]
name = "a"
[[pipelines.flow.transforms]]
type = "set"
when = "level >= "
fields = { "fields.x" = 1 }
[[pipelines.flow.transforms]]
type = "drop"
when = "fields.status =~ '('"
[[pipelines.plugin_sources]]
type = "random"
[[pipelines.plugin_sinks]]
id = "one"
type = "null"
when = "source == 'x' and"
else = true
[[pipelines.plugin_sinks]]
id = "two"
type = "null"
else = true
dead_letter = "three"
[[pipelines.plugin_sinks]]
id = "three"
type = "null"
dead_letter = "two"
[[pipelines.plugin_sinks]]
id = "four"
type = "null"
dead_letter = "nowhere"
`;

const BAD_LINES = [
  'logrelay: configuration error: pipelines[0].flow.transforms[0].when: expected a value at column 10',
  'logrelay: configuration error: pipelines[0].flow.transforms[1].when: invalid regular expression "(": unterminated group at column 18',
  'logrelay: configuration error: pipelines[0].plugin_sinks[0].when: expected a value at column 18',
  'logrelay: configuration error: pipelines[0].plugin_sinks[0].else: a sink has either when or else, not both',
  'logrelay: configuration error: pipelines[0].plugin_sinks[1].else: only one sink may have else = true (another at pipelines[0].plugin_sinks[0])',
  'logrelay: configuration error: pipelines[0].plugin_sinks[3].dead_letter: "nowhere" is no sink of this pipeline (sinks: one, two, three, four)',
  'logrelay: configuration error: pipelines[0].plugin_sinks[1].dead_letter: dead letters go round in a cycle: two → three → two',
];

for (const command of [['check'], []]) {
  test.serial(`every bad when and route of a file is listed at once, exit 78: ${command[0] ?? 'start'}`, async (t) => {
    const dir = ownedTempDir(t);
    const node = spawnOwnedNode(t, [...command, '-c', dir.file('bad.toml', BAD)]);
    t.is((await node.finish()).code, 78);
    t.deepEqual(node.errText, BAD_LINES);
  });
}

test.serial('sinks without when, else or dead_letter behave as before: every sink gets every entry, no unrouted counter', async (t) => {
  t.timeout(30_000);
  const dir = ownedTempDir(t);
  const inDir = join(dir.path, 'in');
  mkdirSync(inDir);
  writeFileSync(join(inDir, 'app.log'), 'a\nb\n');
  const admin = await freePort();
  startOwnedNode(t, `[admin]\nport = ${admin}\n[[pipelines]]\nname = "p"\n${fileSourceToml('f', inDir, 'from = "start"')}${sinkToml('x', 'null')}${sinkToml('y', 'null')}`);
  const s = await waitFor(async () => {
    const st = await adminStatus(admin).catch(() => undefined);
    return st && st.pipelines.p!.counters.sinks.y?.total_processed === 2 ? st : undefined;
  }, 'both sinks took both entries');
  t.is(s.pipelines.p!.counters.sinks.x!.total_processed, 2);
  t.false('unrouted' in s.pipelines.p!.counters);
});
