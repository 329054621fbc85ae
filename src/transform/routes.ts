// The checks of a pipeline's sink routes (DESIGN.md §24): `when`, `else` and `dead_letter`
// beside a sink's `id`, made when the configuration is loaded and again when the pipeline is built.

import type { ConfigError } from '../core/errors.js';
import type { SinkConfig } from '../core/plugin-config.js';
import { joinPath } from '../core/spec.js';
import type { Predicate } from './condition.js';
import { conditionAt } from './index.js';
import { faultCollector } from './step.js';
import { hasRoutes } from './has-routes.js';

/** Most sinks a pipeline with routes may have: a route is a bit mask of them. */
export const MAX_ROUTED_SINKS = 31;

export { hasRoutes };

/**
 * Checks the routes of one pipeline's sinks (`at`: `pipelines[0].plugin_sinks`): every `when`
 * compiles, no sink has both `when` and `else`, at most one has `else`, every `dead_letter` names
 * another sink of the pipeline, and no chain of them comes back. Faults are pushed to `faults`;
 * the compiled conditions are returned by sink index.
 */
export function checkRoutes(sinks: readonly SinkConfig[], at: string, faults: ConfigError[]): (Predicate | undefined)[] {
  const ids = new Map(sinks.map((s, i) => [s.id, i]));
  let elseAt: string | undefined;
  const preds = sinks.map((s, i) => {
    const sinkAt = joinPath(at, i);
    const fault = faultCollector(sinkAt, faults);
    const pred = s.when === undefined ? undefined : conditionAt(s.when, joinPath(sinkAt, 'when'), faults);
    if (s.when !== undefined && s.else === true) fault('else', 'a sink has either when or else, not both');
    if (s.else === true) {
      if (elseAt !== undefined) fault('else', `only one sink may have else = true (another at ${elseAt})`);
      else elseAt = sinkAt;
    }
    if (s.dead_letter !== undefined) {
      if (!ids.has(s.dead_letter)) fault('dead_letter', `${JSON.stringify(s.dead_letter)} is no sink of this pipeline (sinks: ${[...ids.keys()].join(', ')})`);
      else if (s.dead_letter === s.id) fault('dead_letter', 'a sink cannot be its own dead letter sink');
    }
    return pred;
  });
  if (hasRoutes(sinks) && sinks.length > MAX_ROUTED_SINKS) faultCollector(at, faults)('', `a pipeline with routes has at most ${MAX_ROUTED_SINKS} sinks, got ${sinks.length}`);
  // a cycle: following dead_letter from a sink comes back to it
  sinks.forEach((s, i) => {
    const seen = new Set<string>([s.id]);
    let next = s.dead_letter;
    const path = [s.id];
    for (let hops = 0; next !== undefined && hops <= sinks.length; hops++) {
      path.push(next);
      if (next === s.id) {
        // reported once, at the first sink of the cycle in file order
        if (path.slice(0, -1).every((id) => (ids.get(id) ?? i) >= i)) faultCollector(joinPath(at, i), faults)('dead_letter', `dead letters go round in a cycle: ${path.join(' → ')}`);
        break;
      }
      if (seen.has(next)) break;
      seen.add(next);
      next = sinks[ids.get(next) ?? -1]?.dead_letter;
    }
  });
  return preds;
}

