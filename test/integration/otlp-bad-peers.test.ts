// Bad peers at the otlp source: slow headers and a slow body are cut off (the headers timeout,
// read_timeout_ms), connections past max_connections are refused, and with mutual TLS and an
// `auth` block only allowed identities are taken (DESIGN.md §10).

import { request } from 'node:https';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import test from 'ava';
import { tlsBlock } from '../helpers/chain.js';
import { freePort, nodeStarter, type RunningNode, tempDir, waitFor, waitReady, within } from '../helpers/node.js';
import { makePki, type Pki } from '../helpers/pki.js';
import { ExportLogsServiceRequest, post } from '../helpers/otlp.js';
import { latestCounter } from '../helpers/status.js';
import { localPluginToml } from '../helpers/toml.js';

const tmp = tempDir('logrelay-otlp-bad-');
let pki: Pki;
let node: RunningNode;
let plainPort = 0;
let securePort = 0;
let limitedPort = 0;
const running: RunningNode[] = [];
const start = nodeStarter(tmp, running);

const body = (message: string) =>
  Buffer.from(ExportLogsServiceRequest.encode(ExportLogsServiceRequest.fromObject({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: message } }] }] }] })).finish());
const PROTO = { 'Content-Type': 'application/x-protobuf' };

test.before(async () => {
  pki = makePki(join(tmp.path, 'pki'), ['collector', 'edge-01', 'intruder']);
  plainPort = await freePort();
  securePort = await freePort();
  limitedPort = await freePort();
  const server = { cert_file: pki.cert('collector'), key_file: pki.key('collector'), client_ca_file: pki.ca };
  node = start(
    'bad',
    `status_interval_ms = 300
[[pipelines]]
name = "plain"
[pipelines.flow.format]
type = "json"
${localPluginToml('sources', 'in', 'otlp', plainPort, 'read_timeout_ms = 1500')}
[[pipelines.plugin_sinks]]
type = "stdout"

[[pipelines]]
name = "limited"
[pipelines.flow.format]
type = "json"
${localPluginToml('sources', 'in', 'otlp', limitedPort, 'max_connections = 2')}
[[pipelines.plugin_sinks]]
type = "stdout"

[[pipelines]]
name = "secure"
[pipelines.flow.format]
type = "json"
${localPluginToml('sources', 'in', 'otlp', securePort)}
${tlsBlock('pipelines.plugin_sources.config', server)}[pipelines.plugin_sources.config.auth]
allow = ["edge-01"]
[[pipelines.plugin_sinks]]
type = "stdout"
`,
    ['--logging.level=debug'],
  );
  await waitReady(node, 'otlp node');
  await waitFor(() => node.records.filter((r) => r.msg === 'Starting pipeline').length === 3, 'the three pipelines started');
});
test.after.always(async () => {
  await Promise.all(running.map((n) => n.stop(5000)));
  tmp.remove();
});

/** A raw connection to the plain source (or `port`); resolves with it once connected. */
function open(port = plainPort): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    s.on('error', reject);
  });
}

/** ms until `s` closes, or a rejection after `ms`. */
function closedWithin(s: Socket, ms: number, what: string): Promise<number> {
  const t0 = Date.now();
  return within(new Promise<number>((resolve) => s.once('close', () => resolve(Date.now() - t0))), ms, () => {
    s.destroy();
    return new Error(`${what}: still open after ${ms} ms`);
  });
}

/** Writes `chunks` one every `everyMs` while the socket is open. */
function dribble(s: Socket, chunks: string[], everyMs: number): void {
  let i = 0;
  const timer = setInterval(() => {
    if (s.destroyed || i >= chunks.length) {
      clearInterval(timer);
      return;
    }
    s.write(chunks[i++]!);
  }, everyMs);
  s.once('close', () => clearInterval(timer));
}

test.serial('headers sent slowly are cut off by the headers timeout (read_timeout_ms when shorter)', async (t) => {
  const s = await open();
  s.on('error', () => {});
  s.write('POST /v1/logs HTTP/1.1\r\nHost: x\r\n');
  dribble(s, Array.from({ length: 100 }, (_, i) => `X-Slow-${i}: y\r\n`), 300);
  const ms = await closedWithin(s, 10_000, 'slow headers');
  t.true(ms >= 1000, `cut after ${ms} ms, before its time`);
});

test.serial('a body slower than read_timeout_ms is cut off and nothing of it is taken', async (t) => {
  const s = await open();
  s.on('error', () => {});
  const payload = body('slow body record').toString('latin1');
  s.write(`POST /v1/logs HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: ${payload.length}\r\n\r\n`);
  dribble(s, payload.split(''), 300);
  const ms = await closedWithin(s, 10_000, 'slow body');
  t.true(ms >= 1000, `cut after ${ms} ms, before its time`);
  t.false(node.out.some((l) => l.includes('slow body record')));
});

test.serial('connections beyond max_connections are refused; a freed slot takes the next', async (t) => {
  const before = latestCounter(node, 'limited', 'sources.in.rejected_conns') ?? 0;
  const held = [await open(limitedPort), await open(limitedPort)];
  await waitFor(() => latestCounter(node, 'limited', 'sources.in.active_connections') === 2, 'two connections held');
  const third = await open(limitedPort).catch(() => undefined);
  if (third) {
    third.on('error', () => {});
    await closedWithin(third, 5000, 'the third connection');
  }
  await waitFor(() => (latestCounter(node, 'limited', 'sources.in.rejected_conns') ?? 0) > before, 'rejected_conns counted');
  for (const s of held) s.destroy();
  await waitFor(() => latestCounter(node, 'limited', 'sources.in.active_connections') === 0, 'the held connections gone');
  t.is((await post(limitedPort, body('after the slot freed'), PROTO)).status, 200);
  await waitFor(() => node.out.some((l) => l.includes('after the slot freed')), 'the record of a freed slot delivered');
});

/** POSTs one record to the secure source as `name` (no certificate when undefined): the status, or the error text. */
function secureAttempt(name: string | undefined): Promise<number | string> {
  return within(
    new Promise<number | string>((resolve) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: securePort,
          path: '/v1/logs',
          method: 'POST',
          agent: false,
          ca: readFileSync(pki.ca),
          servername: 'localhost',
          headers: PROTO,
          ...(name ? { cert: readFileSync(pki.cert(name)), key: readFileSync(pki.key(name)) } : {}),
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', (err) => resolve(err.message));
      req.end(body(`tls from ${name}`));
    }),
    10_000,
    () => new Error(`tls attempt as ${name}: no answer in 10 s`),
  );
}

test.serial('mutual TLS and auth: the allowed identity is taken, another is refused 403 and counted, no certificate fails the handshake', async (t) => {
  t.is(await secureAttempt('edge-01'), 200);
  await waitFor(() => node.out.some((l) => l.includes('tls from edge-01')), 'the allowed record delivered');
  t.is(await secureAttempt('intruder'), 403);
  t.not(await secureAttempt(undefined), 200);
  await waitFor(() => (latestCounter(node, 'secure', 'sources.in.auth_rejected') ?? 0) >= 1, 'auth_rejected counted');
  await waitFor(() => node.records.some((r) => r.msg === 'Authorization rejected' && r.identity === 'intruder'), 'WARN Authorization rejected (worker log lines come batched, after the counter may)');
  t.false(node.out.some((l) => l.includes('tls from intruder')));
});
