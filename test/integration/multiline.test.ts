// Multiline entries end to end (DESIGN.md §21, issue 27): a stack trace through the file source
// (the last group of a quiet file emitted on its timeout), stdin (the open group emitted at end of
// input), and an entry open when its worker is SIGKILLed, when the node reloads, and when the
// whole node is SIGKILLed with a data_dir in front of a dedup collector: delivered whole, once.

import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { chainSinkToml, QUICK_BACKOFF } from '../helpers/chain.js';
import { collectorToml } from '../helpers/exactly-once.js';
import { JAVA_TRACE } from '../helpers/lines.js';
import { childPids, freePort, killWithWorkers, nodeStarter, ownedTempDir, type RunningNode, spawnOwnedNode, startNodeInDir, waitFor } from '../helpers/node.js';
import { latestCounter } from '../helpers/status.js';
import { fileSourceToml, sinkToml } from '../helpers/toml.js';

/** The messages of the JSON entries a node printed so far. */
const messages = (out: readonly string[]): string[] => out.filter((l) => l.startsWith('{')).map((l) => (JSON.parse(l) as { message: string }).message);

/** How often each message was printed. */
function tally(out: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const m of messages(out)) counts.set(m, (counts.get(m) ?? 0) + 1);
  return counts;
}

/** An entry begins with BEGIN and ends with the line END; other lines outside one are single. */
const GROUPS = `[pipelines.plugin_sources.config.multiline]
start_pattern = "^BEGIN"
condition_pattern = "^END"
mode = "halt_with"
timeout_ms = 600000
`;

/** Pipeline `p`: file source `f` on `dir` (from the start, `multiline` lines after) → stdout as JSON. */
const groupPipeline = (dir: string, multiline = GROUPS) => `
[[pipelines]]
name = "p"
[pipelines.flow.format]
type = "json"
${fileSourceToml('f', dir, 'pattern = "*.log"\nfrom = "start"\ncheck_interval_ms = 100')}${multiline}
${sinkToml('out', 'stdout')}`;


test.serial('preset java through the file source: the trace is one entry, single lines stay single, the last group of a quiet file goes on its timeout', async (t) => {
  const root = ownedTempDir(t);
  writeFileSync(join(root.path, 'app.log'), `INFO before\n${JAVA_TRACE.join('\n')}\nINFO between\n${JAVA_TRACE.join('\n')}\n`);
  const node = startNodeInDir(t, root, groupPipeline(root.path, '[pipelines.plugin_sources.config.multiline]\npreset = "java"\ntimeout_ms = 300\n'));
  // the second trace is the file's last group: nothing follows it, only its timeout emits it
  await waitFor(() => messages(node.out).length === 4, 'four entries', 30_000);
  t.deepEqual(messages(node.out), ['INFO before', JAVA_TRACE.join('\n'), 'INFO between', JAVA_TRACE.join('\n')]);
  await waitFor(() => latestCounter(node, 'p', 'sources.f.multiline_timeouts') === 1, 'one timeout counted (the quiet last group)');
  t.is(latestCounter(node, 'p', 'sources.f.multiline_entries'), 2);
});

test.serial('stdin with preset python: a traceback is one entry, and the group open at end of input is emitted', async (t) => {
  const root = ownedTempDir(t);
  const trace = ['Traceback (most recent call last):', '  File "/app/main.py", line 6, in main', '    raise ValueError("bad input")', 'ValueError: bad input'];
  const node = spawnOwnedNode(
    t,
    [
      '-c',
      root.file(
        'node.toml',
        `[[pipelines]]\nname = "p"\n[pipelines.flow.format]\ntype = "json"\n[[pipelines.plugin_sources]]\ntype = "stdin"\n[pipelines.plugin_sources.config.multiline]\npreset = "python"\ntimeout_ms = 600000\n${sinkToml('out', 'stdout')}`,
      ),
    ],
    { stdin: 'pipe' },
  );
  await waitFor(() => node.records.some((r) => r.msg === 'Starting pipeline'), 'started');
  // the second traceback has no exception line yet: it ends with the input
  node.child.stdin!.end(`INFO a\n${trace.join('\n')}\nINFO b\n${trace.slice(0, 3).join('\n')}\n`);
  await waitFor(() => messages(node.out).length === 4, 'four entries');
  t.deepEqual(messages(node.out), ['INFO a', trace.join('\n'), 'INFO b', trace.slice(0, 3).join('\n')]);
});

/** Writes an open group into `log`, waits until the node read it, does `interrupt`, then ends the group; it must arrive whole, once. */
async function interruptMidGroup(t: import('ava').ExecutionContext, node: RunningNode, log: string, interrupt: () => Promise<void>) {
  const head = 'single one\nBEGIN first\n f1\nEND\nBEGIN open\n o1\n o2\n';
  appendFileSync(log, head);
  await waitFor(() => messages(node.out).includes('BEGIN first\n f1\nEND'), 'the first group');
  await waitFor(() => (latestCounter(node, 'p', 'sources.f.bytes_read') ?? 0) >= head.length, 'the open group read');
  await interrupt();
  appendFileSync(log, ' o3\nEND\nsingle two\n');
  await waitFor(() => tally(node.out).has('single two'), 'the line after the group');
  const counts = tally(node.out);
  t.deepEqual(
    [...counts.keys()].sort(),
    ['BEGIN first\n f1\nEND', 'BEGIN open\n o1\n o2\n o3\nEND', 'single one', 'single two'],
    'the open group whole, never in parts',
  );
  t.is(counts.get('BEGIN open\n o1\n o2\n o3\nEND'), 1, 'the open group once');
}

test.serial('a worker SIGKILLed while a group is open: the restarted worker emits it whole, once', async (t) => {
  const root = ownedTempDir(t);
  const log = join(root.path, 'app.log');
  writeFileSync(log, '');
  const node = startNodeInDir(t, root, groupPipeline(root.path));
  await interruptMidGroup(t, node, log, async () => {
    // its position is reported with the stats once a second: the worker dies after that
    await waitFor(() => node.records.filter((r) => r.msg === 'status report' && r.pipeline === 'p' && Number(r['sources.f.bytes_read']) >= 50).length >= 11, 'positions reported');
    const [worker] = await childPids(node.child.pid!);
    process.kill(worker!, 'SIGKILL');
    await waitFor(() => node.records.filter((r) => r.msg === 'Starting pipeline').length === 2, 'the pipeline restarted');
  });
  t.is(tally(node.out).get('single one'), 1, 'what was done before the crash is not read again');
});

test.serial('a reload while a group is open: the successor emits it whole, once', async (t) => {
  const root = ownedTempDir(t);
  const log = join(root.path, 'app.log');
  writeFileSync(log, '');
  const node = startNodeInDir(t, root, groupPipeline(root.path));
  await interruptMidGroup(t, node, log, async () => {
    node.signal('SIGHUP');
    await waitFor(() => node.records.some((r) => r.msg === 'Configuration reloaded'), 'reloaded');
  });
  t.is(tally(node.out).get('single one'), 1);
});

test.serial('the whole edge SIGKILLed with a data_dir while a group is open: at a dedup collector every group arrives whole, once', async (t) => {
  const root = ownedTempDir(t);
  const logs = join(root.path, 'logs');
  const data = join(root.path, 'data');
  mkdirSync(logs);
  const log = join(logs, 'app.log');
  const running: RunningNode[] = [];
  t.teardown(() => running.forEach((n) => n.child.kill('SIGKILL')));
  const start = nodeStarter(root, running);
  const port = await freePort();
  const collector = start('collector', collectorToml(port, true));
  const edgeToml = `status_interval_ms = 200\nnode_name = "edge"\ndata_dir = ${JSON.stringify(data)}\ncheckpoint_interval_ms = 100
[[pipelines]]
name = "p"
${fileSourceToml('f', logs, 'pattern = "*.log"\nfrom = "start"\ncheck_interval_ms = 100')}${GROUPS}
${chainSinkToml('to', 'tcp_chain', port, 'edge', `${QUICK_BACKOFF}on_full = "block"\n`)}`;
  let edge = start('edge', edgeToml, ['--logging.level=debug']);
  const GROUP_COUNT = 200;
  const group = (i: number) => `BEGIN ${i}\n a${i}\n b${i}\nEND`;
  let text = '';
  for (let i = 0; i < GROUP_COUNT; i++) text += `${group(i)}\nsingle ${i}\n`;
  writeFileSync(log, `${text}BEGIN open\n o1\n`);
  await waitFor(() => tally(collector.out).has(`single ${GROUP_COUNT - 1}`), 'the complete groups delivered', 30_000);
  await waitFor(() => (latestCounter(edge, 'p', 'checkpoint_writes') ?? 0) >= 2, 'a checkpoint written');
  await killWithWorkers(edge);
  appendFileSync(log, ' o2\nEND\nsingle last\n');
  edge = start('edge-again', edgeToml, ['--logging.level=debug']);
  await waitFor(() => tally(collector.out).has('single last'), 'the line after the open group', 30_000);
  const counts = tally(collector.out);
  const want = new Set([...Array.from({ length: GROUP_COUNT }, (_, i) => [group(i), `single ${i}`]).flat(), 'BEGIN open\n o1\n o2\nEND', 'single last']);
  t.deepEqual([...counts.keys()].filter((m) => !want.has(m)), [], 'no group in parts');
  t.deepEqual([...want].filter((m) => counts.get(m) !== 1), [], 'every entry exactly once');
});

test.serial('bad input: a pattern that does not compile fails check naming its key (78); a group that never ends is split at max_lines, no line lost', async (t) => {
  const root = ownedTempDir(t);
  const bad = spawnOwnedNode(t, ['check', '-c', root.file('bad.toml', groupPipeline(root.path, GROUPS.replace('"^END"', '"^(END"')))]);
  t.is((await bad.finish('check')).code, 78);
  t.regex(bad.errText.join('\n'), /failed to create source f: multiline\.condition_pattern: not a valid regular expression/);

  const body = Array.from({ length: 1100 }, (_, i) => ` line ${i}`);
  writeFileSync(join(root.path, 'app.log'), `BEGIN never ends\n${body.join('\n')}\n`);
  const node = startNodeInDir(t, root, groupPipeline(root.path, GROUPS.replace('timeout_ms = 600000', 'timeout_ms = 500\nmax_lines = 500')));
  await waitFor(() => messages(node.out).join('\n').split('\n').length === 1101, 'every line, in entries', 30_000);
  t.deepEqual(
    messages(node.out).map((m) => m.split('\n').length),
    [500, 500, 101],
  );
  t.is(messages(node.out).join('\n'), `BEGIN never ends\n${body.join('\n')}`);
  await waitFor(() => latestCounter(node, 'p', 'sources.f.multiline_splits') === 2, 'two splits counted');
});
