// Dead letters (DESIGN.md §24) with real receivers on 127.0.0.1: an http_chain sink whose peer
// answers 400 and an otlp sink whose receiver rejects part of a batch (and a whole one with 400)
// hand those entries to a file sink with `fields.dead_letter`; nothing is lost, nothing counted
// in `dropped_batches`; and the file source's position advances past them (they are done).

import { createServer } from 'node:http';
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { adminStatus } from '../helpers/admin.js';
import { ExportLogsServiceResponse, otlpReceiver, Status } from '../helpers/otlp.js';
import { freePort, ownedTempDir, startOwnedNode, waitFor } from '../helpers/node.js';
import { fileSourceToml } from '../helpers/toml.js';

interface Letter {
  message: string;
  fields: { n?: string; dead_letter: { sink: string; reason: string; status?: number; at: string } };
}

function letters(dir: string): Letter[] {
  const file = join(dir, 'out.1.log');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Letter);
}

const sink = (id: string, type: string, extra: string, config: string) => `[[pipelines.plugin_sinks]]\nid = "${id}"\ntype = "${type}"\n${extra}\n[pipelines.plugin_sinks.config]\n${config}\n`;

/** A node reading `<dir>/in/app.log` (with `firstText` in it) from the start into pipeline `pipeline`: sink `main` (`mainToml`, naming `dead_letter = "dl"`), and the file sink `dl` at `<dir>/dl`. */
async function startDeadLetterNode(t: ExecutionContext, pipeline: string, mainToml: string, firstText: string) {
  const dir = ownedTempDir(t);
  const inDir = join(dir.path, 'in');
  mkdirSync(inDir);
  const log = join(inDir, 'app.log');
  writeFileSync(log, firstText);
  const dl = join(dir.path, 'dl');
  const admin = await freePort();
  startOwnedNode(
    t,
    `status_interval_ms = 60000
[admin]
port = ${admin}
[[pipelines]]
name = "${pipeline}"
[pipelines.flow.format]
type = "json"
${fileSourceToml('f', inDir, 'from = "start"')}${mainToml}${sink('dl', 'file', '', `directory = ${JSON.stringify(dl)}\nname = "out"`)}`,
  );
  return { dir, inDir, log, dl, admin };
}

test.serial('an http_chain batch refused with 400 goes to the dead letter file sink, whole, with fields.dead_letter; no dropped_batches', async (t) => {
  t.timeout(60_000);
  let requests = 0;
  const peer = createServer((req, res) => {
    requests++;
    req.resume();
    req.on('end', () => {
      res.writeHead(400);
      res.end('bad protocol');
    });
  });
  await new Promise<void>((resolve) => peer.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => peer.close(() => resolve())));
  const port = (peer.address() as { port: number }).port;
  const lines = Array.from({ length: 30 }, (_, i) => `line ${i}`);
  const { inDir, dl, admin } = await startDeadLetterNode(t, 'edge', sink('up', 'http_chain', 'dead_letter = "dl"', `host = "127.0.0.1"\nport = ${port}\nmax_batch_count = 10`), `${lines.join('\n')}\n`);
  await waitFor(() => letters(dl).length >= 30, 'the 30 refused entries in the dead letter file', 30_000);
  const got = letters(dl);
  t.deepEqual(got.map((l) => l.message).sort(), [...lines].sort(), 'each refused entry once');
  for (const l of got) {
    t.like(l.fields.dead_letter, { sink: 'up', reason: 'rejected', status: 400 });
    t.false(Number.isNaN(Date.parse(l.fields.dead_letter.at)));
  }
  t.true(requests >= 3);
  const status = await waitFor(async () => {
    const s = await adminStatus(admin).catch(() => undefined);
    return s?.pipelines.edge?.counters.sinks.up?.dead_lettered === 30 ? s : undefined;
  }, 'dead_lettered reaches 30');
  const up = status.pipelines.edge!.counters.sinks.up!;
  t.is(up.dropped_batches, 0);
  t.deepEqual(status.pipelines.edge!.drops.filter((d) => d.count > 0), [], 'nothing counted as lost');
  // the entries are done: the file's acknowledged position is its end
  const size = readFileSync(join(inDir, 'app.log')).length;
  await waitFor(async () => {
    const s = await adminStatus(admin).catch(() => undefined);
    const pos = (s as unknown as { pipelines: Record<string, { positions: Record<string, Record<string, { offset: number }>> }> } | undefined)?.pipelines.edge?.positions.f;
    return pos && Object.values(pos).some((p) => p.offset === size);
  }, 'the file position acknowledged to its end');
});

test.serial('otlp: records a receiver rejects (partial success, and 400) go to the dead letter sink; nothing lost, no dropped_batches', async (t) => {
  t.timeout(60_000);
  const receiver = await otlpReceiver((req) => {
    if (req.n === 0) {
      const body = ExportLogsServiceResponse.encode(ExportLogsServiceResponse.fromObject({ partialSuccess: { rejectedLogRecords: 2, errorMessage: 'two bad' } })).finish();
      return { status: 200, headers: { 'Content-Type': 'application/x-protobuf' }, body: Buffer.from(body) };
    }
    if (req.n === 1) return { status: 400, headers: { 'Content-Type': 'application/x-protobuf' }, body: Buffer.from(Status.encode(Status.fromObject({ code: 3, message: 'bad batch' })).finish()) };
    return { status: 200 };
  });
  t.teardown(() => receiver.close());
  const lines = Array.from({ length: 30 }, (_, i) => `otlp line ${i}`);
  const { dl, admin } = await startDeadLetterNode(t, 'edge', sink('otel', 'otlp', 'dead_letter = "dl"', `endpoint = "${receiver.url}"\nmax_batch_count = 10\nmax_in_flight = 1\nflush_interval_ms = 50`), `${lines.join('\n')}\n`);
  await waitFor(() => receiver.requests.length >= 3 && letters(dl).length >= 20, 'three requests answered, two batches dead-lettered', 30_000);
  const first = receiver.requests[0]!.messages;
  const second = receiver.requests[1]!.messages;
  const got = letters(dl);
  t.deepEqual(
    got.map((l) => l.message),
    [...first, ...second],
    'the partly rejected request whole (OTLP does not say which records), then the refused one',
  );
  t.true(got.slice(0, first.length).every((l) => l.fields.dead_letter.reason === 'partial_success' && l.fields.dead_letter.status === 200));
  t.true(got.slice(first.length).every((l) => l.fields.dead_letter.reason === 'rejected' && l.fields.dead_letter.status === 400));
  // nothing lost: every line reached the receiver's accepted requests or the dead letter file
  const arrived = () => new Set([...receiver.requests.slice(2).flatMap((r) => r.messages), ...letters(dl).map((l) => l.message)]);
  await waitFor(() => {
    const seen = arrived();
    return lines.every((l) => seen.has(l));
  }, 'every line delivered or dead-lettered', 20_000);
  const status = await waitFor(async () => {
    const s = await adminStatus(admin).catch(() => undefined);
    return s?.pipelines.edge?.counters.sinks.otel?.dead_lettered === got.length ? s : undefined;
  }, 'dead_lettered counted');
  t.is(status.pipelines.edge!.counters.sinks.otel!.dropped_batches, 0);
  t.deepEqual(status.pipelines.edge!.drops.filter((d) => d.count > 0), []);
});

test.serial('a file sink whose writes fail (its directory replaced by a file) sends the entries to its dead letter sink, not dropped_writes', async (t) => {
  t.timeout(60_000);
  const outDir = ownedTempDir(t);
  const out = join(outDir.path, 'out');
  const { log, dl, admin } = await startDeadLetterNode(t, 'p', sink('main', 'file', 'dead_letter = "dl"', `directory = ${JSON.stringify(out)}\nname = "out"`), 'before\n');
  await waitFor(() => letters(out).length === 1, 'the first line written by the main sink');
  rmSync(out, { recursive: true });
  writeFileSync(out, 'not a directory');
  // lines written before the sink notices its file is gone still go to the unlinked file: probe until one is dead-lettered
  let probe = 0;
  await waitFor(() => {
    appendFileSync(log, `probe ${probe++}\n`);
    return letters(dl).length > 0;
  }, 'a probe line in the dead letter file', 20_000);
  const finals = Array.from({ length: 20 }, (_, i) => `final ${i}`);
  appendFileSync(log, `${finals.join('\n')}\n`);
  await waitFor(() => finals.every((f) => letters(dl).some((l) => l.message === f)), 'every final line dead-lettered');
  for (const l of letters(dl)) t.like(l.fields.dead_letter, { sink: 'main', reason: 'write_failed' });
  t.false(letters(dl).some((l) => 'status' in l.fields.dead_letter));
  const s = await waitFor(async () => {
    const st = await adminStatus(admin).catch(() => undefined);
    return (st?.pipelines.p?.counters.sinks.main?.dead_lettered ?? 0) >= letters(dl).length ? st : undefined;
  }, 'dead_lettered counted');
  t.is(s.pipelines.p!.counters.sinks.main!.dropped_writes, 0);
});
