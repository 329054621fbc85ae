// The checkpoint file (DESIGN.md §15): what a node writes it reads back, dedup windows included,
// in the packed layout and in the first one (an array of ids and one of times).

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { createLogger } from '../../src/core/log.js';
import { eachId, packChunk } from '../../src/core/dedup-window.js';
import { CHECKPOINT_FILE, checkpointParts, readCheckpoint, startCheckpointer } from '../../src/primary/checkpoint.js';

const T0 = Date.parse('2026-01-02T03:04:05.000Z');

function scratch(t: { teardown: (fn: () => void) => void }) {
  const dir = mkdtempSync(join(tmpdir(), 'logrelay-checkpoint-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const records: Record<string, unknown>[] = [];
  const log = createLogger('debug', { write: (l: string) => void records.push(JSON.parse(l) as Record<string, unknown>) });
  return { dir, log, records };
}

const idsOf = (w: Parameters<typeof eachId>[0] | undefined) => {
  const out: [string, number][] = [];
  eachId(w ?? [], (id, time) => out.push([id, time]));
  return out;
};

test('a checkpoint written with a packed dedup window reads back the same', async (t) => {
  const { dir, log, records } = scratch(t);
  const dedup = [packChunk(['a', 'b'], [T0, T0]), packChunk(['c'], [T0 + 7])];
  const state = { version: 1 as const, pipelines: { collect: { positions: {}, seen_at: T0, since: {}, dedup } } };
  const cp = startCheckpointer(dir, 60_000, log, () => state);
  await cp.flush();
  cp.stop();
  const back = readCheckpoint(dir, 24 * 3_600_000, log, T0);
  t.deepEqual(idsOf(back?.pipelines.collect?.dedup), [
    ['a', T0],
    ['b', T0],
    ['c', T0 + 7],
  ]);
  t.deepEqual(records.filter((r) => r.level === 'error' || r.level === 50), []);
});

test('a checkpoint is the JSON of its state, written in parts: each window chunk once as bytes, an unchanged state not again', async (t) => {
  const { dir, log } = scratch(t);
  const chunks = [packChunk(['a', 'b"\\'], [T0, T0]), packChunk(['c'], [T0 + 7])];
  let state = {
    version: 1 as const,
    pipelines: {
      collect: { positions: { in: { 'x.log': { inode: 1, offset: 9 } } }, seen_at: T0, since: { in: { at: T0, config: 'k' } }, dedup: chunks },
      plain: { positions: {}, seen_at: T0, since: {} },
      empty: { positions: {}, seen_at: T0, since: {}, dedup: [] },
    },
  };
  const parts = checkpointParts(state);
  t.deepEqual(JSON.parse(Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p))).toString()), JSON.parse(JSON.stringify(state)));
  t.is(checkpointParts(state)[1], parts[1], "a chunk's bytes are made once");
  const cp = startCheckpointer(dir, 60_000, log, () => state);
  await cp.flush();
  await cp.flush();
  t.is(cp.counters.checkpoint_writes, 1, 'the same state is not written again');
  state = { ...state, pipelines: { ...state.pipelines, collect: { ...state.pipelines.collect, dedup: [...chunks, packChunk(['d'], [T0 + 9])] } } };
  await cp.flush();
  cp.stop();
  t.is(cp.counters.checkpoint_writes, 2, 'a new chunk is written');
  t.deepEqual(JSON.parse(readFileSync(join(dir, CHECKPOINT_FILE), 'utf8')), JSON.parse(JSON.stringify(state)));
});

test('a checkpoint of the first layout (arrays of ids and times) is read into the packed one', (t) => {
  const { dir, log } = scratch(t);
  writeFileSync(
    join(dir, CHECKPOINT_FILE),
    JSON.stringify({ version: 1, pipelines: { collect: { positions: {}, seen_at: T0, since: {}, dedup: { ids: ['x', 'y'], times: [T0, T0 + 1] } } } }),
  );
  t.deepEqual(idsOf(readCheckpoint(dir, 24 * 3_600_000, log, T0)?.pipelines.collect?.dedup), [
    ['x', T0],
    ['y', T0 + 1],
  ]);
});

test('a dedup window of the wrong shape makes the checkpoint unreadable: ERROR, and none is used', (t) => {
  const { dir, log, records } = scratch(t);
  writeFileSync(join(dir, CHECKPOINT_FILE), JSON.stringify({ version: 1, pipelines: { collect: { positions: {}, seen_at: T0, since: {}, dedup: [{ ids: 7 }] } } }));
  t.is(readCheckpoint(dir, 24 * 3_600_000, log, T0), undefined);
  t.true(records.some((r) => String(r.msg).startsWith('Checkpoint unreadable')));
});
