// The nats source's fetch survives a server that answers late (DESIGN.md §19): a TCP proxy on
// 127.0.0.1 between the source and a real nats-server holds everything the server sends for a
// few seconds, as a busy machine does. The client ends a fetch that missed two idle heartbeats
// and drops what the server sent it after; such a message came again only after the consumer's
// ack wait (30 s). A fetch now waits 10 s (a heartbeat every 5 s): a hold of 3.5 s is no outage.

import { connect, createServer, type Server, type Socket } from 'node:net';
import { jetstream } from '@nats-io/jetstream';
import test from 'ava';
import { lineText, Tally } from '../helpers/exactly-once.js';
import { createStream, natsClient, natsCollectorToml, natsNodes, type NatsServer, startNats } from '../helpers/nats.js';
import { sleep, waitFor } from '../helpers/node.js';

/** A proxy to `port` whose server → client bytes can be held for a while (then sent, in order). */
async function holdingProxy(t: { teardown(fn: () => unknown): void }, port: number): Promise<{ port: number; hold(ms: number): void }> {
  const sockets = new Set<Socket>();
  let heldUntil = 0;
  const held: [Socket, Buffer][] = [];
  const release = () => {
    for (const [client, chunk] of held.splice(0)) if (!client.destroyed) client.write(chunk);
  };
  const server: Server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    sockets.add(client).add(upstream);
    client.on('data', (d) => upstream.write(d));
    upstream.on('data', (d) => {
      if (Date.now() < heldUntil || held.length > 0) held.push([client, d]);
      else client.write(d);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return {
    port: (server.address() as { port: number }).port,
    hold(ms) {
      heldUntil = Date.now() + ms;
      setTimeout(release, ms);
    },
  };
}

test.serial('a fetch whose server is 3.5 s late: no "heartbeats missed", and what the server sent meanwhile arrives at once, not after the ack wait', async (t) => {
  t.timeout(90_000);
  const servers = await startNats(t);
  const nc = await natsClient(t, servers);
  await createStream(nc, 'LOGS', ['logs.>']);
  const js = jetstream(nc);
  const proxy = await holdingProxy(t, servers[0]!.port);
  const viaProxy: NatsServer[] = [{ ...servers[0]!, url: `nats://127.0.0.1:${proxy.port}` }];
  const f = natsNodes(t);
  const c = await f.start('collector', natsCollectorToml(viaProxy));
  const tally = new Tally(() => c);
  const entry = (n: number) => JSON.stringify({ message: lineText(n), source: 'x', id: `e${n}` });
  await js.publish('logs.app', entry(1));
  await waitFor(() => tally.update().seen.has(1), 'the first entry printed');
  // the source is fetching on an idle stream now: its next message is held with the heartbeats
  await sleep(500);
  proxy.hold(3500);
  await js.publish('logs.app', entry(2));
  const released = Date.now() + 3500;
  await waitFor(() => tally.update().seen.has(2), 'the entry published while the server was held printed', 20_000);
  const late = Date.now() - released;
  t.true(late < 10_000, `it came ${late} ms after the hold ended (the ack wait would be 30 s)`);
  t.deepEqual(
    c.records.filter((r) => r.msg === 'NATS pull failed, retrying').map((r) => r.error),
    [],
    'no fetch ended for missed heartbeats',
  );
  t.is(tally.seen.get(2), 1);
});
