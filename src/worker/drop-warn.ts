// WARN `Entries dropped` (DESIGN.md §16) from the drop counters, diffed once a second: the first
// line within a second of a loss, then at most one per DROP_WARN_INTERVAL_MS per reason. Nothing
// runs per entry; the counters are what the pipeline already keeps.

import type { PipelineCounters } from '../core/counters.js';
import { type DropReason, dropsOf } from '../core/drops.js';
import type { Logger } from '../core/log.js';

/** Least time between two `Entries dropped` lines of one pipeline and reason, ms. */
export const DROP_WARN_INTERVAL_MS = 60_000;

export interface DropWarner {
  /** Compares the counters with what was last told; `force` tells what is pending at once (at stop). */
  check(counters: PipelineCounters, force?: boolean, now?: number): void;
}

export function createDropWarner(log: Logger, pipeline: string, sinkTypes: Readonly<Record<string, string>>): DropWarner {
  /** per `reason\0component`: the count the last line covered */
  const told = new Map<string, number>();
  const lastLine = new Map<DropReason, number>();
  return {
    check(counters, force = false, now = Date.now()) {
      const pending = new Map<DropReason, { component: string; key: string; count: number; total: number }[]>();
      for (const d of dropsOf(counters, sinkTypes)) {
        const key = `${d.reason}\0${d.component}`;
        const since = d.count - (told.get(key) ?? 0);
        if (since <= 0) continue;
        const list = pending.get(d.reason) ?? [];
        list.push({ component: d.component, key, count: since, total: d.count });
        pending.set(d.reason, list);
      }
      for (const [reason, list] of pending) {
        const last = lastLine.get(reason);
        if (!force && last !== undefined && now - last < DROP_WARN_INTERVAL_MS) continue;
        lastLine.set(reason, now);
        for (const p of list) {
          told.set(p.key, p.total);
          log.warn({ pipeline, plugin: p.component, reason, count: p.count }, 'Entries dropped');
        }
      }
    },
  };
}
