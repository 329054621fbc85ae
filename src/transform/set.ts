// The `set` step (DESIGN.md §24): writes templates, numbers or booleans to paths; `if_missing`
// writes only absent ones. A `time` or `level` that is none counts `bad_values`.

import type { Entry } from '../core/entry.js';
import { compileGet, compileSet, type Getter, type Setter } from './path.js';
import type { SetConfig } from './spec.js';
import { keyName, pathAt, type Step, type StepContext, templateAt } from './step.js';
import { isTemplate } from './template.js';

interface Write {
  readonly get: Getter;
  readonly set: Setter;
  readonly value: (e: Entry) => unknown;
}

export function createSetStep(cfg: SetConfig, ctx: StepContext): Step {
  const counters = { processed: 0, bad_values: 0 };
  const writes: Write[] = [];
  const entries = Object.entries(cfg.fields);
  if (entries.length === 0) ctx.fault('fields', 'is required: a table of path → template, number or boolean');
  for (const [key, v] of entries) {
    const at = `fields.${keyName(key)}`;
    const path = pathAt(ctx, at, key);
    let value: ((e: Entry) => unknown) | undefined;
    if (typeof v === 'string') {
      if (isTemplate(v)) value = templateAt(ctx, at, v);
      else value = () => v;
    } else if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') {
      const constant = typeof v === 'bigint' ? Number(v) : v;
      value = () => constant;
    } else ctx.fault(at, `must be a template, a number or a boolean, got ${Array.isArray(v) ? 'array' : typeof v}`);
    if (path && value) writes.push({ get: compileGet(path), set: compileSet(path), value });
  }
  const ifMissing = cfg.if_missing;
  return {
    counters,
    run(e) {
      counters.processed++;
      for (let i = 0; i < writes.length; i++) {
        const w = writes[i]!;
        if (ifMissing && w.get(e) !== undefined) continue;
        if (w.set(e, w.value(e)) === 'bad') counters.bad_values++;
      }
      return true;
    },
  };
}
