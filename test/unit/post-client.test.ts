// The lean HTTP/1.1 client of the batch poster (net/post-client.ts) against a raw TCP server on
// 127.0.0.1 that records the request bytes and answers with scripted bytes: the request on the wire,
// answers in every framing (also a byte at a time), Connection: close, malformed and cut answers,
// the timeout, headers that would break a request, and the bound on connections.

import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import test, { type ExecutionContext } from 'ava';
import { type PostAnswer, PostClient, type PostClientOptions } from '../../src/net/post-client.js';
import { waitFor } from '../helpers/node.js';

interface Request {
  readonly head: string;
  readonly body: string;
  /** the connection it came on, numbered from 0 */
  readonly conn: number;
}

/**
 * A server that parses each request (head, Content-Length body) and answers with `answer(n, req)`:
 * the bytes to write (written a byte at a time when `trickle`), or undefined to stay silent.
 */
async function server(t: ExecutionContext, answer: (n: number, req: Request) => string | undefined, trickle = false) {
  const requests: Request[] = [];
  const sockets: Socket[] = [];
  const srv = createServer((socket) => {
    const conn = sockets.push(socket) - 1;
    let buf = '';
    socket.setEncoding('latin1');
    socket.on('error', () => undefined);
    socket.on('data', (chunk: string) => {
      buf += chunk;
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.slice(0, end);
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buf.length < end + 4 + length) return;
        const req = { head, body: buf.slice(end + 4, end + 4 + length), conn };
        buf = buf.slice(end + 4 + length);
        requests.push(req);
        const out = answer(requests.length - 1, req);
        if (out === undefined) continue;
        if (!trickle) socket.write(out, 'latin1');
        else {
          let i = 0;
          const next = () => {
            if (i >= out.length || socket.destroyed) return;
            socket.write(out[i++]!, 'latin1');
            setTimeout(next, 1);
          };
          next();
        }
      }
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    srv.close();
  });
  return { port: (srv.address() as AddressInfo).port, requests, sockets };
}

function client(t: ExecutionContext, port: number, o: Partial<PostClientOptions> = {}): PostClient {
  const c = new PostClient({ host: '127.0.0.1', port, tls: undefined, maxSockets: 4, idleMs: 30_000, headers: { 'Content-Type': 'application/x-ndjson', 'X-Logrelay-Protocol': '1' }, maxBody: 1024, ...o });
  t.teardown(() => c.destroy());
  return c;
}

/** One post as a promise: the answer, or the error's message. */
function post(c: PostClient, body: string[], headers?: Record<string, string>, timeoutMs = 5000): Promise<PostAnswer | string> {
  const chunks = body.map((s) => Buffer.from(s));
  const bytes = chunks.reduce((n, b) => n + b.length, 0);
  return new Promise((resolve) => c.post('/ingest', headers, chunks, bytes, timeoutMs, (err, answer) => resolve(err ? err.message : answer!)));
}

const NO_CONTENT = 'HTTP/1.1 204 No Content\r\nX-Logrelay-Accepted: 2\r\n\r\n';

test('a request on the wire: request line, Host, every request\'s headers with a request\'s own replacing them, Content-Length, the body\'s pieces in order; kept-alive posts share one connection', async (t) => {
  const { port, requests } = await server(t, () => NO_CONTENT);
  const c = client(t, port);
  const first = await post(c, ['{"a":1}\n', '{"b":2}\n']);
  t.is(typeof first === 'string' ? first : first.statusCode, 204);
  t.is((first as PostAnswer).headers['x-logrelay-accepted'], '2', 'header names lower case, as Node gives them');
  await post(c, ['frames'], { 'Content-Type': 'application/x-logrelay-frames', 'X-Logrelay-Protocol': '2' });
  await post(c, ['again']);
  t.is(requests.length, 3);
  const [a, b, again] = requests;
  t.is(a!.head.split('\r\n')[0], 'POST /ingest HTTP/1.1');
  t.true(a!.head.includes(`\r\nHost: 127.0.0.1:${port}\r\n`), 'Host with the port');
  t.true(a!.head.includes('\r\nContent-Type: application/x-ndjson\r\n'));
  t.regex(a!.head, /\r\nContent-Length: 16(\r\n|$)/);
  t.is(a!.body, '{"a":1}\n{"b":2}\n', 'the pieces one after another');
  t.is(b!.head.match(/content-type:/gi)?.length, 1, 'a request\'s own Content-Type replaces the common one, never added beside it');
  t.true(b!.head.includes('\r\nContent-Type: application/x-logrelay-frames\r\n') && b!.head.includes('\r\nX-Logrelay-Protocol: 2\r\n'));
  t.true(again!.head.includes('\r\nX-Logrelay-Protocol: 1\r\n'), 'the common headers again on the next plain request');
  t.deepEqual(
    requests.map((r) => r.conn),
    [0, 0, 0],
    'one kept-alive connection',
  );
});

const FRAMINGS: ReadonlyArray<readonly [string, string, number, string]> = [
  ['Content-Length', 'HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n{"error":"nope!"}', 400, '{"error":"nope!"}'],
  ['chunked, with an extension and a trailer', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n', 200, 'hello world'],
  ['100 Continue before the answer', 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n', 204, ''],
];

for (const trickle of [false, true]) {
  for (const [name, answer, status, body] of FRAMINGS) {
    test(`an answer framed by ${name}${trickle ? ', arriving a byte at a time,' : ''} is read whole and the connection kept for the next post`, async (t) => {
      const { port, requests } = await server(t, (n) => (n === 0 ? answer : NO_CONTENT), trickle);
      const c = client(t, port);
      const got = await post(c, ['x']);
      if (typeof got === 'string') return t.fail(got);
      t.is(got.statusCode, status);
      t.is(got.body.toString(), body);
      const next = await post(c, ['y']);
      t.is(typeof next === 'string' ? next : next.statusCode, 204, 'the next answer read on the same connection');
      t.deepEqual(
        requests.map((r) => r.conn),
        [0, 0],
      );
    });
  }
}

test('an answer without a length is read to the close; Connection: close is honoured; the next post dials anew', async (t) => {
  const { port, requests, sockets } = await server(t, (n) => {
    if (n === 0) {
      setImmediate(() => sockets[0]!.end());
      return 'HTTP/1.1 500 Internal Server Error\r\n\r\nall of it';
    }
    if (n === 1) return 'HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n';
    return NO_CONTENT;
  });
  const c = client(t, port);
  const first = await post(c, ['a']);
  if (typeof first === 'string') return t.fail(first);
  t.is(first.statusCode, 500);
  t.is(first.body.toString(), 'all of it');
  const second = await post(c, ['b']);
  if (typeof second === 'string') return t.fail(second);
  t.is(second.statusCode, 503);
  t.is(second.headers['retry-after'], '1');
  await post(c, ['c']);
  t.deepEqual(
    requests.map((r) => r.conn),
    [0, 1, 2],
    'a new connection after each that ended',
  );
});

test('a malformed answer, a peer that closes mid-answer and no answer within the timeout fail the post; the next post goes on a new connection', async (t) => {
  const { port, requests, sockets } = await server(t, (n, req) => {
    if (n === 0) return 'HTTP/1.1 2O4 Nope\r\n\r\n';
    if (n === 1) {
      setImmediate(() => sockets[req.conn]!.destroy());
      return 'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort';
    }
    if (n === 2) return undefined;
    return NO_CONTENT;
  });
  const c = client(t, port);
  t.regex((await post(c, ['a'])) as string, /malformed HTTP answer: status line/);
  t.regex((await post(c, ['b'])) as string, /socket hang up|ECONNRESET/);
  t.is(await post(c, ['c'], undefined, 300), 'no answer within request_timeout_ms (300 ms)');
  const last = await post(c, ['d']);
  t.is(typeof last === 'string' ? last : last.statusCode, 204);
  t.deepEqual(
    requests.map((r) => r.conn),
    [0, 1, 2, 3],
  );
});

test('a header value or path that would break the request fails the post before anything is written', async (t) => {
  const { port, requests } = await server(t, () => NO_CONTENT);
  const c = client(t, port, { headers: { 'X-Logrelay-Node': 'edge' } });
  t.regex((await post(c, ['a'], { 'X-Logrelay-Node': 'edge\r\nX-Evil: 1' })) as string, /breaks a request/);
  const bad = await new Promise<string>((resolve) => c.post('/in gest', undefined, [Buffer.from('a')], 1, 5000, (err) => resolve(err?.message ?? 'posted')));
  t.regex(bad, /needs escaping/);
  const ok = await post(c, ['b']);
  t.is(typeof ok === 'string' ? ok : ok.statusCode, 204);
  t.is(requests.length, 1, 'only the good request reached the server');
});

test('no more than maxSockets connections: posts beyond wait for a free one and all are answered', async (t) => {
  const held: (() => void)[] = [];
  const { port, requests, sockets } = await server(t, (_n, req) => {
    held.push(() => sockets[req.conn]!.write(NO_CONTENT));
    return undefined;
  });
  const c = client(t, port, { maxSockets: 2 });
  const answers = Promise.all([1, 2, 3, 4, 5].map((i) => post(c, [`${i}`])));
  await waitFor(() => requests.length === 2, 'two requests out');
  t.is(sockets.length, 2);
  // answer as they come, until all five were
  await waitFor(() => {
    while (held.length > 0) held.shift()!();
    return requests.length === 5;
  }, 'the waiting posts sent in turn');
  while (held.length > 0) held.shift()!();
  const got = await answers;
  t.deepEqual(
    got.map((a) => (typeof a === 'string' ? a : a.statusCode)),
    [204, 204, 204, 204, 204],
  );
  t.is(sockets.length, 2, 'never a third connection');
  t.deepEqual(requests.map((r) => r.body).sort(), ['1', '2', '3', '4', '5']);
});
