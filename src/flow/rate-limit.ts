// Token-bucket rate limiter (DESIGN.md §5): full at start; `pass` never drops; the size cap
// applies only when rate > 0 and policy = "drop".

import type { RateLimitConfig } from '../config/schema.js';
import type { Counters } from '../core/counters.js';
import type { Entry } from '../core/entry.js';

export interface RateLimiter {
  readonly counters: Counters;
  /** true when the entry may go on */
  admit(entry: Entry, now: number): boolean;
}

/** Returns undefined when the limiter does not exist (no table, or rate <= 0). */
export function createRateLimiter(cfg: RateLimitConfig | undefined): RateLimiter | undefined {
  if (!cfg || cfg.rate <= 0) return undefined;
  const rate = cfg.rate;
  const burst = cfg.burst > 0 ? cfg.burst : rate;
  const drop = cfg.policy === 'drop';
  const cap = drop ? cfg.max_entry_size_bytes : 0;
  const counters: Counters = { dropped_total: 0, dropped_by_size_total: 0, available_tokens: burst };
  let tokens = burst;
  let last = -1;
  return {
    counters,
    admit(entry, now) {
      if (last < 0) last = now;
      tokens = Math.min(burst, tokens + ((now - last) / 1000) * rate);
      last = now;
      let ok = true;
      if (cap > 0 && Buffer.byteLength(entry.message) > cap) {
        counters.dropped_by_size_total!++;
        counters.dropped_total!++;
        ok = false;
      } else if (tokens >= 1) {
        tokens -= 1;
      } else if (drop) {
        counters.dropped_total!++;
        ok = false;
      }
      counters.available_tokens = Math.floor(tokens);
      return ok;
    },
  };
}
