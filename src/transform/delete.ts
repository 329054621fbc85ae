// The `delete` step (DESIGN.md §24): removes fields.

import { compileDelete } from './path.js';
import type { PathListConfig } from './spec.js';
import { pathAt, type Step, type StepContext } from './step.js';

export function createDeleteStep(cfg: PathListConfig, ctx: StepContext): Step {
  const counters = { processed: 0 };
  if (cfg.fields.length === 0) ctx.fault('fields', 'is required: a list of paths under fields.');
  const removers = cfg.fields.flatMap((text, i) => {
    const path = pathAt(ctx, `fields[${i}]`, text, true);
    return path ? [compileDelete(path)] : [];
  });
  return {
    counters,
    run(e) {
      counters.processed++;
      if (e.fields !== undefined) for (let i = 0; i < removers.length; i++) removers[i]!(e);
      return true;
    },
  };
}
