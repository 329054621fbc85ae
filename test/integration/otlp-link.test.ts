// The otlp sink's link state (issue 38): up only while requests succeed. A receiver answering
// 503 to everything, or 413 to a single entry, never makes it "up"; the first 2xx does (INFO
// `OTLP export up`); requests failing for backoff_max_ms take it down (WARN `OTLP export down`
// with the status); the next success brings it up again. /metrics shows `connected` and `retries`.

import test from 'ava';
import { adminRequest, parseExposition, sampleValue } from '../helpers/admin.js';
import { freePort, nodeStarter, type RunningNode, tempDir, waitFor, waitReady } from '../helpers/node.js';
import { type Answer, type OtlpReceiver, otlpReceiver, otlpSenderToml } from '../helpers/otlp.js';

const tmp = tempDir('logrelay-otlp-link-');
test.after.always(() => tmp.remove());

const running: RunningNode[] = [];
const receivers: OtlpReceiver[] = [];
test.afterEach.always(async () => {
  await Promise.all(running.splice(0).map((n) => n.stop(5000)));
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});
const start = nodeStarter(tmp, running);

test.serial('otlp sink: connected only while requests succeed; down with the status after backoff_max_ms of failures, up on the next success', async (t) => {
  t.timeout(90_000);
  let status = 413;
  const receiver = await otlpReceiver((): Answer => ({ status, headers: status === 503 ? { 'Retry-After': '0' } : {} }));
  receivers.push(receiver);
  const admin = await freePort();
  const node = start('sink', `${otlpSenderToml(receiver.url, 'backoff_min_ms = 50\nbackoff_max_ms = 400\nflush_interval_ms = 20\nmax_in_flight = 1')}\n[admin]\nport = ${admin}\n`, [], true);
  await waitReady(node, 'otlp sender');
  const lines = (msg: string) => node.records.filter((r) => r.msg === msg);
  const metrics = async () => parseExposition((await adminRequest(admin, '/metrics')).body);
  const connected = async () => sampleValue(await metrics(), 'logrelay_chain_connected', { pipeline: 'send', component: 'out' });
  const stdin = node.child.stdin!;
  // the sink's first contact at start (an empty export, answered 200 by the receiver) is a success: up
  await waitFor(() => lines('OTLP export up')[0], 'OTLP export up after the start contact', 20_000);

  // a 413 for a single entry: dropped, and no sign of a failing link
  stdin.write('one entry too large\n');
  await waitFor(() => lines('OTLP export rejected')[0], 'the 413 of one entry is a rejection', 20_000);
  // 503 to everything: retried, down after backoff_max_ms, never up meanwhile
  status = 503;
  stdin.write('refused\n');
  await waitFor(() => receiver.requests.length >= 6, 'several refused attempts', 20_000);
  await waitFor(async () => ((sampleValue(await metrics(), 'logrelay_chain_retries_total', { pipeline: 'send', component: 'out' }) ?? 0) >= 3 ? true : undefined), 'retries in /metrics', 20_000);
  const down = await waitFor(() => lines('OTLP export down')[0], 'OTLP export down', 20_000);
  t.is(down.level, 'warn');
  t.is(down.status, 503);
  await waitFor(async () => ((await connected()) === 0 ? true : undefined), 'a receiver refusing everything is not an up link', 20_000);
  t.is(lines('OTLP export up').length, 1, 'no "up" line while refused');

  // the receiver takes it: up, with the status
  status = 200;
  const up = await waitFor(() => lines('OTLP export up')[1], 'OTLP export up', 20_000);
  t.is(up.level, 'info');
  t.is(up.status, 200);
  await waitFor(async () => ((await connected()) === 1 ? true : undefined), 'connected 1', 20_000);

  // refused again for longer than backoff_max_ms: down, naming the status
  status = 503;
  stdin.write('refused again\n');
  await waitFor(() => lines('OTLP export down')[1], 'OTLP export down again', 20_000);
  await waitFor(async () => ((await connected()) === 0 ? true : undefined), 'connected 0', 20_000);
  t.is(lines('OTLP export up').length, 2);

  status = 200;
  await waitFor(() => lines('OTLP export up').length === 3, 'up again on the next success', 20_000);
  t.is(lines('OTLP export down').length, 2, 'one down line per outage');
});
