// Slow clients (issue 30 point 6): a few hundred connections that send their request headers one
// byte every few seconds, against every HTTP listener of a node (the admin endpoint in the
// primary, the http sink and the http_chain source in a worker), are cut within the headers
// timeout (5 s, src/net/http-server.ts), while probes, the sink and ingest still answer.

import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import test from 'ava';
import { ADMIN_MAX_CONNECTIONS } from '../../src/primary/admin.js';
import { HEADERS_TIMEOUT_MS } from '../../src/net/http-server.js';
import { chainSourceToml } from '../helpers/chain.js';
import { freePort, startOwnedNode, waitFor } from '../helpers/node.js';
import { localPluginToml } from '../helpers/toml.js';

const SLOW = 200;
const HEAD = 'GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ' + 'x'.repeat(200) + '\r\n\r\n';
/** Before the fix the listeners held such clients 60-90 s; cut within this they were cut by the headers timeout. */
const CUT_WITHIN_MS = HEADERS_TIMEOUT_MS + 10_000;

interface Slow {
  readonly socket: Socket;
  readonly opened: number;
  closed?: number;
  /** bytes it had sent when it was cut */
  sent: number;
  /** the server answered something (e.g. 408) rather than only closing */
  answered: boolean;
}

/** Opens `n` connections to `port` that each send one byte of a request head every 2 s. */
async function openSlow(port: number, n: number, sockets: Socket[]): Promise<Slow[]> {
  const out: Slow[] = [];
  await Promise.all(
    Array.from({ length: n }, async () => {
      const socket = connect({ host: '127.0.0.1', port });
      sockets.push(socket);
      const s: Slow = { socket, opened: Date.now(), sent: 0, answered: false };
      out.push(s);
      socket.on('error', () => {});
      socket.on('data', () => (s.answered = true));
      const timer = setInterval(() => {
        if (!socket.destroyed && s.sent < HEAD.length) socket.write(HEAD[s.sent++]!);
      }, 2000);
      socket.once('close', () => {
        s.closed = Date.now();
        clearInterval(timer);
      });
      await new Promise<void>((resolve) => {
        socket.once('connect', () => {
          socket.write(HEAD[s.sent++]!);
          resolve();
        });
        socket.once('close', () => resolve());
      });
    }),
  );
  return out;
}

/**
 * An HTTP answer's status to a request on a connection of its own (as a probe makes it: no
 * kept-alive connection from an earlier request); 0 when refused or cut.
 */
function status(port: number, path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<number> {
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method: init.method ?? 'GET', headers: init.headers, agent: false, timeout: 3000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end(init.body);
  });
}

test.serial('hundreds of slow clients against the admin endpoint, the http sink and the http_chain source are cut within the headers timeout; probes, the sink and ingest answer', async (t) => {
  const [adminPort, sinkPort, chainPort] = [await freePort(), await freePort(), await freePort()];
  startOwnedNode(
    t,
    `[admin]\nport = ${adminPort}\n\n[[pipelines]]\nname = "recv"\n${chainSourceToml('link', 'http_chain', chainPort)}${localPluginToml('sinks', 'web', 'http', sinkPort)}`,
  );
  await waitFor(async () => (await status(adminPort, '/readyz')) === 200, 'node ready', 30_000);
  const sockets: Socket[] = [];
  t.teardown(() => sockets.forEach((s) => s.destroy()));

  const attacked = { admin: adminPort, http: sinkPort, http_chain: chainPort };
  const slow: Record<string, Slow[]> = {};
  for (const [name, port] of Object.entries(attacked)) slow[name] = await openSlow(port, SLOW, sockets);
  const allOpened = Date.now();

  // While the slow clients are held: ingest and the sink answer at once, the admin probes (each on
  // a connection of its own) once the cap's slots are freed, at most the headers timeout later.
  const body = `${JSON.stringify({ source: 'peer', message: 'through the crowd' })}\n`;
  const ingest = await waitFor(
    async () =>
      (await status(chainPort, '/ingest', {
        method: 'POST',
        headers: { 'x-logrelay-protocol': '1', 'x-logrelay-node': 'edge', 'content-type': 'application/x-ndjson' },
        body,
      })) || undefined,
    'the http_chain source answers an upload',
    CUT_WITHIN_MS,
  );
  t.is(ingest, 204, 'the upload is taken');
  t.is(await waitFor(async () => (await status(sinkPort, '/status')) || undefined, 'the http sink answers', CUT_WITHIN_MS), 200);
  t.log(`ingest and the http sink answered ${Date.now() - allOpened} ms after the crowd arrived`);
  t.is(await waitFor(async () => (await status(adminPort, '/livez')) || undefined, '/livez answers', CUT_WITHIN_MS), 200);
  const ready = await waitFor(async () => (await status(adminPort, '/readyz')) || undefined, '/readyz answers', CUT_WITHIN_MS);
  t.is(ready, 200);
  const probed = Date.now() - allOpened;

  for (const [name, list] of Object.entries(slow)) {
    await waitFor(() => list.every((s) => s.closed !== undefined), `every slow client of ${name} cut`, CUT_WITHIN_MS + 10_000);
    const held = list.map((s) => s.closed! - s.opened);
    const longest = Math.max(...held);
    const incomplete = list.filter((s) => s.sent < HEAD.length).length;
    t.log(`${name}: ${list.length} slow clients, held at most ${longest} ms, ${list.filter((s) => s.answered).length} answered (408), ${incomplete} cut before their head was complete`);
    t.true(longest <= CUT_WITHIN_MS, `${name}: a slow client was held ${longest} ms`);
    t.is(incomplete, list.length, `${name}: no slow client got its request through`);
  }
  // The admin endpoint never held more than its cap: the rest were closed as they came.
  const admin = slow.admin!;
  const refusedAtOnce = admin.filter((s) => s.closed! - s.opened < HEADERS_TIMEOUT_MS - 1000).length;
  t.log(`admin: ${refusedAtOnce} closed at once (cap ${ADMIN_MAX_CONNECTIONS}); probes answered ${probed} ms after the crowd arrived`);
  t.true(refusedAtOnce >= SLOW - ADMIN_MAX_CONNECTIONS, `admin: ${refusedAtOnce} of ${SLOW} closed at once, cap ${ADMIN_MAX_CONNECTIONS}`);
});
