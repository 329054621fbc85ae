// Drop reasons (DESIGN.md §16): where each reason's count lives among a pipeline's counters (§11).
// One mapping serves the worker's `Entries dropped` warning, the metrics and `logrelay top`.

import type { PipelineCounters } from './counters.js';

export const DROP_REASONS = ['queue_full', 'source_saturated', 'rate_limited', 'oversize', 'client_slow', 'write_failed', 'batch_rejected', 'abandoned', 'buffer_full', 'link_down', 'kernel'] as const;
export type DropReason = (typeof DROP_REASONS)[number];

/** The component that holds the rate limiter's counters (it is no plugin, so it has no id). */
export const RATE_LIMIT_COMPONENT = 'rate_limit';

/** A cumulative count of entries one component lost for one reason. */
export interface Drop {
  readonly component: string;
  readonly reason: DropReason;
  readonly count: number;
}

/** Sink types whose `dropped_writes` are entries a slow client could not take. */
const CLIENT_SINKS = new Set(['tcp', 'http']);

/**
 * Every drop count in `counters`, zero ones included (a metric series exists from the start).
 * `sinkTypes`: sink id → type. A file or stdout sink's `dropped_writes` are failed writes (disk
 * full, a reader gone): reason `write_failed`, so the one alert on the drops metric sees them.
 */
export function dropsOf(counters: PipelineCounters, sinkTypes: Readonly<Record<string, string>>): Drop[] {
  const out: Drop[] = [];
  const add = (component: string, reason: DropReason, count: number | undefined) => {
    if (count !== undefined) out.push({ component, reason, count });
  };
  for (const [id, c] of Object.entries(counters.sources)) {
    add(id, 'source_saturated', c.dropped_entries);
    add(id, 'buffer_full', c.dropped_buffer_full);
    // datagrams the kernel dropped before the source could read them (a udp syslog source's full receive buffer)
    add(id, 'kernel', c.kernel_drops);
  }
  const rl = counters.rate_limit;
  if (rl) {
    const bySize = rl.dropped_by_size_total ?? 0;
    add(RATE_LIMIT_COMPONENT, 'rate_limited', (rl.dropped_total ?? 0) - bySize);
    add(RATE_LIMIT_COMPONENT, 'oversize', bySize);
  }
  for (const [id, c] of Object.entries(counters.sinks)) {
    add(id, 'queue_full', c.dropped_queue_full);
    add(id, 'link_down', c.dropped_link_down);
    add(id, CLIENT_SINKS.has(sinkTypes[id] ?? '') ? 'client_slow' : 'write_failed', c.dropped_writes);
    add(id, 'batch_rejected', c.dropped_batches);
    add(id, 'abandoned', c.abandoned);
  }
  return out;
}
