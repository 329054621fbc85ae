// Exponential backoff, optionally with jitter; used by restarts and chain reconnects.

export interface BackoffOptions {
  /** first delay, ms */
  readonly min_ms: number;
  /** cap, ms */
  readonly max_ms: number;
  /** fraction of random spread either side, e.g. 0.2 for ±20 % */
  readonly jitter?: number;
}

export class Backoff {
  private attempt = 0;
  constructor(private readonly opts: BackoffOptions) {}

  /** The next delay in ms; each call doubles the base up to the cap. */
  next(): number {
    const base = Math.min(this.opts.max_ms, this.opts.min_ms * 2 ** this.attempt);
    if (base < this.opts.max_ms) this.attempt++;
    const j = this.opts.jitter ?? 0;
    if (j === 0) return base;
    return Math.max(0, Math.round(base * (1 - j + 2 * j * Math.random())));
  }

  reset(): void {
    this.attempt = 0;
  }
}
