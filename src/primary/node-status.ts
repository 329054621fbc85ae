// The whole node's status (DESIGN.md §16 `/status`), made from what the supervisor holds: the
// latest counters and gauges each worker sent. `/metrics` reads the same object, so the two agree.

import type { Counters } from '../core/counters.js';
import { type Drop, dropsOf } from '../core/drops.js';
import { VERSION } from '../core/version.js';
import type { PipelinePositions } from '../ipc/messages.js';
import type { PipelineState, Supervisor } from './supervisor.js';

export type LinkState = 'up' | 'down';

export interface PipelineStatus {
  readonly state: PipelineState;
  readonly pid: number | null;
  readonly restarts: number;
  readonly resident_memory_bytes: number | null;
  /** the counters of §11 nested by component (zeros before the worker's first report) */
  readonly counters: {
    readonly total_dropped_by_sink: number;
    /** the node's data_dir checkpoint (DESIGN.md §15), shown with every pipeline; 0 without data_dir */
    readonly checkpoint_writes: number;
    readonly checkpoint_errors: number;
    readonly flow: Counters;
    readonly rate_limit?: Counters;
    /** per transform step id (DESIGN.md §24) */
    readonly transforms?: Record<string, Counters>;
    /** entries routed to no sink, with sink routes */
    readonly unrouted?: number;
    readonly sources: Record<string, Counters>;
    readonly sinks: Record<string, Counters>;
  };
  /** plugin id → type */
  readonly types: { readonly sources: Record<string, string>; readonly sinks: Record<string, string> };
  /** entries removed by filters (flow drops that are not the rate limiter's) */
  readonly filtered_entries: number;
  readonly drops: readonly Drop[];
  /** chain sinks: link state by sink id */
  readonly links: Record<string, LinkState>;
  readonly positions: PipelinePositions;
  readonly file_lag_bytes: Readonly<Record<string, number>>;
  /** plugin id → earliest certificate notAfter, epoch seconds */
  readonly certificate_expiry_seconds: Readonly<Record<string, number>>;
}

export interface NodeStatus {
  readonly service: 'logrelay';
  readonly version: string;
  readonly node: string;
  readonly uptime_seconds: number;
  readonly generation: number;
  readonly ready: boolean;
  readonly reloads: { readonly ok: number; readonly failed: number };
  readonly pipelines: Record<string, PipelineStatus>;
}

/** Sink types that connect at start: a pipeline is ready only once each of their links is up (DESIGN.md §25). */
const DIALING_SINKS = new Set(['tcp_chain', 'http_chain', 'otlp', 'nats']);

/** What `/readyz` names for a pipeline: its state, or `link_down` while it runs with a link not (yet) up. */
export function readinessOf(p: PipelineStatus): string {
  if (p.state !== 'running') return p.state;
  for (const [id, type] of Object.entries(p.types.sinks)) if (DIALING_SINKS.has(type) && p.links[id] !== 'up') return 'link_down';
  return 'running';
}

export function nodeStatus(sup: Supervisor): NodeStatus {
  const pipelines: Record<string, PipelineStatus> = {};
  let ready = sup.generation > 0;
  for (const v of sup.pipelineViews()) {
    if (v.state !== 'running') ready = false;
    const types = {
      sources: Object.fromEntries(v.config.plugin_sources.map((p) => [p.id, p.type])),
      sinks: Object.fromEntries(v.config.plugin_sinks.map((p) => [p.id, p.type])),
    };
    const c = v.counters;
    const sinks: Record<string, Counters> = {};
    for (const id of Object.keys(types.sinks)) sinks[id] = { ...(c?.sinks[id] ?? { total_processed: 0 }), abandoned: v.abandoned[id] ?? 0 };
    const sources: Record<string, Counters> = {};
    for (const id of Object.keys(types.sources)) sources[id] = { ...(c?.sources[id] ?? { total_entries: 0, dropped_entries: 0 }) };
    const counters = {
      total_dropped_by_sink: c?.total_dropped_by_sink ?? 0,
      checkpoint_writes: sup.checkpointCounters?.checkpoint_writes ?? 0,
      checkpoint_errors: sup.checkpointCounters?.checkpoint_errors ?? 0,
      flow: { ...(c?.flow ?? { total_processed: 0, total_dropped: 0, total_passed: 0 }) },
      ...(c?.rate_limit ? { rate_limit: { ...c.rate_limit } } : {}),
      ...(c?.transforms ? { transforms: Object.fromEntries(Object.entries(c.transforms).map(([id, t]) => [id, { ...t }])) } : {}),
      ...(c?.unrouted === undefined ? {} : { unrouted: c.unrouted }),
      sources,
      sinks,
    };
    const links: Record<string, LinkState> = {};
    for (const [id, s] of Object.entries(sinks)) if (s.connected !== undefined) links[id] = s.connected === 1 ? 'up' : 'down';
    const status: PipelineStatus = {
      state: v.state,
      pid: v.pid ?? null,
      restarts: v.restarts,
      resident_memory_bytes: v.gauges?.rss_bytes ?? null,
      counters,
      types,
      filtered_entries: Math.max(0, (counters.flow.total_dropped ?? 0) - (counters.rate_limit?.dropped_total ?? 0)),
      drops: dropsOf(counters, types.sinks),
      links,
      positions: v.positions,
      file_lag_bytes: v.gauges?.file_lag_bytes ?? {},
      certificate_expiry_seconds: v.gauges?.cert_expiry_seconds ?? {},
    };
    if (readinessOf(status) !== 'running') ready = false;
    pipelines[v.name] = status;
  }
  return {
    service: 'logrelay',
    version: VERSION,
    node: sup.currentConfig.node_name,
    uptime_seconds: sup.uptimeSeconds(),
    generation: sup.generation,
    ready,
    reloads: { ...sup.reloads },
    pipelines,
  };
}
