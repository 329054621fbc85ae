// Tests remove what they create (issue 38): a run of the disk buffer tests, in a temp directory of
// their own (TMPDIR), leaves it empty. (A run used to leave about 90 logrelay-buffer-* behind.)

import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { ROOT } from '../helpers/node.js';

const BUFFER_TESTS = ['dist/test/unit/buffer-model.test.js', 'dist/test/unit/buffer-corruption.test.js', 'dist/test/unit/buffer-config.test.js', 'dist/test/integration/buffer-write-fail.test.js'];

test('a run of the buffer tests leaves nothing in the temp directory', async (t) => {
  t.timeout(300_000);
  const tmp = mkdtempSync(join(tmpdir(), 'logrelay-cleanup-'));
  t.teardown(() => rmSync(tmp, { recursive: true, force: true }));
  const ava = join(ROOT, 'node_modules', 'ava', 'entrypoints', 'cli.mjs');
  const child = spawn(process.execPath, [ava, ...BUFFER_TESTS], { cwd: ROOT, env: { ...process.env, TMPDIR: tmp }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 280_000);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearTimeout(timer);
  t.is(code, 0, out.slice(-3000));
  t.regex(out, /tests? passed/);
  t.deepEqual(readdirSync(tmp), [], 'what the buffer tests left behind');
});
