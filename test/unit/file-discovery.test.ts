// The `directory` + `pattern` form of the file source's discovery (src/sources/file-discovery.ts)
// lists its directory with one readdir: on a real directory of files, links, directories and dot
// files, it finds what fast-glob found with the options it was called with before (one level, only
// files, links followed, no dot files), for patterns with `*`, `?`, a leading dot and characters
// a glob would read.

import { spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import fg from 'fast-glob';
import { directoryFinder } from '../../src/sources/file-discovery.js';
import { ownedTempDir } from '../helpers/node.js';

/**
 * The fast-glob pattern the directory form was listed with before: only `*` and `?` are special,
 * everything else escaped (the directory goes in as `cwd`).
 */
function fileGlob(pattern: string): string {
  return pattern
    .split(/([*?])/)
    .map((part) => (part === '*' || part === '?' || part === '' ? part : fg.escapePath(part)))
    .join('');
}

const NAMES = ['app.log', 'b.log', 'app.log.1', 'app.txt', '.hidden.log', '.log', 'x.log.gz', 'a[1].log', 'a{b}.log', 'a(1).log', 'ab.log', 'a.log', 'sp ace.log', 'line\nbreak.log', '!bang.log', 'é.log'];

test('the directory form finds what fast-glob found: regular files and links to them, names matched as the glob, no dot files', async (t) => {
  const dir = ownedTempDir(t);
  const root = dir.path;
  for (const n of NAMES) writeFileSync(join(root, n), 'x\n');
  mkdirSync(join(root, 'dir.log'));
  writeFileSync(join(root, 'dir.log', 'inner.log'), 'x\n');
  symlinkSync(join(root, 'app.log'), join(root, 'link.log'));
  symlinkSync(join(root, 'dir.log'), join(root, 'linkdir.log'));
  symlinkSync(join(root, 'gone.log'), join(root, 'broken.log'));
  symlinkSync(join(root, 'app.log'), join(root, '.dotlink.log'));
  const fifo = spawnSync('mkfifo', [join(root, 'fifo.log')], { encoding: 'utf8' });
  if (fifo.status !== 0) throw new Error(`mkfifo (coreutils) failed: ${fifo.stderr}`);

  for (const pattern of ['*', '*.log', '*.log*', 'a?.log', '?.log', 'a[1].log', 'a{b}.log', 'a(1).log', '!bang.log', '.*', '.hidden.log', '*log', 'app.log', 'sp ace.log', 'nothing*']) {
    const expected = (await fg(fileGlob(pattern), { onlyFiles: true, dot: false, followSymbolicLinks: true, suppressErrors: true, cwd: root, deep: 1 })).map((n) => join(root, n)).sort();
    const { paths, missing } = await directoryFinder(root, pattern).find();
    t.deepEqual(paths, expected, `pattern ${JSON.stringify(pattern)}`);
    t.deepEqual(missing, []);
  }
  t.true((await directoryFinder(root, '*.log').find()).paths.length >= 10, 'the directory was read');
});

test('the directory form: a missing directory finds nothing and says it is missing', async (t) => {
  const dir = ownedTempDir(t);
  const missing = join(dir.path, 'not-there');
  t.deepEqual(await directoryFinder(missing, '*.log').find(), { paths: [], missing: [missing] });
  const empty = join(dir.path, 'empty');
  mkdirSync(empty);
  t.deepEqual(await directoryFinder(empty, '*.log').find(), { paths: [], missing: [] });
});
