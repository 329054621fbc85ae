// auto_reload's watch (src/primary/watch.ts): which files a configuration names, and which
// changes are reported, on real files: edits in place, kubelet's `..data` swaps, swaps that
// change nothing, and changes made while the watched set is replaced.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { loadConfig } from '../../src/config/load.js';
import { createFileWatch, type FileWatch, tlsFilesOf } from '../../src/primary/watch.js';
import { atomicVolume } from '../helpers/kubelet.js';
import { ownedTempDir, waitFor } from '../helpers/node.js';

/** A watch whose reports are collected; stopped at teardown. */
function watching(t: { teardown(fn: () => void): void }): { watch: FileWatch; reports: string[][]; errors: unknown[] } {
  const reports: string[][] = [];
  const errors: unknown[] = [];
  const watch = createFileWatch(
    (changed) => reports.push([...changed].sort()),
    (err) => errors.push(err),
  );
  t.teardown(() => watch.stop());
  return { watch, reports, errors };
}

test('tlsFilesOf: the PEM files of enabled tls blocks, the admin endpoint apart, as absolute paths', (t) => {
  const dir = ownedTempDir(t);
  const file = dir.file(
    'node.toml',
    `[admin]
port = 9598
[admin.tls]
enabled = true
cert_file = "/a/admin.crt"
key_file = "/a/admin.key"
[[pipelines]]
name = "p"
[[pipelines.plugin_sources]]
id = "in"
type = "tcp_chain"
[pipelines.plugin_sources.config]
port = 7000
[pipelines.plugin_sources.config.tls]
enabled = true
cert_file = "/t/tls.crt"
key_file = "/t/tls.key"
client_ca_file = "/t/ca.crt"
[[pipelines.plugin_sinks]]
id = "off"
type = "tcp_chain"
[pipelines.plugin_sinks.config]
port = 7001
[pipelines.plugin_sinks.config.tls]
enabled = false
ca_file = "/never/read.crt"
[[pipelines.plugin_sinks]]
id = "rel"
type = "tcp_chain"
[pipelines.plugin_sinks.config]
port = 7002
[pipelines.plugin_sinks.config.tls]
enabled = true
ca_file = "relative/ca.crt"
`,
  );
  const files = tlsFilesOf(loadConfig({ file, env: {}, flags: new Map() }));
  t.deepEqual(files.admin, ['/a/admin.crt', '/a/admin.key']);
  t.deepEqual(files.pipelines, ['/t/tls.crt', '/t/tls.key', '/t/ca.crt', join(process.cwd(), 'relative/ca.crt')]);
});

test('a kubelet swap that changes a watched file is reported with its path; one that changes nothing is not', async (t) => {
  const dir = ownedTempDir(t);
  const volume = atomicVolume(join(dir.path, 'tls'), { 'tls.crt': 'one', 'tls.key': 'key', 'other.txt': 'x' });
  const plain = dir.file('plain.toml', 'a = 1\n');
  const { watch, reports, errors } = watching(t);
  watch.setFiles([volume.path('tls.crt'), volume.path('tls.key'), plain]);
  // the same content swapped in, and an unwatched file changed: nothing to report
  volume.update({ 'tls.crt': 'one', 'tls.key': 'key', 'other.txt': 'y' });
  // then a real edit elsewhere is the sync point: it must be the first report
  writeFileSync(plain, 'a = 2\n');
  await waitFor(() => reports.length > 0, 'the edit of plain.toml reported');
  t.deepEqual(reports, [[plain]]);
  volume.update({ 'tls.crt': 'two', 'tls.key': 'key2', 'other.txt': 'y' });
  await waitFor(() => reports.length > 1, 'the swap reported');
  t.deepEqual(reports[1], [volume.path('tls.crt'), volume.path('tls.key')].sort());
  t.deepEqual(errors, []);
});

test('a change made while the watched set is replaced is still reported; a file left out is not', async (t) => {
  const dir = ownedTempDir(t);
  const a = dir.file('a.pem', 'a1');
  const b = dir.file('b.pem', 'b1');
  const { watch, reports } = watching(t);
  watch.setFiles([a, b]);
  writeFileSync(a, 'a2');
  writeFileSync(b, 'b2');
  // replaced before the quiet period ran: a is kept with what it was last seen as, b dropped
  watch.setFiles([a]);
  await waitFor(() => reports.length > 0, 'the change to a reported');
  t.deepEqual(reports, [[a]]);
});

test('a watch on a directory that does not exist calls onError once and stops', (t) => {
  const { watch, errors } = watching(t);
  watch.setFiles(['/nonexistent-logrelay-dir/logrelay.toml']);
  t.is(errors.length, 1);
  t.is((errors[0] as NodeJS.ErrnoException).code, 'ENOENT');
  watch.setFiles(['/another-nonexistent/x']);
  t.is(errors.length, 1, 'stopped: no second report');
});

test('an item in a subdirectory of the volume (`certs` -> `..data/certs`) is followed over several swaps', async (t) => {
  const dir = ownedTempDir(t);
  const volume = atomicVolume(join(dir.path, 'secret'), { 'certs/tls.crt': 'one' });
  const crt = volume.path('certs/tls.crt');
  const { watch, reports, errors } = watching(t);
  watch.setFiles([crt]);
  for (const [i, content] of ['two', 'three', 'four'].entries()) {
    volume.update({ 'certs/tls.crt': content });
    await waitFor(() => reports.length > i, `swap ${i + 1} reported`);
    t.deepEqual(reports[i], [crt]);
  }
  t.deepEqual(errors, []);
});
