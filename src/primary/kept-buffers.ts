// Disk buffers that the configuration no longer names (buffer removed, source renamed or removed,
// pipeline removed) keep their directory and what it holds: nothing a sender was told is taken is
// dropped by a reload. The primary looks for them after a start and after each reload, and says
// how many entries each still holds (WARN `Disk buffer kept`); configuring that disk buffer again
// (same pipeline name and source id) sends them.

import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { BUFFER_POSITION_KEY, wantsDiskBuffer } from '../buffer/config.js';
import type { Config } from '../config/schema.js';
import type { PipelinePositions } from '../ipc/messages.js';

export interface KeptBuffer {
  readonly pipeline: string;
  readonly source: string;
  /** the buffer's directory */
  readonly path: string;
  /** entries in its segments after its acknowledged sequence */
  readonly entries: number;
}

/** Most buffer directories looked at per pipeline directory (a stray tree must not stall a reload). */
const MAX_DIRS = 1000;

/**
 * The disk buffers under `<dataDir>/buffers/` that `config` does not configure and that still hold
 * entries not delivered; `positionsOf` gives each pipeline's acknowledged positions.
 */
export async function findKeptBuffers(dataDir: string, config: Config, positionsOf: (pipeline: string) => PipelinePositions): Promise<KeptBuffer[]> {
  const root = join(dataDir, 'buffers');
  const configured = new Set<string>();
  for (const p of config.pipelines) for (const s of p.plugin_sources) if (wantsDiskBuffer(s)) configured.add(`${p.name}/${s.id}`);
  const kept: KeptBuffer[] = [];
  for (const pipeline of (await listDirs(root)).slice(0, MAX_DIRS)) {
    for (const source of (await listDirs(join(root, pipeline))).slice(0, MAX_DIRS)) {
      if (configured.has(`${pipeline}/${source}`)) continue;
      const path = join(root, pipeline, source);
      const acked = positionsOf(pipeline)[source]?.[BUFFER_POSITION_KEY]?.offset ?? 0;
      const entries = await entriesAfter(path, acked);
      if (entries > 0) kept.push({ pipeline, source, path, entries });
    }
  }
  return kept;
}

async function listDirs(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir, { withFileTypes: true }))
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
  } catch {
    return [];
  }
}

/** Records in the segments of `dir` with a sequence above `acked` (the last segment is read to find its end). */
async function entriesAfter(dir: string, acked: number): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0;
  }
  // the segment reader (and node:zlib, its CRC) only where a buffer directory is left: an idle
  // primary without disk buffers never holds them
  const { scanSegment, segmentSeq } = await import('../buffer/record.js');
  const firsts = names.map((n) => ({ n, seq: segmentSeq(n) })).filter((s): s is { n: string; seq: number } => s.seq !== undefined);
  if (firsts.length === 0) return 0;
  firsts.sort((a, b) => a.seq - b.seq);
  const last = firsts.at(-1)!;
  let lastSeq = last.seq - 1;
  try {
    const fh = await open(join(dir, last.n), 'r');
    try {
      lastSeq = scanSegment(await fh.readFile()).lastSeq ?? lastSeq;
    } finally {
      await fh.close();
    }
  } catch {
    // unreadable: what the earlier segments hold is still counted
  }
  return Math.max(0, lastSeq - Math.max(acked, firsts[0]!.seq - 1));
}
