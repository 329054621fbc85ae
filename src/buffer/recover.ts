// What a disk buffer's directory holds when it opens (DESIGN.md §23): its epoch (drawn anew at
// every opening, part of every id stamped until the next), its segments in order, and the last
// sequence written. A torn tail of the last segment (a crash mid-write) is cut off and counted; a
// corrupt record with whole bytes after it is left for the reader, which reports it when it gets
// there. Stray files are logged and ignored.

import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../core/log.js';
import type { BufferCounters } from './counters.js';
import { MIN_RECORD, scanSegment, type Segment, segmentSeq } from './record.js';

const META_FILE = 'meta.json';

export interface Recovered {
  readonly epoch: string;
  /** oldest first */
  readonly segments: Segment[];
  /** the last sequence the segments may hold (0: none) */
  readonly lastSeq: number;
}

/** Opens (creating it when missing) and recovers a buffer's directory. */
export async function recoverDir(dir: string, log: Logger, counters: BufferCounters): Promise<Recovered> {
  await mkdir(dir, { recursive: true });
  const epoch = await epochOf(dir);
  const segments: Segment[] = [];
  for (const name of (await readdir(dir)).sort()) {
    const first = segmentSeq(name);
    if (first === undefined) {
      if (name !== META_FILE && name !== `${META_FILE}.tmp`) log.warn({ file: join(dir, name) }, 'Disk buffer stray file ignored');
      continue;
    }
    segments.push({ firstSeq: first, name, size: (await stat(join(dir, name))).size });
  }
  segments.sort((a, b) => a.firstSeq - b.firstSeq);
  let lastSeq = 0;
  const last = segments.at(-1);
  if (last) {
    const path = join(dir, last.name);
    const bytes = await readFile(path);
    const scan = scanSegment(bytes);
    lastSeq = scan.lastSeq ?? last.firstSeq - 1;
    if (scan.after === 'torn') {
      const cut = bytes.length - scan.validEnd;
      const fh = await open(path, 'r+');
      try {
        await fh.truncate(scan.validEnd);
        await fh.datasync();
      } finally {
        await fh.close();
      }
      last.size = scan.validEnd;
      counters.buffer_truncated_bytes += cut;
      log.warn({ segment: last.name, bytes: cut }, 'Disk buffer tail cut');
    } else if (scan.after === 'corrupt') {
      // the reader reports it when it gets there; sequences the skipped bytes may hold are never reused
      lastSeq += Math.ceil((bytes.length - scan.validEnd) / MIN_RECORD);
    }
    if (last.size === 0) {
      await unlink(path);
      segments.pop();
    }
  }
  return { epoch, segments, lastSeq };
}

/**
 * A new epoch for this opening, written (and synced) to meta.json. Drawn at every opening, not
 * once per directory: the pipeline may have had records that a crash then caught before their
 * sync (see DiskBuffer.post), and their sequences are written again after the restart. Their
 * ids, stamped from the epoch, must not come back on other entries: a dedup collector would drop
 * those. A record read again keeps the id written in it.
 */
async function epochOf(dir: string): Promise<string> {
  const file = join(dir, META_FILE);
  const epoch = randomBytes(12).toString('hex');
  await writeFile(`${file}.tmp`, JSON.stringify({ epoch }), { flush: true });
  await rename(`${file}.tmp`, file);
  await syncDir(dir);
  return epoch;
}

/** fsyncs a directory: a file created or renamed in it survives a power loss. */
export async function syncDir(dir: string): Promise<void> {
  const dh = await open(dir, 'r');
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}
