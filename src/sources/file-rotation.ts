// Rotation as the `file` source sees it: an open file whose name no longer leads to it was renamed
// away (rotated: tailed through its grace under its new name) or deleted (read to its end, then
// closed) (DESIGN.md §6).

import { dirname } from 'node:path';
import { fileInode, findInDirectory, statPath } from './file-discovery.js';
import type { FileCounters, Tail } from './file-tail.js';
import type { TailSet } from './file-tail-set.js';

/**
 * Its name no longer leads to `tail`: gone (deleted: closed once read to its end) or renamed away
 * (rotated: tailed until idle for the grace, whether or not its new name matches).
 */
export async function detach(tail: Tail, set: TailSet, counters: FileCounters): Promise<void> {
  tail.detached = true;
  tail.grewAt = Date.now();
  set.rotated.add(tail);
  const own = await tail.fh.stat();
  if (own.nlink === 0) {
    tail.deleted = true;
    return;
  }
  counters.rotations++;
  tail.renamedTo = await whereNow(tail);
}

/** Checks each open file's name: renamed away or replaced means rotation, gone means deleted; true when one rotated. */
export async function checkNames(set: TailSet, counters: FileCounters): Promise<boolean> {
  let rotated = false;
  for (const tail of set.tails.values()) {
    if (tail.detached) {
      // renamed again during its grace (a second rotation shifts app.log.1 to app.log.2): its
      // position must go under the name it has now, not one another rotated file took over
      if (!tail.deleted && tail.renamedTo !== undefined && (await fileInode(tail.renamedTo)) !== tail.inode) tail.renamedTo = await whereNow(tail);
      continue;
    }
    const st = await statPath(tail.path);
    if (st && st.ino === tail.inode) continue;
    await detach(tail, set, counters);
    rotated = true;
  }
  return rotated;
}

/** The name a rotated file has now in its directory, if it is still there. */
async function whereNow(tail: Tail): Promise<string | undefined> {
  return (await findInDirectory(dirname(tail.path), new Set([tail.inode]))).get(tail.inode);
}
