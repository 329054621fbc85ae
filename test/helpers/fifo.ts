// A FIFO standing in for a sink's output file: the test reads it, and stops reading to stall the sink.

import { spawnSync } from 'node:child_process';
import { constants, mkdirSync, openSync } from 'node:fs';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { type Teardown, type TempDir, tempDir } from './node.js';

export interface FifoReader {
  /** complete lines read so far */
  readonly received: string[];
  /** paused at first; `closed` once every writer has closed the FIFO and what they wrote is read */
  readonly stream: Socket;
}

/**
 * Makes a FIFO at `path` and a paused line reader on it; throws when mkfifo fails.
 *
 * The read end is opened non-blocking, so the open does not wait for a writer (a blocking open
 * would hold a thread-pool thread, and the test process, until the node opens the FIFO), and
 * read through a libuv pipe, which polls instead of blocking a thread in read(): a reader that is
 * never fed, or destroyed, holds nothing. Before the first writer comes, the FIFO reads as empty,
 * not as ended; once the writers are gone, the stream ends.
 */
export function fifoReader(path: string): FifoReader {
  const mk = spawnSync('mkfifo', [path], { encoding: 'utf8' });
  if (mk.status !== 0) throw new Error(`mkfifo failed: ${mk.stderr}`);
  const stream = new Socket({ fd: openSync(path, constants.O_RDONLY | constants.O_NONBLOCK), readable: true, writable: false });
  stream.setEncoding('utf8');
  const received: string[] = [];
  let rest = '';
  stream.on('data', (chunk: string) => {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop() ?? '';
    received.push(...parts);
  });
  stream.pause();
  return { received, stream };
}

/**
 * A fresh temp dir (named after `prefix`) with `in/` and `out/`, where `out/out.1.log`, the
 * current file of a file sink named "out" writing into `out/`, is a FIFO with a paused reader;
 * the test's teardown destroys the reader. The dir is the caller's to remove.
 */
export function fifoSinkDir(t: Teardown, prefix: string): FifoReader & { readonly dir: TempDir } {
  const dir = tempDir(prefix);
  mkdirSync(join(dir.path, 'in'));
  mkdirSync(join(dir.path, 'out'));
  const reader = fifoReader(join(dir.path, 'out', 'out.1.log'));
  t.teardown(() => reader.stream.destroy());
  return { dir, ...reader };
}
