// Acknowledgement bookkeeping shared by sources, the pipeline and sinks (DESIGN.md §15): a
// ticket per emitted batch counts the (entry, sink) deliveries still owed, and an in-order log
// turns batches completed in any order into a position that only moves past finished prefixes.
// Per entry this is one decrement; per batch one small object: no promise, no timer.

/** Deliveries still owed for one emitted batch; `done` runs once when none are. */
export interface Ticket {
  pending: number;
  readonly done: () => void;
}

/** Settles one delivery owed on `ticket` (an entry delivered, or dropped with a count). */
export function settle(ticket: Ticket | undefined): void {
  if (ticket !== undefined && --ticket.pending === 0) ticket.done();
}

/** Settles every delivery owed by `items`. */
export function settleAll(items: readonly { readonly ticket?: Ticket }[], from = 0, to = items.length): void {
  for (let i = from; i < to; i++) settle(items[i]!.ticket);
}

/**
 * Marks added in order, completed in any order: `onAdvance(value)` gets the value of the last
 * mark whose predecessors are all complete, each time that moves.
 */
export class InOrder<T> {
  private marks: { readonly value: T; done: boolean }[] = [];
  private head = 0;

  constructor(private readonly onAdvance: (value: T) => void) {}

  /** marks added and not yet passed */
  get outstanding(): number {
    return this.marks.length - this.head;
  }

  /** Adds a mark; the returned function completes it (idempotent; may run synchronously). */
  add(value: T): () => void {
    const mark = { value, done: false };
    this.marks.push(mark);
    return () => {
      if (mark.done) return;
      mark.done = true;
      this.advance();
    };
  }

  private advance(): void {
    let last: { value: T } | undefined;
    while (this.head < this.marks.length && this.marks[this.head]!.done) last = this.marks[this.head++];
    if (this.head === this.marks.length) {
      this.marks = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.marks.length) {
      this.marks = this.marks.slice(this.head);
      this.head = 0;
    }
    if (last) this.onAdvance(last.value);
  }
}

/**
 * Resolves once `arm`'s wake function is called (what was emitted is done) or at `deadline`
 * (epoch ms), whichever comes first: how a stopping source waits to acknowledge what it emitted.
 */
export async function doneBy(deadline: number, arm: (wake: () => void) => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await new Promise<void>((resolve) => {
    arm(resolve);
    timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
  });
  clearTimeout(timer);
}
