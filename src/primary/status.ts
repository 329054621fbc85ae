// The status report: every `status_interval_ms`, at DEBUG, a summary line then one line per
// pipeline with every scalar counter flattened (`flow.total_dropped`, `sources.applog.total_entries`, …).

import { flattenCounters } from '../core/counters.js';
import type { Logger } from '../core/log.js';
import type { Supervisor } from './supervisor.js';

export function startStatusReporter(sup: Supervisor, log: Logger, intervalMs: number): () => void {
  const timer = setInterval(() => {
    if (!log.isLevelEnabled('debug')) return;
    const pipelines = sup.statusSnapshot();
    log.debug({ pipelines: pipelines.length, uptime: sup.uptimeSeconds(), generation: sup.generation }, 'status report');
    for (const p of pipelines) log.debug({ pipeline: p.name, ...flattenCounters(p.counters) }, 'status report');
  }, intervalMs);
  return () => clearInterval(timer);
}
