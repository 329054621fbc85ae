// The `rename` step (DESIGN.md §24): moves values from old paths (under `fields.`) to new paths;
// a missing old path does nothing.

import { compileDelete, compileGet, compileSet, type Getter, type Setter } from './path.js';
import type { RenameConfig } from './spec.js';
import { keyName, pathAt, type Step, type StepContext } from './step.js';

interface Move {
  readonly get: Getter;
  readonly remove: (e: Parameters<Getter>[0]) => boolean;
  readonly set: Setter;
}

export function createRenameStep(cfg: RenameConfig, ctx: StepContext): Step {
  const counters = { processed: 0, bad_values: 0 };
  const moves: Move[] = [];
  const entries = Object.entries(cfg.fields);
  if (entries.length === 0) ctx.fault('fields', 'is required: a table of old path → new path');
  for (const [from, to] of entries) {
    const at = `fields.${keyName(from)}`;
    const old = pathAt(ctx, at, from, true);
    if (typeof to !== 'string') {
      ctx.fault(at, `must be a path, got ${typeof to}`);
      continue;
    }
    const target = pathAt(ctx, at, to);
    if (old && target) moves.push({ get: compileGet(old), remove: compileDelete(old), set: compileSet(target) });
  }
  return {
    counters,
    run(e) {
      counters.processed++;
      for (let i = 0; i < moves.length; i++) {
        const m = moves[i]!;
        const v = m.get(e);
        if (v === undefined) continue;
        // a value the new path refuses (a `time` or `level` of no such form) stays where it was
        if (m.set(e, v) === 'bad') counters.bad_values++;
        else m.remove(e);
      }
      return true;
    },
  };
}
