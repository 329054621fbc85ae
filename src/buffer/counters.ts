// The counters of a source with a disk buffer (DESIGN.md §23).

/** The source counters a disk buffer keeps (DESIGN.md §23), in the source's own counters object. */
export interface BufferCounters {
  buffer_bytes: number;
  buffer_entries: number;
  buffer_syncs: number;
  buffer_corrupt_records: number;
  buffer_truncated_bytes: number;
  /** failed writes and syncs (each attempt) */
  buffer_write_errors: number;
  /** 1 while writes fail (readiness says `buffer_error`), else 0 */
  buffer_failing: number;
  /** entries dropped because the buffer was full (reason `buffer_full`) */
  dropped_buffer_full: number;
}

export function bufferCounters(): BufferCounters {
  return { buffer_bytes: 0, buffer_entries: 0, buffer_syncs: 0, buffer_corrupt_records: 0, buffer_truncated_bytes: 0, buffer_write_errors: 0, buffer_failing: 0, dropped_buffer_full: 0 };
}
