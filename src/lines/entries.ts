// Entries from assembled lines: the text parsed as any line (DESIGN.md §4), then the container
// stream, the runtime's time and the Kubernetes metadata added as fields.

import { type Entry, parseLine } from '../core/entry.js';
import type { KubernetesMeta } from './kubernetes.js';
import type { LogicalLine } from './line.js';

/** The entry of `line`; `now` stands for its time when the runtime gave none (or its JSON has its own). */
export function entryOf(line: LogicalLine, source: string, now: number, raw: boolean, k8s: KubernetesMeta | undefined): Entry {
  const entry = parseLine(line.text, source, line.time ?? now, raw);
  if (line.stream === undefined && k8s === undefined) return entry;
  if (entry.fields === undefined && line.stream !== undefined) {
    // a text line (the common case): its fields made whole, of one of a few shapes, in §21's order
    const { stream, nanos } = line;
    if (k8s === undefined) entry.fields = nanos === undefined ? { stream } : { stream, time_nanos: nanos };
    else entry.fields = nanos === undefined ? { stream, k8s } : { stream, time_nanos: nanos, k8s };
    // the stream is a constant, the time was checked to be RFC 3339
    entry.plainFields = true;
    return entry;
  }
  const fields = entry.fields ?? {};
  if (line.stream !== undefined) fields.stream = line.stream;
  if (line.nanos !== undefined) fields.time_nanos = line.nanos;
  if (k8s !== undefined) fields.k8s = k8s;
  entry.fields = fields;
  return entry;
}
