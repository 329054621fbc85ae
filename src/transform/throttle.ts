// The `throttle` step (DESIGN.md §24): a token bucket per key value, the least recently used
// forgotten beyond `max_keys`; entries over their bucket are dropped and counted, and a WARN
// `Entries throttled` names the key at most once a minute per key.

import type { ThrottleConfig } from './spec.js';
import { type Step, type StepContext, templateAt } from './step.js';

/** At most one WARN per key per this long. */
export const THROTTLE_WARN_INTERVAL_MS = 60_000;

interface Bucket {
  tokens: number;
  /** epoch ms of the last refill */
  at: number;
  /** epoch ms of the last WARN for this key; 0: none yet */
  warnedAt: number;
  /** throttled since that WARN */
  throttled: number;
}

export function createThrottleStep(cfg: ThrottleConfig, ctx: StepContext): Step {
  const counters = { processed: 0, throttled: 0 };
  const key = templateAt(ctx, 'key', cfg.key) ?? (() => '');
  const rate = cfg.rate;
  const burst = cfg.burst > 0 ? cfg.burst : cfg.rate;
  const maxKeys = cfg.max_keys;
  // a Map iterates in insertion order: re-inserting on use keeps the least recently used first
  const buckets = new Map<string, Bucket>();
  const log = ctx.log;
  const step = ctx.id;
  return {
    counters,
    run(e, now) {
      counters.processed++;
      const k = key(e);
      let b = buckets.get(k);
      if (b === undefined) {
        if (buckets.size >= maxKeys) buckets.delete(buckets.keys().next().value!);
        b = { tokens: burst, at: now, warnedAt: 0, throttled: 0 };
      } else {
        buckets.delete(k);
        if (now > b.at) {
          b.tokens = Math.min(burst, b.tokens + ((now - b.at) / 1000) * rate);
          b.at = now;
        }
      }
      buckets.set(k, b);
      if (b.tokens >= 1) {
        b.tokens -= 1;
        return true;
      }
      counters.throttled++;
      b.throttled++;
      if (now - b.warnedAt >= THROTTLE_WARN_INTERVAL_MS) {
        log.warn({ step, key: k, throttled: b.throttled }, 'Entries throttled');
        b.warnedAt = now;
        b.throttled = 0;
      }
      return false;
    },
  };
}
