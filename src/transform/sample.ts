// The `sample` step (DESIGN.md §24): keeps 1 in `rate`. With a `key`, the verdict is a hash of
// the key's value alone (no node, pipeline or seed), so every node and restart agrees on it.

import type { SampleConfig } from './spec.js';
import { type Step, type StepContext, templateAt } from './step.js';

/**
 * A 32-bit hash of a string's UTF-16 units: FNV-1a, then murmur3's finaliser so that keys that
 * differ in their last character spread over the whole range.
 */
export function keyHash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The verdict for a key value: kept when its hash falls in the first 1/rate of the range. */
export function keptByKey(value: string, rate: number): boolean {
  return keyHash(value) / 4294967296 < 1 / rate;
}

export function createSampleStep(cfg: SampleConfig, ctx: StepContext): Step {
  const counters = { processed: 0, sampled_out: 0 };
  const key = cfg.key === '' ? undefined : templateAt(ctx, 'key', cfg.key);
  const rate = cfg.rate;
  const share = 1 / rate;
  return {
    counters,
    run(e) {
      counters.processed++;
      const keep = key === undefined ? Math.random() < share : keptByKey(key(e), rate);
      if (!keep) counters.sampled_out++;
      return keep;
    },
  };
}
