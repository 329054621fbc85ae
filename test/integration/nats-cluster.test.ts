// The nats plugins on a three-server JetStream cluster (DESIGN.md §19): a stream with three
// replicas, the stream's leader SIGKILLed mid-stream and started again. Nothing may be lost;
// what the sink publishes again carries the same Nats-Msg-Id, so the stream keeps one copy.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import test from 'ava';
import { appendLines, Tally } from '../helpers/exactly-once.js';
import { createStream, natsClient, natsCollectorToml, natsEdgeToml, natsNodes, startNats, streamEntries, streamMessages, streamSettled } from '../helpers/nats.js';
import { sleep, waitFor } from '../helpers/node.js';
import { latestCounter } from '../helpers/status.js';

test.serial('2. three-server cluster, replicas 3: the stream leader SIGKILLed mid-stream and started again: no line lost, the stream holds each once', async (t) => {
  t.timeout(180_000);
  const servers = await startNats(t, 3);
  const nc = await natsClient(t, servers);
  await createStream(nc, 'LOGS', ['logs.>'], 3);
  const f = natsNodes(t);
  const a = await f.start('collector-a', natsCollectorToml(servers));
  const b = await f.start('collector-b', natsCollectorToml(servers));
  const app = join(f.dir.path, 'app');
  mkdirSync(app);
  // a short request timeout, so publishes lost with the server go out again soon
  const edge = await f.start('edge', natsEdgeToml(app, servers, 'buffer_size = 2000\non_full = "block"\nrequest_timeout_ms = 2000'));
  const ta = new Tally(() => a);
  const tb = new Tally(() => b);
  const total = 30_000;
  const log = join(app, 'app.log');
  const jsm = await jetstreamManager(nc);
  let killed = '';
  for (let i = 0; i < total; i += 500) {
    if (i === 10_000) {
      const leader = (await jsm.streams.info('LOGS')).cluster?.leader ?? 'n0';
      const victim = servers.find((s) => s.name === leader) ?? servers[0]!;
      await victim.kill('SIGKILL');
      killed = victim.name;
      t.log(`SIGKILLed ${victim.name} (stream leader) with ${ta.distinct + tb.distinct} lines at the collectors`);
    }
    if (i === 16_000) {
      await servers.find((s) => s.name === killed)!.start();
      t.log(`${killed} started again`);
    }
    appendLines(log, i, i + 500);
    await sleep(50);
  }
  await waitFor(() => {
    for (let i = 0; i < total; i++) if (!ta.update().seen.has(i) && !tb.update().seen.has(i)) return false;
    return true;
  }, `all ${total} lines across the collectors (have ${ta.distinct} + ${tb.distinct})`, 120_000);
  await sleep(1000);
  const missing: number[] = [];
  for (let i = 0; i < total; i++) if (!ta.seen.has(i) && !tb.seen.has(i)) missing.push(i);
  t.deepEqual(missing, [], 'no line lost');
  // the returning server may still be catching up: read the stream once all three replicas are current
  const settling = Date.now();
  await streamSettled(nc, 'LOGS', 3);
  t.log(`the stream's three replicas current ${Date.now() - settling} ms after the last line arrived`);
  const inStream = await streamEntries(nc, 'LOGS');
  const messages = await streamMessages(nc, 'LOGS');
  let both = 0;
  for (const k of ta.seen.keys()) if (tb.seen.has(k)) both++;
  const retried = latestCounter(edge, 'app', 'sinks.js.retried') ?? 0;
  t.log(`entries published again by the sink: ${retried}; the stream holds ${inStream} entries in ${messages} messages for ${total} lines`);
  t.log(`duplicates at the collectors (redeliveries): ${ta.duplicates + tb.duplicates} within one, ${both} across the two`);
  t.is(inStream, total, 'the duplicate window removed every resent batch');
  await waitFor(() => latestCounter(edge, 'app', 'sinks.js.unacked') === 0, 'the sink holds nothing unacknowledged');
});
