// Writes that fail while others before them wait for their sync: every write not yet durable must
// be taken back and written again, where it was, by the retry. A disk buffer in a
// child process under a file size limit (RLIMIT_FSIZE: writes past it fail with EFBIG) appends
// bursts until its writes fail; the limit is lifted; every batch it acknowledged must then be in
// its segment files, each record once, with no sequence missing.

import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { recordAt, segmentSeq } from '../../src/buffer/record.js';
import { tempBufferDir } from '../helpers/disk-buffer.js';

const CHILD = new URL('../helpers/write-fail-child.js', import.meta.url).pathname;

test('a write that fails takes back every write not yet durable: everything acknowledged is on disk once, after the retry', async (t) => {
  t.timeout(90_000);
  const dir = tempBufferDir(t);
  // 400 kB: a few dozen bursts in
  const child = spawn('prlimit', ['--fsize=400000:unlimited', process.execPath, CHILD, dir], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const deadline = Date.now() + 60_000;
  while (!out.includes('failing\n')) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the child's writes never failed: ${err}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  const lift = spawn('prlimit', ['--pid', String(child.pid), '--fsize=unlimited:unlimited']);
  t.is(await new Promise<number | null>((resolve) => lift.once('exit', resolve)), 0);
  child.stdin.write('go\n');
  t.is(await exited, 0, err);
  const result = JSON.parse(out.split('\n').find((l) => l.startsWith('{'))!) as { acked: number[]; errors: number };
  t.true(result.errors > 0, 'writes failed');
  // what the segments hold, record by record
  const onDisk: number[] = [];
  for (const name of readdirSync(dir).filter((f) => segmentSeq(f) !== undefined).sort()) {
    const bytes = readFileSync(join(dir, name));
    for (let at = 0; at < bytes.length; ) {
      const r = recordAt(bytes, at);
      if (r.kind !== 'ok') throw new Error(`${name}: ${r.kind} record at ${at} of ${bytes.length}`);
      onDisk.push(r.seq);
      at = r.end;
    }
  }
  const held = new Set(onDisk);
  t.is(held.size, onDisk.length, 'no record twice');
  const missing = result.acked.filter((s) => !held.has(s));
  t.deepEqual(missing.slice(0, 10), [], `${missing.length} of ${result.acked.length} acknowledged records missing`);
  t.deepEqual(onDisk, [...onDisk].sort((a, b) => a - b), 'in order');
  t.true(result.acked.length > 1000);
});
