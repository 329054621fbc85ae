// Acknowledged positions with transforms and routes (DESIGN.md §15, §24): entries a step drops or
// samples out, and entries routed to no sink, are done at once, so the file position moves past
// them; an edge SIGKILLed while it reads a file through transforms and routes resumes from its
// checkpoint with nothing lost and nothing doubled at a dedup collector.

import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { chainSinkToml, QUICK_BACKOFF } from '../helpers/chain.js';
import { appendLines, collectorToml, lineText, Tally } from '../helpers/exactly-once.js';
import { freePort, killWithWorkers, nodeStarter, ownedTempDir, type RunningNode, sleep, waitFor, waitReady } from '../helpers/node.js';
import { keptByKey } from '../../src/transform/sample.js';

const DEBUG = ['--logging.level=debug'];

/** A routed chain sink: `when` goes beside id and type. */
const routedChainSink = (id: string, port: number, when: string) =>
  chainSinkToml(id, 'tcp_chain', port, 'edge', `${QUICK_BACKOFF}buffer_size = 2000\non_full = "block"\n`).replace('type = "tcp_chain"\n', () => `type = "tcp_chain"\nwhen = ${JSON.stringify(when)}\n`);

/** Lines ending in 5 are dropped, half are sampled out by their text, lines ending in 0 match no route. */
const delivered = (i: number): boolean => i % 10 !== 5 && i % 10 !== 0 && keptByKey(lineText(i), 2);

function edgeToml(app: string, data: string, port: number): string {
  return `status_interval_ms = 500
shutdown_timeout_ms = 3000
node_name = "edge"
data_dir = ${JSON.stringify(data)}
checkpoint_interval_ms = 200
[[pipelines]]
name = "app"
[[pipelines.flow.transforms]]
type = "drop"
when = "message =~ '5$'"
[[pipelines.flow.transforms]]
type = "sample"
rate = 2
key = "{{ message }}"
[[pipelines.flow.transforms]]
type = "set"
fields = { "fields.shaped" = true }
[[pipelines.plugin_sources]]
id = "app"
type = "file"
[pipelines.plugin_sources.config]
directory = ${JSON.stringify(app)}
pattern = "*.log"
from = "start"
check_interval_ms = 200
${routedChainSink('odd', port, "message =~ '[13579]$'")}${routedChainSink('even', port, "message =~ '[2468]$'")}`;
}

test.serial('an edge with transforms and routes SIGKILLed mid-file resumes: nothing lost, nothing doubled at the dedup collector; dropped, sampled and unrouted lines are done', async (t) => {
  t.timeout(150_000);
  const dir = ownedTempDir(t, 'logrelay-shape-');
  const running: RunningNode[] = [];
  const start = nodeStarter(dir, running);
  t.teardown(async () => {
    for (const n of running) n.child.kill('SIGKILL');
    await Promise.all(running.map((n) => n.exited));
  });
  const port = await freePort();
  const collector = start('dedup', collectorToml(port, true), DEBUG);
  await waitReady(collector, 'dedup collector', 30_000);
  const app = join(dir.path, 'app');
  const data = join(dir.path, 'data');
  mkdirSync(app);
  const log = join(app, 'app.log');
  const once = new Tally(() => collector);
  const checkpointed = () => {
    try {
      const cp = JSON.parse(readFileSync(join(data, 'checkpoint.json'), 'utf8')) as { pipelines: { app?: { positions: { app?: Record<string, { offset: number }> } } } };
      return cp.pipelines.app?.positions.app?.[log]?.offset ?? 0;
    } catch {
      return 0;
    }
  };
  let edge = start('edge', edgeToml(app, data, port), DEBUG);
  await waitReady(edge, 'edge', 30_000);
  const total = 20_000;
  const want = Array.from({ length: total }, (_, i) => i).filter(delivered);
  const wantBefore = (n: number) => want.filter((i) => i < n).length;
  for (let i = 0; i < 8000; i += 500) {
    appendLines(log, i, i + 500);
    await sleep(50);
  }
  await waitFor(() => checkpointed() > 0 && once.distinct > wantBefore(2000), 'a checkpoint and the first lines at the collector');
  await killWithWorkers(edge);
  t.log(`edge SIGKILLed with ${once.distinct} of ${wantBefore(8000)} lines at the collector, checkpoint at line ${checkpointed() / 13}`);
  appendLines(log, 8000, total);
  edge = start('edge', edgeToml(app, data, port), DEBUG);
  await waitReady(edge, 'edge again', 30_000);
  await waitFor(() => once.distinct === want.length, `every routed line at the collector (have ${once.distinct} of ${want.length})`, 90_000);
  // the position reaches the end of the file although its last lines are dropped, sampled out or unrouted
  const size = statSync(log).size;
  await waitFor(() => checkpointed() === size, `the checkpoint at the end of the file (${size})`, 30_000);
  await sleep(500);
  once.update();
  t.deepEqual(
    [...once.seen.keys()].filter((i) => !delivered(i)),
    [],
    'no dropped, sampled out or unrouted line arrived',
  );
  t.deepEqual(once.missing(total).filter(delivered), [], 'nothing lost');
  t.is(once.duplicates, 0, 'nothing doubled');
});
