// Test helpers for the disk buffer (DESIGN.md §23) driven directly: a buffer on a temp directory,
// its log records, the batches its reader emitted, and the sequence an entry's id ends with.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type BufferCounters, bufferCounters, DiskBuffer } from '../../src/buffer/disk-buffer.js';
import type { Entry } from '../../src/core/entry.js';
import { createLogger } from '../../src/core/log.js';

export interface Emitted {
  readonly entries: Entry[];
  readonly done: () => void;
  settled: boolean;
}

export interface BufferHarness {
  readonly buffer: DiskBuffer;
  readonly counters: BufferCounters;
  readonly logs: Record<string, unknown>[];
  readonly emitted: Emitted[];
}

/** A buffer directory (not created) in a fresh temp directory that `t`'s teardown removes. */
export function tempBufferDir(t: { teardown(fn: () => void): void }): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'logrelay-buffer-')), 'buf');
  t.teardown(() => removeBufferDir(dir));
  return dir;
}

/** Removes a directory of tempBufferDir with its temp directory. */
export function removeBufferDir(dir: string): void {
  rmSync(dirname(dir), { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
}

/** A buffer on `dir` (not opened); `cacheBytes`: its cache of synced entries (default: the buffer's). */
export function bufferOn(dir: string, segmentBytes: number, maxBytes = 1 << 30, retryMs = 50, cacheBytes?: number): BufferHarness {
  const logs: Record<string, unknown>[] = [];
  const counters = bufferCounters();
  const log = createLogger('debug', { write: (l: string) => void logs.push(JSON.parse(l) as Record<string, unknown>) });
  const buffer = new DiskBuffer({ dir, segmentBytes, maxBytes, log, counters, node: 'n', pipeline: 'p', source: 's', retryMs, cacheBytes });
  return { buffer, counters, logs, emitted: [] };
}

/** Starts the reader of `h`, collecting what it emits. */
export function collect(h: BufferHarness, window: number): void {
  h.buffer.startReading((entries, done) => {
    const e: Emitted = { entries, done, settled: false };
    h.emitted.push(e);
  }, window);
}

/** The buffer sequence an id stamped by a buffer ends with (base 36 after the prefix's `.`). */
export const seqOf = (id: string): number => Number.parseInt(id.slice(id.lastIndexOf('.') + 1), 36);

export const entry = (message: string): Entry => ({ time: 1_700_000_000_000, source: 't', message });

export async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}
