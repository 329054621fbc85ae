// Node reports between nodes (the fleet view): old and new nodes on one link, reports behind `auth`
// only for the nodes a peer speaks for, and the fleet table's bounds under 20,000 node names.

import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import test from 'ava';
import { chainSinkToml, chainSourceToml, QUICK_BACKOFF, SENDER_HEAD, tlsBlock } from '../helpers/chain.js';
import { adminStatus, parseExposition } from '../helpers/admin.js';
import { freePort, ownedTempDir, type RunningNode, spawnOwnedNode, startOwnedNode, waitFor, waitReady } from '../helpers/node.js';
import { makePki } from '../helpers/pki.js';
import { fetchFleet, oldChainSource, rawLink, sendReports, syntheticReport } from '../helpers/reports.js';

/** A collector: tcp_chain (and http_chain) sources → stdout as JSON, fleet view on, reports every 500 ms. */
function collectorToml(admin: number, sources: string, fleet = ''): string {
  return `node_name = "coll"
report_interval_ms = 500
shutdown_timeout_ms = 1000
[admin]
port = ${admin}
[fleet]
enabled = true
${fleet}
[[pipelines]]
name = "recv"
[pipelines.flow.format]
type = "json"
${sources}[[pipelines.plugin_sinks]]
type = "stdout"
`;
}

async function startCollector(t: Parameters<typeof startOwnedNode>[0], toml: string): Promise<RunningNode> {
  const node = startOwnedNode(t, toml);
  await waitReady(node, 'collector');
  return node;
}

const sourceCounters = async (admin: number, id: string) => (await adminStatus(admin)).pipelines.recv!.counters.sources[id]!;

test('a new sink and an old source: the hello offers reports, the old source answers a plain ok, so only entries go on the link and the reports are dropped, counted', async (t) => {
  const old = await oldChainSource();
  t.teardown(() => old.close());
  const admin = await freePort();
  const sender = startOwnedNode(
    t,
    `node_name = "edge-new"\nreport_interval_ms = 200\n${SENDER_HEAD}${chainSinkToml('up', 'tcp_chain', old.port, 'edge-new', QUICK_BACKOFF)}\n[admin]\nport = ${admin}\n`,
    [],
    'pipe',
  );
  for (let i = 1; i <= 50; i++) sender.child.stdin!.write(`line-${i}\n`);
  await waitFor(() => old.lines.length >= 50, 'the old source got the 50 entries');
  // several report intervals pass: the reports are dropped (counted), never sent
  await waitFor(async () => ((await adminStatus(admin)).pipelines.send?.counters.sinks.up?.reports_dropped ?? 0) >= 3, 'reports dropped, counted', 10_000);
  t.deepEqual(JSON.parse(old.hellos[0]!), { logrelay: 1, node: 'edge-new', offer: { report: 1, version: 2 } });
  t.is(old.lines.length, 50, 'entries only: no report line reached the old source');
  t.true(old.lines.every((l) => (JSON.parse(l) as { message: string }).message.startsWith('line-')));
  t.is((await adminStatus(admin)).pipelines.send!.counters.sinks.up!.reports_sent, 0);
});

test('a new http_chain sink and an old http_chain source (404 on <path>/report): entries are delivered, the reports dropped and counted, never retried', async (t) => {
  const paths: string[] = [];
  const bodies: string[] = [];
  const reportBodies: string[] = [];
  // an http_chain source from before reports: its one path takes entries, anything else is 404
  const old = createServer((req, res) => {
    paths.push(req.url ?? '');
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url !== '/ingest') {
        if (req.url === '/ingest/report') reportBodies.push(Buffer.concat(chunks).toString());
        res.writeHead(404).end();
        return;
      }
      const body = Buffer.concat(chunks).toString();
      bodies.push(body);
      res.writeHead(204, { 'X-Logrelay-Accepted': String(body.split('\n').filter(Boolean).length) }).end();
    });
  });
  await new Promise<void>((resolve) => old.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => old.close(() => resolve())));
  const oldPort = (old.address() as { port: number }).port;
  const admin = await freePort();
  const sender = startOwnedNode(
    t,
    `node_name = "edge-h"\nreport_interval_ms = 200\n${SENDER_HEAD}${chainSinkToml('up', 'http_chain', oldPort, 'edge-h', QUICK_BACKOFF)}\n[admin]\nport = ${admin}\n`,
    [],
    'pipe',
  );
  for (let i = 1; i <= 20; i++) sender.child.stdin!.write(`line-${i}\n`);
  await waitFor(() => bodies.join('').split('\n').filter(Boolean).length >= 20, 'the old source got the 20 entries');
  const sink = await waitFor(async () => {
    const c = (await adminStatus(admin)).pipelines.send?.counters.sinks.up;
    return c && c.reports_dropped! >= 3 ? c : undefined;
  }, 'reports dropped, counted', 10_000);
  t.is(sink.reports_sent, 0);
  t.is(sink.dropped_batches, 0, 'no entry batch lost');
  const entries = bodies.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { message: string });
  t.deepEqual(
    entries.map((e) => e.message),
    Array.from({ length: 20 }, (_, i) => `line-${i + 1}`),
    'entries only, each once',
  );
  // never retried: every report request carries reports of its own (a retry would repeat one, sent_at and all);
  // counting requests against reports_dropped would race the once-a-second counters
  const posted = [...reportBodies];
  t.true(posted.length >= 3, `${posted.length} report requests`);
  t.is(new Set(posted).size, posted.length, 'no report request repeated');
});

test('an old sink (a hello without offer) and a node with reports off reach a new source: plain ok, entries flow, no parse error; a new sink beside them is listed', async (t) => {
  const admin = await freePort();
  const port = await freePort();
  const collector = await startCollector(t, collectorToml(admin, chainSourceToml('link', 'tcp_chain', port)));
  // an old sink, spoken by hand
  const link = await rawLink(port);
  t.teardown(() => link.close());
  await link.send('{"logrelay":1,"node":"edge-old"}\n');
  t.is(await link.waitLine(() => true, 'the answer to the hello'), '{"ok":1}', 'no accept for a hello without offer');
  await link.send('{"time":"2026-01-01T00:00:00.000Z","source":"s","message":"old-1"}\n{"time":"2026-01-01T00:00:00.000Z","source":"s","message":"old-2"}\n');
  await link.waitLine((l) => l === '{"ack":2}', 'both entries acknowledged');
  // a logrelay node with reports off, and one with them on
  const off = startOwnedNode(t, `node_name = "edge-off"\nreport_interval_ms = 0\n${SENDER_HEAD}${chainSinkToml('up', 'tcp_chain', port, 'edge-off', QUICK_BACKOFF)}`, [], 'pipe');
  const on = startOwnedNode(t, `node_name = "edge-on"\nreport_interval_ms = 200\n${SENDER_HEAD}${chainSinkToml('up', 'tcp_chain', port, 'edge-on', QUICK_BACKOFF)}`, [], 'pipe');
  off.child.stdin!.write('off-1\n');
  on.child.stdin!.write('on-1\n');
  const received = () => collector.out.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { node: string; message: string });
  await waitFor(() => ['old-1', 'old-2', 'off-1', 'on-1'].every((m) => received().some((e) => e.message === m)), 'entries of all three senders');
  await waitFor(async () => (await fetchFleet(admin)).nodes.some((n) => n.node === 'edge-on' && n.state === 'live'), 'the new sender listed');
  const view = await fetchFleet(admin);
  t.deepEqual(view.nodes.find((n) => n.node === 'edge-on')!.via, []);
  t.false(view.nodes.some((n) => n.node === 'edge-off' || n.node === 'edge-old'), 'senders without reports are not listed');
  const counters = await waitFor(async () => {
    const c = await sourceCounters(admin, 'link');
    return c.reports_received! > 0 ? c : undefined;
  }, 'the source counted the reports it took');
  t.is(counters.parse_errors, 0);
  t.is(counters.reports_rejected, 0);
  t.true(received().every((e) => ['old-1', 'old-2', 'off-1', 'on-1'].includes(e.message)), 'no report among the entries');
});

test('behind auth a peer reports for itself and the nodes behind it only; others are refused and counted (tcp_chain and http_chain)', async (t) => {
  const dir = ownedTempDir(t);
  const pki = makePki(join(dir.path, 'pki'), ['coll', 'relay-x']);
  const admin = await freePort();
  const tcpPort = await freePort();
  const httpPort = await freePort();
  const server = { cert_file: pki.cert('coll'), key_file: pki.key('coll'), client_ca_file: pki.ca };
  const secured = (prefix: string) => `${tlsBlock(prefix, server)}[${prefix}.auth]\nallow = ["relay-x"]\n`;
  const sources =
    chainSourceToml('tcp', 'tcp_chain', tcpPort, secured('pipelines.plugin_sources.config')) + chainSourceToml('http', 'http_chain', httpPort, secured('pipelines.plugin_sources.config'));
  await startCollector(t, collectorToml(admin, sources));
  const client = { ca: readFileSync(pki.ca), cert: readFileSync(pki.cert('relay-x')), key: readFileSync(pki.key('relay-x')), servername: 'coll' };

  const link = await rawLink(tcpPort, client);
  t.teardown(() => link.close());
  await link.send('{"logrelay":1,"node":"relay-x","offer":{"report":1}}\n');
  t.deepEqual(JSON.parse(await link.waitLine(() => true, 'the answer to the hello')), { ok: 1, accept: { report: 1 } });
  await sendReports(link, [
    syntheticReport('relay-x'),
    syntheticReport('edge-9', ['relay-x']),
    syntheticReport('mallory'),
    syntheticReport('edge-7', ['relay-z']),
    syntheticReport('relay-x', ['relay-x', 'relay-z']),
  ]);
  await waitFor(async () => (await sourceCounters(admin, 'tcp')).reports_rejected === 3, 'three reports refused on tcp_chain');
  t.is((await sourceCounters(admin, 'tcp')).reports_received, 2);

  const post = (report: object) =>
    new Promise<number>((resolve, reject) => {
      const body = JSON.stringify(report);
      const req = httpsRequest(
        { ...client, host: '127.0.0.1', port: httpPort, method: 'POST', path: '/ingest/report', agent: false, headers: { 'X-Logrelay-Protocol': '1', 'Content-Length': Buffer.byteLength(body) } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  t.is(await post(syntheticReport('mallory-http')), 403);
  t.is(await post(syntheticReport('edge-5', ['relay-x'])), 204);
  const http = await waitFor(async () => {
    const c = await sourceCounters(admin, 'http');
    return c.reports_received === 1 ? c : undefined;
  }, 'the http source counted the report it took');
  t.is(http.reports_rejected, 1);
  t.is(http.reports_received, 1);
  t.is(http.total_entries, 0, 'a report is not an entry');

  await waitFor(async () => (await fetchFleet(admin)).nodes.some((n) => n.node === 'edge-5'), 'the accepted http report listed');
  const listed = (await fetchFleet(admin)).nodes.map((n) => n.node).sort();
  t.deepEqual(listed, ['coll', 'edge-5', 'edge-9', 'relay-x']);
  t.is((await sourceCounters(admin, 'tcp')).total_entries, 0, 'no report counted as an entry');
});

test('20,000 node names from one relay: the table keeps max_nodes, forgets the oldest (counted), drops the gone after forget_after_ms, and their metric series go with them', async (t) => {
  t.timeout(120_000);
  const admin = await freePort();
  const port = await freePort();
  const collector = await startCollector(t, collectorToml(admin, chainSourceToml('link', 'tcp_chain', port), 'max_nodes = 1000\nforget_after_ms = 4000\n'));
  const link = await rawLink(port);
  t.teardown(() => link.close());
  await link.send('{"logrelay":1,"node":"relay-x","offer":{"report":1}}\n');
  await link.waitLine((l) => l.startsWith('{"ok"'), 'hello answered');
  const name = (i: number) => `n${String(i).padStart(5, '0')}`;
  const reports = Array.from({ length: 20_000 }, (_, i) => syntheticReport(name(i), ['relay-x'], 60_000));
  await sendReports(link, reports);
  await waitFor(async () => (await fetchFleet(admin)).nodes.some((n) => n.node === name(19_999)), 'the last node listed', 30_000);
  await waitFor(async () => (await sourceCounters(admin, 'link')).reports_received === 20_000, 'all 20,000 reports taken', 30_000);
  const view = await fetchFleet(admin);
  t.is(view.nodes.length, 1000, 'the table holds max_nodes');
  t.false(view.nodes.some((n) => n.node === name(0)), 'the oldest is forgotten');
  t.true(view.forgotten.max_nodes! >= 19_000, `forgotten for room: ${view.forgotten.max_nodes}`);
  const lastSeen = async () => {
    const families = parseExposition(await (await fetch(`http://127.0.0.1:${admin}/metrics`)).text());
    const nodes = (families.get('logrelay_fleet_node_last_seen_timestamp_seconds')?.samples ?? []).map((s) => s.labels.node!);
    const lag = (families.get('logrelay_fleet_node_lag_bytes')?.samples ?? []).map((s) => s.labels.node!);
    const forgotten = families.get('logrelay_fleet_nodes_forgotten_total')?.samples ?? [];
    return { nodes, lag, forgotten: Object.fromEntries(forgotten.map((s) => [s.labels.reason!, s.value])) };
  };
  const before = await lastSeen();
  t.is(before.nodes.length, 1000, 'one last-seen series per node kept');
  t.true(before.nodes.includes(name(19_999)) && !before.nodes.includes(name(0)), 'the forgotten node has no series');
  t.is(before.lag.length, 1000);
  t.true(before.forgotten.max_nodes! >= 19_000);
  // the primary's memory stays that of a bounded table (the flood above would be tens of MB kept)
  const rss = Number((await (await fetch(`http://127.0.0.1:${admin}/metrics`)).text()).match(/^process_resident_memory_bytes (\d+)/m)?.[1]);
  t.true(rss < 200 * 1024 * 1024, `primary resident memory ${rss} bytes`);

  // none of them reports again: after forget_after_ms they are removed, only the collector stays
  await waitFor(async () => (await fetchFleet(admin)).nodes.length === 1, 'the synthetic nodes removed after forget_after_ms', 20_000);
  const after = await fetchFleet(admin);
  t.deepEqual(after.nodes.map((n) => n.node), ['coll']);
  t.true(after.forgotten.forget_after! >= 999, `forgotten as gone: ${after.forgotten.forget_after}`);
  const gone = await lastSeen();
  t.deepEqual(gone.nodes, ['coll'], 'their series are gone with them');
  t.deepEqual(gone.lag, ['coll']);
  t.true(collector.out.every((l) => !l.includes('"report"')), 'no report became an entry');
});

test('report_interval_ms follows a reload: off, the node turns silent while its entries still flow; back on, it is live with the new interval', async (t) => {
  t.timeout(120_000);
  const admin = await freePort();
  const port = await freePort();
  const collector = await startCollector(t, collectorToml(admin, chainSourceToml('link', 'tcp_chain', port)));
  const dir = ownedTempDir(t);
  const senderFile = (interval: number) => dir.file('edge.toml', `node_name = "edge-r"\nreport_interval_ms = ${interval}\n${SENDER_HEAD}${chainSinkToml('up', 'tcp_chain', port, 'edge-r', QUICK_BACKOFF)}`);
  const sender = spawnOwnedNode(t, ['-c', senderFile(200)], { stdin: 'pipe' });
  const edge = async () => (await fetchFleet(admin)).nodes.find((n) => n.node === 'edge-r');
  await waitFor(async () => (await edge())?.state === 'live', 'edge-r live');
  t.is((await edge())!.report.interval_ms, 200);

  senderFile(0);
  sender.signal('SIGHUP');
  await waitFor(() => sender.records.some((r) => r.msg === 'Configuration reloaded'), 'reloaded with reports off');
  await waitFor(async () => (await edge())?.state === 'silent', 'edge-r silent with its reports off', 10_000);
  sender.child.stdin!.write('after-off\n');
  await waitFor(() => collector.out.some((l) => l.includes('"after-off"')), 'entries still flow');

  senderFile(300);
  sender.signal('SIGHUP');
  await waitFor(async () => {
    const e = await edge();
    return e?.state === 'live' && e.report.interval_ms === 300;
  }, 'edge-r live again, reporting every 300 ms', 10_000);
  t.pass();
});
