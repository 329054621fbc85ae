// The two waits of a sink that holds entries until they are acknowledged (the chain, otlp and
// nats sinks; DESIGN.md §7): a write() blocked while the sink holds `buffer_size` entries or more,
// and close() waiting until every held entry is delivered.

import { settleBy } from './sink-server.js';

export class HeldWaiters {
  private space: (() => void) | undefined;
  private empty: (() => void) | undefined;

  constructor(
    /** entries the sink holds now */
    private readonly held: () => number,
    private readonly bufferSize: number,
    /** bytes the sink holds now (`buffer_max_bytes`, DESIGN.md §25); none by default */
    private readonly heldBytes: () => number = () => 0,
    private readonly maxBytes = Number.POSITIVE_INFINITY,
  ) {}

  private room(): boolean {
    return this.held() < this.bufferSize && this.heldBytes() < this.maxBytes;
  }

  /** What write() returns: undefined while there is room (or when `closing`), else a promise woken by wake(). */
  whenRoom(closing: boolean): Promise<void> | undefined {
    if (this.room() || closing) return undefined;
    return new Promise<void>((resolve) => (this.space = resolve));
  }

  /** Settles the waits that are over; `closing` frees a blocked writer whatever the sink holds. */
  wake(closing: boolean): void {
    if (this.space && (this.room() || closing)) {
      const w = this.space;
      this.space = undefined;
      w();
    }
    if (this.empty && this.held() === 0) {
      const w = this.empty;
      this.empty = undefined;
      w();
    }
  }

  /** Resolves once wake() finds nothing held, or at `deadline` (epoch ms). */
  emptyBy(deadline: number): Promise<void> {
    return settleBy([new Promise<void>((resolve) => (this.empty = resolve))], deadline);
  }
}
