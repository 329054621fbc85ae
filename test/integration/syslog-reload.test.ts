// A reload (SIGHUP) under a steady stream of syslog datagrams: the new generation shares the UDP
// port from its build on, so every datagram is read by one generation or the other, once.

import { createSocket } from 'node:dgram';
import test from 'ava';
import { freePort, ownedTempDir, sleep, startNodeInDir, waitFor, waitReady } from '../helpers/node.js';
import { localPluginToml, sinkToml } from '../helpers/toml.js';

test.serial('udp datagrams sent across a reload all arrive, once each', async (t) => {
  t.timeout(90_000);
  const dir = ownedTempDir(t, 'logrelay-syslog-reload-');
  const port = await freePort();
  const node = startNodeInDir(t, dir, `[[pipelines]]\nname = "p"\n${localPluginToml('sources', 'in', 'syslog', port, 'mode = "udp"')}\n${sinkToml('out', 'stdout')}`);
  await waitReady(node, 'node');
  const sock = createSocket('udp4');
  t.teardown(() => sock.close());
  let sent = 0;
  const send = () => sock.send(`<14>1 - h app - - - datagram ${sent++}`, port, '127.0.0.1');
  const deadline = Date.now() + 30_000;
  // a datagram every 2 ms until the reload is done, and a second on
  while (!node.records.some((r) => r.msg === 'Configuration reloaded') && Date.now() < deadline) {
    send();
    if (sent === 500) node.signal('SIGHUP');
    await sleep(2);
  }
  t.true(node.records.some((r) => r.msg === 'Configuration reloaded'), 'the reload happened');
  for (let i = 0; i < 500; i++) {
    send();
    await sleep(2);
  }
  const total = sent;
  const got = await waitFor(() => {
    const lines = node.out.filter((l) => l.startsWith('datagram '));
    return lines.length >= total ? lines : undefined;
  }, `all ${total} datagrams printed`);
  const seen = new Set(got);
  t.is(seen.size, total, 'each once');
  t.is(got.length, total);
});
