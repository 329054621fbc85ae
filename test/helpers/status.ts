// Test helpers: reading a running node's `status report` records (DESIGN.md §11), where every
// counter is a flattened key such as `sinks.<id>.<counter>`.

import type { LogRecord, RunningNode } from './node.js';

/** The latest status report of `pipeline` so far, if any. */
export function latestStatus(node: RunningNode, pipeline: string): LogRecord | undefined {
  return node.records.findLast((r) => r.msg === 'status report' && r.pipeline === pipeline);
}

/** The newest value of counter `key` in the status reports of `pipeline` that carry it as a number. */
export function latestCounter(node: RunningNode, pipeline: string, key: string): number | undefined {
  return node.records.findLast((r) => r.msg === 'status report' && r.pipeline === pipeline && typeof r[key] === 'number')?.[key] as number | undefined;
}

/** The status reports of `pipeline` among the records from index `from` on. */
export function statusReports(node: RunningNode, pipeline: string, from = 0): LogRecord[] {
  return node.records.slice(from).filter((r) => r.msg === 'status report' && r.pipeline === pipeline);
}

/**
 * How long after a moment a status report must be logged for its counters to be from after it: a
 * pipeline worker sends its counters once a second, and the primary logs the ones it last had (a
 * report logged just after the moment may carry counters from a second before it). One second more
 * for the message on a loaded machine.
 */
export const STATUS_LAG_MS = 2_000;

/**
 * The latest status report of `pipeline` logged at least STATUS_LAG_MS after `since` (epoch ms), if
 * any yet: its counters count everything the pipeline did before `since`. For a counter that keeps
 * changing after the ones a test waited for (bytes counted when a batch is posted, after its
 * entries were counted as taken), read from a report taken once the data is known to be through.
 */
export function statusAfter(node: RunningNode, pipeline: string, since: number): LogRecord | undefined {
  return node.records.findLast((r) => r.msg === 'status report' && r.pipeline === pipeline && Date.parse(String(r.time)) >= since + STATUS_LAG_MS);
}
