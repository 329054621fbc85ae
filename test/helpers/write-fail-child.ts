// Child process of buffer-write-fail.test: a disk buffer on argv[2] appends bursts (many writes
// waiting for one sync) until its writes fail (the test runs it under a file size limit), says
// `failing` on stdout and waits for `go` on stdin (the test lifts the limit meanwhile), appends a
// few bursts more, waits for every batch to be acknowledged, closes the buffer and prints the
// sequences whose batches were acknowledged as one JSON line.

import { bufferOn, entry, seqOf, until } from './disk-buffer.js';

const dir = process.argv[2]!;
const h = bufferOn(dir, 8 * 1024 * 1024, 1 << 30, 50);
await h.buffer.open(0);
const acked: number[] = [];
let appended = 0;
let settled = 0;
let n = 0;
const burst = () => {
  for (let b = 0; b < 16; b++) {
    const batch = Array.from({ length: 40 }, () => entry(`line ${n++} ${'x'.repeat(200)}`));
    appended++;
    h.buffer.append(batch, Date.now(), () => {
      settled++;
      for (const e of batch) acked.push(seqOf(e.id!));
    });
  }
};
const deadline = Date.now() + 30_000;
while (!h.buffer.isFailing) {
  if (Date.now() > deadline) throw new Error('the buffer never failed');
  burst();
  await new Promise((r) => setTimeout(r, 1));
}
process.stdout.write('failing\n');
await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
for (let k = 0; k < 5; k++) {
  await until(() => !h.buffer.isFailing, 'the buffer writes again', 30_000);
  burst();
  await new Promise((r) => setTimeout(r, 1));
}
await until(() => settled === appended, `every batch acknowledged (${settled} of ${appended})`, 30_000);
await h.buffer.close(Date.now() + 5000);
process.stdout.write(`${JSON.stringify({ acked, errors: h.counters.buffer_write_errors })}\n`);
process.exit(0);
