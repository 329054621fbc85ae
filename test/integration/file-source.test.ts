// The file source with real files and a real node (issue 3, acceptance 1), and a blocking sink
// that pauses it without loss.

import { appendFileSync, mkdirSync, renameSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { fifoSinkDir } from '../helpers/fifo.js';
import { count, lines, readOrEmpty, text } from '../helpers/lines.js';
import { type RunningNode, startNodeInDir, type TempDir, tempDir, waitFor } from '../helpers/node.js';
import { latestCounter, statusAfter, statusReports } from '../helpers/status.js';
import { fileSinkToml, filePipeline, fileSourceToml, sinkToml } from '../helpers/toml.js';

const toml = (s: string) => JSON.stringify(s);

interface Started {
  readonly node: RunningNode;
  readonly dir: TempDir;
}

/** A node on `body(dir)` in a fresh dir, with a status report every 200 ms at debug. */
function setup(t: ExecutionContext, body: (dir: TempDir) => string): Started {
  const dir = tempDir('logrelay-file-source-');
  return { node: startNodeInDir(t, dir, body(dir)), dir };
}

test.serial('from = "end" skips what is there, from = "start" replays it; appended lines and new files arrive exactly once', async (t) => {
  const { node, dir } = setup(t, (d) => {
    mkdirSync(join(d.path, 'a'));
    mkdirSync(join(d.path, 'b'));
    writeFileSync(join(d.path, 'a', 'a.log'), text(lines('old a', 1, 3)));
    writeFileSync(join(d.path, 'b', 'b.log'), text(lines('old b', 1, 3)));
    return `
[[pipelines]]
name = "p"
${fileSourceToml('end', join(d.path, 'a'), 'check_interval_ms = 100')}${fileSourceToml('start', join(d.path, 'b'), 'from = "start"\ncheck_interval_ms = 100')}${sinkToml('out', 'stdout')}`;
  });
  await waitFor(() => latestCounter(node, 'p', 'sources.end.active_watchers') === 1 && latestCounter(node, 'p', 'sources.start.active_watchers') === 1, 'both sources watching');
  const a = join(dir.path, 'a', 'a.log');
  const b = join(dir.path, 'b', 'b.log');
  for (let i = 1; i <= 5; i++) {
    appendFileSync(a, text([`new a ${i}`]));
    appendFileSync(b, text([`new b ${i}`]));
  }
  writeFileSync(join(dir.path, 'a', 'later.log'), text(lines('later', 1, 3)));
  await waitFor(() => node.out.includes('later 3') && node.out.includes('new a 5') && node.out.includes('new b 5'), 'appended lines and the new file');
  // a last line after everything: once it is through, anything read twice would be through too
  appendFileSync(a, 'marker\n');
  await waitFor(() => node.out.includes('marker'), 'marker line');
  for (const l of lines('old a', 1, 3)) t.is(count(node.out, l), 0, l);
  for (const l of [...lines('old b', 1, 3), ...lines('new a', 1, 5), ...lines('new b', 1, 5), ...lines('later', 1, 3)]) t.is(count(node.out, l), 1, l);
  t.deepEqual(
    node.out.filter((l) => l.startsWith('later')),
    lines('later', 1, 3),
  );
  await waitFor(() => latestCounter(node, 'p', 'sources.end.active_watchers') === 2, 'the new file is watched');
});

test.serial('a rename rotation and a truncation lose nothing written after the start', async (t) => {
  const { node, dir } = setup(t, (d) => {
    writeFileSync(join(d.path, 'app.log'), text(lines('before start', 1, 20)));
    return filePipeline(d.path, 'pattern = "*.log"\ncheck_interval_ms = 100');
  });
  await waitFor(() => latestCounter(node, 'p', 'sources.f.active_watchers') === 1, 'source watching');
  const app = join(dir.path, 'app.log');
  // rotation: the old file ends in a partial line, is renamed away, and a new file takes its name
  appendFileSync(app, text(lines('line', 1, 50)) + 'partial line without newline');
  renameSync(app, join(dir.path, 'app.log.1'));
  writeFileSync(app, text(lines('line', 51, 100)));
  await waitFor(() => node.out.includes('line 100'), 'lines of the new file');
  t.deepEqual(node.out, [...lines('line', 1, 50), 'partial line without newline', ...lines('line', 51, 100)]);
  await waitFor(() => latestCounter(node, 'p', 'sources.f.rotations') === 1, 'rotation counted');
  // truncation (copytruncate): shorter than before, read again from offset 0
  truncateSync(app, 0);
  appendFileSync(app, text(lines('after truncate', 1, 3)));
  await waitFor(() => node.out.includes('after truncate 3'), 'lines after the truncation');
  appendFileSync(app, text(lines('tail', 1, 2)));
  await waitFor(() => node.out.includes('tail 2'), 'lines appended after the truncation');
  t.deepEqual(node.out.slice(101), [...lines('after truncate', 1, 3), ...lines('tail', 1, 2)]);
  await waitFor(() => latestCounter(node, 'p', 'sources.f.truncations') === 1, 'truncation counted');
  t.is(count(node.out, 'before start 1'), 0);
});

test.serial('a 3 MiB line is cut at max_line_bytes and counted; the next line is whole', async (t) => {
  const { node, dir } = setup(t, (d) => filePipeline(join(d.path, 'in'), 'check_interval_ms = 100', fileSinkToml('out', join(d.path, 'out'))));
  // the directory and file appear once the source runs: a file found later is read from its start
  await waitFor(() => latestCounter(node, 'p', 'sources.f.active_watchers') === 0, 'source running');
  mkdirSync(join(dir.path, 'in'));
  const big = join(dir.path, 'in', 'big.log');
  writeFileSync(big, `${'x'.repeat(3 * 1024 * 1024)}\nafter the long line\n`);
  const out = join(dir.path, 'out', 'out.1.log');
  const read = () => readOrEmpty(out);
  await waitFor(() => read().endsWith('after the long line\n'), 'the line after the long one');
  const written = Date.now();
  const got = read().split('\n');
  t.is(got.length, 3);
  t.is(got[0], 'x'.repeat(1048576));
  t.is(got[1], 'after the long line');
  // from a report of after both lines were written: one taken while the long line was still being
  // read past its cut would count it truncated, but not yet the line after it
  const s = await waitFor(() => statusAfter(node, 'p', written), 'a status report from after both lines were written');
  t.is(s['sources.f.truncated_lines'], 1);
  t.is(s['sources.f.total_entries'], 2);
  t.true(Number(s['sources.f.bytes_read']) > 3 * 1024 * 1024);
});

test.serial('a directory with spaces and brackets: * and ? patterns, no dot files, not recursive', async (t) => {
  const logsOf = (d: TempDir) => join(d.path, 'my logs [prod] (1) {a,b}!');
  const { node, dir } = setup(t, (d) => {
    const logs = logsOf(d);
    mkdirSync(join(logs, 'sub'), { recursive: true });
    writeFileSync(join(logs, 'a b.log'), 'spaced\n');
    writeFileSync(join(logs, 'app-1.log'), 'app one\n');
    writeFileSync(join(logs, 'app-22.log'), 'app twenty-two\n');
    writeFileSync(join(logs, '.hidden'), 'hidden\n');
    writeFileSync(join(logs, 'sub', 'x.log'), 'nested\n');
    const source = (id: string, pattern: string) => fileSourceToml(id, logs, `pattern = ${toml(pattern)}\nfrom = "start"`);
    return `
[[pipelines]]
name = "p"
${source('all', '*')}
${source('one', 'app-?.log')}
[pipelines.flow.format]
type = "json"
[[pipelines.plugin_sinks]]
id = "out"
type = "stdout"
`;
  });
  await waitFor(() => latestCounter(node, 'p', 'sources.all.total_entries') === 3 && latestCounter(node, 'p', 'sources.one.total_entries') === 1, 'entries counted per source');
  await waitFor(() => node.out.length === 4, 'four lines out');
  const got = node.out.map((l) => {
    const e = JSON.parse(l) as { source: string; message: string };
    return `${e.source}: ${e.message}`;
  });
  t.deepEqual(got.sort(), ['a b.log: spaced', 'app-1.log: app one', 'app-1.log: app one', 'app-22.log: app twenty-two']);
  t.is(latestCounter(node, 'p', 'sources.all.active_watchers'), 3);
  // Files born later: the discovery that finds the visible one passes over the dot file and the
  // nested one. The visible file sorts last, so anything opened in the same scan is read first.
  writeFileSync(join(logsOf(dir), '.later'), 'hidden later\n');
  writeFileSync(join(logsOf(dir), 'sub', 'later.log'), 'nested later\n');
  writeFileSync(join(logsOf(dir), 'zz-later.log'), 'visible later\n');
  await waitFor(() => node.out.some((l) => l.includes('"visible later"')), 'the visible file born later');
  t.deepEqual(
    node.out.filter((l) => /hidden|nested/.test(l)),
    [],
    'no dot file, no file in a subdirectory',
  );
});

test.serial('on_full = "block": a stalled sink pauses the file source, and nothing is lost once it resumes', async (t) => {
  // several read chunks' worth, so the source has to pause between reads
  const total = 200_000;
  // the sink's current file is a FIFO the test reads: stop reading and the sink stalls
  const { dir, received, stream: reader } = fifoSinkDir(t, 'logrelay-file-block-');
  writeFileSync(join(dir.path, 'in', 'app.log'), text(lines('entry', 1, total)));
  const node = startNodeInDir(t, dir, filePipeline(join(dir.path, 'in'), 'from = "start"', fileSinkToml('out', join(dir.path, 'out'), 'buffer_size = 100\non_full = "block"')));
  // paused: the source's count stays put below the total across reports at least 1.5 s apart
  const stalled = () => {
    const reps = statusReports(node, 'p');
    const last = reps.at(-1);
    if (!last) return false;
    const n = last['sources.f.total_entries'] as number;
    const t1 = Date.parse(last.time as string);
    return n < total && reps.some((r) => r['sources.f.total_entries'] === n && t1 - Date.parse(r.time as string) >= 1500);
  };
  await waitFor(stalled, 'the source pauses while the sink is stalled');
  reader.resume();
  await waitFor(() => received.length >= total, `all ${total} entries through the resumed sink`, 40_000);
  t.deepEqual(received, lines('entry', 1, total));
  await waitFor(() => latestCounter(node, 'p', 'sinks.out.total_processed') === total, 'counters caught up');
  t.is(latestCounter(node, 'p', 'total_dropped_by_sink'), 0);
  t.is(latestCounter(node, 'p', 'sources.f.dropped_entries'), 0);
});

test.serial('a file of many reads arrives whole and in order: lines and multi-byte characters cut between reads', async (t) => {
  // about 40 reads of 64 KiB
  const total = 20_000;
  const want = Array.from({ length: total }, (_, i) => `entry ${i} ${'é'.repeat(i % 7)}${'x'.repeat((i * 37) % 241)}`);
  const { dir, received, stream: reader } = fifoSinkDir(t, 'logrelay-file-reads-');
  const body = text(want);
  writeFileSync(join(dir.path, 'in', 'app.log'), body);
  reader.resume();
  // a queue that holds the whole file: the source reads on without a pause
  const node = startNodeInDir(t, dir, filePipeline(join(dir.path, 'in'), 'from = "start"', fileSinkToml('out', join(dir.path, 'out'), `buffer_size = ${total}\non_full = "block"`)));
  await waitFor(() => received.length >= total, `all ${total} lines`, 40_000);
  t.deepEqual(received, want);
  await waitFor(() => latestCounter(node, 'p', 'sources.f.bytes_read') === Buffer.byteLength(body), 'every byte of the file counted read once');
});

test.serial('a file created right after the source started is read from its start, even if the first scan sees it', async (t) => {
  // The first scan runs just after start(); a file born after start() is new, whichever scan finds it.
  for (let round = 0; round < 3; round++) {
    const { node, dir } = setup(t, (d) => {
      mkdirSync(join(d.path, 'in'));
      return `[[pipelines]]
name = "p"
[[pipelines.plugin_sources]]
type = "file"
config = { directory = ${toml(join(d.path, "in"))}, check_interval_ms = 2000 }
[[pipelines.plugin_sinks]]
type = "stdout"
`;
    });
    await waitFor(() => node.records.some((r) => r.msg === 'Starting pipeline'), 'started');
    writeFileSync(join(dir.path, 'in', 'new.log'), text(lines(`born ${round}`, 1, 5)));
    await waitFor(() => node.out.filter((l) => l.startsWith(`born ${round} `)).length === 5, `round ${round}: all five lines of the new file`, 15_000);
    t.deepEqual(node.out, lines(`born ${round}`, 1, 5));
  }
});
