// Pipeline workers run with their young generation's semi-space set (src/primary/worker-flags.ts) unless the
// operator chose one: checked on the flags a real worker was started with.

import { readFileSync } from 'node:fs';
import test from 'ava';
import { WORKER_MALLOC_ARENAS, workerEnv, workerExecArgv, WORKER_SEMI_SPACE_MB } from '../../src/primary/worker-flags.js';
import { childPids, ownedTempDir, spawnOwnedNode, waitFor, waitReady } from '../helpers/node.js';

const config = `[[pipelines]]
name = "p"
[[pipelines.plugin_sources]]
type = "random"
config = { interval_ms = 1000, length = 3 }
[[pipelines.plugin_sinks]]
type = "null"
`;

/** The environment a process was started with. */
const environ = (pid: number): Map<string, string> =>
  new Map(
    readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );

/** The command line a process was started with. */
const cmdline = (pid: number): string[] => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);

/** A real worker's command line and environment. */
async function workerStart(t: Parameters<typeof spawnOwnedNode>[0], env: Record<string, string | undefined>): Promise<{ flags: string[]; env: Map<string, string> }> {
  const dir = ownedTempDir(t);
  const node = spawnOwnedNode(t, ['-c', dir.file('node.toml', config)], { env });
  await waitReady(node, 'the node');
  const [worker] = await waitFor(async () => ((await childPids(node.child.pid!)).length === 1 ? childPids(node.child.pid!) : undefined), 'one worker');
  const started = { flags: cmdline(worker!), env: environ(worker!) };
  await node.stop();
  return started;
}

const workerFlags = async (t: Parameters<typeof spawnOwnedNode>[0], env: Record<string, string | undefined>): Promise<string[]> => (await workerStart(t, env)).flags;

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

test('the worker environment: MALLOC_ARENA_MAX unless the operator set it', (t) => {
  t.deepEqual(workerEnv({}), { MALLOC_ARENA_MAX: String(WORKER_MALLOC_ARENAS) });
  t.deepEqual(workerEnv({ PATH: '/usr/bin' }), { MALLOC_ARENA_MAX: '2' });
  t.deepEqual(workerEnv({ MALLOC_ARENA_MAX: '8' }), {});
});

test.serial("a pipeline worker starts with MALLOC_ARENA_MAX=2; an operator's own value is kept", async (t) => {
  const ours = await workerStart(t, { MALLOC_ARENA_MAX: undefined });
  t.is(ours.env.get('MALLOC_ARENA_MAX'), String(WORKER_MALLOC_ARENAS), 'the worker environment');
  const theirs = await workerStart(t, { MALLOC_ARENA_MAX: '8' });
  t.is(theirs.env.get('MALLOC_ARENA_MAX'), '8', "the worker keeps the operator's value");
});
