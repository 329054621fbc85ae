// Routing (DESIGN.md §24): which of a pipeline's sinks an entry goes to. Sinks with `when` get
// the entries their condition holds for, `else` sinks what no `when` sink took, the others every
// entry; a sink named as a `dead_letter` gets only dead letters (and what its own `when` routes
// to it). The pipeline's fan-out (fanout.ts) applies among the sinks an entry is routed to.

import type { Fanout as FanoutMode, SinkConfig } from '../config/schema.js';
import type { Counters } from '../core/counters.js';
import type { ConfigError } from '../core/errors.js';
import type { Predicate } from '../transform/condition.js';
import type { Transforms } from '../transform/index.js';
import { hasRoutes } from '../transform/has-routes.js';
import { createFanout, type Fanout, type FanoutHooks, type SinkRunner } from './fanout.js';
import type { TransformCode } from './transform-code.js';

/** A copy of each step's counters, for the stats message. */
export function transformCounters(t: Transforms): Record<string, Counters> {
  const out: Record<string, Counters> = {};
  for (const [id, c] of Object.entries(t.counters)) out[id] = { ...c };
  return out;
}

/** What routing needs of the pipeline beside the fan-out's hooks. */
export interface RouteCounters {
  /** the pipeline's counters: `unrouted` rises here */
  readonly counters: { unrouted?: number };
}

/**
 * The pipeline's fan-out with routes: each entry goes to the sinks its route names, through a
 * fan-out of `mode` over just those sinks (made the first time that set of sinks is taken).
 * Without `when`, `else` or `dead_letter` on any sink this is createFanout over every sink,
 * unchanged. `runners[i]` is the sink of `sinks[i]`, with `slot` i (a route's fan-out marks an
 * item's `paths` by the sinks' places in the whole pipeline). `code` has the routes' code when
 * any sink routes (worker/transform-code.ts).
 */
export function createRoutedFanout(
  mode: FanoutMode,
  runners: readonly SinkRunner[],
  sinks: readonly SinkConfig[],
  hooks: FanoutHooks,
  route: RouteCounters,
  code: TransformCode | undefined,
): Fanout {
  if (!hasRoutes(sinks) || runners.length !== sinks.length) return createFanout(mode, runners, hooks);
  if (!code) throw new Error('routes without their code loaded');
  route.counters.unrouted = 0;
  const faults: ConfigError[] = [];
  const preds = code.checkRoutes(sinks, 'plugin_sinks', faults);
  const deadLetterOnly = new Set(sinks.filter((s) => s.dead_letter !== undefined).map((s) => s.dead_letter!));
  let always = 0;
  let elseMask = 0;
  /** one entry per distinct `when` text: its predicate and the sinks it routes to */
  const routes: { pred: Predicate; mask: number }[] = [];
  const byText = new Map<string, { pred: Predicate; mask: number }>();
  /** sinks grouped by route (same `when`, the `else`, the unconditional, each dead-letter sink): for room and failover */
  const groups = new Map<string, number>();
  sinks.forEach((s, i) => {
    const bit = 1 << i;
    let group: string;
    if (s.when !== undefined) {
      let r = byText.get(s.when);
      if (!r) {
        r = { pred: preds[i] ?? (() => false), mask: 0 };
        byText.set(s.when, r);
        routes.push(r);
      }
      r.mask |= bit;
      group = `when:${s.when}`;
    } else if (s.else === true) {
      elseMask |= bit;
      group = 'else';
    } else if (deadLetterOnly.has(s.id)) group = `dead_letter:${s.id}`;
    else {
      always |= bit;
      group = 'all';
    }
    groups.set(group, (groups.get(group) ?? 0) | bit);
  });
  const fanouts = new Map<number, Fanout>();
  const fanoutOf = (mask: number): Fanout => {
    let f = fanouts.get(mask);
    if (f === undefined) {
      f = createFanout(
        mode,
        runners.filter((_, i) => (mask & (1 << i)) !== 0),
        hooks,
      );
      fanouts.set(mask, f);
    }
    return f;
  };
  const groupFanouts = [...groups.values()].map(fanoutOf);
  const groupOf = (r: SinkRunner): Fanout | undefined => {
    const i = runners.indexOf(r);
    for (const mask of groups.values()) if ((mask & (1 << i)) !== 0) return fanoutOf(mask);
    return undefined;
  };
  const n = routes.length;
  // entries in a row mostly take the same route: its fan-out is kept at hand, not looked up in the map each time
  let lastMask = -1;
  let lastFanout: Fanout | undefined;
  return {
    offer(item) {
      let mask = always;
      let took = false;
      for (let k = 0; k < n; k++) {
        const r = routes[k]!;
        if (r.pred(item.entry)) {
          mask |= r.mask;
          took = true;
        }
      }
      if (!took) mask |= elseMask;
      if (mask === 0) {
        route.counters.unrouted!++;
        return;
      }
      if (mask !== lastMask) {
        lastFanout = fanoutOf(mask);
        lastMask = mask;
      }
      lastFanout!.offer(item);
    },
    full: () => groupFanouts.some((f) => f.full()),
    belowHalf: () => groupFanouts.every((f) => f.belowHalf()),
    failover(from, items) {
      const f = groupOf(from);
      return f !== undefined && f.failover(from, items);
    },
  };
}
