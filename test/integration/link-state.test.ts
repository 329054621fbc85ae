// The rule of the otlp sink's link state (issue 38) checked on the other request links: an
// http_chain sink is up only while its requests succeed (a receiver answering 503 to everything is
// no up link), down after backoff_max_ms of failures; a nats sink whose connection is up but whose
// publishes fail (no stream takes the subject) goes down after backoff_max_ms, up on the first
// acknowledged publish.

import { createServer } from 'node:http';
import test from 'ava';
import { adminRequest, parseExposition, sampleValue } from '../helpers/admin.js';
import { createStream, natsClient, natsSinkToml, startNats } from '../helpers/nats.js';
import { freePort, startOwnedNode, waitFor, waitReady } from '../helpers/node.js';

const senderToml = (admin: number, sink: string) => `
[admin]
port = ${admin}
[[pipelines]]
name = "send"
[[pipelines.plugin_sources]]
type = "stdin"
${sink}`;

const connectedOf = async (admin: number, component: string) =>
  sampleValue(parseExposition((await adminRequest(admin, '/metrics')).body), 'logrelay_chain_connected', { pipeline: 'send', component });

test.serial('http_chain sink: a receiver answering 503 is no up link; 204 brings it up; 503 for backoff_max_ms takes it down', async (t) => {
  let status = 503;
  let requests = 0;
  const srv = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests++;
      res.writeHead(status, status === 204 ? { 'X-Logrelay-Accepted': '1' } : { 'Retry-After': '0' });
      res.end();
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    srv.closeAllConnections();
    srv.close();
  });
  const port = (srv.address() as { port: number }).port;
  const admin = await freePort();
  const node = startOwnedNode(
    t,
    senderToml(admin, `[[pipelines.plugin_sinks]]\nid = "link"\ntype = "http_chain"\n[pipelines.plugin_sinks.config]\nhost = "127.0.0.1"\nport = ${port}\nflush_interval_ms = 20\nbackoff_min_ms = 50\nbackoff_max_ms = 400\n`),
    [],
    'pipe',
  );
  await waitReady(node, 'sender');
  const lines = (msg: string) => node.records.filter((r) => r.msg === msg && r.plugin === 'link');
  node.child.stdin!.write('refused\n');
  await waitFor(() => requests >= 6, 'several refused requests', 20_000);
  // the sink's counters reach /metrics once a second: wait for them, then read the link state
  const connected = await waitFor(async () => {
    const v = await connectedOf(admin, 'link');
    return v === undefined ? undefined : { v };
  }, 'the link state in /metrics', 20_000);
  t.is(connected.v, 0, 'a receiver refusing everything is not an up link');
  t.deepEqual(lines('Chain link up'), []);

  status = 204;
  const up = await waitFor(() => lines('Chain link up')[0], 'Chain link up', 20_000);
  t.is(up.status, 204);
  await waitFor(async () => ((await connectedOf(admin, 'link')) === 1 ? true : undefined), 'connected 1', 20_000);

  status = 503;
  node.child.stdin!.write('refused again\n');
  const down = await waitFor(() => lines('Chain link down')[0], 'Chain link down', 20_000);
  t.is(down.level, 'warn');
  t.is(down.status, 503);
  await waitFor(async () => ((await connectedOf(admin, 'link')) === 0 ? true : undefined), 'connected 0', 20_000);
  status = 204;
  await waitFor(() => lines('Chain link up').length === 2, 'up again', 20_000);
});

test.serial('nats sink: connected to the server but no stream takes its publishes: down after backoff_max_ms, up once a publish is acknowledged', async (t) => {
  t.timeout(90_000);
  const servers = await startNats(t);
  const nc = await natsClient(t, servers);
  const admin = await freePort();
  const node = startOwnedNode(t, senderToml(admin, natsSinkToml('js', servers, 'subject = "logs.app"\nflush_interval_ms = 20\nrequest_timeout_ms = 1000')), [], 'pipe');
  await waitReady(node, 'sender');
  await waitFor(async () => ((await connectedOf(admin, 'js')) === 1 ? true : undefined), 'connected to the server', 20_000);
  node.child.stdin!.write('nowhere to go\n');
  const down = await waitFor(() => node.records.find((r) => r.msg === 'NATS publish down' && r.plugin === 'js'), 'NATS publish down', 30_000);
  t.is(down.level, 'warn');
  t.regex(String(down.error), /no stream/);
  // counters reach the primary once a second
  await waitFor(async () => ((await connectedOf(admin, 'js')) === 0 ? true : undefined), 'publishes failing over a live connection: connected 0', 20_000);
  const retries = sampleValue(parseExposition((await adminRequest(admin, '/metrics')).body), 'logrelay_chain_retries_total', { pipeline: 'send', component: 'js' });
  t.true((retries ?? 0) > 0, `retries in /metrics: ${retries}`);

  await createStream(nc, 'LOGS', ['logs.>']);
  await waitFor(() => node.records.find((r) => r.msg === 'NATS publish up' && r.plugin === 'js'), 'NATS publish up', 30_000);
  await waitFor(async () => ((await connectedOf(admin, 'js')) === 1 ? true : undefined), 'connected 1 again', 20_000);
});
