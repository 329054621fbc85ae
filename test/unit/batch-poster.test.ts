// The batch poster (net/batch-poster.ts) against a real HTTP server on 127.0.0.1: Retry-After in
// both forms is waited for, a 413 splits the batch until it fits, and no more than max_in_flight
// requests are out at once; the builder closes batches at their count and bytes.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import test, { type ExecutionContext } from 'ava';
import { createLogger } from '../../src/core/log.js';
import { BatchBuilder } from '../../src/net/batch-builder.js';
import { type BatchPoster, createBatchPoster, type PostBatch, retryAfterMs, retryDelayMs } from '../../src/net/batch-poster.js';
import { waitFor } from '../helpers/node.js';

const log = createLogger('silent', { write: () => undefined });

/** A batch of numbered lines; its body is one line each. */
interface Lines extends PostBatch {
  readonly lines: readonly string[];
}

const batchOf = (lines: readonly string[]): Lines => ({ lines, count: lines.length, tickets: lines.map(() => undefined) });

interface Seen {
  /** each request's lines, in arrival order */
  readonly bodies: string[][];
  /** when each request arrived, epoch ms */
  readonly at: number[];
}

/** A server answering each request with `answer(n, lines, res)` (n counts requests from 0). */
async function server(t: ExecutionContext, answer: (n: number, lines: string[], res: ServerResponse, req: IncomingMessage) => void): Promise<{ port: number; seen: Seen }> {
  const seen: Seen = { bodies: [], at: [] };
  const srv = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const lines = Buffer.concat(chunks).toString('utf8').split('\n').filter((l) => l !== '');
      seen.at.push(Date.now());
      seen.bodies.push(lines);
      answer(seen.bodies.length - 1, lines, res, req);
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    srv.closeAllConnections();
    srv.close();
  });
  return { port: (srv.address() as AddressInfo).port, seen };
}

interface Outcome {
  delivered: string[];
  refused: { lines: readonly string[]; status: number }[];
  finished: number;
}

/** A poster of `Lines` to 127.0.0.1:`port`, with what it delivered and refused. */
function poster(t: ExecutionContext, port: number, maxInFlight = 4): { poster: BatchPoster<Lines>; out: Outcome; counters: { batches_sent: number; retries: number } } {
  const out: Outcome = { delivered: [], refused: [], finished: 0 };
  const counters = { batches_sent: 0, retries: 0 };
  const p = createBatchPoster<Lines>({
    target: { host: '127.0.0.1', port, path: '/in', tls: undefined, remote: `127.0.0.1:${port}` },
    headers: { 'Content-Type': 'text/plain' },
    // a quick backoff: what the tests wait for is the peer's Retry-After
    cfg: { max_in_flight: maxInFlight, request_timeout_ms: 5000, backoff_min_ms: 10, backoff_max_ms: 50 },
    ctx: { log, checkOnly: false },
    counters,
    link: { succeeded: () => undefined, failed: () => undefined },
    retryAfterCapMs: 10_000,
    isRetryable: (status) => status === 503,
    lines: { retrying: 'retrying', attemptFailed: 'attempt failed' },
    body: (batch) => {
      const body = Buffer.from(batch.lines.map((l) => `${l}\n`).join(''));
      return { chunks: [body], bytes: body.length };
    },
    accepted: (batch) => out.delivered.push(...batch.lines),
    refused: (batch, status) => out.refused.push({ lines: batch.lines, status }),
    unencodable: () => t.fail('no body fails to encode here'),
    split: (batch) => (batch.count < 2 ? undefined : [batchOf(batch.lines.slice(0, batch.count >> 1)), batchOf(batch.lines.slice(batch.count >> 1))]),
    finished: () => out.finished++,
  });
  t.teardown(() => p.close());
  return { poster: p, out, counters };
}

test('Retry-After reads delta seconds and an HTTP date; the wait is never shorter, capped where asked', (t) => {
  const now = Date.UTC(2030, 0, 1);
  t.is(retryAfterMs('2', now), 2000);
  t.is(retryAfterMs('0.5', now), 500);
  t.is(retryAfterMs(new Date(now + 10_000).toUTCString(), now), 10_000);
  t.is(retryAfterMs(new Date(now - 10_000).toUTCString(), now), 0, 'a date past is now');
  t.is(retryAfterMs(['3', '9'], now), 3000, 'the first of repeated headers');
  t.is(retryAfterMs('soon', now), undefined);
  t.is(retryAfterMs(undefined, now), undefined);
  for (let i = 0; i < 20; i++) {
    const d = retryDelayMs(100, 2000, 60_000);
    t.true(d >= 2000 && d <= 2400, `${d}: Retry-After with at most 20 % added`);
  }
  t.is(retryDelayMs(100, 120_000, 1000), 1000, 'capped');
  t.is(retryDelayMs(700, 200, 1000), 700, 'the backoff when longer');
  t.is(retryDelayMs(700, undefined, 1000), 700);
});

for (const form of ['seconds', 'HTTP date'] as const) {
  test.serial(`a 503 with Retry-After as ${form} is retried no sooner than it asks; the batch arrives once`, async (t) => {
    const { port, seen } = await server(t, (n, _lines, res) => {
      if (n === 0) {
        // an HTTP date has whole seconds: two seconds on, at least one second away
        const after = form === 'seconds' ? '1' : new Date(Date.now() + 2000).toUTCString();
        res.writeHead(503, { 'Retry-After': after }).end();
      } else res.writeHead(204).end();
    });
    const { poster: p, out, counters } = poster(t, port);
    p.push(batchOf(['a', 'b']));
    await waitFor(() => out.finished === 1, 'the batch delivered after the 503', 10_000);
    t.deepEqual(out.delivered, ['a', 'b']);
    t.is(seen.bodies.length, 2, 'one refused attempt, one delivered');
    const waited = seen.at[1]! - seen.at[0]!;
    // the backoff alone is 10 ms
    t.true(waited >= 900, `retried after ${waited} ms, sooner than Retry-After`);
    t.is(counters.retries, 1);
    t.is(counters.batches_sent, 1);
    t.is(p.held(), 0);
  });
}

test.serial('a 413 splits the batch in halves, in order, until each fits; a single entry refused 413 is handed back', async (t) => {
  // the peer takes at most two lines a request, and never the line "huge"
  const { port, seen } = await server(t, (_n, lines, res) => res.writeHead(lines.length > 2 || lines.includes('huge') ? 413 : 204).end());
  const { poster: p, out, counters } = poster(t, port, 1);
  const lines = ['0', '1', '2', '3', '4', 'huge', '6', '7'];
  p.push(batchOf(lines));
  // [0-3] → [0 1] [2 3]; [4 huge 6 7] → [4 huge] → [4] [huge]; [6 7]
  await waitFor(() => out.finished === 5, 'every part of the batch over', 10_000);
  t.deepEqual(out.delivered, ['0', '1', '2', '3', '4', '6', '7'], 'every line but the refused one, in order');
  t.deepEqual(out.refused, [{ lines: ['huge'], status: 413 }]);
  t.deepEqual(seen.bodies[0], lines, 'the whole batch was tried first');
  t.is(counters.retries, 0, 'a split is no retry');
  t.is(p.held(), 0);
});

test.serial('no more than max_in_flight requests are out at once; the rest wait their turn', async (t) => {
  const held: ServerResponse[] = [];
  let open = 0;
  let most = 0;
  const { port, seen } = await server(t, (_n, _lines, res) => {
    open++;
    most = Math.max(most, open);
    res.on('finish', () => open--);
    held.push(res);
  });
  const { poster: p, out } = poster(t, port, 2);
  for (let i = 0; i < 6; i++) p.push(batchOf([`b${i}`]));
  t.is(p.inFlight(), 2, 'two posted at once, four waiting');
  t.is(p.held(), 6);
  t.false(p.hasRoom());
  await waitFor(() => seen.bodies.length === 2, 'the first two at the server');
  // answer one at a time: each answer lets exactly one more out
  for (let answered = 0; answered < 6; answered++) {
    await waitFor(() => held.length > 0, `request ${answered + 1} at the server`);
    t.true(p.inFlight() <= 2, `${p.inFlight()} out`);
    held.shift()!.writeHead(204).end();
  }
  await waitFor(() => out.finished === 6, 'all six delivered');
  t.is(most, 2, 'the server saw two at once at the most, and two did happen');
  t.deepEqual(out.delivered, ['b0', 'b1', 'b2', 'b3', 'b4', 'b5']);
  t.true(p.idle());
});

test('the builder closes a batch at its count, before an item that would pass its bytes, and on flush', async (t) => {
  const closed: string[][] = [];
  const b = new BatchBuilder<string>({ maxCount: 3, maxBytes: 10, flushMs: 20, close: (items) => closed.push(items) });
  t.teardown(() => b.stop());
  for (const s of ['a', 'b', 'c']) b.add(s, 1);
  b.add('d', 3);
  t.deepEqual(closed, [['a', 'b', 'c']]);
  b.add('long', 8);
  t.deepEqual(closed[1], ['d'], 'closed before the item that would pass 10 bytes');
  b.settle(false);
  await waitFor(() => closed.length === 3, 'closed on flush_interval_ms');
  t.deepEqual(closed[2], ['long']);
  b.add('now', 1);
  b.settle(true);
  t.deepEqual(closed[3], ['now'], 'an idle link: at once');
});
