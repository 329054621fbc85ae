// One pipeline: sources → flow → per-sink bounded queues → sinks. Built once per worker.
// The per-entry path is synchronous: sources emit batches, sinks take batches. The fan-out policy
// lives in fanout.ts, acknowledgement tickets in acks.ts; this file assembles them.

import { withBuffer } from '../buffer/source.js';
import type { PipelineConfig } from '../config/schema.js';
import { encodeWire } from '../chain/wire.js';
import { settle, settleAll } from '../core/ack.js';
import type { PipelineCounters } from '../core/counters.js';
import type { Entry } from '../core/entry.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { BoundedQueue } from '../core/queue.js';
import { IdSequence } from '../core/ids.js';
import type { DedupWindow } from '../flow/dedup.js';
import { createFlow, type Flow } from '../flow/index.js';
import type { PipelinePositions } from '../ipc/messages.js';
import { sinkFactory, SINKS } from '../sinks/index.js';
import type { Sink, SinkItem } from '../sinks/types.js';
import { sourceFactory, SOURCES } from '../sources/index.js';
import type { Source } from '../sources/types.js';
import { DoneIds, openTicket } from './acks.js';
import { createFanout, type Fanout, type SinkRunner } from './fanout.js';

/** The types a registry knows, for the message that refuses an unknown one. */
const validTypes = (registry: object): string => Object.keys(registry).sort().join(', ');

/** Most entries handed to one sink write. */
const MAX_BATCH = 1024;

/** Every fault found while building, each as `failed to create …` or a flow key path. */
export class BuildError extends Error {
  constructor(readonly errors: readonly string[]) {
    super(errors.join('; '));
    this.name = 'BuildError';
  }
}

export interface BuildOptions {
  readonly log: Logger;
  readonly checkOnly: boolean;
  /** level is debug: the filter stage logs its per-entry lines */
  readonly debug: boolean;
  /** `node_name`: part of entry ids, the default `node` of chain sinks */
  readonly node: string;
  /** `data_dir`, where disk buffers live (DESIGN.md §23); empty or absent: none */
  readonly dataDir?: string;
}

export interface Pipeline {
  readonly name: string;
  readonly sources: readonly Source[];
  readonly sinks: readonly Sink[];
  /** Build step: bind listeners, open files. */
  open(): Promise<void>;
  /** `since`: per source id, when its run began (see the `start` message) */
  start(positions: PipelinePositions, since: Readonly<Record<string, number>>, dedup?: DedupWindow): void;
  /** Sources stop, queues drain, sinks close, all within `timeoutMs`; returns the entries abandoned. */
  stop(timeoutMs: number): Promise<number>;
  counters(): PipelineCounters;
  positions(): PipelinePositions;
  /** dedup ids whose entries are done since the last call (for the primary's copy of the window) */
  doneIds(): DedupWindow | undefined;
  /** The checkpoint saved these positions (disk buffers delete the segments they passed). */
  checkpointed(positions: PipelinePositions): void;
}

export function buildPipeline(cfg: PipelineConfig, opts: BuildOptions): Pipeline {
  const errors: string[] = [];
  let flow: Flow | undefined;
  try {
    flow = createFlow(cfg.flow, opts.debug ? opts.log.child({ pipeline: cfg.name }) : undefined);
  } catch (err) {
    errors.push(errorMessage(err));
  }
  const pipelineCounters = { total_dropped_by_sink: 0 };
  const runners: SinkRunner[] = [];
  const sources: Source[] = [];
  const journal = flow?.dedup ? new DoneIds(cfg.flow.dedup!.window_entries) : undefined;
  let saturated = false;
  let paused = false;
  let stopping = false;
  let idleWaiter: (() => void) | undefined;

  const allIdle = () => runners.every((r) => !r.busy && r.queue.length === 0);

  const updateSaturation = () => {
    if (!saturated && fanout.full()) {
      saturated = true;
      if (!paused) {
        paused = true;
        for (const s of sources) s.pause?.();
      }
    } else if (saturated && fanout.belowHalf()) {
      saturated = false;
      if (paused && !stopping) {
        paused = false;
        for (const s of sources) s.resume?.();
      }
    }
  };

  const pump = (r: SinkRunner): void => {
    while (!r.busy && r.queue.length > 0) {
      const batch = r.queue.take(MAX_BATCH);
      let result: Promise<void> | void;
      // Sinks count their own failures; one that throws anyway loses the batch, counted here
      // (dropped with a count: its entries are settled).
      const lost = (err: unknown) => {
        r.counters.total_processed! -= batch.length;
        pipelineCounters.total_dropped_by_sink += batch.length;
        opts.log.error({ pipeline: cfg.name, plugin: r.sink.id, error: errorMessage(err), entries: batch.length }, 'Sink write failed');
        if (r.sink.settles) settleAll(batch);
      };
      r.counters.total_processed! += batch.length;
      try {
        result = r.sink.write(batch);
      } catch (err) {
        lost(err);
        result = undefined;
      }
      if (result) {
        r.busy = true;
        result.then(
          () => {
            if (!r.sink.settles) settleAll(batch);
            r.busy = false;
            pump(r);
          },
          (err: unknown) => {
            lost(err);
            if (!r.sink.settles) settleAll(batch);
            r.busy = false;
            pump(r);
          },
        );
      } else if (!r.sink.settles) settleAll(batch);
    }
    if (saturated) updateSaturation();
    if (idleWaiter && allIdle()) {
      const w = idleWaiter;
      idleWaiter = undefined;
      w();
    }
  };

  let pumpScheduled = false;
  const pumpAll = () => {
    pumpScheduled = false;
    for (const r of runners) pump(r);
  };

  const emitBatch = (source: Source, ids: IdSequence | undefined, entries: Entry[], done?: () => void) => {
    if (saturated && !source.pausable) {
      source.counters.dropped_entries! += entries.length;
      done?.();
      return;
    }
    if (!flow) return;
    const passed: string[] = [];
    const ticket = openTicket(done, journal, passed);
    const now = Date.now();
    const offered: SinkItem[] = [];
    for (const entry of entries) {
      if (ids && entry.id === undefined) entry.id = ids.next();
      const line = flow.process(entry, now);
      if (line === undefined) continue;
      // an entry without an id passed the window unseen: nothing to hand on
      if (journal && entry.id !== undefined) passed.push(entry.id);
      const item: SinkItem = { entry, line, ticket, wireBuf: undefined, wireAt: 0, wireEnd: 0, wireCompleted: false };
      if (wireAhead) offered.push(item);
      fanout.offer(item);
    }
    // Chain lines are written now, while the link may still wait for acknowledgements, so that
    // when its window opens the sink only sends (a hop's window is small: 1,000 entries by default)
    if (offered.length > 0) encodeWire(offered, 0, offered.length, now, cfg.name);
    settle(ticket);
    updateSaturation();
    if (!pumpScheduled) {
      pumpScheduled = true;
      // A sender waiting on this source's acknowledgements gets its entries pumped right after
      // the source's callback (its window waits on it); a file source's next read is already
      // under way meanwhile, so its pump waits a loop turn and overlaps that read.
      if (source.acksUpstream) queueMicrotask(pumpAll);
      else setImmediate(pumpAll);
    }
  };

  /** `fanout = "any"`: a sink whose link broke hands over what it holds */
  const failover = (sink: Sink, items: SinkItem[]) => {
    const r = runners.find((x) => x.sink === sink);
    if (!r || stopping) return false;
    return fanout.failover(r, items);
  };

  for (const plugin of cfg.plugin_sinks) {
    const factory = sinkFactory(plugin.type);
    if (!factory) {
      errors.push(`failed to create sink ${plugin.id}: type: unknown sink type ${JSON.stringify(plugin.type)} (valid types: ${validTypes(SINKS)})`);
      continue;
    }
    try {
      const log = opts.log.child({ pipeline: cfg.name, plugin: plugin.id });
      const ref: { sink?: Sink } = {};
      const sink = factory(plugin, {
        pipeline: cfg.name,
        log,
        checkOnly: opts.checkOnly,
        node: opts.node,
        failover: cfg.fanout === 'any' ? (items) => !!ref.sink && failover(ref.sink, items) : undefined,
      });
      ref.sink = sink;
      runners.push({ sink, queue: new BoundedQueue(sink.bufferSize), counters: { total_processed: 0, dropped_queue_full: 0, abandoned: 0 }, busy: false });
      if (!opts.checkOnly) opts.log.info({ pipeline: cfg.name, plugin: plugin.id, type: plugin.type }, 'Created sink instance');
    } catch (err) {
      errors.push(errorMessage(err));
    }
  }
  const fanout: Fanout = createFanout(cfg.fanout ?? 'all', runners, {
    pump,
    dropped: (r) => {
      pipelineCounters.total_dropped_by_sink++;
      r.counters.dropped_queue_full!++;
    },
  });
  const wireAhead = runners.some((r) => r.sink.sendsWire);
  // ids are stamped once, before the fan-out, when an entry may leave this node (DESIGN.md §14)
  const idNode = runners.some((r) => r.sink.carriesIds) ? opts.node : undefined;
  // a disk buffer hands on no more entries at once than the smallest sink queue holds
  const bufferWindow = runners.length > 0 ? Math.min(...runners.map((r) => r.sink.bufferSize)) : 1000;
  for (const plugin of cfg.plugin_sources) {
    const factory = sourceFactory(plugin.type);
    if (!factory) {
      errors.push(`failed to create source ${plugin.id}: type: unknown source type ${JSON.stringify(plugin.type)} (valid types: ${validTypes(SOURCES)})`);
      continue;
    }
    try {
      const log = opts.log.child({ pipeline: cfg.name, plugin: plugin.id });
      // The factory gets emit() before the source exists; the ref closes that loop.
      const ref: { source?: Source } = {};
      const ids = idNode === undefined ? undefined : new IdSequence(idNode, cfg.name, plugin.id);
      const emit = (entries: Entry[], done?: () => void) => {
        if (ref.source) emitBatch(ref.source, ids, entries, done);
      };
      const duplicate = flow?.dedup ? flow.seen : undefined;
      const ctx = { pipeline: cfg.name, log, checkOnly: opts.checkOnly, emit, isSaturated: () => saturated, idNode, duplicate };
      const source = withBuffer(factory, plugin, ctx, { dataDir: opts.dataDir ?? '', node: opts.node, window: bufferWindow });
      ref.source = source;
      sources.push(source);
      if (!opts.checkOnly) opts.log.info({ pipeline: cfg.name, plugin: plugin.id, type: plugin.type }, 'Created source instance');
    } catch (err) {
      errors.push(errorMessage(err));
    }
  }
  if (errors.length > 0) throw new BuildError(errors);

  const sinks = runners.map((r) => r.sink);
  let stopped: Promise<number> | undefined;

  return {
    name: cfg.name,
    sources,
    sinks,
    async open() {
      for (const sink of sinks) await sink.open?.();
      for (const source of sources) await source.open?.();
    },
    start(positions, since, dedup) {
      if (dedup) flow?.dedup?.load(dedup);
      const now = Date.now();
      for (const source of sources) source.start(positions[source.id] ?? {}, since[source.id] ?? now);
    },
    stop(timeoutMs) {
      stopped ??= (async () => {
        stopping = true;
        const deadline = Date.now() + timeoutMs;
        await Promise.all(sources.map((s) => s.stop(deadline).catch(() => undefined)));
        pumpAll();
        if (!allIdle()) {
          let timer: NodeJS.Timeout | undefined;
          await Promise.race([
            new Promise<void>((resolve) => {
              idleWaiter = resolve;
            }),
            new Promise<void>((resolve) => {
              timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
            }),
          ]);
          clearTimeout(timer);
        }
        await Promise.all(sinks.map((s) => s.close(deadline).catch(() => undefined)));
        let abandoned = 0;
        // what a disk buffer still holds is sent again after the next start (DESIGN.md §23)
        const kept = sources.reduce((n, s) => n + (s.kept?.() ?? 0), 0);
        for (const r of runners) {
          const left = r.queue.clear() + (r.sink.held?.() ?? 0);
          r.counters.abandoned = left - Math.min(left, kept);
          abandoned += r.counters.abandoned;
        }
        return abandoned;
      })();
      return stopped;
    },
    counters() {
      const out: PipelineCounters = {
        total_dropped_by_sink: pipelineCounters.total_dropped_by_sink,
        flow: { ...flow!.counters },
        sources: {},
        sinks: {},
      };
      if (flow!.rateLimiter) out.rate_limit = { ...flow!.rateLimiter.counters };
      for (const s of sources) out.sources[s.id] = { ...s.counters };
      for (const r of runners) out.sinks[r.sink.id] = { ...r.sink.counters, ...r.counters };
      return out;
    },
    doneIds: () => journal?.take(),
    checkpointed(positions) {
      for (const s of sources) s.checkpointed?.(positions[s.id] ?? {});
    },
    positions() {
      const out: PipelinePositions = {};
      for (const s of sources) {
        const p = s.positions?.();
        if (p) out[s.id] = p;
      }
      return out;
    },
  };
}
