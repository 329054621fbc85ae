// Pipeline workers run with their young generation's semi-space set (src/primary/worker-flags.ts) unless the
// operator chose one: checked on the flags a real worker was started with.

import { readFileSync } from 'node:fs';
import test from 'ava';
import { workerExecArgv, WORKER_SEMI_SPACE_MB } from '../../src/primary/worker-flags.js';
import { childPids, ownedTempDir, spawnOwnedNode, waitFor, waitReady } from '../helpers/node.js';

const config = `[[pipelines]]
name = "p"
[[pipelines.plugin_sources]]
type = "random"
config = { interval_ms = 1000, length = 3 }
[[pipelines.plugin_sinks]]
type = "null"
`;

/** The command line a process was started with. */
const cmdline = (pid: number): string[] => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);

async function workerFlags(t: Parameters<typeof spawnOwnedNode>[0], env: Record<string, string | undefined>): Promise<string[]> {
  const dir = ownedTempDir(t);
  const node = spawnOwnedNode(t, ['-c', dir.file('node.toml', config)], { env });
  await waitReady(node, 'the node');
  const [worker] = await waitFor(async () => ((await childPids(node.child.pid!)).length === 1 ? childPids(node.child.pid!) : undefined), 'one worker');
  const flags = cmdline(worker!);
  await node.stop();
  return flags;
}

test('the worker flags: the primary\'s own, then the semi-space unless set in the flags or NODE_OPTIONS', (t) => {
  const ours = `--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`;
  t.deepEqual(workerExecArgv([], ''), [ours]);
  t.deepEqual(workerExecArgv(['--enable-source-maps'], '--no-warnings'), ['--enable-source-maps', ours]);
  t.deepEqual(workerExecArgv(['--max-semi-space-size=8'], ''), ['--max-semi-space-size=8']);
  t.deepEqual(workerExecArgv(['--max_semi_space_size', '8'], ''), ['--max_semi_space_size', '8']);
  t.deepEqual(workerExecArgv([], '--no-warnings  --max-semi-space-size=64'), []);
  // a flag that only begins alike is not the same flag
  t.deepEqual(workerExecArgv(['--max-semi-space-sizes=1'], ''), ['--max-semi-space-sizes=1', ours]);
});

test.serial('a pipeline worker starts with its semi-space flag; an operator\'s NODE_OPTIONS keeps theirs', async (t) => {
  const flags = await workerFlags(t, { NODE_OPTIONS: undefined });
  t.true(flags.includes(`--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`), `worker command line: ${flags.join(' ')}`);
  const theirs = await workerFlags(t, { NODE_OPTIONS: '--max-semi-space-size=8' });
  t.false(
    theirs.some((f) => f.startsWith('--max-semi-space-size')),
    `worker command line with NODE_OPTIONS=--max-semi-space-size=8: ${theirs.join(' ')}`,
  );
});
