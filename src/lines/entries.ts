// Entries from assembled lines: the text parsed as any line (DESIGN.md §4), then the container
// stream, the runtime's time and the Kubernetes metadata added as fields.

import { type Entry, parseLine, type PlainFields, plainFieldsEntry } from '../core/entry.js';
import type { KubernetesMeta } from './kubernetes.js';
import type { LogicalLine, Stream } from './line.js';

/** The entry of `line`; `now` stands for its time when the runtime gave none (or its JSON has its own). */
export function entryOf(line: LogicalLine, source: string, now: number, raw: boolean, k8s: KubernetesMeta | undefined): Entry {
  return lineEntry(line.text, line.stream, line.time, line.nanos, source, now, raw, k8s);
}

/** The entry of a logical line of these parts (see LogicalLine), as entryOf. */
export function lineEntry(
  text: string,
  stream: Stream | undefined,
  time: number | undefined,
  nanos: string | undefined,
  source: string,
  now: number,
  raw: boolean,
  k8s: KubernetesMeta | undefined,
): Entry {
  if (stream !== undefined && (raw || text.charCodeAt(0) !== 123 /* { */)) {
    // a text line (the common case): its fields made whole, of one of a few shapes, in §21's order
    let fields: PlainFields;
    if (k8s === undefined) fields = nanos === undefined ? { stream } : { stream, time_nanos: nanos };
    else fields = nanos === undefined ? { stream, k8s } : { stream, time_nanos: nanos, k8s };
    return plainFieldsEntry(text, source, time ?? now, fields);
  }
  const entry = parseLine(text, source, time ?? now, raw);
  if (stream === undefined && k8s === undefined) return entry;
  const fields = entry.fields ?? {};
  if (stream !== undefined) fields.stream = stream;
  if (nanos !== undefined) fields.time_nanos = nanos;
  if (k8s !== undefined) fields.k8s = k8s;
  entry.fields = fields;
  return entry;
}
