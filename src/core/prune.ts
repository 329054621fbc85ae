// Pruning of numbered rotated files `<name>.<n>.log` (the highest n is current): by age and by
// total size. pino-roll has neither; the service log and the `file` sink share this.

import { readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';

export interface PruneOptions {
  readonly directory: string;
  readonly name: string;
  /** delete oldest rotated files while all files together exceed this, bytes */
  readonly maxTotalBytes: number;
  /** delete rotated files last modified longer ago than this, ms */
  readonly retentionMs: number;
}

export interface NumberedFile {
  readonly path: string;
  readonly n: number;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The `<name>.<n>.log` files in `directory`, by n ascending. */
export async function numberedFiles(directory: string, name: string): Promise<NumberedFile[]> {
  const re = new RegExp(`^${escapeRegExp(name)}\\.(\\d+)\\.log$`);
  let names: string[];
  try {
    names = await readdir(directory);
  } catch {
    return [];
  }
  const out: NumberedFile[] = [];
  for (const f of names) {
    const m = re.exec(f);
    if (m) out.push({ path: join(directory, f), n: Number(m[1]) });
  }
  return out.sort((a, b) => a.n - b.n);
}

/** Deletes rotated files beyond retention and beyond the total size; never the current file. */
export async function pruneRotated(opts: PruneOptions, now = Date.now()): Promise<string[]> {
  const files = await numberedFiles(opts.directory, opts.name);
  if (files.length < 2) return [];
  const current = files.at(-1)!;
  const rotated: { path: string; size: number; mtimeMs: number }[] = [];
  let total = 0;
  for (const f of files) {
    try {
      const st = await stat(f.path);
      total += st.size;
      if (f !== current) rotated.push({ path: f.path, size: st.size, mtimeMs: st.mtimeMs });
    } catch {
      // vanished between readdir and stat
    }
  }
  const removed: string[] = [];
  for (const f of rotated) {
    const old = now - f.mtimeMs > opts.retentionMs;
    if (old || total > opts.maxTotalBytes) {
      try {
        await unlink(f.path);
        removed.push(f.path);
        total -= f.size;
      } catch {
        // already gone
      }
    }
  }
  return removed;
}
