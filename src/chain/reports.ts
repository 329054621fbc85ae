// Node reports at a chain source (the fleet view): a received report is checked (its shape, and
// behind `auth` that the peer speaks for its node) and handed to the pipeline, which passes it on
// to the primary; never an entry, never counted as one.

import { asNodeReport, type NodeReport, speaksFor } from '../core/node-report.js';

/** The counters a chain source keeps of reports. */
export interface ReportSourceCounters {
  reports_received: number;
  /** reports refused: not a report, or (behind `auth`) for a node the peer does not speak for */
  reports_rejected: number;
}

export const reportSourceCounters = (): ReportSourceCounters => ({ reports_received: 0, reports_rejected: 0 });

/**
 * Takes one received report. `identity`: the peer's authorised identity (set only behind an
 * `auth` block); `hand`: where accepted reports go (absent in `check`).
 */
export function takeReport(value: unknown, identity: string | undefined, counters: ReportSourceCounters, hand: ((r: NodeReport) => void) | undefined): boolean {
  const report = asNodeReport(value);
  if (!report || (identity !== undefined && !speaksFor(identity, report))) {
    counters.reports_rejected++;
    return false;
  }
  counters.reports_received++;
  hand?.(report);
  return true;
}
