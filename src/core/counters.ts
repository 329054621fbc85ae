// Counters are plain cumulative numbers, counted in memory and shipped once a second (DESIGN.md §11).

/** One plugin's or stage's counters, by their contract names. */
export type Counters = Record<string, number>;

/** A pipeline's counters as shipped in the `stats` message. */
export interface PipelineCounters {
  total_dropped_by_sink: number;
  flow: Counters;
  rate_limit?: Counters;
  /** per transform step id (DESIGN.md §24) */
  transforms?: Record<string, Counters>;
  /** entries routed to no sink (DESIGN.md §24), with sink routes */
  unrouted?: number;
  sources: Record<string, Counters>;
  sinks: Record<string, Counters>;
}

/** Flattens nested counters into `a.b.c` fields for the status report. */
export function flattenCounters(value: unknown, prefix = '', out: Record<string, number> = {}): Record<string, number> {
  if (typeof value === 'number') {
    out[prefix] = value;
  } else if (typeof value === 'object' && value !== null) {
    for (const [k, v] of Object.entries(value)) flattenCounters(v, prefix ? `${prefix}.${k}` : k, out);
  }
  return out;
}
