// The `keep` step (DESIGN.md §24): an allow list; every field not listed is removed.

import type { Entry } from '../core/entry.js';
import { compileGet, compileSet, type Getter, touched } from './path.js';
import type { PathListConfig } from './spec.js';
import { pathAt, type Step, type StepContext } from './step.js';

export function createKeepStep(cfg: PathListConfig, ctx: StepContext): Step {
  const counters = { processed: 0 };
  if (cfg.fields.length === 0) ctx.fault('fields', 'is required: a list of paths under fields.');
  const kept: { get: Getter; set: (e: Entry, v: unknown) => unknown }[] = [];
  for (let i = 0; i < cfg.fields.length; i++) {
    const path = pathAt(ctx, `fields[${i}]`, cfg.fields[i]!, true);
    if (path) kept.push({ get: compileGet(path), set: compileSet(path) });
  }
  // the kept values are copied into a fresh entry's fields, then moved over
  const scratch: Entry = { time: 0, source: '', message: '' };
  return {
    counters,
    run(e) {
      counters.processed++;
      if (e.fields === undefined) return true;
      scratch.fields = undefined;
      for (let i = 0; i < kept.length; i++) {
        const v = kept[i]!.get(e);
        if (v !== undefined) kept[i]!.set(scratch, v);
      }
      touched(e);
      e.plainFields = undefined;
      if (scratch.fields === undefined) delete e.fields;
      else e.fields = scratch.fields;
      return true;
    },
  };
}
