// data_dir faults (DESIGN.md §15): a corrupt checkpoint, a directory that stops being writable,
// and a second node on the same directory. The node keeps delivering wherever it runs.

import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { appendLines, lineText } from '../helpers/exactly-once.js';
import { exitedWithin, ownedTempDir, spawnNode, type TempDir, waitFor, waitReady } from '../helpers/node.js';
import { latestCounter } from '../helpers/status.js';
import { filePipeline } from '../helpers/toml.js';

// As root, a read-only directory is writable anyway (CAP_DAC_OVERRIDE): the node runs without it.
const asRoot = process.getuid?.() === 0;
const DROP_DAC = ['setpriv', '--bounding-set', '-dac_override,-dac_read_search'];
if (asRoot && spawnSync(DROP_DAC[0]!, [...DROP_DAC.slice(1), 'true']).status !== 0) throw new Error('running as root needs setpriv (util-linux) to drop CAP_DAC_OVERRIDE');

function edgeIn(dir: TempDir, data: string): { app: string; config: string } {
  const app = join(dir.path, 'app');
  mkdirSync(app, { recursive: true });
  const config = dir.file(
    'edge.toml',
    `data_dir = ${JSON.stringify(data)}\ncheckpoint_interval_ms = 100\nstatus_interval_ms = 200\n${filePipeline(app, 'pattern = "*.log"\nfrom = "start"\ncheck_interval_ms = 100')}`,
  );
  return { app, config };
}

const start = (t: { teardown(fn: () => unknown): void }, config: string, via?: readonly string[]) => {
  const node = spawnNode(['-c', config, '--logging.level=debug'], { via });
  t.teardown(async () => {
    await node.stop();
  });
  return node;
};

test.serial('a corrupt checkpoint logs ERROR and the node runs on without it', async (t) => {
  const dir = ownedTempDir(t, 'logrelay-datadir-');
  const data = join(dir.path, 'data');
  mkdirSync(data);
  writeFileSync(join(data, 'checkpoint.json'), '{"version":1,"pipelines":{"p":');
  const { app, config } = edgeIn(dir, data);
  appendLines(join(app, 'a.log'), 0, 10);
  const node = start(t, config);
  await waitReady(node, 'edge');
  const err = await waitFor(() => node.records.find((r) => r.msg === 'Checkpoint unreadable, starting without it'), 'the ERROR about the checkpoint');
  t.is(err.level, 'error');
  t.is(err.file, join(data, 'checkpoint.json'));
  t.truthy(err.error);
  await waitFor(() => node.out.includes(lineText(9)), 'the lines delivered all the same');
  await waitFor(() => (latestCounter(node, 'p', 'checkpoint_writes') ?? 0) > 0, 'a fresh checkpoint written');
});

test.serial('an unwritable data_dir: ERROR once, checkpoint_errors rises, delivery goes on', async (t) => {
  const dir = ownedTempDir(t, 'logrelay-datadir-');
  const data = join(dir.path, 'data');
  const { app, config } = edgeIn(dir, data);
  t.teardown(() => chmodSync(data, 0o755));
  const node = start(t, config, asRoot ? DROP_DAC : undefined);
  await waitReady(node, 'edge');
  appendLines(join(app, 'a.log'), 0, 5);
  await waitFor(() => (latestCounter(node, 'p', 'checkpoint_writes') ?? 0) > 0, 'a checkpoint written while the directory is writable');
  chmodSync(data, 0o555);
  appendLines(join(app, 'a.log'), 5, 10);
  await waitFor(() => (latestCounter(node, 'p', 'checkpoint_errors') ?? 0) >= 3, 'checkpoint_errors rising');
  await waitFor(() => node.out.includes(lineText(9)), 'the lines delivered all the same');
  appendLines(join(app, 'a.log'), 10, 20);
  await waitFor(() => node.out.includes(lineText(19)), 'and more after the failures');
  const errors = node.records.filter((r) => r.msg === 'Checkpoint write failed');
  t.is(errors.length, 1, 'at most once a minute');
  t.is(errors[0]!.level, 'error');
  t.regex(String(errors[0]!.error), /EACCES|permission/i);
  t.is(node.child.exitCode, null, 'still running');
  t.false(node.records.some((r) => r.msg === 'Pipeline process exited unexpectedly'));
});

test.serial('a second node on the same data_dir refuses to start: ERROR with the other pid, exit 69', async (t) => {
  const dir = ownedTempDir(t, 'logrelay-datadir-');
  const data = join(dir.path, 'data');
  const { app, config } = edgeIn(dir, data);
  const first = start(t, config);
  await waitReady(first, 'first node');
  const second = spawnNode(['-c', config]);
  const status = await exitedWithin(second, 'the second node exits');
  await second.finish();
  t.is(status.code, 69);
  const err = second.records.find((r) => r.msg === 'data_dir is in use');
  t.truthy(err, second.errText.join('\n'));
  t.is(err!.level, 'error');
  t.is(err!.pid, first.child.pid);
  appendLines(join(app, 'a.log'), 0, 3);
  await waitFor(() => first.out.includes(lineText(2)), 'the first node delivers on');
  // once the first is gone (even killed), the lock is taken over
  first.child.kill('SIGKILL');
  await first.exited;
  const third = start(t, config);
  await waitReady(third, 'a node after the first was killed');
});
