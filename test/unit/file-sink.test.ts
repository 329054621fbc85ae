// The file sink rotates at `max_size_mb`, which reaches it converted to bytes at validation: the
// sizes of its files show the byte bound the operator's MiB figure stands for.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { createLogger } from '../../src/core/log.js';
import type { SinkItem } from '../../src/core/sink-item.js';
import { createFileSink } from '../../src/sinks/file.js';
import { tempDir } from '../helpers/node.js';

const silent = createLogger('silent', { write() {} });

test('max_size_mb = 0.001 rotates before a file passes 1048 bytes (0.001 MiB, whole bytes)', async (t) => {
  const dir = tempDir();
  t.teardown(() => dir.remove());
  const out = join(dir.path, 'out');
  const sink = createFileSink(
    { id: 'out', type: 'file', config: { directory: out, name: 'f', max_size_mb: 0.001, retention_hours: 1 } },
    { pipeline: 'p', log: silent, checkOnly: false, node: 'n' },
  );
  await sink.open?.();
  // 100 lines of 100 bytes each (99 characters and the newline), one write each
  for (let i = 0; i < 100; i++) await sink.write([{ line: String(i).padStart(99, '.'), paths: 0 } as SinkItem]);
  await sink.close(Date.now() + 1000);
  const sizes = readdirSync(out).map((f) => statSync(join(out, f)).size);
  t.is(sizes.reduce((a, b) => a + b, 0), 100 * 100, 'every line written once');
  t.true(sizes.length >= 10, `rotated into ${sizes.length} files`);
  // 10 lines make 1000 bytes, an 11th 1100: over floor(0.001 × 1048576) = 1048
  t.deepEqual([...new Set(sizes)], [1000], `file sizes ${sizes.join(', ')}`);
});

test('a batch is settled once its bytes are in the file; the sink holds at most 8,192 lines beyond its queue', async (t) => {
  const dir = tempDir();
  t.teardown(() => dir.remove());
  const out = join(dir.path, 'out');
  const sink = createFileSink(
    { id: 'out', type: 'file', config: { directory: out, name: 'f', buffer_size: 100_000 } },
    { pipeline: 'p', log: silent, checkOnly: false, node: 'n' },
  );
  await sink.open?.();
  t.true(sink.settles, 'the sink settles what it took');
  const file = join(out, 'f.1.log');
  /** per batch: how many of its lines the file held when its ticket was done */
  const seen: number[] = [];
  const batch = (from: number, n: number): SinkItem[] => {
    const ticket = { pending: n, done: () => seen.push(readFileSync(file, 'utf8').split('\n').length - 1) };
    return Array.from({ length: n }, (_, i) => ({ line: `line ${from + i}`, ticket, paths: 0 }) as unknown as SinkItem);
  };
  // 2,048 lines a batch: taken at once (undefined) until 8,192 are held, then the sink asks to wait
  const answers: boolean[] = [];
  let waited: Promise<void> | undefined;
  for (let b = 0; b < 5 && !waited; b++) {
    const r = sink.write(batch(b * 2048, 2048));
    answers.push(r === undefined);
    if (r) waited = r;
  }
  t.deepEqual(answers, [true, true, true, false], 'the fourth batch fills the 8,192 held lines');
  t.true(sink.held!() <= 8192, `held ${sink.held!()}`);
  await waited;
  await sink.close(Date.now() + 5000);
  t.is(sink.held!(), 0, 'nothing left unwritten');
  t.is(seen.length, 4, 'every batch settled');
  for (let i = 0; i < seen.length; i++) t.true(seen[i]! >= (i + 1) * 2048, `batch ${i} settled with ${seen[i]} lines in the file`);
  t.is(readFileSync(file, 'utf8'), Array.from({ length: 4 * 2048 }, (_, i) => `line ${i}\n`).join(''), 'every line once, in order');
});
