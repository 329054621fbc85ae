// The nats sink and source (DESIGN.md §19) against a real `nats-server -js` on loopback: an edge
// publishing a file to one stream, two collectors sharing one durable consumer, a sink whose
// server is down at start, a source whose server restarts, and messages that are not entries.
// Every node is a real process on 127.0.0.1.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { headers } from '@nats-io/transport-node';
import test from 'ava';
import { appendLines, lineText, Tally } from '../helpers/exactly-once.js';
import { createStream, natsClient, natsNodes, natsCollectorToml, natsEdgeToml, startNats, streamEntries, streamMessages } from '../helpers/nats.js';
import { sleep, waitFor } from '../helpers/node.js';
import { latestCounter } from '../helpers/status.js';


/** Lines seen by both tallies. */
function seenByBoth(a: Tally, b: Tally): number {
  let n = 0;
  for (const k of a.update().seen.keys()) if (b.update().seen.has(k)) n++;
  return n;
}

test.serial('1. edge → one stream → two collectors on one durable consumer: every line exactly once across the two, both get a share', async (t) => {
  t.timeout(120_000);
  const servers = await startNats(t);
  const nc = await natsClient(t, servers);
  await createStream(nc, 'LOGS', ['logs.>']);
  const f = natsNodes(t);
  const a = await f.start('collector-a', natsCollectorToml(servers));
  const b = await f.start('collector-b', natsCollectorToml(servers));
  const app = join(f.dir.path, 'app');
  mkdirSync(app);
  const edge = await f.start('edge', natsEdgeToml(app, servers));
  const total = 20_000;
  const ta = new Tally(() => a);
  const tb = new Tally(() => b);
  for (let i = 0; i < total; i += 1000) {
    appendLines(join(app, 'app.log'), i, i + 1000);
    await sleep(50);
  }
  await waitFor(() => ta.distinct + tb.distinct >= total, `all ${total} lines across the collectors (have ${ta.distinct} + ${tb.distinct})`, 90_000);
  await sleep(1000);
  const missing: number[] = [];
  for (let i = 0; i < total; i++) if (!ta.seen.has(i) && !tb.seen.has(i)) missing.push(i);
  t.deepEqual(missing, [], 'no line lost');
  t.is(seenByBoth(ta, tb), 0, 'no line at both collectors');
  t.is(ta.duplicates + tb.duplicates, 0, 'no line twice at one collector');
  t.true(ta.distinct > 0 && tb.distinct > 0, `both collectors get a share (${ta.distinct} / ${tb.distinct})`);
  t.log(`shares: ${ta.distinct} / ${tb.distinct}`);
  t.is(await streamEntries(nc, 'LOGS'), total, 'the stream holds each line once');
  const messages = await streamMessages(nc, 'LOGS');
  t.true(messages < total / 10, `entries travel in batches: ${messages} messages for ${total} lines`);
  await waitFor(() => latestCounter(edge, 'app', 'sinks.js.published') === total, 'edge counts every publish acknowledged');
  t.is(latestCounter(edge, 'app', 'sinks.js.unacked'), 0);
  t.is(latestCounter(edge, 'app', 'sinks.js.connected'), 1);
});

test.serial('3a. the sink\'s server unreachable at start, then up: entries held (bounded), delivered after', async (t) => {
  t.timeout(120_000);
  const servers = await startNats(t);
  const nc = await natsClient(t, servers);
  await createStream(nc, 'LOGS', ['logs.>']);
  await servers[0]!.kill('SIGTERM');
  const f = natsNodes(t);
  const app = join(f.dir.path, 'app');
  mkdirSync(app);
  const batchCount = 100;
  const edge = await f.start('edge', natsEdgeToml(app, servers, `buffer_size = 500\nmax_batch_count = ${batchCount}\non_full = "block"`));
  const total = 20_000;
  appendLines(join(app, 'app.log'), 0, total);
  await waitFor(() => (latestCounter(edge, 'app', 'sinks.js.unacked') ?? 0) > 0, 'the sink holds entries while the server is down');
  await sleep(2000);
  const held = latestCounter(edge, 'app', 'sinks.js.unacked')!;
  const read = latestCounter(edge, 'app', 'sources.app.total_entries')!;
  t.log(`server down: sink holds ${held}, source read ${read} of ${total} (paused by the blocking sink)`);
  // nothing is published while the server is down: write() waits while a message's worth
  // (max_batch_count) waits, so the sink holds at most that and one pipeline batch (1024)
  t.true(held <= batchCount + 1024, `sink holds at most max_batch_count + one pipeline batch (${held})`);
  // the queue (buffer_size) fills, on_full = "block" pauses the file source after the read under way
  t.true(read < total, `the file source pauses: read ${read}`);
  t.is(latestCounter(edge, 'app', 'sinks.js.connected'), 0);
  t.is(latestCounter(edge, 'app', 'total_dropped_by_sink'), 0);
  await servers[0]!.start();
  await waitFor(() => latestCounter(edge, 'app', 'sinks.js.published') === total, `every entry published once the server is up (${latestCounter(edge, 'app', 'sinks.js.published')})`, 60_000);
  await waitFor(async () => {
    try {
      return (await streamEntries(nc, 'LOGS')) === total;
    } catch {
      return false;
    }
  }, 'the stream holds every line');
  t.is(latestCounter(edge, 'app', 'sinks.js.connected'), 1);
  t.true((latestCounter(edge, 'app', 'sinks.js.reconnects') ?? 0) > 0, 'first connects retried');
});

test.serial('3c. the sink\'s server unreachable, on_full = "drop": beyond buffer_size + max_batch_count entries are dropped and counted, the rest delivered after', async (t) => {
  t.timeout(120_000);
  const servers = await startNats(t);
  const nc = await natsClient(t, servers);
  await createStream(nc, 'LOGS', ['logs.>']);
  await servers[0]!.kill('SIGTERM');
  const f = natsNodes(t);
  const app = join(f.dir.path, 'app');
  mkdirSync(app);
  const edge = await f.start('edge', natsEdgeToml(app, servers, 'buffer_size = 500\nmax_batch_count = 100\non_full = "drop"'));
  const total = 5000;
  appendLines(join(app, 'app.log'), 0, total);
  await waitFor(() => latestCounter(edge, 'app', 'sources.app.total_entries') === total, 'the file source reads everything (a dropping sink never pauses it)');
  await sleep(1000);
  const dropped = latestCounter(edge, 'app', 'total_dropped_by_sink')!;
  const held = latestCounter(edge, 'app', 'sinks.js.unacked')!;
  t.log(`server down: sink holds ${held}, ${dropped} dropped of ${total}`);
  t.true(dropped > 0 && dropped <= total - 500, `the full queue drops, counted (${dropped})`);
  await servers[0]!.start();
  await waitFor(() => latestCounter(edge, 'app', 'sinks.js.published') === total - dropped, `what was held is delivered (${latestCounter(edge, 'app', 'sinks.js.published')} of ${total - dropped})`, 60_000);
  await waitFor(async () => (await streamEntries(nc, 'LOGS').catch(() => -1)) === total - dropped, 'the stream holds what was not dropped');
  t.is(latestCounter(edge, 'app', 'sinks.js.unacked'), 0);
});

test.serial('3b. the source\'s server restarting: the durable consumer resumes, nothing lost', async (t) => {
  t.timeout(120_000);
  const servers = await startNats(t);
  const nc = await natsClient(t, servers);
  await createStream(nc, 'LOGS', ['logs.>']);
  const js = jetstream(nc);
  const total = 30_000;
  for (let i = 0; i < total; i += 1000) {
    const acks = [];
    for (let j = i; j < i + 1000; j++) {
      const id = `t-${j}`;
      acks.push(js.publish('logs.app', JSON.stringify({ time: new Date().toISOString(), source: 'test', message: lineText(j), id }), { msgID: id }));
    }
    await Promise.all(acks);
  }
  const f = natsNodes(t);
  // a slow consumer: small batches, so the restart lands mid-stream
  const c = await f.start('collector', natsCollectorToml(servers, 'buffer_size = 50\nmax_ack_pending = 100'));
  const tally = new Tally(() => c);
  await waitFor(() => tally.distinct > 2000, 'the collector consuming');
  await servers[0]!.kill('SIGTERM');
  t.log(`server stopped with ${tally.distinct} lines at the collector`);
  await sleep(1500);
  await servers[0]!.start();
  await waitFor(() => tally.distinct === total, `all ${total} lines after the restart (have ${tally.distinct})`, 90_000);
  t.deepEqual(tally.missing(total), []);
  t.log(`duplicates at the collector (redeliveries of unacknowledged messages): ${tally.duplicates}`);
  await waitFor(() => (latestCounter(c, 'collect', 'sources.in.reconnects') ?? 0) > 0, 'the source counts its reconnect');
  const jsm = await jetstreamManager(nc);
  await waitFor(async () => (await jsm.consumers.info('LOGS', 'collectors')).num_ack_pending === 0, 'every message acknowledged');
});

test.serial('4. a message on the subject that is not an entry: acknowledged, skipped, parse_errors; a batch message with a bad line keeps its good entries', async (t) => {
  t.timeout(60_000);
  const servers = await startNats(t);
  const nc = await natsClient(t, servers);
  await createStream(nc, 'LOGS', ['logs.>']);
  const js = jetstream(nc);
  await js.publish('logs.app', 'not json at all');
  await js.publish('logs.app', '[1,2,3]');
  const h = headers();
  await js.publish('logs.app', JSON.stringify({ message: lineText(7), source: 'x', id: 'good' }), { headers: h });
  // a batch (NDJSON) with a bad line among good ones: the good ones go on, the bad one is counted
  const entry = (n: number) => JSON.stringify({ message: lineText(n), source: 'x', id: `b${n}` });
  await js.publish('logs.app', `${entry(8)}\nnot json\n${entry(9)}\n`);
  const f = natsNodes(t);
  const c = await f.start('collector', natsCollectorToml(servers));
  const tally = new Tally(() => c);
  await waitFor(() => tally.distinct === 3, 'the three entries printed');
  t.deepEqual([...tally.seen.keys()].sort(), [7, 8, 9]);
  await waitFor(() => latestCounter(c, 'collect', 'sources.in.parse_errors') === 3, 'three parse errors counted');
  t.is(latestCounter(c, 'collect', 'sources.in.total_entries'), 3);
  const jsm = await jetstreamManager(nc);
  await waitFor(async () => {
    const info = await jsm.consumers.info('LOGS', 'collectors');
    return info.num_ack_pending === 0 && info.num_pending === 0 && info.ack_floor.stream_seq === 4;
  }, 'all four messages acknowledged');
  t.pass();
});

test.serial('5. no stream on the subject: the sink logs ERROR and retries, never creates one; once the operator creates it, everything is delivered', async (t) => {
  t.timeout(90_000);
  const servers = await startNats(t);
  const nc = await natsClient(t, servers);
  const f = natsNodes(t);
  const app = join(f.dir.path, 'app');
  mkdirSync(app);
  const edge = await f.start('edge', natsEdgeToml(app, servers, 'buffer_size = 2000\non_full = "block"'));
  const total = 3000;
  appendLines(join(app, 'app.log'), 0, total);
  const error = await waitFor(() => edge.records.find((r) => r.msg === 'NATS publish failed, retrying' && r.level === 'error'), 'ERROR for the missing stream');
  t.regex(String(error.error), /no stream takes subject logs\.app/);
  await sleep(1500);
  const jsm = await jetstreamManager(nc);
  t.deepEqual(await jsm.streams.names().next(), [], 'the sink created no stream');
  t.is(latestCounter(edge, 'app', 'sinks.js.published'), 0);
  await createStream(nc, 'LOGS', ['logs.>']);
  await waitFor(() => latestCounter(edge, 'app', 'sinks.js.published') === total, `every entry published once the stream exists (${latestCounter(edge, 'app', 'sinks.js.published')})`, 60_000);
  t.is(await streamEntries(nc, 'LOGS'), total);
  t.is(edge.records.filter((r) => r.msg === 'NATS publish failed, retrying' && r.level === 'error').length, 1, 'ERROR once per outage, then DEBUG');
});
