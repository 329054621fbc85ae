// Disk buffers across configuration changes (issue 38): a reload or a start whose configuration no
// longer names a disk buffer that holds acknowledged entries (buffer type memory, source renamed or
// removed, pipeline removed) keeps it and says so (WARN `Disk buffer kept: N entries still to send`
// with its path); configuring it again sends them, once. A segment wholly delivered after a
// restart is deleted, not kept until the next write.

import test from 'ava';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { segmentSeq } from '../../src/buffer/record.js';
import { collectorToml, idLine, postLines, printedCounts, relayToml } from '../helpers/buffer-node.js';
import { freePort, killWithWorkers, killedNodesIn, type RunningNode, sleep, waitFor, waitReady } from '../helpers/node.js';
import { latestCounter } from '../helpers/status.js';

const running: RunningNode[] = [];
test.afterEach.always(async () => {
  await Promise.all(running.splice(0).map((n) => killWithWorkers(n)));
});

const segmentsIn = (dir: string) => {
  try {
    return readdirSync(dir).filter((f) => segmentSeq(f) !== undefined).length;
  } catch {
    return 0;
  }
};

async function postAll(port: number, prefix: string, count: number): Promise<void> {
  const lines = Array.from({ length: count }, (_, i) => idLine(prefix, i));
  for (let attempt = 0; ; attempt++) {
    const { status } = await postLines(port, lines, 10_000);
    if (status === 204) return;
    if (attempt > 200) throw new Error(`never answered 204 (last ${status})`);
    await sleep(50);
  }
}

const N = 19;
// the status reports (buffer_entries) are logged at DEBUG
const DEBUG = ['--logging.level=debug'];
const changes: [string, (toml: string) => string][] = [
  ['buffer type "disk" to "memory"', (toml) => toml.replace('type = "disk"', 'type = "memory"')],
  ['source renamed', (toml) => toml.replace('id = "in"', 'id = "in2"')],
  ['pipeline removed (renamed)', (toml) => toml.replace('name = "relay"', 'name = "other"')],
];

for (const [what, change] of changes) {
  test.serial(`${what}: the reload keeps the buffer and says how many entries it holds; configured again, they are sent once`, async (t) => {
    const { dir, start } = killedNodesIn(t, running);
    const [port, collectorPort] = [await freePort(), await freePort()];
    const dataDir = join(dir.path, 'data');
    const bufDir = join(dataDir, 'buffers', 'relay', 'in');
    const toml = relayToml({ dataDir, source: 'http_chain', port, sinkPort: collectorPort });
    const relay = start('relay', toml, DEBUG);
    await waitReady(relay, 'relay', 30_000);
    // the collector is down: the entries wait in the buffer, acknowledged
    await postAll(port, 'k', N);
    await waitFor(() => latestCounter(relay, 'relay', 'sources.in.buffer_entries') === N, `${N} entries in the buffer`, 30_000);

    dir.file('relay.toml', change(toml));
    relay.signal('SIGHUP');
    const kept = await waitFor(() => relay.records.find((r) => r.msg.startsWith('Disk buffer kept')), 'WARN Disk buffer kept after the reload', 30_000);
    t.is(kept.level, 'warn');
    t.is(kept.msg, `Disk buffer kept: ${N} entries still to send`);
    t.is(kept.path, bufDir);
    t.is(kept.entries, N);
    t.true(relay.records.some((r) => r.msg === 'Configuration reloaded'));
    t.true(segmentsIn(bufDir) >= 1, 'the segments are on disk');

    // a start with that configuration says it too
    t.is(await relay.stop(30_000), 0);
    const again = start('relay', change(toml), DEBUG);
    await waitFor(() => again.records.find((r) => r.msg === `Disk buffer kept: ${N} entries still to send` && r.path === bufDir), 'WARN Disk buffer kept at start', 30_000);

    // the disk buffer configured again, the collector up: every entry arrives, once
    dir.file('relay.toml', toml);
    again.signal('SIGHUP');
    await waitFor(() => again.records.filter((r) => r.msg === 'Configuration reloaded').length >= 1, 'reloaded back', 30_000);
    const collector = start('collector', collectorToml(collectorPort));
    await waitFor(() => printedCounts([collector.out]).size >= N, `${N} entries at the collector`, 60_000);
    await sleep(300);
    const seen = printedCounts([collector.out]);
    t.is(seen.size, N);
    t.true([...seen.values()].every((n) => n === 1), 'each once');
  });
}

test.serial('a backlog delivered after a restart: its segment is deleted, the buffer reads 0 bytes, and a start finds nothing to delete', async (t) => {
  const { dir, start } = killedNodesIn(t, running);
  const [port, collectorPort] = [await freePort(), await freePort()];
  const dataDir = join(dir.path, 'data');
  const bufDir = join(dataDir, 'buffers', 'relay', 'in');
  const toml = relayToml({ dataDir, source: 'http_chain', port, sinkPort: collectorPort });
  const relay = start('relay', toml, DEBUG);
  await waitReady(relay, 'relay', 30_000);
  await postAll(port, 'r', N);
  await waitFor(() => latestCounter(relay, 'relay', 'sources.in.buffer_entries') === N, `${N} entries in the buffer`, 30_000);
  t.is(await relay.stop(30_000), 0);
  t.is(segmentsIn(bufDir), 1);

  const relay2 = start('relay', toml, DEBUG);
  await waitReady(relay2, 'relay again', 30_000);
  const collector = start('collector', collectorToml(collectorPort));
  await waitFor(() => printedCounts([collector.out]).size >= N, `${N} entries at the collector`, 60_000);
  await waitFor(() => latestCounter(relay2, 'relay', 'sources.in.buffer_entries') === 0, 'the buffer empty', 30_000);
  await waitFor(() => segmentsIn(bufDir) === 0, `the delivered segment deleted (${segmentsIn(bufDir)} left)`, 30_000);
  await waitFor(() => latestCounter(relay2, 'relay', 'sources.in.buffer_bytes') === 0, 'buffer_bytes 0', 30_000);
  t.is(await relay2.stop(30_000), 0);
  t.false(relay2.records.some((r) => r.msg.startsWith('Disk buffer kept')));
});
