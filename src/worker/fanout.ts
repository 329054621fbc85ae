// Fan-out policy (DESIGN.md §7): how one entry is offered to a pipeline's sink queues, when the
// sources must pause, and where a broken link's entries go. `all`: every sink gets every entry
// (a full dropping sink drops and counts it). `any`: redundant paths; every live sink with room
// takes it, the others skip it; sources pause only when no path has room. `balance`: redundant
// paths, each entry to one of them (round robin over the live ones with room), failover as `any`.

import type { Fanout as FanoutMode } from '../config/schema.js';
import { settle } from '../core/ack.js';
import type { Counters } from '../core/counters.js';
import type { BoundedQueue } from '../core/queue.js';
import type { Sink, SinkItem } from '../sinks/types.js';

export interface SinkRunner {
  readonly sink: Sink;
  readonly queue: BoundedQueue<SinkItem>;
  /** what the pipeline counts for the sink: `total_processed`, and `skipped`, `failed_over` for any */
  readonly counters: Counters;
  busy: boolean;
  /** the sink's place among all the pipeline's sinks, when this fan-out serves a subset (routes.ts) */
  readonly slot?: number;
}

/** The chain protocol versions the runners' chain sinks send in now, bit `1 << version` each (see encodeAhead). */
export function wireVersions(runners: readonly SinkRunner[]): number {
  let versions = 0;
  for (const r of runners) if (r.sink.sendsWire) versions |= 1 << (r.sink.wireVersion?.() ?? 1);
  return versions;
}

/** No runner is writing or holds anything queued. */
export const allIdle = (runners: readonly SinkRunner[]): boolean => runners.every((r) => !r.busy && r.queue.length === 0);

export interface Fanout {
  /** Hands `item` to the sinks, adding one owed delivery to its ticket per sink that took it. */
  offer(item: SinkItem): void;
  /** No more entries fit: the pipeline pauses its sources. */
  full(): boolean;
  /** Room again: the pipeline resumes its sources. */
  belowHalf(): boolean;
  /** `any`, `balance`: moves a broken link's items (and its queue) to the live sinks; false when none is live. */
  failover(from: SinkRunner, items: readonly SinkItem[]): boolean;
}

/** Why `all` dropped an entry for a sink: its queue was full and it drops (`on_full = "drop"`), or its link is down (`auto`). */
export type FanoutDropReason = 'queue_full' | 'link_down';

export interface FanoutHooks {
  /** writes what a runner holds now, if it is idle */
  pump(r: SinkRunner): void;
  /** an entry a full sink could not take (`all`) */
  dropped(r: SinkRunner, reason: FanoutDropReason): void;
}

const isLive = (r: SinkRunner) => r.sink.linkUp?.() !== false;
/** `buffer_size` or `buffer_max_bytes` (queue and unacknowledged together) reached */
const isFull = (r: SinkRunner) => r.queue.full;
const isBelowHalf = (r: SinkRunner) => r.queue.belowHalf;

/** An item's `paths` bit of the i-th sink; sinks past the 31st share no bit (failover may repeat to them). */
const bit = (i: number): number => (i < 31 ? 1 << i : 0);
/** The `paths` bit of `r`, the i-th runner of this fan-out: bits name sinks of the whole pipeline. */
const bitOf = (r: SinkRunner, i: number): number => bit(r.slot ?? i);

function push(r: SinkRunner, item: SinkItem): void {
  if (item.ticket) item.ticket.pending++;
  r.queue.push(item);
}

export function createFanout(mode: FanoutMode, runners: readonly SinkRunner[], hooks: FanoutHooks): Fanout {
  if (mode === 'any') return anyFanout(runners, hooks);
  if (mode === 'balance') return balanceFanout(runners, hooks);
  return allFanout(runners, hooks);
}

/** The sinks that count for room (`any`, `balance`): the live ones, or all while none is live (still dialing). */
function poolOf(runners: readonly SinkRunner[]): readonly SinkRunner[] {
  const live = runners.filter(isLive);
  return live.length > 0 ? live : runners;
}

const leastLoaded = (among: readonly SinkRunner[]): SinkRunner => among.reduce((a, b) => (b.queue.length < a.queue.length ? b : a));

/**
 * Whether a full queue of `r` pauses the sources (DESIGN.md §25): `block` always; `auto` unless its
 * link is down while another sink of the pipeline is live; `drop` never.
 */
function blocksWhenFull(r: SinkRunner, runners: readonly SinkRunner[]): boolean {
  const mode = r.sink.onFull;
  if (mode !== 'auto') return mode === 'block';
  if (r.sink.linkDown?.() !== true) return true;
  for (const other of runners) if (other !== r && isLive(other) && other.sink.linkDown?.() !== true) return false;
  return true;
}

function allFanout(runners: readonly SinkRunner[], hooks: FanoutHooks): Fanout {
  const mayDrop = runners.some((r) => r.sink.onFull !== 'block');
  return {
    offer(item) {
      for (const r of runners) {
        if (mayDrop && isFull(r) && !blocksWhenFull(r, runners)) {
          // a batch bigger than the queue must not be dropped for a sink that is idle and could take it now
          if (!r.busy) hooks.pump(r);
          if (isFull(r)) {
            hooks.dropped(r, r.sink.onFull === 'auto' ? 'link_down' : 'queue_full');
            continue;
          }
        }
        push(r, item);
      }
    },
    full: () => runners.some((r) => isFull(r) && blocksWhenFull(r, runners)),
    belowHalf: () => runners.every((r) => isBelowHalf(r) || !blocksWhenFull(r, runners)),
    failover: () => false,
  };
}

function anyFanout(runners: readonly SinkRunner[], hooks: FanoutHooks): Fanout {
  const took: boolean[] = runners.map(() => false);
  for (const r of runners) {
    // a route's fan-out is made when the route is first taken: counts kept
    r.counters.skipped ??= 0;
    r.counters.failed_over ??= 0;
  }
  return {
    offer(item) {
      took.fill(false);
      let any = false;
      for (let i = 0; i < runners.length; i++) {
        const r = runners[i]!;
        if (isFull(r) && !r.busy) hooks.pump(r);
        if (isLive(r) && !isFull(r)) any = took[i] = true;
      }
      if (!any) {
        // no live path has room: a path still dialing may take it
        for (let i = 0; i < runners.length; i++) if (!isFull(runners[i]!)) any = took[i] = true;
      }
      // else the least loaded does (push never refuses; the pipeline pauses its sources at once)
      if (!any) took[runners.indexOf(leastLoaded(poolOf(runners)))] = true;
      for (let i = 0; i < runners.length; i++) {
        if (took[i]) {
          push(runners[i]!, item);
          item.paths |= bitOf(runners[i]!, i);
        } else runners[i]!.counters.skipped!++;
      }
    },
    full: () => poolOf(runners).every(isFull),
    belowHalf: () => poolOf(runners).some(isBelowHalf),
    failover: (from, items) => failOver(runners, hooks, from, items),
  };
}

/**
 * `balance` (DESIGN.md §25): each entry goes to one sink, the next live one with room in round
 * robin; while none is live, the next with room (a path still dialing); when every one is full,
 * the least loaded (the pipeline pauses its sources at once). A broken link's entries fail over
 * as with `any`, so a dedup collector sees only the few sent twice by a failover.
 */
function balanceFanout(runners: readonly SinkRunner[], hooks: FanoutHooks): Fanout {
  let next = 0;
  for (const r of runners) r.counters.failed_over ??= 0;
  /** the index of the next runner in the rotation from `next` on that `fits`; -1 when none does */
  const nextThat = (fits: (r: SinkRunner) => boolean): number => {
    const n = runners.length;
    for (let k = 0; k < n; k++) {
      const i = (next + k) % n;
      if (fits(runners[i]!)) return i;
    }
    return -1;
  };
  const hasRoom = (r: SinkRunner) => {
    if (isFull(r) && !r.busy) hooks.pump(r);
    return !isFull(r);
  };
  const liveWithRoom = (r: SinkRunner) => isLive(r) && hasRoom(r);
  return {
    offer(item) {
      let i = nextThat(liveWithRoom);
      if (i < 0 && !runners.some(isLive)) i = nextThat(hasRoom);
      if (i < 0) i = runners.indexOf(leastLoaded(poolOf(runners)));
      next = (i + 1) % runners.length;
      push(runners[i]!, item);
      item.paths |= bitOf(runners[i]!, i);
    },
    full: () => poolOf(runners).every(isFull),
    belowHalf: () => poolOf(runners).some(isBelowHalf),
    failover: (from, items) => failOver(runners, hooks, from, items),
  };
}

/**
 * `any` and `balance`: moves a broken link's unacknowledged `items` and its queue to the live
 * sinks that do not hold them yet; false when no other sink is live.
 */
function failOver(runners: readonly SinkRunner[], hooks: FanoutHooks, from: SinkRunner, items: readonly SinkItem[]): boolean {
  const live = runners.filter((r) => r !== from && isLive(r));
  if (live.length === 0) return false;
  const queued = from.queue.take(from.queue.length);
  let moved = 0;
  /** the least loaded live path that does not hold or has not delivered `item`; -1 when all do */
  const newPath = (item: SinkItem): number => {
    let best = -1;
    for (const r of live) {
      const i = runners.indexOf(r);
      if ((item.paths & bitOf(r, i)) !== 0) continue;
      if (best < 0 || r.queue.length < runners[best]!.queue.length) best = i;
    }
    return best;
  };
  for (const item of items) {
    const i = newPath(item);
    if (i >= 0) {
      // the new path owes a delivery before the broken one's share is let go
      push(runners[i]!, item);
      item.paths |= bitOf(runners[i]!, i);
      moved++;
    }
    // else another path holds it or delivered it already: offering it again would send it twice
    settle(item.ticket);
  }
  for (const item of queued) {
    const i = newPath(item);
    if (i < 0) {
      settle(item.ticket);
      continue;
    }
    // a queued item carries the broken path's share over unchanged
    runners[i]!.queue.push(item);
    item.paths |= bitOf(runners[i]!, i);
    moved++;
  }
  from.counters.failed_over! += moved;
  for (const r of live) hooks.pump(r);
  return true;
}

/**
 * `items` (stable) with the items the same sinks took next to each other: under `balance`, which
 * hands consecutive entries to different sinks, each sink's frames are then written one after
 * another and its batch goes out as one run of bytes (one socket write), not one write per entry.
 */
export function bySinks<T extends SinkItem>(items: T[]): T[] {
  const first = items[0]!.paths;
  let i = 1;
  while (i < items.length && items[i]!.paths === first) i++;
  if (i === items.length) return items;
  const keys: number[] = [];
  for (const item of items) if (!keys.includes(item.paths)) keys.push(item.paths);
  const out: T[] = [];
  for (const key of keys) for (const item of items) if (item.paths === key) out.push(item);
  return out;
}
