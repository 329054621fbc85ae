// The file source across rotation by rename to a name the pattern does not match (logrotate's
// `create` mode), across a reload during the rotated file's grace, with a file it cannot open, and
// across a reload in the middle of an over-long line: real files, a real node.

import { spawnSync } from 'node:child_process';
import { appendFileSync, chmodSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { count, lines, text } from '../helpers/lines.js';
import { type RunningNode, sleep, startNodeInDir, tempDir, waitFor } from '../helpers/node.js';
import { latestCounter, statusReports } from '../helpers/status.js';
import { filePipeline } from '../helpers/toml.js';

/** File source keys: `*.log`, looked at every 100 ms. */
const TAIL_LOGS = 'check_interval_ms = 100\npattern = "*.log"';

/** Index of the record just after the node's `n`-th `Configuration reloaded`, once it is there. */
const reloadedAt = (node: RunningNode, n: number) =>
  waitFor(
    () => {
      let seen = 0;
      const i = node.records.findIndex((r) => r.msg === 'Configuration reloaded' && ++seen === n);
      return i >= 0 ? i + 1 : undefined;
    },
    `reload ${n} done`,
  );

/**
 * A node tailing `*.log` in a fresh dir; `<prefix> 1..<n>` are written to app.log and read, then
 * app.log is renamed to app.log.1 (logrotate) and the rename seen: rotations = 1.
 */
async function rotatedApp(t: ExecutionContext, prefix: string, n: number) {
  const dir = tempDir('logrelay-file-rotation-');
  const app = dir.file('app.log', '');
  const rotated = join(dir.path, 'app.log.1');
  const node = startNodeInDir(t, dir, filePipeline(dir.path, TAIL_LOGS));
  await waitFor(() => latestCounter(node, 'p', 'sources.f.active_watchers') === 1, 'source watching app.log');
  appendFileSync(app, text(lines(prefix, 1, n)));
  await waitFor(() => node.out.includes(`${prefix} ${n}`), 'lines written before the rotation');
  renameSync(app, rotated);
  // before the fix, the file was closed in the very cycle that saw the rename
  await waitFor(() => latestCounter(node, 'p', 'sources.f.rotations') === 1, 'rotation counted');
  return { node, app, rotated };
}

test.serial('a file renamed to a name the pattern does not match is tailed through the grace, before its successor', async (t) => {
  const { node, app, rotated } = await rotatedApp(t, 'line', 20);
  // the application still writes through its old descriptor, and one line in two writes
  appendFileSync(rotated, `${text(lines('line', 21, 29))}line `);
  const written = Buffer.byteLength(text(lines('line', 1, 29)) + 'line ');
  await waitFor(() => latestCounter(node, 'p', 'sources.f.bytes_read') === written, 'the rotated file read up to its partial line');
  appendFileSync(rotated, '30\n');
  // then it reopens its log under the old name
  writeFileSync(app, text(lines('line', 31, 40)));
  await waitFor(() => node.out.includes('line 40'), 'lines of the new file');
  t.deepEqual(node.out, lines('line', 1, 40));
  await waitFor(() => latestCounter(node, 'p', 'sources.f.active_watchers') === 2, 'the rotated and the new file watched');
  // idle for the grace, the rotated file is closed; the new one stays watched
  await waitFor(() => latestCounter(node, 'p', 'sources.f.active_watchers') === 1, 'the rotated file closed after the grace', 15_000);
  t.is(latestCounter(node, 'p', 'sources.f.rotations'), 1);
  appendFileSync(app, 'marker\n');
  await waitFor(() => node.out.includes('marker'), 'marker line');
  t.deepEqual(node.out, [...lines('line', 1, 40), 'marker']);
});

test.serial('a reload during the grace hands the rotated file over: nothing lost or read twice, its partial line whole', async (t) => {
  const { node, app, rotated } = await rotatedApp(t, 'old', 10);
  writeFileSync(app, text(lines('new', 1, 5)));
  await waitFor(() => node.out.includes('new 5'), 'the new file read');
  // the application still writes to the rotated file, ending in a line it keeps writing through the reload
  appendFileSync(rotated, `${text(lines('old', 11, 20))}old 21`);
  await waitFor(() => node.out.includes('old 20'), 'the rotated file read');
  let words = 0;
  let writing = true;
  const writer = (async () => {
    while (writing) {
      appendFileSync(rotated, ' more');
      words++;
      await sleep(300);
    }
  })();
  t.teardown(() => {
    writing = false;
  });
  node.signal('SIGHUP');
  const after = await reloadedAt(node, 1);
  await waitFor(() => statusReports(node, 'p', after).some((r) => r['sources.f.active_watchers'] === 2), 'the new generation tails both files');
  writing = false;
  await writer;
  appendFileSync(rotated, `\n${text(lines('old', 22, 25))}`);
  appendFileSync(app, text(lines('new', 6, 10)));
  const longLine = `old 21${' more'.repeat(words)}`;
  await waitFor(() => node.out.includes('old 25') && node.out.includes('new 10') && node.out.includes(longLine), 'lines written after the reload');
  // a last line after everything: anything read twice would be through by then
  appendFileSync(app, 'marker\n');
  await waitFor(() => node.out.includes('marker'), 'marker line');
  const old = [...lines('old', 1, 20), longLine, ...lines('old', 22, 25)];
  t.deepEqual(
    node.out.filter((l) => l.startsWith('old')),
    old,
  );
  t.deepEqual(
    node.out.filter((l) => l.startsWith('new')),
    lines('new', 1, 10),
  );
  t.is(node.out.length, old.length + 10 + 1, node.out.join('\n'));
});

test.serial('two rotations within the grace, then a reload: both rotated files are handed over under their current names', async (t) => {
  const { node, app, rotated } = await rotatedApp(t, 'x', 3);
  const second = `${app}.2`;
  writeFileSync(app, text(lines('y', 1, 3)));
  await waitFor(() => node.out.includes('y 3'), 'the second file read');
  // logrotate again, within the first rotated file's 5 s grace: app.log.1 → .2, app.log → .1
  renameSync(rotated, second);
  renameSync(app, rotated);
  writeFileSync(app, '');
  await waitFor(() => latestCounter(node, 'p', 'sources.f.rotations') === 2, 'the second rotation counted');
  // the first rotated file grows again: its 5 s grace starts anew, well past the reload
  appendFileSync(second, text(lines('x', 4, 4)));
  await waitFor(() => node.out.includes('x 4'), 'the first rotated file read under its second name');
  node.signal('SIGHUP');
  const after = await reloadedAt(node, 1);
  await waitFor(() => statusReports(node, 'p', after).some((r) => r['sources.f.active_watchers'] === 3), 'the new generation tails all three files');
  // the applications still write to both rotated files, and to the new one
  appendFileSync(second, text(lines('x', 5, 5)));
  appendFileSync(rotated, text(lines('y', 4, 5)));
  appendFileSync(app, text(lines('z', 1, 2)));
  await waitFor(() => ['x 5', 'y 5', 'z 2'].every((l) => node.out.includes(l)), 'lines written after the reload');
  appendFileSync(app, 'marker\n');
  await waitFor(() => node.out.includes('marker'), 'marker line');
  t.deepEqual(node.out.filter((l) => l.startsWith('x')), lines('x', 1, 5));
  t.deepEqual(node.out.filter((l) => l.startsWith('y')), lines('y', 1, 5));
  t.deepEqual(node.out.filter((l) => l.startsWith('z')), lines('z', 1, 2));
});

// Root opens a mode-000 file anyway (CAP_DAC_OVERRIDE); as root the node runs without that
// capability and its read-search twin, so the file is as unopenable to it as to anyone else.
const asRoot = process.getuid?.() === 0;
const DROP_DAC = ['setpriv', '--bounding-set', '-dac_override,-dac_read_search'];
const dropsDac = !asRoot || spawnSync(DROP_DAC[0]!, [...DROP_DAC.slice(1), 'true']).status === 0;
const unopenableTitle = 'a file that cannot be opened is warned about once per inode, and read once it can be';
// without setpriv, root could not make the file unopenable: the test would assert nothing, so it shows as skipped
(dropsDac ? test.serial : test.serial.skip)(dropsDac ? unopenableTitle : `${unopenableTitle} (skipped: running as root without setpriv)`, async (t) => {
  const dir = tempDir('logrelay-file-rotation-');
  const secret = dir.file('secret.log', 'secret 1\n');
  chmodSync(secret, 0o000);
  dir.file('ok.log', 'ok 1\n');
  const node = startNodeInDir(t, dir, filePipeline(dir.path, `${TAIL_LOGS}\nfrom = "start"`), { via: asRoot ? DROP_DAC : undefined });
  const warnings = () => node.records.filter((r) => r.msg === 'File cannot be opened' && r.path === secret);
  await waitFor(() => node.out.includes('ok 1') && warnings().length === 1, 'the readable file read and the other warned about');
  t.like(warnings()[0], { level: 'warn', pipeline: 'p', plugin: 'f' });
  // many discoveries later (ten status reports at 200 ms, at 100 ms each), still one warning
  const mark = node.records.length;
  await waitFor(() => statusReports(node, 'p', mark).length >= 10, 'ten status reports');
  t.is(warnings().length, 1);
  // another unreadable file under the same name is news
  const next = dir.file('secret.tmp', 'secret 2\n');
  chmodSync(next, 0o000);
  renameSync(next, secret);
  await waitFor(() => warnings().length === 2, 'a warning for the new inode');
  chmodSync(secret, 0o644);
  await waitFor(() => node.out.includes('secret 2'), 'the file read once it can be opened');
  t.is(warnings().length, 2);
  t.is(count(node.out, 'secret 2'), 1);
});

test.serial('a reload while an over-long line is being skipped emits no spurious entry from its rest', async (t) => {
  const dir = tempDir('logrelay-file-rotation-');
  const app = dir.file('app.log', '');
  const node = startNodeInDir(t, dir, filePipeline(dir.path, `${TAIL_LOGS}\nmax_line_bytes = 1000`));
  await waitFor(() => latestCounter(node, 'p', 'sources.f.active_watchers') === 1, 'source watching app.log');
  appendFileSync(app, `before\n${'x'.repeat(3000)}`);
  await waitFor(() => node.out.includes('x'.repeat(1000)) && latestCounter(node, 'p', 'sources.f.truncated_lines') === 1, 'the head of the long line cut');
  node.signal('SIGHUP');
  const after = await reloadedAt(node, 1);
  await waitFor(() => statusReports(node, 'p', after).some((r) => r['sources.f.active_watchers'] === 1), 'the new generation tails app.log');
  appendFileSync(app, `${'y'.repeat(500)}\nafter\n`);
  await waitFor(() => node.out.includes('after'), 'the line after the long one');
  t.deepEqual(node.out, ['before', 'x'.repeat(1000), 'after']);
  await waitFor(() => statusReports(node, 'p', after).some((r) => r['sources.f.bytes_read'] === 507), 'the new generation read the rest');
  t.is(statusReports(node, 'p', after).at(-1)?.['sources.f.truncated_lines'], 0);
});
