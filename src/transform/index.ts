// The transform stage (DESIGN.md §24): the registry of step types, and the chain of a pipeline's
// steps compiled once into plain functions; per entry it is synchronous and allocation-light.

import type { Counters } from '../core/counters.js';
import type { Entry } from '../core/entry.js';
import { type ConfigError, throwConfigFaults } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { joinPath } from '../core/spec.js';
import { compileCondition, ConditionError, type Predicate } from './condition.js';
import { createDeleteStep } from './delete.js';
import { createDropStep } from './drop.js';
import { createKeepStep } from './keep.js';
import { createParseStep } from './parse.js';
import { createRedactStep } from './redact.js';
import { createRenameStep } from './rename.js';
import { createSampleStep } from './sample.js';
import { createSetStep } from './set.js';
import type { TransformConfig, TransformType } from './spec.js';
import { faultCollector, type Step, type StepContext } from './step.js';
import { createThrottleStep } from './throttle.js';

export type { TransformConfig, TransformType };

type Factory = (cfg: TransformConfig, ctx: StepContext) => Step;

/** Every step type's factory; a type missing here fails to compile. */
export const TRANSFORMS = {
  parse: createParseStep as Factory,
  set: createSetStep as Factory,
  rename: createRenameStep as Factory,
  delete: createDeleteStep as Factory,
  keep: createKeepStep as Factory,
  redact: createRedactStep as Factory,
  drop: createDropStep,
  sample: createSampleStep as Factory,
  throttle: createThrottleStep as Factory,
} satisfies Record<TransformType, Factory>;

/** The outcomes `logrelay_transform_events_total` counts, by their counter names. */
export const TRANSFORM_OUTCOMES = ['processed', 'parse_failed', 'redacted', 'dropped', 'sampled_out', 'throttled', 'bad_values'] as const;

export interface Transforms {
  /** per step id: `processed` and its outcomes */
  readonly counters: Readonly<Record<string, Counters>>;
  /** Runs every step in order; false when a step dropped, sampled out or throttled the entry. */
  run(e: Entry, now: number): boolean;
}

/**
 * A condition as a predicate; a syntax error is recorded at `at` with its column and
 * undefined returned. Shared by steps and sink routes.
 */
export function conditionAt(text: string, at: string, faults: ConfigError[]): Predicate | undefined {
  try {
    return compileCondition(text);
  } catch (err) {
    if (err instanceof ConditionError) {
      faultCollector(at, faults)('', err.message);
      return undefined;
    }
    throw err;
  }
}

/**
 * Compiles a pipeline's steps. Throws every fault found (a ConfigError or ConfigErrors), each
 * naming its key under `at` (`pipelines[0].flow.transforms`).
 */
export function compileTransforms(steps: readonly TransformConfig[], at: string, pipeline: string, log: Logger): Transforms {
  const faults: ConfigError[] = [];
  const compiled: Step[] = [];
  const counters: Record<string, Counters> = {};
  steps.forEach((cfg, i) => {
    const stepAt = joinPath(at, i);
    const id = cfg.id ?? `${cfg.type}_${i}`;
    const fault = faultCollector(stepAt, faults);
    if (Object.hasOwn(counters, id)) fault('id', `duplicate step id ${JSON.stringify(id)}`);
    const when = cfg.when === undefined ? undefined : conditionAt(cfg.when, joinPath(stepAt, 'when'), faults);
    const step = TRANSFORMS[cfg.type](cfg, { id, at: stepAt, pipeline, log: log.child({ pipeline }), fault });
    counters[id] = step.counters;
    compiled.push(when ? guarded(when, step) : step);
  });
  throwConfigFaults(faults);
  const n = compiled.length;
  return {
    counters,
    run(e, now) {
      for (let i = 0; i < n; i++) if (!compiled[i]!.run(e, now)) return false;
      return true;
    },
  };
}

/** A step that runs only where its `when` holds; the others pass unchanged. */
function guarded(when: Predicate, step: Step): Step {
  return { counters: step.counters, run: (e, now) => !when(e) || step.run(e, now) };
}
