// TLS and allow lists on the `http` and `tcp` sinks (DESIGN.md §10): certificates made at run time
// with deploy/pki.sh; an allowed identity connects, another one from the same CA is refused and
// logged, a foreign CA or no certificate fails the handshake; SIGHUP rotates certificates and
// revokes identities; `auth` without client certificates fails the build.

import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { connect, type TLSSocket } from 'node:tls';
import test from 'ava';
import { freePort, type RunningNode, spawnNode, spawnOwnedNode, type TempDir, tempDir, waitFor } from '../helpers/node.js';
import { makePki, type Pki } from '../helpers/pki.js';
import { latestCounter } from '../helpers/status.js';
import { localPluginToml, randomSourceToml } from '../helpers/toml.js';

interface Identity {
  readonly ca: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
}

type Outcome =
  | { readonly ok: true; readonly status: number; readonly body: string; readonly peerCn: string; readonly headers: Record<string, unknown> }
  | { readonly ok: false; readonly error: string };

/** One HTTPS GET on a fresh connection; a stream is read until `until` shows up, then cut. Idle 10 s: an error. */
function httpsGet(port: number, path: string, who: Identity, until?: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, timeout: 10_000, ...who }, (res) => {
      const peerCn = String((res.socket as TLSSocket).getPeerCertificate().subject?.CN ?? '');
      let body = '';
      res.setEncoding('utf8');
      const done = () => resolve({ ok: true, status: res.statusCode ?? 0, body, peerCn, headers: res.headers });
      res.on('data', (c: string) => {
        body += c;
        if (until && body.includes(until)) {
          done();
          req.destroy();
        }
      });
      res.on('end', done);
      res.on('error', (err) => resolve({ ok: false, error: err.message }));
    });
    req.on('error', (err) => resolve({ ok: false, error: err.message }));
    req.on('timeout', () => req.destroy(new Error('no answer for 10 s')));
    req.end();
  });
}

interface TlsLines {
  readonly socket: TLSSocket;
  data: string;
  closed: boolean;
  peerCn: string;
}

function tlsLines(port: number, who: Identity): TlsLines {
  const socket = connect({ host: '127.0.0.1', port, ...who });
  const c: TlsLines = { socket, data: '', closed: false, peerCn: '' };
  socket.on('secureConnect', () => {
    c.peerCn = String(socket.getPeerCertificate().subject?.CN ?? '');
  });
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    c.data += chunk;
  });
  socket.on('error', () => {});
  socket.on('close', () => {
    c.closed = true;
  });
  return c;
}

/** The newest value of a flattened counter in the status report of pipeline `tls`. */
function counter(node: RunningNode, key: string): number {
  return latestCounter(node, 'tls', key) ?? 0;
}

interface Fixture {
  readonly dir: TempDir;
  readonly pki: Pki;
  readonly foreign: Pki;
  /** the server certificate and key the node reads (replaced to rotate) */
  readonly live: { cert: string; key: string };
  me(name: string, from?: Pki): Identity;
}

function fixture(): Fixture {
  const dir = tempDir();
  const pki = makePki(join(dir.path, 'pki'), ['server', 'server2', 'edge-01', 'intruder']);
  const foreign = makePki(join(dir.path, 'foreign'), ['edge-01']);
  mkdirSync(join(dir.path, 'live'));
  const live = { cert: join(dir.path, 'live', 'server.crt'), key: join(dir.path, 'live', 'server.key') };
  copyFileSync(pki.cert('server'), live.cert);
  copyFileSync(pki.key('server'), live.key);
  const ca = readFileSync(pki.ca);
  return {
    dir,
    pki,
    foreign,
    live,
    me: (name, from = pki) => (name === '' ? { ca } : { ca, cert: readFileSync(from.cert(name)), key: readFileSync(from.key(name)) }),
  };
}

function nodeToml(f: Fixture, ports: { http: number; tcp: number }, allow: readonly string[], clientCa = true): string {
  const tls = `enabled = true
cert_file = ${JSON.stringify(f.live.cert)}
key_file = ${JSON.stringify(f.live.key)}
${clientCa ? `client_ca_file = ${JSON.stringify(f.pki.ca)}` : ''}`;
  const secured = `[pipelines.plugin_sinks.config.tls]
${tls}
[pipelines.plugin_sinks.config.auth]
allow = ${JSON.stringify(allow)}
`;
  return `status_interval_ms = 300
[[pipelines]]
name = "tls"
${randomSourceToml('interval_ms = 50\nlength = 4')}${localPluginToml('sinks', 'web', 'http', ports.http, secured)}${localPluginToml('sinks', 'lines', 'tcp', ports.tcp, secured)}`;
}

async function startNode(t: { teardown(fn: () => void): void }, allow: readonly string[] = ['edge-01']) {
  const f = fixture();
  const ports = { http: await freePort(), tcp: await freePort() };
  const file = f.dir.file('node.toml', nodeToml(f, ports, allow));
  const node = spawnNode(['-c', file, '--logging.level=debug']);
  t.teardown(() => {
    node.child.kill('SIGKILL');
    f.dir.remove();
  });
  await waitFor(() => node.records.some((r) => r.msg === 'Starting pipeline'), `pipeline started: ${node.errText.join('\n')}`);
  return { f, ports, file, node };
}

test.serial('http sink with TLS and allow = ["edge-01"]: edge-01 in, intruder 403 and logged, foreign CA and no certificate fail the handshake', async (t) => {
  const { f, ports, node } = await startNode(t);
  const edge = f.me('edge-01');

  const st = await httpsGet(ports.http, '/status', edge);
  if (!st.ok) return t.fail(st.error);
  t.is(st.status, 200);
  const doc = JSON.parse(st.body) as { server: { tls: boolean }; statistics: { auth_rejected: number } };
  t.true(doc.server.tls);
  t.is(doc.statistics.auth_rejected, 0);
  t.is(st.headers['access-control-allow-origin'], undefined, 'no CORS header with auth');
  const stream = await httpsGet(ports.http, '/stream', edge, '\nid: ');
  if (!stream.ok) return t.fail(stream.error);
  t.is(stream.status, 200);
  t.regex(stream.body, /^retry: 2000\n\nevent: connected\ndata: \{"client_id":\d+,"instance_id":"web"\}\n\n/);
  await waitFor(
    () => node.records.some((r) => r.msg === 'Session connected' && (r.session as { auth_identity?: string }).auth_identity === 'edge-01'),
    'session with auth_identity edge-01',
  );

  const intruder = await httpsGet(ports.http, '/status', f.me('intruder'));
  if (!intruder.ok) return t.fail(intruder.error);
  t.is(intruder.status, 403);
  t.deepEqual(JSON.parse(intruder.body), { error: 'forbidden' });
  const intruderStream = await httpsGet(ports.http, '/stream', f.me('intruder'));
  t.true(intruderStream.ok && intruderStream.status === 403);
  const warn = await waitFor(() => node.records.find((r) => r.msg === 'Authorization rejected' && r.plugin === 'web'), 'WARN record');
  t.is(warn.level, 'warn');
  t.is(warn.pipeline, 'tls');
  t.is(warn.identity, 'intruder');
  t.regex(String(warn.remote), /^127\.0\.0\.1:\d+$/);
  const after = await httpsGet(ports.http, '/status', edge);
  t.true(after.ok && (JSON.parse(after.body) as typeof doc).statistics.auth_rejected === 2);

  const foreign = await httpsGet(ports.http, '/status', f.me('edge-01', f.foreign));
  t.false(foreign.ok, 'a certificate from another CA is refused');
  await waitFor(() => counter(node, 'sinks.web.tls_handshake_errors') >= 1, 'tls_handshake_errors counts the foreign CA');
  const before = counter(node, 'sinks.web.tls_handshake_errors');
  const anonymous = await httpsGet(ports.http, '/status', f.me(''));
  t.false(anonymous.ok, 'no client certificate is refused');
  await waitFor(() => counter(node, 'sinks.web.tls_handshake_errors') > before, 'tls_handshake_errors counts the missing certificate');
  t.is(counter(node, 'sinks.web.auth_rejected'), 2);

  // tail dials with the same files: trusts the CA, presents edge-01
  const url = `https://127.0.0.1:${ports.http}/stream`;
  const tail = spawnOwnedNode(t, ['tail', url, '--ca', f.pki.ca, '--cert', f.pki.cert('edge-01'), '--key', f.pki.key('edge-01')]);
  await waitFor(() => tail.out.length >= 3, `tail over TLS prints entries: ${tail.errText.join('\n')}`);
  t.regex(tail.out[0]!, /^[a-z]+( [a-z]+){3}$/);
  await tail.stop();
  t.is(await node.stop(), 0);
});

test.serial('tcp sink with TLS and allow = ["edge-01"]: edge-01 gets lines, intruder closed without data, foreign CA and no certificate fail', async (t) => {
  const { f, ports, node } = await startNode(t);
  const edge = tlsLines(ports.tcp, f.me('edge-01'));
  await waitFor(() => edge.data.split('\n').length > 3, 'edge-01 receives lines');
  t.regex(edge.data.split('\n')[0]!, /^[a-z]+( [a-z]+){3}$/);

  const intruder = tlsLines(ports.tcp, f.me('intruder'));
  await waitFor(() => intruder.closed, 'intruder connection closed');
  t.is(intruder.data, '');
  await waitFor(() => counter(node, 'sinks.lines.auth_rejected') === 1, 'auth_rejected 1');
  const warn = node.records.find((r) => r.msg === 'Authorization rejected' && r.plugin === 'lines');
  t.like(warn, { level: 'warn', pipeline: 'tls', identity: 'intruder' });

  const foreign = tlsLines(ports.tcp, f.me('edge-01', f.foreign));
  await waitFor(() => foreign.closed, 'foreign CA connection closed');
  t.is(foreign.data, '');
  await waitFor(() => counter(node, 'sinks.lines.tls_handshake_errors') >= 1, 'handshake error counted');
  const before = counter(node, 'sinks.lines.tls_handshake_errors');
  const anonymous = tlsLines(ports.tcp, f.me(''));
  await waitFor(() => anonymous.closed, 'connection without certificate closed');
  t.is(anonymous.data, '');
  await waitFor(() => counter(node, 'sinks.lines.tls_handshake_errors') > before, 'handshake error counted again');
  t.false(edge.closed);
  t.is(counter(node, 'sinks.lines.active_clients'), 1);
  t.is(await node.stop(), 0);
});

test.serial('SIGHUP rotates the server certificate and revokes an identity removed from allow', async (t) => {
  const { f, ports, node } = await startNode(t);
  const edge = f.me('edge-01');
  const first = await httpsGet(ports.http, '/status', edge);
  t.true(first.ok && first.peerCn === 'server');
  const tcpFirst = tlsLines(ports.tcp, edge);
  await waitFor(() => tcpFirst.peerCn !== '', 'tcp handshake');
  t.is(tcpFirst.peerCn, 'server');

  copyFileSync(f.pki.cert('server2'), f.live.cert);
  copyFileSync(f.pki.key('server2'), f.live.key);
  node.signal('SIGHUP');
  await waitFor(() => node.records.filter((r) => r.msg === 'Configuration reloaded').length === 1, 'first reload');
  const rotated = await httpsGet(ports.http, '/status', edge);
  t.true(rotated.ok && rotated.status === 200 && rotated.peerCn === 'server2', JSON.stringify(rotated));
  const tcpRotated = tlsLines(ports.tcp, edge);
  await waitFor(() => tcpRotated.peerCn !== '', 'tcp handshake after rotation');
  t.is(tcpRotated.peerCn, 'server2');
  await waitFor(() => tcpFirst.closed, 'the reload disconnected the old tcp client');

  f.dir.file('node.toml', nodeToml(f, ports, ['edge-02']));
  node.signal('SIGHUP');
  await waitFor(() => node.records.filter((r) => r.msg === 'Configuration reloaded').length === 2, 'second reload');
  const revoked = await httpsGet(ports.http, '/status', edge);
  t.true(revoked.ok && revoked.status === 403, JSON.stringify(revoked));
  const tcpRevoked = tlsLines(ports.tcp, edge);
  await waitFor(() => tcpRevoked.closed, 'edge-01 refused by the tcp sink');
  t.is(tcpRevoked.data, '');
  t.is(await node.stop(), 0);
});

test.serial('auth without tls.client_ca_file fails the build of both sinks (exit 78), in run and in check', async (t) => {
  const f = fixture();
  t.teardown(() => f.dir.remove());
  const ports = { http: await freePort(), tcp: await freePort() };
  const file = f.dir.file('node.toml', nodeToml(f, ports, ['edge-01'], false));
  const node = spawnOwnedNode(t, ['-c', file]);
  const { code } = await node.finish();
  t.is(code, 78);
  const all = [...node.records.map((r) => JSON.stringify(r)), ...node.errText].join('\n');
  t.regex(all, /failed to create sink web: auth: /);
  t.regex(all, /failed to create sink lines: auth: /);

  const check = spawnOwnedNode(t, ['check', '-c', file]);
  t.is((await check.finish()).code, 78);
  const text = check.errText.join('\n');
  t.regex(text, /failed to create sink web: auth: requires tls\.client_ca_file/);
  t.regex(text, /failed to create sink lines: auth: requires tls\.client_ca_file/);
});
