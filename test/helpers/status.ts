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
