// A FIFO standing in for a sink's output file: the test reads it, and stops reading to stall the sink.

import { spawnSync } from 'node:child_process';
import { createReadStream, type ReadStream } from 'node:fs';

export interface FifoReader {
  /** complete lines read so far */
  readonly received: string[];
  readonly stream: ReadStream;
}

/** Makes a FIFO at `path` and a paused line reader on it; throws when mkfifo fails. */
export function fifoReader(path: string): FifoReader {
  const mk = spawnSync('mkfifo', [path], { encoding: 'utf8' });
  if (mk.status !== 0) throw new Error(`mkfifo failed: ${mk.stderr}`);
  const stream = createReadStream(path, { encoding: 'utf8' });
  const received: string[] = [];
  let rest = '';
  stream.on('data', (chunk) => {
    const parts = (rest + String(chunk)).split('\n');
    rest = parts.pop() ?? '';
    received.push(...parts);
  });
  stream.pause();
  return { received, stream };
}
