// Mutual TLS and identity allow lists on chain sources, and chain sinks dialling with
// certificates: certificates are made at run time with deploy/pki.sh (openssl).

import { readFileSync } from 'node:fs';
import type { ClientRequest } from 'node:http';
import { request } from 'node:https';
import { join } from 'node:path';
import { connect, type TLSSocket } from 'node:tls';
import test from 'ava';
import { chainSinkToml, chainSourceToml, RECEIVER_HEAD, SENDER_HEAD, tlsBlock } from '../helpers/chain.js';
import { freePort, nodeStarter, type RunningNode, tempDir, waitFor, waitReady, within } from '../helpers/node.js';
import { makePki, type Pki } from '../helpers/pki.js';
import { latestStatus } from '../helpers/status.js';

const tmp = tempDir('logrelay-tls-chain-');
let pki: Pki;
let other: Pki;
let receiver: RunningNode;
let tcpPort: number;
let httpPort: number;
const running: RunningNode[] = [];

const start = nodeStarter(tmp, running);

const counter = (n: RunningNode, key: string) => Number(latestStatus(n, 'recv')?.[key] ?? 0);
const received = () => receiver.out.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { node?: string; message: string });

test.before(async () => {
  pki = makePki(join(tmp.path, 'pki'), ['relay', 'edge-01', 'intruder']);
  other = makePki(join(tmp.path, 'other'), ['stranger']);
  [tcpPort, httpPort] = await Promise.all([freePort(), freePort()]);
  const server = { cert_file: pki.cert('relay'), key_file: pki.key('relay'), client_ca_file: pki.ca };
  const secured = `${tlsBlock('pipelines.plugin_sources.config', server)}[pipelines.plugin_sources.config.auth]\nallow = ["edge-01"]\n`;
  receiver = start(
    'recv',
    `${RECEIVER_HEAD}${chainSourceToml('tcp', 'tcp_chain', tcpPort, secured)}${chainSourceToml('http', 'http_chain', httpPort, secured)}[[pipelines.plugin_sinks]]
type = "stdout"
`,
    ['--logging.level=debug'],
  );
  await waitReady(receiver, 'receiver');
});

test.after.always(async () => {
  await Promise.all(running.map((n) => n.stop(5000)));
  tmp.remove();
});

interface Attempt {
  lines: string[];
  secure: boolean;
}

/** Dials the tcp_chain source as `name` (from `p`, or no certificate), sends a hello and one entry. */
async function tcpAttempt(name: string | undefined, p: Pki = pki): Promise<Attempt> {
  const socket: TLSSocket = connect({
    host: '127.0.0.1',
    port: tcpPort,
    ca: readFileSync(pki.ca),
    servername: 'localhost',
    ...(name ? { cert: readFileSync(p.cert(name)), key: readFileSync(p.key(name)) } : {}),
  });
  const result: Attempt = { lines: [], secure: false };
  let rest = '';
  socket.setEncoding('utf8');
  socket.on('secureConnect', () => {
    result.secure = true;
    socket.write(`{"logrelay":1,"node":"claimed"}\n${JSON.stringify({ time: new Date().toISOString(), source: 't', message: `tcp from ${name}` })}\n`);
  });
  socket.on('data', (c: string) => {
    rest += c;
    for (let i = rest.indexOf('\n'); i >= 0; i = rest.indexOf('\n')) {
      result.lines.push(rest.slice(0, i));
      rest = rest.slice(i + 1);
    }
    if (result.lines.includes('{"ack":1}')) socket.end();
  });
  socket.on('error', () => {});
  await within(new Promise((resolve) => socket.once('close', resolve)), 10_000, () => {
    socket.destroy();
    return new Error(`tcp attempt as ${name}: the connection still open after 10 s (${JSON.stringify(result)})`);
  });
  return result;
}

/** POSTs one entry to the http_chain source as `name`; the status, or the error text (no answer in 10 s fails). */
function httpAttempt(name: string | undefined, p: Pki = pki): Promise<number | string> {
  let req: ClientRequest | undefined;
  const attempt = new Promise<number | string>((resolve) => {
    req = request(
      {
        host: '127.0.0.1',
        port: httpPort,
        path: '/ingest',
        method: 'POST',
        agent: false,
        ca: readFileSync(pki.ca),
        servername: 'localhost',
        headers: { 'X-Logrelay-Protocol': '1', 'X-Logrelay-Node': 'claimed', 'Content-Type': 'application/x-ndjson' },
        ...(name ? { cert: readFileSync(p.cert(name)), key: readFileSync(p.key(name)) } : {}),
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', (err) => resolve(err.message));
    req.end(`${JSON.stringify({ time: new Date().toISOString(), source: 't', message: `http from ${name}` })}\n`);
  });
  return within(attempt, 10_000, () => {
    req?.destroy();
    return new Error(`http attempt as ${name}: no answer within 10 s`);
  });
}

test.serial('tcp_chain source: allowed identity ok, intruder refused, other CA and no certificate fail the handshake', async (t) => {
  const ok = await tcpAttempt('edge-01');
  t.deepEqual(ok.lines.slice(0, 2), ['{"ok":1}', '{"ack":1}']);
  await waitFor(() => received().find((e) => e.message === 'tcp from edge-01'), 'edge-01 entry delivered');
  t.is(received().find((e) => e.message === 'tcp from edge-01')?.node, 'edge-01', 'the identity wins over the hello');

  const intruder = await tcpAttempt('intruder');
  t.false(intruder.lines.includes('{"ok":1}'));
  await waitFor(() => counter(receiver, 'sources.tcp.auth_rejected') >= 1, 'auth_rejected on the tcp source');
  const warn = receiver.records.find((r) => r.msg === 'Authorization rejected' && r.plugin === 'tcp');
  t.like(warn, { level: 'warn', pipeline: 'recv', identity: 'intruder' });
  t.regex(String(warn?.remote), /^127\.0\.0\.1:\d+$/);

  const stranger = await tcpAttempt('stranger', other);
  t.false(stranger.lines.includes('{"ok":1}'));
  const anonymous = await tcpAttempt(undefined);
  t.false(anonymous.lines.includes('{"ok":1}'));
  await waitFor(() => counter(receiver, 'sources.tcp.tls_handshake_errors') >= 2, 'tls_handshake_errors for other CA and no certificate');
  t.false(received().some((e) => e.message !== 'tcp from edge-01' && e.message.startsWith('tcp from')));
});

test.serial('http_chain source: allowed identity ok, intruder 403, other CA and no certificate fail', async (t) => {
  t.is(await httpAttempt('edge-01'), 204);
  await waitFor(() => received().find((e) => e.message === 'http from edge-01'), 'edge-01 entry delivered');
  t.is(received().find((e) => e.message === 'http from edge-01')?.node, 'edge-01');
  t.is(await httpAttempt('intruder'), 403);
  await waitFor(() => counter(receiver, 'sources.http.auth_rejected') >= 1, 'auth_rejected on the http source');
  await waitFor(() => receiver.records.some((r) => r.msg === 'Authorization rejected' && r.plugin === 'http' && r.identity === 'intruder' && r.level === 'warn'), 'WARN Authorization rejected on the http source');
  t.is(typeof (await httpAttempt('stranger', other)), 'string');
  t.is(typeof (await httpAttempt(undefined)), 'string');
  await waitFor(() => counter(receiver, 'sources.http.tls_handshake_errors') >= 2, 'tls_handshake_errors on the http source');
  t.false(received().some((e) => e.message === 'http from intruder' || e.message === 'http from stranger' || e.message === 'http from undefined'));
});

const senderToml = (name: string) => {
  const client = { ca_file: pki.ca, cert_file: pki.cert(name), key_file: pki.key(name) };
  const backoff = 'backoff_min_ms = 100\nbackoff_max_ms = 400\n';
  return `${SENDER_HEAD}${chainSinkToml('tcp', 'tcp_chain', tcpPort, 'claimed', `${backoff}${tlsBlock('pipelines.plugin_sinks.config', client)}`)}${chainSinkToml(
    'http',
    'http_chain',
    httpPort,
    'claimed',
    `flush_interval_ms = 50\n${backoff}${tlsBlock('pipelines.plugin_sinks.config', { ...client, server_name: 'localhost' })}`,
  )}`;
};

test.serial('mutual TLS links deliver with the client identity as node; a sink with a refused certificate keeps retrying', async (t) => {
  const good = start('send-good', senderToml('edge-01'), ['--logging.level=debug'], true);
  const bad = start('send-bad', senderToml('intruder'), ['--logging.level=debug'], true);
  await waitFor(() => [good, bad].every((n) => n.records.some((r) => r.msg === 'Starting pipeline')), 'senders started');
  good.child.stdin!.write('linked 1\nlinked 2\n');
  bad.child.stdin!.write('refused 1\nrefused 2\n');
  await waitFor(() => received().filter((e) => e.message.startsWith('linked ')).length === 4, 'both links delivered both entries');
  t.true(received().filter((e) => e.message.startsWith('linked ')).every((e) => e.node === 'edge-01'));
  const first = await waitFor(() => {
    const s = latestStatus(bad, 'send');
    return s && Number(s['sinks.tcp.reconnects']) >= 1 && Number(s['sinks.http.reconnects']) >= 1 ? s : undefined;
  }, 'the refused sender retries');
  await waitFor(() => {
    const s = latestStatus(bad, 'send');
    return s && Number(s['sinks.tcp.reconnects']) > Number(first['sinks.tcp.reconnects']) && Number(s['sinks.http.reconnects']) > Number(first['sinks.http.reconnects']);
  }, 'reconnects keep growing');
  const s = latestStatus(bad, 'send')!;
  t.is(s['sinks.tcp.connected'], 0);
  t.is(s['sinks.tcp.unacked'], 2);
  t.is(s['sinks.http.batches_sent'], 0);
  t.false(received().some((e) => e.message.startsWith('refused ')));
});

test.serial('auth without tls.client_ca_file fails the build with exit 78', async (t) => {
  const port = await freePort();
  for (const type of ['tcp_chain', 'http_chain']) {
    const node = start(
      `noca-${type}`,
      `
[[pipelines]]
name = "p"
[[pipelines.plugin_sources]]
id = "in"
type = "${type}"
[pipelines.plugin_sources.config]
host = "127.0.0.1"
port = ${port}
${tlsBlock('pipelines.plugin_sources.config', { cert_file: pki.cert('relay'), key_file: pki.key('relay') })}
[pipelines.plugin_sources.config.auth]
allow = ["edge-01"]
[[pipelines.plugin_sinks]]
type = "null"
`,
    );
    const { code } = await node.finish();
    t.is(code, 78);
    const text = [...node.records.map((r) => JSON.stringify(r)), ...node.errText].join('\n');
    t.regex(text, /failed to create source in: auth: /);
  }
});
