// Entries from assembled lines: the text parsed as any line (DESIGN.md §4), then the container
// stream, the runtime's time and the Kubernetes metadata added as fields.

import { type Entry, parseLine, type PlainFields, plainFieldsEntry } from '../core/entry.js';
import type { KubernetesMeta } from './kubernetes.js';
import type { LogicalLine } from './line.js';

/** The entry of `line`; `now` stands for its time when the runtime gave none (or its JSON has its own). */
export function entryOf(line: LogicalLine, source: string, now: number, raw: boolean, k8s: KubernetesMeta | undefined): Entry {
  const { text, stream } = line;
  if (stream !== undefined && (raw || text.charCodeAt(0) !== 123 /* { */)) {
    // a text line (the common case): its fields made whole, of one of a few shapes, in §21's order
    const nanos = line.nanos;
    let fields: PlainFields;
    if (k8s === undefined) fields = nanos === undefined ? { stream } : { stream, time_nanos: nanos };
    else fields = nanos === undefined ? { stream, k8s } : { stream, time_nanos: nanos, k8s };
    return plainFieldsEntry(text, source, line.time ?? now, fields);
  }
  const entry = parseLine(text, source, line.time ?? now, raw);
  if (stream === undefined && k8s === undefined) return entry;
  const fields = entry.fields ?? {};
  if (stream !== undefined) fields.stream = stream;
  if (line.nanos !== undefined) fields.time_nanos = line.nanos;
  if (k8s !== undefined) fields.k8s = k8s;
  entry.fields = fields;
  return entry;
}
