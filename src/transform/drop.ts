// The `drop` step (DESIGN.md §24): drops the entries its `when` holds for; counted, not a loss.

import type { TransformConfig } from './spec.js';
import type { Step, StepContext } from './step.js';

export function createDropStep(cfg: TransformConfig, ctx: StepContext): Step {
  const counters = { processed: 0, dropped: 0 };
  if (cfg.when === undefined) ctx.fault('when', 'is required for a drop step (without it every entry would be dropped)');
  return {
    counters,
    run() {
      counters.processed++;
      counters.dropped++;
      return false;
    },
  };
}
