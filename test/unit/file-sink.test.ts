// The file sink rotates at `max_size_mb`, which reaches it converted to bytes at validation: the
// sizes of its files show the byte bound the operator's MiB figure stands for.

import { readdirSync, statSync } from 'node:fs';
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
