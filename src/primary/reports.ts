// Node reports in the primary (DESIGN.md §26): every `report_interval_ms` this node's own report
// (from its /status figures) goes to the workers, whose chain sinks send it upstream; reports the
// chain sources received come here, enter the fleet table when the view is on, and go upstream
// too with this node added to their path. One IPC message per worker per interval, and one per
// coalesced set of forwarded reports: never one per entry.

import type { Config } from '../config/schema.js';
import { MAX_REPORT_VIA, type NodeReport } from '../core/node-report.js';
import type { FleetTable } from './fleet.js';
import { nodeReport } from './node-report.js';
import { nodeStatus } from './node-status.js';
import type { Supervisor } from './supervisor.js';

/** With reports off, how often the fleet table still takes this node's own report, ms. */
const OWN_ENTRY_INTERVAL_MS = 10_000;
/** Forwarded reports wait this long for others to go with them, ms. */
const FORWARD_COALESCE_MS = 100;
/** At this many forwarded reports waiting they go at once. */
const MAX_FORWARD_HELD = 5000;

export interface Reports {
  /** Reports a worker's chain sources received. */
  take(reports: readonly NodeReport[]): void;
  /** The configuration changed (a reload): the period follows it. */
  reconfigure(config: Config): void;
  stop(): void;
}

export function startReports(sup: Supervisor, fleet: FleetTable | undefined): Reports {
  let config = sup.currentConfig;
  let timer: NodeJS.Timeout | undefined;
  const forward = new Map<string, NodeReport>();
  let forwardTimer: NodeJS.Timeout | undefined;

  const flushForward = () => {
    clearTimeout(forwardTimer);
    forwardTimer = undefined;
    if (forward.size === 0) return;
    const reports = [...forward.values()];
    forward.clear();
    sup.sendToRunning({ type: 'reports', reports });
  };

  const tick = () => {
    const now = Date.now();
    const interval = config.report_interval_ms;
    const own = nodeReport(nodeStatus(sup), sup.startedAt, interval || OWN_ENTRY_INTERVAL_MS, now);
    if (fleet) {
      fleet.take(own, now);
      fleet.sweep(now);
    }
    if (interval > 0) {
      // what waits to be forwarded goes with this node's own report, in one message
      const reports = [own, ...forward.values()];
      forward.clear();
      clearTimeout(forwardTimer);
      forwardTimer = undefined;
      sup.sendToRunning({ type: 'reports', reports });
    }
  };

  const arm = () => {
    clearInterval(timer);
    timer = setInterval(tick, config.report_interval_ms || OWN_ENTRY_INTERVAL_MS);
    timer.unref();
  };
  // the first report as soon as the pipelines run (a node is listed without waiting a whole
  // interval), the interval counted from it: armed at the start too, the interval's first tick
  // and this one could come in one millisecond with report_interval_ms = 200, the same report twice
  const first = setTimeout(() => {
    tick();
    arm();
  }, 200);
  first.unref();

  return {
    take(reports) {
      const self = config.node_name;
      const now = Date.now();
      for (const r of reports) {
        // a report of this node, or one that passed it, came round a loop
        if (r.node === self || r.via.includes(self)) continue;
        fleet?.take(r, now);
        if (config.report_interval_ms > 0 && r.via.length < MAX_REPORT_VIA) {
          const via = [...r.via, self];
          forward.set(`${r.node}\u0000${via.join('\u0000')}`, { ...r, via });
        }
      }
      if (forward.size >= MAX_FORWARD_HELD) flushForward();
      else if (forward.size > 0) forwardTimer ??= setTimeout(flushForward, FORWARD_COALESCE_MS);
    },
    reconfigure(next) {
      const changed = next.report_interval_ms !== config.report_interval_ms;
      config = next;
      if (changed) arm();
    },
    stop() {
      clearInterval(timer);
      clearTimeout(first);
      clearTimeout(forwardTimer);
    },
  };
}
