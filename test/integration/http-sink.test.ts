// The `http` sink against real clients (DESIGN.md §7, §8, §11): the eventsource package, a raw
// HTTP client checking the exact framing, the status document, max_connections, a client that
// stops reading, and a burst larger than client_buffer_size.

import { appendFileSync, readFileSync } from 'node:fs';
import { type ClientRequest, type IncomingMessage, request } from 'node:http';
import test from 'ava';
import { EventSource } from 'eventsource';
import { childPids, freePort, ownedTempDir, type RunningNode, startOwnedNode, type Teardown, waitFor, within } from '../helpers/node.js';
import { fileSourceToml, localPluginToml, randomSourceToml } from '../helpers/toml.js';

interface Reply {
  readonly status: number;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

/** One request on a fresh connection; the whole answer, or a rejection (no full answer within 10 s included). */
function get(port: number, path: string, method = 'GET'): Promise<Reply> {
  let req: ClientRequest | undefined;
  const reply = new Promise<Reply>((resolve, reject) => {
    req = request({ host: '127.0.0.1', port, path, method, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
  return within(reply, 10_000, () => {
    req?.destroy();
    return new Error(`${method} ${path} on ${port}: no full answer within 10 s`);
  });
}

/** A raw stream client: keeps every byte of the response as text. */
interface RawStream {
  readonly req: ClientRequest;
  res?: IncomingMessage;
  text: string;
  ended: boolean;
}

function openStream(port: number, path = '/stream', headers: Record<string, string> = {}): RawStream {
  const s: RawStream = { req: request({ host: '127.0.0.1', port, path, headers, agent: false }), text: '', ended: false };
  s.req.on('response', (res) => {
    s.res = res;
    res.setEncoding('utf8');
    res.on('data', (c: string) => {
      s.text += c;
    });
    res.on('end', () => {
      s.ended = true;
    });
    res.on('error', () => {
      s.ended = true;
    });
  });
  s.req.on('error', () => {
    s.ended = true;
  });
  s.req.end();
  return s;
}

interface StatusDoc {
  service: string;
  version: string;
  instance_id: string;
  server: {
    type: string;
    host: string;
    port: number;
    tls: boolean;
    active_clients: number;
    buffer_size: number;
    client_buffer_size: number;
    max_connections: number;
    write_timeout_ms: number;
    uptime_seconds: number;
  };
  endpoints: { stream: string; status: string };
  statistics: { total_processed: number; dropped_writes: number; rejected_clients: number; auth_rejected: number };
}

/** The ids of the entry events seen so far. */
function ids(text: string): number[] {
  const out: number[] = [];
  for (const m of text.matchAll(/^id: (\d+)$/gm)) out.push(Number(m[1]));
  return out;
}

async function status(port: number): Promise<StatusDoc> {
  const r = await get(port, '/status');
  return JSON.parse(r.body) as StatusDoc;
}

const STDIN_SOURCE = '[[pipelines.plugin_sources]]\ntype = "stdin"\n';

/** A node at debug with pipeline `web`: one source table (`source`), then `sinks`; killed in teardown. */
function startNode(t: Teardown, source: string, sinks: string, stdin: 'pipe' | 'ignore' = 'ignore'): RunningNode {
  return startOwnedNode(t, `\n[[pipelines]]\nname = "web"\n${source}${sinks}\n`, ['--logging.level=debug'], stdin);
}

async function listening(port: number, node: RunningNode): Promise<void> {
  await waitFor(
    () =>
      get(port, '/status').then(
        (r) => r.status === 200,
        () => node.child.exitCode !== null && Promise.reject(new Error(`node exited: ${node.errText.join('\n')}`)),
      ),
    `http sink listening on ${port}`,
  );
}

function sinkToml(id: string, port: number, extra = ''): string {
  return `\n${localPluginToml('sinks', id, 'http', port, extra)}\n`;
}

test.serial('raw client: exact SSE framing, CR/LF/CRLF split into data lines, ids from the wall clock, pings, disconnect on stop', async (t) => {
  const port = await freePort();
  const startedAt = Date.now();
  const node = startNode(t, STDIN_SOURCE, sinkToml('web', port, 'heartbeat_interval_ms = 300'), 'pipe');
  await listening(port, node);
  const s = openStream(port);
  await waitFor(() => s.text.includes('event: connected'), 'connected event');
  t.is(s.res!.statusCode, 200);
  t.is(s.res!.headers['content-type'], 'text/event-stream');
  t.is(s.res!.headers['cache-control'], 'no-cache');
  t.is(s.res!.headers['x-accel-buffering'], 'no');
  t.is(s.res!.headers['access-control-allow-origin'], '*');
  const hello = /^retry: 2000\n\nevent: connected\ndata: (.*)\n\n/.exec(s.text);
  t.truthy(hello, s.text);
  const connected = JSON.parse(hello![1]!) as Record<string, unknown>;
  t.deepEqual(Object.keys(connected), ['client_id', 'instance_id']);
  t.is(connected.instance_id, 'web');

  node.child.stdin!.write(`${JSON.stringify({ msg: 'one\ntwo\r\nthree\rfour' })}\nplain line\n${JSON.stringify({ msg: 'tail\r' })}\n`);
  await waitFor(() => ids(s.text).length >= 3, 'three entry events');
  const events = s.text.slice(hello![0].length);
  const first = ids(s.text)[0]!;
  t.true(first > startedAt && first <= Date.now(), `the first id ${first} is the wall clock (ms) when the sink opened`);
  t.true(
    events.startsWith(`id: ${first}\ndata: one\ndata: two\ndata: three\ndata: four\n\nid: ${first + 1}\ndata: plain line\n\nid: ${first + 2}\ndata: tail\ndata: \n\n`),
    JSON.stringify(events),
  );
  const before = s.text.length;
  await waitFor(() => s.text.slice(before).includes(': ping\n\n'), 'a heartbeat comment');

  t.is(await node.stop(), 0);
  await waitFor(() => s.ended, 'stream closed by the stop');
  t.regex(s.text, /event: disconnect\ndata: [^\n]*\n\n$/);
});

test.serial('eventsource package receives entries; status document has exactly the §8 keys and its counters move', async (t) => {
  const port = await freePort();
  const node = startNode(t, randomSourceToml('interval_ms = 20\nlength = 5'), sinkToml('web', port, 'buffer_size = 500\nclient_buffer_size = 64'));
  await listening(port, node);

  const doc = await status(port);
  const typeTree = (v: unknown): unknown =>
    typeof v === 'object' && v !== null ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, typeTree(x)])) : typeof v;
  t.deepEqual(typeTree(doc), {
    service: 'string',
    version: 'string',
    instance_id: 'string',
    server: {
      type: 'string',
      host: 'string',
      port: 'number',
      tls: 'boolean',
      active_clients: 'number',
      buffer_size: 'number',
      client_buffer_size: 'number',
      max_connections: 'number',
      write_timeout_ms: 'number',
      uptime_seconds: 'number',
    },
    endpoints: { stream: 'string', status: 'string' },
    statistics: { total_processed: 'number', dropped_writes: 'number', rejected_clients: 'number', auth_rejected: 'number' },
  });
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
  t.like(doc, {
    service: 'logrelay',
    version: pkg.version,
    instance_id: 'web',
    server: { type: 'http', host: '127.0.0.1', port, tls: false, active_clients: 0, buffer_size: 500, client_buffer_size: 64, max_connections: 0, write_timeout_ms: 5000 },
    endpoints: { stream: '/stream', status: '/status' },
  });

  const es = new EventSource(`http://127.0.0.1:${port}/stream`);
  t.teardown(() => es.close());
  const messages: string[] = [];
  let hello: Record<string, unknown> | undefined;
  es.addEventListener('connected', (ev) => {
    hello = JSON.parse(ev.data) as Record<string, unknown>;
  });
  es.onmessage = (ev) => messages.push(ev.data);
  await waitFor(() => messages.length >= 5, 'entries through eventsource');
  t.is(hello?.instance_id, 'web');
  t.regex(messages[0]!, /^[a-z]+( [a-z]+){4}$/);
  const p1 = await waitFor(async () => {
    const d = await status(port);
    return d.server.active_clients === 1 && d.statistics.total_processed > 0 ? d : undefined;
  }, 'active_clients 1 with a stream open');
  await waitFor(async () => {
    const d = await status(port);
    return d.statistics.total_processed > p1.statistics.total_processed;
  }, 'total_processed rises');
  await waitFor(async () => (await status(port)).server.uptime_seconds > p1.server.uptime_seconds, `uptime_seconds grows past ${p1.server.uptime_seconds}`);
  es.close();
  await waitFor(async () => (await status(port)).server.active_clients === 0, 'active_clients back to 0 after the client left');
  t.is(await node.stop(), 0);
});

test.serial('max_connections = 2: a third stream gets 503 too many clients; 404 (the page too, with ui = false) and 405 answers', async (t) => {
  const port = await freePort();
  const node = startNode(t, randomSourceToml('interval_ms = 100'), sinkToml('web', port, 'max_connections = 2\nstream_path = "/events"\nstatus_path = "/state"\nui = false'));
  await waitFor(() => get(port, '/state').then((r) => r.status === 200, () => false), 'listening');
  const a = openStream(port, '/events');
  const b = openStream(port, '/events');
  await waitFor(() => a.text.includes('event: connected') && b.text.includes('event: connected'), 'two streams connected');
  const third = await get(port, '/events');
  t.is(third.status, 503);
  t.deepEqual(JSON.parse(third.body), { error: 'too many clients' });
  const doc = JSON.parse((await get(port, '/state')).body) as StatusDoc;
  t.is(doc.statistics.rejected_clients, 1);
  t.is(doc.server.active_clients, 2);
  t.deepEqual(doc.endpoints, { stream: '/events', status: '/state' });

  for (const path of ['/', '/index.html']) t.is((await get(port, path)).status, 404, `${path} with ui = false`);
  const missing = await get(port, '/stream');
  t.is(missing.status, 404);
  t.deepEqual(JSON.parse(missing.body), { error: 'not found' });
  t.is(missing.headers['content-type'], 'application/json');
  for (const path of ['/events', '/state']) {
    const wrong = await get(port, path, 'POST');
    t.is(wrong.status, 405, path);
    t.is(wrong.headers.allow, 'GET', path);
  }
  // a freed slot is usable again
  a.req.destroy();
  await waitFor(async () => {
    const d = JSON.parse((await get(port, '/state')).body) as StatusDoc;
    return d.server.active_clients === 1;
  }, 'one slot freed');
  const c = openStream(port, '/events');
  await waitFor(() => c.text.includes('event: connected'), 'a new stream takes the freed slot');
  t.is(await node.stop(), 0);
});

function rssKb(pid: number): { rss: number; hwm: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}

test.serial('a client that stops reading: the others get everything, its drops are counted, memory stays bounded, then it is disconnected', async (t) => {
  const port = await freePort();
  const node = startNode(t, randomSourceToml('interval_ms = 10\nentries_per_tick = 20\nlength = 150'), sinkToml('web', port, 'write_timeout_ms = 3000'));
  await listening(port, node);
  const worker = await waitFor(async () => (await childPids(node.child.pid!))[0], 'worker pid');
  const fast = [openStream(port), openStream(port)];
  const slow = openStream(port);
  await waitFor(() => [...fast, slow].every((s) => s.res !== undefined), 'three streams open');
  slow.res!.pause();
  const base = rssKb(worker);

  const samples: number[] = [];
  const sampler = setInterval(() => samples.push(rssKb(worker).rss), 250);
  t.teardown(() => clearInterval(sampler));
  const dropping = await waitFor(
    async () => {
      const d = await status(port);
      return d.statistics.dropped_writes > 0 ? d : undefined;
    },
    'the slow client drops writes',
    30_000,
  );
  t.is(dropping.server.active_clients, 3);
  await waitFor(async () => (await status(port)).server.active_clients === 2, 'the slow client is disconnected after write_timeout_ms', 20_000);
  clearInterval(sampler);
  const peak = Math.max(...samples);
  t.log(`worker RSS: ${base.rss} kB before, peak ${peak} kB while the slow client stalled (${samples.length} samples), VmHWM ${rssKb(worker).hwm} kB`);

  // The fast clients saw every entry the sink took, in order, without a gap.
  for (const s of fast) {
    const got = ids(s.text);
    t.true(got.length > 1000, `a fast client got ${got.length} entries`);
    const gaps = got.filter((id, i) => i > 0 && id !== got[i - 1]! + 1).length;
    t.is(gaps, 0);
  }
  // Memory stays bounded by the queues: the stall did not pile up what the sink sent meanwhile.
  const d = await status(port);
  t.true(d.statistics.dropped_writes > 1000, `dropped_writes ${d.statistics.dropped_writes}`);
  t.true(peak - base.rss < 64 * 1024, `RSS grew ${peak - base.rss} kB`);
  // The slow client, reading again, finds its connection closed after what was buffered.
  slow.res!.resume();
  await waitFor(() => slow.ended, 'the slow stream ends');
  t.is(await node.stop(), 0);
});

test.serial('a burst larger than client_buffer_size drops exactly the excess; no drop when the bound covers it', async (t) => {
  const [small, big] = [await freePort(), await freePort()];
  const node = startNode(t, STDIN_SOURCE, `${sinkToml('small', small, 'client_buffer_size = 100')}\n${sinkToml('big', big, 'client_buffer_size = 300')}`, 'pipe');
  await listening(small, node);
  await listening(big, node);
  const a = openStream(small);
  const b = openStream(big);
  await waitFor(() => a.text.includes('event: connected') && b.text.includes('event: connected'), 'both connected');
  let burst = '';
  for (let i = 1; i <= 300; i++) burst += `entry ${i}\n`;
  node.child.stdin!.write(burst);
  await waitFor(async () => (await status(small)).statistics.total_processed === 300, 'small sink took the burst');
  await waitFor(async () => (await status(big)).statistics.total_processed === 300, 'big sink took the burst');
  await waitFor(() => ids(b.text).length === 300, 'the big client gets all 300');
  await waitFor(() => ids(a.text).length === 100, 'the small client gets 100');
  t.is((await status(small)).statistics.dropped_writes, 200);
  t.is((await status(big)).statistics.dropped_writes, 0);
  const first = ids(a.text)[0]!;
  t.deepEqual(ids(a.text), Array.from({ length: 100 }, (_, i) => first + i));
  t.true(a.text.includes('data: entry 100\n') && !a.text.includes('data: entry 101\n'));
  t.is(await node.stop(), 0);
});

/** The data lines of the entry events seen so far. */
function entryData(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^id: \d+\ndata: (.*)$/gm)) out.push(m[1]!);
  return out;
}

test.serial('Last-Event-ID: a reconnecting client gets what it missed from the replay ring, at most replay_size; ?format=json encodes entries', async (t) => {
  const port = await freePort();
  const node = startNode(t, STDIN_SOURCE, sinkToml('web', port, 'replay_size = 3'), 'pipe');
  await listening(port, node);
  node.child.stdin!.write('e1\ne2\ne3\ne4\nERROR e5\n');
  await waitFor(async () => (await status(port)).statistics.total_processed === 5, 'five entries taken with no client');
  const all = openStream(port, '/stream', { 'Last-Event-ID': '0' });
  await waitFor(() => ids(all.text).length === 3, 'the ring replayed');
  t.deepEqual(entryData(all.text), ['e3', 'e4', 'ERROR e5'], 'only the last replay_size entries are held');
  const [, id4] = ids(all.text);
  const after4 = openStream(port, '/stream', { 'Last-Event-ID': String(id4) });
  const byQuery = openStream(port, `/stream?format=json&last_event_id=${id4}`);
  const fresh = openStream(port);
  await waitFor(() => ids(after4.text).length === 1 && ids(byQuery.text).length === 1 && fresh.text.includes('event: connected'), 'replays after id 4');
  t.deepEqual(entryData(after4.text), ['ERROR e5']);
  t.like(JSON.parse(entryData(byQuery.text)[0]!), { source: 'stdin', level: 'ERROR', message: 'ERROR e5' });
  t.deepEqual(ids(fresh.text), [], 'no Last-Event-ID, no replay');
  node.child.stdin!.write('e6\n');
  await waitFor(() => ids(fresh.text).length === 1 && ids(after4.text).length === 2, 'e6 live to both');
  t.is(ids(after4.text)[1], ids(after4.text)[0]! + 1);
  t.is(await node.stop(), 0);
});

test.serial('eventsource across a SIGHUP reload: ids keep increasing, the client resumes by Last-Event-ID, none missing, none twice', async (t) => {
  const port = await freePort();
  const logs = ownedTempDir(t);
  const file = logs.file('app.log', '');
  const node = startNode(t, fileSourceToml('f', logs.path, 'from = "start"\ncheck_interval_ms = 100'), sinkToml('web', port));
  await listening(port, node);
  const es = new EventSource(`http://127.0.0.1:${port}/stream`);
  t.teardown(() => es.close());
  const got: { id: number; data: string }[] = [];
  let written = 0;
  const marks: { disconnect?: number; reconnect?: number } = {};
  let connects = 0;
  es.addEventListener('connected', () => {
    if (++connects === 2) marks.reconnect = written;
  });
  es.addEventListener('disconnect', () => {
    marks.disconnect = written;
  });
  es.onmessage = (ev) => got.push({ id: Number(ev.lastEventId), data: ev.data });
  await waitFor(() => connects === 1, 'stream open');
  const writeOne = () => appendFileSync(file, `line ${++written}\n`);
  for (let i = 0; i < 20; i++) writeOne();
  await waitFor(() => got.length === 20, 'the first 20 lines');
  const writer = setInterval(writeOne, 10);
  t.teardown(() => clearInterval(writer));
  node.signal('SIGHUP');
  await waitFor(() => node.records.some((r) => r.msg === 'Configuration reloaded'), 'reload done');
  await waitFor(() => marks.reconnect !== undefined, 'the client reconnected', 20_000);
  await waitFor(() => written > marks.reconnect! + 20, 'writing on after the reconnect');
  clearInterval(writer);
  await waitFor(() => got.length >= written, `all ${written} lines (got ${got.length})`);
  t.deepEqual(
    got.map((g) => g.data),
    Array.from({ length: written }, (_, i) => `line ${i + 1}`),
  );
  t.true(
    got.every((g, i) => i === 0 || g.id > got[i - 1]!.id),
    'ids increase across the reload',
  );
  t.true(marks.reconnect! > marks.disconnect!, `lines were written while the client was away (${marks.disconnect} → ${marks.reconnect})`);
  t.is(await node.stop(), 0);
});
