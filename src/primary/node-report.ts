// This node's report for the fleet view (DESIGN.md §26), made from the figures its own `/status`
// has: per pipeline its state, restarts, entries in and out, drops by reason, file lag, disk
// buffer bytes and chain links.

import { isoTime } from '../core/entry-json.js';
import type { NodeReport, ReportPipeline } from '../core/node-report.js';
import type { NodeStatus, PipelineStatus } from './node-status.js';

const sum = (values: Iterable<number | undefined>): number => {
  let n = 0;
  for (const v of values) n += v ?? 0;
  return n;
};

function reportPipeline(name: string, p: PipelineStatus): ReportPipeline {
  const dropped: Record<string, number> = {};
  for (const d of p.drops) if (d.count > 0) dropped[d.reason] = (dropped[d.reason] ?? 0) + d.count;
  const sources = Object.values(p.counters.sources);
  return {
    name,
    state: p.state,
    restarts: p.restarts,
    entries_in: sum(sources.map((c) => c.total_entries)),
    entries_out: sum(Object.values(p.counters.sinks).map((c) => c.total_processed)),
    dropped,
    lag_bytes: sum(Object.values(p.file_lag_bytes)),
    buffer_bytes: sum(sources.map((c) => c.buffer_bytes)),
    links: { ...p.links },
  };
}

/** The report of the node whose status is `status`, started at `startedAt` (epoch ms), sent now. */
export function nodeReport(status: NodeStatus, startedAt: number, intervalMs: number, now: number): NodeReport {
  return {
    node: status.node,
    version: status.version,
    started_at: isoTime(startedAt),
    generation: status.generation,
    interval_ms: intervalMs,
    pipelines: Object.entries(status.pipelines).map(([name, p]) => reportPipeline(name, p)),
    sent_at: isoTime(now),
    via: [],
  };
}
