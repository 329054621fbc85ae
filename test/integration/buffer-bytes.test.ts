// Queues bounded in bytes (issue 40, acceptance 3): with few, large entries (1 MiB each) a sink's
// queue and what it holds unacknowledged stop at `buffer_max_bytes` long before `buffer_size`
// entries, the file source pauses there, and the worker's memory stays under the bound plus a
// fixed overhead measured in the same run.

import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { adminStatus } from '../helpers/admin.js';
import { mutePeer } from '../helpers/chain.js';
import { freePort, ownedTempDir, sleep, startNodeInDir, waitFor } from '../helpers/node.js';
import { latestCounter } from '../helpers/status.js';
import { fileSourceToml, sinkToml } from '../helpers/toml.js';

const MiB = 1024 * 1024;

test.serial('buffer_max_bytes: 1 MiB entries into a link that never acknowledges pause the file source at the byte bound; worker RSS stays under bound + overhead', async (t) => {
  t.timeout(120_000);
  const dir = ownedTempDir(t, 'logrelay-bytes-');
  const [admin, peer] = await Promise.all([freePort(), mutePeer(t)]);
  const input = join(dir.path, 'in');
  mkdirSync(input);
  const bound = 16 * MiB;
  const node = startNodeInDir(
    t,
    dir,
    `[admin]\nport = ${admin}\n[[pipelines]]\nname = "p"\n${fileSourceToml('f', input, `max_line_bytes = ${2 * MiB}\nraw = true`)}${sinkToml('link', 'tcp_chain', `host = "127.0.0.1"\nport = ${peer}\nbuffer_max_bytes = ${bound}`)}`,
    { statusIntervalMs: 500 },
  );
  const rssOf = async () => (await adminStatus(admin)).pipelines.p?.resident_memory_bytes ?? null;
  // the fixed overhead: the worker with its link up and nothing to send
  await waitFor(async () => latestCounter(node, 'p', 'sinks.link.connected') === 1 && (await rssOf()) !== null, 'the link up and the worker measured');
  await sleep(1500);
  const baseline = (await rssOf())!;
  const total = 200;
  const line = `${'x'.repeat(MiB - 1)}\n`;
  for (let i = 0; i < total; i++) appendFileSync(join(input, 'big.log'), line);
  // the source reads until queue + unacknowledged reach the bound, then pauses
  let last = -1;
  let peak = baseline;
  const read = await waitFor(
    async () => {
      peak = Math.max(peak, (await rssOf()) ?? 0);
      const n = latestCounter(node, 'p', 'sources.f.total_entries') ?? 0;
      const settled = n > 0 && n === last;
      last = n;
      if (!settled) await sleep(1000);
      return settled ? n : undefined;
    },
    'the file source stops reading',
    60_000,
  );
  for (let i = 0; i < 4; i++) {
    peak = Math.max(peak, (await rssOf()) ?? 0);
    await sleep(500);
  }
  t.log(`read ${read} of ${total} entries of 1 MiB; worker RSS ${Math.round(baseline / MiB)} MiB idle, ${Math.round(peak / MiB)} MiB at most`);
  // queue and unacknowledged each reach the bound (16 entries), plus a read and a batch in flight
  t.true(read < 64, `the source paused at the byte bound, not at buffer_size (1000): read ${read}`);
  t.true(read >= 16, `the bound was filled: read ${read}`);
  t.is(latestCounter(node, 'p', 'total_dropped_by_sink'), 0, 'nothing dropped: the sink blocks');
  // each held entry lives as its message, its line and its chain bytes: a few times the bound
  t.true(peak - baseline < 6 * bound, `RSS grew ${Math.round((peak - baseline) / MiB)} MiB over the idle worker (bound ${bound / MiB} MiB)`);
});
