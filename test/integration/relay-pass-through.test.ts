// A relay whose pipeline needs no entry (every sink a chain sink speaking version 2, nothing in the
// flow that reads one) carries the frames it receives on undecoded (docs/protocol.md, "How a node
// reads and writes chain lines"). One edge feeds the same entries to two chains of two relays each
// (tcp_chain → tcp_chain, then tcp_chain → http_chain, as the shipped relay) into one collector:
// on one chain the relays carry the frames, on the other a filter that passes everything makes them
// decode and encode each entry. The collector must write the same bytes from both, each entry once,
// with the relays' counters as before; a carrying relay SIGKILLed mid-stream loses nothing.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { chainSinkToml, chainSourceToml, linkLine, QUICK_BACKOFF, SENDER_HEAD } from '../helpers/chain.js';
import { freePort, killedNodesIn, killWithWorkers, type RunningNode, waitFor, waitReady } from '../helpers/node.js';
import { latestStatus, statusAfter } from '../helpers/status.js';
import { fileSinkToml } from '../helpers/toml.js';

const TOTAL = 6_000;
/** linkLine's mix (JSON lines with a level and fields, text with quotes, tabs, backslashes, non-ASCII) and a few more shapes */
function inputLine(i: number): string {
  if (i % 13 === 0) return JSON.stringify({ msg: `only a message ${i}` });
  if (i % 17 === 0) return JSON.stringify({ message: `fields of every kind ${i}`, level: 'error', n: -0.5, big: 1e21, nested: { a: [null, true, 'ü\u2028'] }, empty: {} });
  if (i % 19 === 0) return `emoji 😀 and a lone backslash \\ ${i} ${'x'.repeat(i % 3000)}`;
  return linkLine(i);
}
const INPUT = Array.from({ length: TOTAL }, (_, i) => `${inputLine(i)}\n`).join('');

/** Everything a filter sees passes this one; its only effect is that the pipeline's flow reads entries, so they are decoded. */
const DECODE_FILTER = '[[pipelines.flow.filters]]\ntype = "exclude"\npatterns = ["^no entry of this test looks like this$"]\n';

interface Ports {
  a: number;
  b: number;
  collector: number;
}

/** A relay node of two pipelines: `a` (tcp_chain → tcp_chain to `b`), `b` (tcp_chain → http_chain to the collector). */
function relayToml(name: string, ports: Ports, decode: boolean): string {
  const pipeline = (p: string, port: number, sink: string) =>
    `[[pipelines]]\nname = "${p}"\n${decode ? DECODE_FILTER : ''}${chainSourceToml('in', 'tcp_chain', port)}${sink}`;
  // no node reports: a tcp_chain sink counts their frames in bytes_raw, and the two relays' reports
  // (their own counters, sent every report_interval_ms) need not be of one length nor fall alike
  return `status_interval_ms = 1000\nreport_interval_ms = 0\nnode_name = "${name}"\n${pipeline('a', ports.a, chainSinkToml('out', 'tcp_chain', ports.b, `${name}-a`, QUICK_BACKOFF))}${pipeline(
    'b',
    ports.b,
    chainSinkToml('out', 'http_chain', ports.collector, `${name}-b`, `${QUICK_BACKOFF}flush_interval_ms = 50\n`),
  )}`;
}

/** The collector: pipeline `p` (from the carrying chain) and `d` (from the decoding chain), each http_chain → a JSON file sink, with dedup. */
function collectorToml(ports: { p: number; d: number }, dirs: { p: string; d: string }): string {
  const pipeline = (p: string, port: number, dir: string) =>
    `[[pipelines]]\nname = "${p}"\n[pipelines.flow.format]\ntype = "json"\n[pipelines.flow.dedup]\nenabled = true\n${chainSourceToml('in', 'http_chain', port)}${fileSinkToml('file', dir)}`;
  return `status_interval_ms = 1000\n${pipeline('p', ports.p, dirs.p)}${pipeline('d', ports.d, dirs.d)}`;
}

/** The JSON lines of the file sink in `dir`, in order: whole lines (a file read while its sink writes may end mid-line). */
function linesIn(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir).filter((f) => f.endsWith('.log')).sort();
  } catch {
    return [];
  }
  return names.flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').slice(0, -1).filter((l) => l.length > 0));
}

interface Chains {
  edge: RunningNode;
  relayP: RunningNode;
  relayD: RunningNode;
  collector: RunningNode;
  dirs: { p: string; d: string };
  relayPToml: string;
  start: ReturnType<typeof killedNodesIn>['start'];
}

const sinkUp = (node: RunningNode, pipeline: string) => latestStatus(node, pipeline)?.['sinks.out.connected'] === 1;

async function startChains(t: ExecutionContext): Promise<Chains> {
  const { dir, start } = killedNodesIn(t, []);
  const dirs = { p: join(dir.path, 'p'), d: join(dir.path, 'd') };
  const portsP: Ports = { a: await freePort(), b: await freePort(), collector: await freePort() };
  const portsD: Ports = { a: await freePort(), b: await freePort(), collector: await freePort() };
  const collector = start('collector', collectorToml({ p: portsP.collector, d: portsD.collector }, dirs), ['--logging.level=debug']);
  await waitReady(collector, 'collector');
  const relayPToml = relayToml('relay-p', portsP, false);
  const relayP = start('relay-p', relayPToml, ['--logging.level=debug']);
  const relayD = start('relay-d', relayToml('relay-d', portsD, true), ['--logging.level=debug']);
  await Promise.all([waitReady(relayP, 'relay-p'), waitReady(relayD, 'relay-d')]);
  // every link up (the http_chain sinks have had their first 204: they speak version 2) before the entries come
  await waitFor(() => ['a', 'b'].every((p) => sinkUp(relayP, p) && sinkUp(relayD, p)), 'the relays\' links up');
  // both links block: with `auto`, a sink whose link is down would drop for itself while the other is live
  const edgeSink = (id: string, port: number) => chainSinkToml(id, 'tcp_chain', port, 'edge', `${QUICK_BACKOFF}on_full = "block"\n`);
  const edge = start('edge', `${SENDER_HEAD}${edgeSink('p', portsP.a)}${edgeSink('d', portsD.a)}`, ['--logging.level=debug'], true);
  await waitReady(edge, 'edge');
  return { edge, relayP, relayD, collector, dirs, relayPToml, start };
}

function feed(edge: RunningNode, text: string): Promise<void> {
  return new Promise<void>((resolve, reject) => edge.child.stdin!.write(text, (err) => (err ? reject(err) : resolve())));
}

/**
 * The relay's counters once it has handed on everything it took: from a status report logged long
 * enough after `since`, a moment when the collector had every entry (so every batch was posted
 * before it; statusAfter). An http_chain sink counts an entry as processed when it is batched and
 * its bytes when the batch is posted, and has no `unacked` count to say its batches are all out: a
 * ci-local run read a decoding relay's `bytes_raw` 97,035 bytes short from the latest report,
 * every item counter already final (a run here logs 1,183,041 for both relays).
 */
async function settled(relay: RunningNode, pipeline: string, total: number, since: number) {
  return waitFor(() => {
    const s = statusAfter(relay, pipeline, since);
    return s && s['sources.in.total_entries'] === total && s['flow.total_passed'] === total && s['sinks.out.total_processed'] === total && (s['sinks.out.unacked'] ?? 0) === 0 ? s : undefined;
  }, `${relay.child.pid} ${pipeline}: ${total} entries through, none unacknowledged, in a report from after the collector had them`);
}

test.serial('a relay that carries frames on undecoded hands the collector the bytes the decoding relay does, each entry once, with the same counters', async (t) => {
  t.timeout(180_000);
  const c = await startChains(t);
  await feed(c.edge, INPUT);
  await waitFor(() => linesIn(c.dirs.p).length >= TOTAL && linesIn(c.dirs.d).length >= TOTAL, `all ${TOTAL} entries in both collector files`, 90_000);
  // every batch was posted before now: the relays' counters are read from their reports after this
  const since = Date.now();
  const viaCarry = linesIn(c.dirs.p);
  const viaDecode = linesIn(c.dirs.d);
  t.is(viaDecode.length, TOTAL);
  t.is(viaCarry.length, TOTAL, 'each entry once');
  const diff = viaCarry.findIndex((l, i) => l !== viaDecode[i]);
  t.is(diff, -1, `the first line that differs: ${viaCarry[diff]} against ${viaDecode[diff]}`);
  const parsed = viaCarry.map((l) => JSON.parse(l) as { message: string; node: string; fields?: Record<string, unknown> });
  t.is(new Set(parsed.map((e) => e.message)).size, TOTAL, 'every entry once (each message is another)');
  t.true(parsed.every((e) => e.node === 'edge'), 'node stamped by the first relay, kept by the second');
  t.deepEqual(parsed[17]!.fields, { n: -0.5, big: 1e21, nested: { a: [null, true, 'ü\u2028'] }, empty: {} });
  for (const p of ['a', 'b']) {
    const carried = await settled(c.relayP, p, TOTAL, since);
    const decoded = await settled(c.relayD, p, TOTAL, since);
    t.is(carried['sources.in.carried_entries'], TOTAL, `relay-p ${p}: every entry carried on as its frame`);
    t.is(decoded['sources.in.carried_entries'], 0, `relay-d ${p}: every entry decoded (its flow has a filter)`);
    // what a relay shows is what it showed before: the same counters, the same values
    for (const key of ['sources.in.total_entries', 'sources.in.parse_errors', 'flow.total_processed', 'flow.total_passed', 'flow.total_dropped', 'sinks.out.total_processed', 'sinks.out.synthesized', 'total_dropped_by_sink']) {
      t.is(carried[key], decoded[key], `relay ${p}: ${key}`);
    }
    // bytes_raw counts every attempt's body: a batch posted again (a request that failed on a
    // loaded machine, counted in `retries`) is counted again, so the bytes are equal when neither
    // relay retried, and otherwise no fewer at the one that did
    const retried = { carried: Number(carried['sinks.out.retries'] ?? 0), decoded: Number(decoded['sinks.out.retries'] ?? 0) };
    // should they differ with no retry, a failure says what each relay's link did (a body posted
    // again without a retry: an NDJSON fallback, a 413 split; the protocol version it closed batches in)
    const linkStory = (relay: RunningNode, name: string, report: Record<string, unknown>) =>
      `${name}: batches_sent ${report['sinks.out.batches_sent']}; ${JSON.stringify(
        relay.records.filter((r) => /protocol version|NDJSON|split in two|not delivered|attempt failed/.test(String(r.msg))).map((r) => `${r.pipeline ?? ''} ${r.msg} ${r.protocol ?? ''} ${r.why ?? r.status ?? r.error ?? ''}`),
      )}`;
    t.log(`relay ${p}: bytes_raw ${carried['sinks.out.bytes_raw']} (carrying) and ${decoded['sinks.out.bytes_raw']} (decoding)`);
    if (retried.carried === 0 && retried.decoded === 0)
      t.is(carried['sinks.out.bytes_raw'], decoded['sinks.out.bytes_raw'], `relay ${p}: sinks.out.bytes_raw; ${linkStory(c.relayP, 'carrying', carried)}; ${linkStory(c.relayD, 'decoding', decoded)}`);
    else {
      t.log(`relay ${p}: retries ${retried.carried} (carrying) and ${retried.decoded} (decoding)`);
      if (retried.carried === 0) t.true(Number(carried['sinks.out.bytes_raw']) <= Number(decoded['sinks.out.bytes_raw']), `relay ${p}: bytes_raw with the decoding relay's retries`);
      if (retried.decoded === 0) t.true(Number(carried['sinks.out.bytes_raw']) >= Number(decoded['sinks.out.bytes_raw']), `relay ${p}: bytes_raw with the carrying relay's retries`);
    }
  }
});

test.serial('a carrying relay SIGKILLed mid-stream and started again loses no entry; the dedup collector has each once, the bytes of the decoding chain', async (t) => {
  t.timeout(180_000);
  const c = await startChains(t);
  const half = INPUT.indexOf('\n', INPUT.length / 2) + 1;
  await feed(c.edge, INPUT.slice(0, half));
  const before = await waitFor(() => {
    const n = linesIn(c.dirs.p).length;
    return n > 500 ? n : undefined;
  }, 'entries through the carrying chain', 60_000);
  await killWithWorkers(c.relayP);
  const restarted = c.start('relay-p2', c.relayPToml, ['--logging.level=debug']);
  await waitReady(restarted, 'relay-p again');
  await feed(c.edge, INPUT.slice(half));
  await waitFor(() => linesIn(c.dirs.d).length >= TOTAL && new Set(linesIn(c.dirs.p)).size >= TOTAL, `all ${TOTAL} entries at the collector from both chains`, 120_000).catch((err: unknown) => {
    t.log(`at the collector: ${new Set(linesIn(c.dirs.p)).size} unique from the carrying chain, ${linesIn(c.dirs.d).length} from the decoding one`);
    t.log(latestStatus(c.edge, 'send'), latestStatus(restarted, 'a'), latestStatus(restarted, 'b'), latestStatus(c.collector, 'p'));
    throw err;
  });
  const viaCarry = linesIn(c.dirs.p);
  const viaDecode = linesIn(c.dirs.d);
  t.log(`killed with ${before} entries at the collector; ${viaCarry.length} lines written from the carrying chain`);
  t.is(viaCarry.length, TOTAL, 'each entry once: the copies the edge sent again were dropped by the collector\'s dedup');
  t.deepEqual([...viaCarry].sort(), [...viaDecode].sort(), 'the same bytes as through the decoding chain');
  const restartedCarried = await waitFor(() => latestStatus(restarted, 'b')?.['sources.in.carried_entries'], 'the restarted relay carried frames');
  t.true(Number(restartedCarried) > 0);
});
