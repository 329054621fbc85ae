// The worker's gauges for the admin endpoint (DESIGN.md §16): memory, certificate expiry, and how
// far each file source is behind its files (size minus position; a vanished file counts 0).

import { statSync } from 'node:fs';
import type { PipelinePositions, WorkerGauges } from '../ipc/messages.js';
import { certificateExpiry } from '../net/cert-expiry.js';

export function sampleGauges(positions: PipelinePositions): WorkerGauges {
  const lag: Record<string, number> = {};
  for (const [source, files] of Object.entries(positions)) {
    const keys = Object.keys(files);
    if (keys.length > 0 && keys.every((k) => k.startsWith('#'))) continue; // a disk-buffered source, no files
    let behind = 0;
    for (const [path, pos] of Object.entries(files)) {
      if (path.startsWith('#')) continue; // a disk buffer's sequence, not a file
      try {
        const st = statSync(path);
        if (st.ino === pos.inode) behind += Math.max(0, st.size - pos.offset);
      } catch {
        // gone: nothing left to read under that name
      }
    }
    lag[source] = behind;
  }
  return { rss_bytes: process.memoryUsage.rss(), cert_expiry_seconds: certificateExpiry(), file_lag_bytes: lag };
}
