// A node report (the fleet view): what a node says of itself upstream every
// `report_interval_ms`, built by its primary from the figures of its own `/status`, carried by its
// chain sinks and forwarded by relays with their path (`via`). A report is never an entry.

/** One pipeline as a report gives it. */
export interface ReportPipeline {
  readonly name: string;
  readonly state: string;
  readonly restarts: number;
  /** its sources' `total_entries`, summed */
  readonly entries_in: number;
  /** its sinks' `total_processed`, summed */
  readonly entries_out: number;
  /** entries lost, by reason (the reasons of `logrelay_dropped_entries_total`) */
  readonly dropped: Readonly<Record<string, number>>;
  /** bytes in its file sources' files not read yet */
  readonly lag_bytes: number;
  /** bytes in its sources' disk buffers */
  readonly buffer_bytes: number;
  /** chain sinks: link state by sink id */
  readonly links: Readonly<Record<string, 'up' | 'down'>>;
}

export interface NodeReport {
  readonly node: string;
  readonly version: string;
  /** RFC 3339 */
  readonly started_at: string;
  readonly generation: number;
  /** the period its reports come at, ms: silent after 3 of them without one */
  readonly interval_ms: number;
  readonly pipelines: readonly ReportPipeline[];
  /** RFC 3339 */
  readonly sent_at: string;
  /** the nodes it passed, nearest the origin first; empty: straight from its node */
  readonly via: readonly string[];
}

/** Longest node name a report may carry. */
export const MAX_REPORT_NODE = 256;
/** Most hops a report may have passed (a longer path is a loop or a forgery). */
export const MAX_REPORT_VIA = 16;
/** Most pipelines a report may list. */
const MAX_REPORT_PIPELINES = 256;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isName = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= MAX_REPORT_NODE;
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;

/**
 * A received value as a report: the fields the fleet view reads checked (a name, a positive
 * interval, a list of pipelines, a path of names); undefined when it is none. Unknown keys are
 * kept as they came: a newer node may say more.
 */
export function asNodeReport(v: unknown): NodeReport | undefined {
  if (!isRecord(v) || !isName(v.node)) return undefined;
  if (!isCount(v.interval_ms) || v.interval_ms === 0) return undefined;
  if (!Array.isArray(v.pipelines) || v.pipelines.length > MAX_REPORT_PIPELINES || !v.pipelines.every(isRecord)) return undefined;
  const via = v.via ?? [];
  if (!Array.isArray(via) || via.length > MAX_REPORT_VIA || !via.every(isName)) return undefined;
  return { ...(v as unknown as NodeReport), via: via as string[] };
}

/**
 * Behind an `auth` block a peer speaks only for itself (a report from its node, `via` empty) and
 * for the nodes behind it (`via` ends with its identity).
 */
export function speaksFor(identity: string, report: NodeReport): boolean {
  return report.via.length === 0 ? report.node === identity : report.via[report.via.length - 1] === identity;
}

/** The total of a report's lag over its pipelines, bytes. */
export const lagOf = (r: NodeReport): number => r.pipelines.reduce((n, p) => n + (isCount(p.lag_bytes) ? p.lag_bytes : 0), 0);
