// Crash restarts (DESIGN.md §1): a pipeline whose process exited unexpectedly is restarted
// alone, after a backoff that doubles from 250 ms to 30 s and starts over after a run of a
// minute; the restarts are counted for /status and /metrics.

const RESTART_MIN_MS = 250;
const RESTART_MAX_MS = 30_000;
/** a run at least this long ends a series of quick crashes: the next delay is the shortest */
const STABLE_RESET_MS = 60_000;

export class CrashRestarts {
  private readonly counts = new Map<string, number>();
  private readonly attempts = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();

  /** Crash restarts of the pipeline so far. */
  of(name: string): number {
    return this.counts.get(name) ?? 0;
  }

  /** Counts a crash of the pipeline. */
  count(name: string): void {
    this.counts.set(name, this.of(name) + 1);
  }

  /** Calls `restart` after the pipeline's next delay; `ranMs`: how long the crashed process ran. */
  schedule(name: string, ranMs: number, restart: () => void): void {
    if (ranMs >= STABLE_RESET_MS) this.attempts.set(name, 0);
    const attempt = this.attempts.get(name) ?? 0;
    const delay = Math.min(RESTART_MAX_MS, RESTART_MIN_MS * 2 ** attempt);
    this.attempts.set(name, attempt + 1);
    this.timers.set(
      name,
      setTimeout(() => {
        this.timers.delete(name);
        restart();
      }, delay),
    );
  }

  /** True while the pipeline waits in its backoff. */
  waiting(name: string): boolean {
    return this.timers.has(name);
  }

  /** Drops every pending restart (a new generation, shutdown). */
  cancelAll(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }
}
