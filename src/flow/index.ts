// The flow stage: dedup → rate limit → filters → format, per entry, synchronous and quiet.

import type { FlowConfig } from '../config/schema.js';
import type { Counters } from '../core/counters.js';
import type { Entry } from '../core/entry.js';
import type { Logger } from '../core/log.js';
import { createDedup, type DedupSet } from './dedup.js';
import { compileFilters, matchText, passes } from './filters.js';
import { FORMATTERS } from './format.js';
import { createRateLimiter, type RateLimiter } from './rate-limit.js';
import type { compileTransforms, Transforms } from '../transform/index.js';

export interface Flow {
  /** `total_processed`, `total_dropped`, `total_passed` */
  readonly counters: Counters;
  readonly rateLimiter: RateLimiter | undefined;
  /** the transform steps (DESIGN.md §24), when any */
  readonly transforms: Transforms | undefined;
  /** the duplicate window, when `dedup.enabled` */
  readonly dedup: DedupSet | undefined;
  /**
   * With dedup: true when `id` is in the window, counted as processed and dropped as a duplicate;
   * a chain source asks before it decodes a line, and skips it (DESIGN.md §14: dedup is the first
   * stage, so the line would go no further). The window learns nothing: `process` adds the id.
   * While duplicates are rare it answers false without looking (see PRECHECK_SPAN): `process`
   * still drops them.
   */
  seen(id: string, now: number): boolean;
  /** The formatted line, or undefined when the entry is dropped (counted). */
  process(entry: Entry, now: number): string | undefined;
  /**
   * No stage but dedup looks at an entry (no rate limit, transforms or filters) and the format is
   * `raw`: an entry a chain source received as a version 2 frame may go on as its frame, undecoded
   * (`pass`), when the pipeline's sinks need no more (FrameCarrier, core/source.ts).
   */
  readonly carriesFrames: boolean;
  /**
   * An entry carried on as its frame: counted as `process` counts an entry; false when `id` is in
   * the dedup window (a duplicate dropped, counted), which then learns it as `process` does.
   */
  pass(id: string | undefined, now: number): boolean;
  /** The pipeline's formatter alone (a dead letter's line). */
  format(entry: Entry): string;
}

/**
 * `seen` looks ids up in spans of PRECHECK_SPAN lines; a span in which fewer than one line in
 * PRECHECK_PAYS was a duplicate makes it skip the next PRECHECK_SKIP lines (a lookup costs about a
 * tenth of the decode it may save, so it pays from about one duplicate in ten lines; below one in
 * fifty it surely does not). The lookups resume within 16,384 lines once duplicates come (a
 * relay's failover, or `any` edges, which send every line twice).
 */
const PRECHECK_SPAN = 1024;
const PRECHECK_PAYS = 50;
const PRECHECK_SKIP = 15 * PRECHECK_SPAN;

/** Where the flow runs: names the transform steps' faults and warnings. */
export interface FlowPlace {
  readonly pipeline: string;
  /** the key path of the flow table, `pipelines[0].flow` */
  readonly at: string;
  readonly log: Logger;
  /**
   * The transform steps' compiler (src/transform/index.ts), which the worker loads only for a
   * pipeline that has steps (worker/transform-code.ts): a flow with steps needs it.
   */
  readonly compileTransforms?: typeof compileTransforms;
}

function compilerOf(place: FlowPlace): typeof compileTransforms {
  if (!place.compileTransforms) throw new Error(`${place.at}: transform steps without their code loaded`);
  return place.compileTransforms;
}

/**
 * @param debugLog when given (level debug), one line per filter evaluated per entry
 * @param place needed when the flow has transforms, with their compiler
 */
export function createFlow(cfg: FlowConfig, debugLog?: Logger, place?: FlowPlace): Flow {
  const limiter = createRateLimiter(cfg.rate_limit);
  const steps = cfg.transforms ?? [];
  const transforms =
    steps.length > 0 && place ? compilerOf(place)(steps, `${place.at}.transforms`, place.pipeline, place.log) : undefined;
  const filters = compileFilters(cfg.filters);
  const format = FORMATTERS[cfg.format.type];
  const dedup = createDedup(cfg.dedup);
  const counters: Counters = { total_processed: 0, total_dropped: 0, total_passed: 0 };
  if (dedup) counters.duplicates_dropped = 0;
  /** `seen`'s lookups: how many left in this span, duplicates they found, lines it skips next */
  const precheck = { left: PRECHECK_SPAN, hits: 0, skip: 0 };
  return {
    counters,
    carriesFrames: !limiter && !transforms && filters.length === 0 && cfg.format.type === 'raw',
    rateLimiter: limiter,
    transforms,
    format,
    dedup,
    seen(id, now) {
      if (!dedup) return false;
      // Asked only while it pays: behind `balance` edges nearly every line is new, and the lookup
      // before the decode is then a second one for nothing (`process` looks the id up again).
      // Skipping it loses nothing: a duplicate still meets `process`, decoded first.
      if (precheck.skip > 0) {
        precheck.skip--;
        return false;
      }
      const dup = dedup.has(id, now);
      if (dup) precheck.hits++;
      if (--precheck.left === 0) {
        if (precheck.hits * PRECHECK_PAYS < PRECHECK_SPAN) precheck.skip = PRECHECK_SKIP;
        precheck.left = PRECHECK_SPAN;
        precheck.hits = 0;
      }
      if (!dup) return false;
      counters.total_processed!++;
      counters.duplicates_dropped!++;
      return true;
    },
    process(entry, now) {
      counters.total_processed!++;
      // a suppressed duplicate is no loss: counted apart from total_dropped
      if (dedup && entry.id !== undefined && dedup.check(entry.id, now)) {
        counters.duplicates_dropped!++;
        return undefined;
      }
      if (limiter && !limiter.admit(entry, now)) {
        counters.total_dropped!++;
        return undefined;
      }
      // a step that drops, samples out or throttles counts it itself: not a loss
      if (transforms && !transforms.run(entry, now)) return undefined;
      if (filters.length > 0) {
        const text = matchText(entry);
        for (let i = 0; i < filters.length; i++) {
          const ok = passes(filters[i]!, text);
          if (debugLog) debugLog.debug({ filter: i, verdict: ok ? 'pass' : 'reject' }, 'filter evaluated');
          if (!ok) {
            counters.total_dropped!++;
            return undefined;
          }
        }
      }
      counters.total_passed!++;
      return format(entry);
    },
    pass(id, now) {
      counters.total_processed!++;
      if (dedup && id !== undefined && dedup.check(id, now)) {
        counters.duplicates_dropped!++;
        return false;
      }
      counters.total_passed!++;
      return true;
    },
  };
}
