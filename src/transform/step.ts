// What every transform step is once compiled: a plain function of the entry and its counters.

import type { Counters } from '../core/counters.js';
import type { Entry } from '../core/entry.js';
import { ConfigError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { joinPath } from '../core/spec.js';
import { type Path, parsePath, PathSyntaxError } from './path.js';
import { compileTemplate, type Template, TemplateError } from './template.js';

/** A compiled step. `run` returns false when the entry is dropped (done at once, not a loss). */
export interface Step {
  /** `processed` (entries the step ran on) and the step's own outcomes */
  readonly counters: Counters;
  run(e: Entry, now: number): boolean;
}

export interface StepContext {
  /** the step's id: `id`, or `<type>_<index>` */
  readonly id: string;
  /** the step's key path, `pipelines[0].flow.transforms[2]` */
  readonly at: string;
  readonly pipeline: string;
  readonly log: Logger;
  /** records a fault at `key` (relative to the step) and goes on, so every fault is listed */
  fault(key: string, reason: string): void;
}

export type StepFactory = (cfg: never, ctx: StepContext) => Step;

/** Collects faults as ConfigErrors at the step's keys. */
export function faultCollector(at: string, faults: ConfigError[]): (key: string, reason: string) => void {
  return (key, reason) => faults.push(new ConfigError(key ? joinPath(at, key) : at, reason));
}

/** A path of a step's keys; undefined (with a fault) when it does not parse. */
export function pathAt(ctx: StepContext, key: string, text: string, underFields = false): Path | undefined {
  try {
    const path = parsePath(text);
    if (underFields && (path.root !== 'fields' || path.keys.length === 0)) {
      ctx.fault(key, `${JSON.stringify(text)} is not a path under fields. (such as fields.user)`);
      return undefined;
    }
    return path;
  } catch (err) {
    if (err instanceof PathSyntaxError) {
      ctx.fault(key, `${JSON.stringify(text)}: ${err.message} at column ${err.at + 1}`);
      return undefined;
    }
    throw err;
  }
}

/** A template of a step's keys; undefined (with a fault) when it does not compile. */
export function templateAt(ctx: StepContext, key: string, text: string): Template | undefined {
  try {
    return compileTemplate(text);
  } catch (err) {
    if (err instanceof TemplateError) {
      ctx.fault(key, `${JSON.stringify(text)}: ${err.message}`);
      return undefined;
    }
    throw err;
  }
}

/** A path written as a key of a TOML table names itself (`"fields.a"`) or its quoted form. */
export const keyName = (key: string): string => JSON.stringify(key);
