// One pipeline: sources → flow → per-sink bounded queues → sinks. Built once per worker.
// The per-entry path is synchronous: sources emit batches, sinks take batches. The fan-out policy
// lives in fanout.ts, acknowledgement tickets in acks.ts; this file assembles them into one object.

import type { PipelineConfig } from '../config/schema.js';
import { encodeAhead, type FramedItem, framedItem, PROTOCOL_V2, releaseEntries } from '../core/entry-frame.js';
import { settle, settleAll, type Ticket } from '../core/ack.js';
import type { Counters, PipelineCounters } from '../core/counters.js';
import type { Entry } from '../core/entry.js';
import type { PassedItem } from '../core/frame-pass.js';
import type { FrameCarrier } from '../core/source.js';
import { errorMessage, errorMessages } from '../core/errors.js';
import type { NodeReport } from '../core/node-report.js';
import { BoundedQueue } from '../core/queue.js';
import { itemBytes } from '../core/sink-item.js';
import { IdSequence } from '../core/ids.js';
import type { DedupWindow } from '../flow/dedup.js';
import { createFlow, type Flow } from '../flow/index.js';
import type { PipelinePositions } from '../ipc/messages.js';
import type { DeadLetterItem, Sink, SinkItem } from '../sinks/types.js';
import type { Source } from '../sources/types.js';
import { type BatchIds, DoneIds, openTicket, packBatchIds } from './acks.js';
import { deadLetterItems } from './dead-letters.js';
import { allIdle, bySinks, type Fanout, type SinkRunner, wireVersions } from './fanout.js';
import { BuildError, type BuildOptions, type Pipeline } from './pipeline-api.js';
import { carried } from './optimizer.js';
import { loadPlugins, type Plugins } from './plugins.js';
import { createRoutedFanout, transformCounters } from './routes.js';
import { hasRoutes } from '../transform/has-routes.js';
import { loadTransformCode, type TransformCode } from './transform-code.js';

/** While the sources are paused, how often the pipeline looks again at which full sinks block, ms. */
const SATURATION_RECHECK_MS = 200;


/** Most entries handed to one sink write. */
const MAX_BATCH = 1024;

/**
 * A pipeline as one object whose steps are named methods (a profile names them): emitBatch (a
 * source's batch through the flow into the sink queues), pump (a sink queue into its sink),
 * failover (`fanout = "any"`), updateSaturation (pausing and resuming the sources).
 */
class AssembledPipeline implements Pipeline {
  readonly name: string;
  readonly sources: Source[] = [];
  readonly sinks: readonly Sink[];
  /** every fault found while building */
  readonly errors: string[] = [];
  private readonly flow: Flow | undefined;
  private readonly runners: SinkRunner[] = [];
  private readonly fanout: Fanout;
  private readonly pipelineCounters: { total_dropped_by_sink: number; unrouted?: number } = { total_dropped_by_sink: 0 };
  private readonly journal: DoneIds | undefined;
  /** a sink sends chain lines: the pipeline writes them ahead (see emitBatch) */
  private readonly wireAhead: boolean;
  /** every sink needs no more of an item than its version 2 frame, and none has a dead letter sink: entries are let go once framed */
  private readonly framesSuffice: boolean;
  /** chain sources may carry received version 2 frames on undecoded (FrameCarrier): see carrier() */
  private readonly carriesFrames: boolean;
  private saturated = false;
  private paused = false;
  private stopping = false;
  private pumpScheduled = false;
  private idleWaiter: (() => void) | undefined;
  private stopped: Promise<number> | undefined;
  /** while saturated: the timer that looks again at who blocks */
  private recheck: NodeJS.Timeout | undefined;
  private readonly recheckLater = () => this.updateSaturation();
  /** pumpAll, bound once: scheduled after every emitted batch */
  private readonly pumpAllLater = () => this.pumpAll();

  constructor(
    private readonly cfg: PipelineConfig,
    private readonly opts: BuildOptions,
    private readonly plugins: Plugins,
    code: TransformCode | undefined,
  ) {
    this.name = cfg.name;
    try {
      this.flow = createFlow(cfg.flow, opts.debug ? opts.log.child({ pipeline: cfg.name }) : undefined, { pipeline: cfg.name, at: 'flow', log: opts.log, compileTransforms: code?.compileTransforms });
    } catch (err) {
      this.errors.push(...errorMessages(err));
    }
    this.journal = this.flow?.dedup ? new DoneIds(cfg.flow.dedup!.window_entries) : undefined;
    this.buildSinks();
    this.fanout = createRoutedFanout(cfg.fanout ?? 'all', this.runners, cfg.plugin_sinks, {
      pump: (r) => this.pump(r),
      dropped: (r, reason) => {
        this.pipelineCounters.total_dropped_by_sink++;
        if (reason === 'link_down') r.counters.dropped_link_down!++;
        else r.counters.dropped_queue_full!++;
      },
    }, { counters: this.pipelineCounters }, code);
    this.wireAhead = this.runners.some((r) => r.sink.sendsWire);
    this.framesSuffice = this.runners.length > 0 && this.runners.every((r) => r.sink.framesSuffice === true) && cfg.plugin_sinks.every((s) => s.dead_letter === undefined);
    this.carriesFrames = this.framesSuffice && this.runners.every((r) => r.sink.sendsWire === true) && !hasRoutes(cfg.plugin_sinks) && this.flow?.carriesFrames === true;
    this.buildSources();
    this.sinks = this.runners.map((r) => r.sink);
  }

  private buildSinks(): void {
    const { cfg, opts } = this;
    for (const plugin of cfg.plugin_sinks) {
      const loaded = this.plugins.sinks.get(plugin.type)!;
      if ('fault' in loaded) {
        this.errors.push(`failed to create sink ${plugin.id}: type: ${loaded.fault}`);
        continue;
      }
      const factory = loaded.factory;
      try {
        const log = opts.log.child({ pipeline: cfg.name, plugin: plugin.id });
        const ref: { sink?: Sink } = {};
        const deadLetterId = plugin.dead_letter;
        const sink = factory(plugin, {
          pipeline: cfg.name,
          log,
          checkOnly: opts.checkOnly,
          node: opts.node,
          reports: opts.reports ?? false,
          failover: cfg.fanout === 'any' || cfg.fanout === 'balance' ? (items) => !!ref.sink && this.failover(ref.sink, items) : undefined,
          ...(deadLetterId === undefined ? {} : { deadLetter: (items, reason, status) => this.deadLetter(plugin.id, deadLetterId, items, reason, status) }),
        });
        ref.sink = sink;
        const counters: Counters = { total_processed: 0, dropped_queue_full: 0, dropped_link_down: 0, abandoned: 0 };
        if (deadLetterId !== undefined) counters.dead_lettered = 0;
        this.runners.push({ sink, queue: new BoundedQueue<SinkItem>(sink.bufferSize, sink.bufferMaxBytes, itemBytes, sink.heldBytes ? () => sink.heldBytes!() : undefined), counters, busy: false, slot: this.runners.length });
        if (!opts.checkOnly) opts.log.info({ pipeline: cfg.name, plugin: plugin.id, type: plugin.type }, 'Created sink instance');
      } catch (err) {
        this.errors.push(...errorMessages(err));
      }
    }
  }

  private buildSources(): void {
    const { cfg, opts } = this;
    // ids are stamped once, before the fan-out, when an entry may leave this node (DESIGN.md §14)
    const idNode = this.runners.some((r) => r.sink.carriesIds) ? opts.node : undefined;
    // a disk buffer hands on no more entries at once than the smallest sink queue holds
    const bufferWindow = this.runners.length > 0 ? Math.min(...this.runners.map((r) => r.sink.bufferSize)) : 1000;
    for (const plugin of cfg.plugin_sources) {
      const loaded = this.plugins.sources.get(plugin.type)!;
      if ('fault' in loaded) {
        this.errors.push(`failed to create source ${plugin.id}: type: ${loaded.fault}`);
        continue;
      }
      const factory = loaded.factory;
      try {
        const log = opts.log.child({ pipeline: cfg.name, plugin: plugin.id });
        // The factory gets emit() before the source exists; the ref closes that loop.
        const ref: { source?: Source } = {};
        const ids = idNode === undefined ? undefined : new IdSequence(idNode, cfg.name, plugin.id);
        const emit = (entries: Entry[], done?: () => void) => {
          if (ref.source) this.emitBatch(ref.source, ids, entries, done);
        };
        const duplicate = this.flow?.dedup ? this.flow.seen : undefined;
        const frames = this.carriesFrames ? this.carrier(ref, ids) : undefined;
        const ctx = { pipeline: cfg.name, log, checkOnly: opts.checkOnly, emit, isSaturated: () => this.saturated, idNode, node: opts.node, duplicate, report: opts.onReport, frames };
        // a source with a disk buffer (DESIGN.md §23) is wrapped: its entries go through the buffer
        const source = this.plugins.withBuffer?.(factory, plugin, ctx, { dataDir: opts.dataDir ?? '', node: opts.node, window: bufferWindow }) ?? factory(plugin, ctx);
        ref.source = source;
        this.sources.push(source);
        if (!opts.checkOnly) opts.log.info({ pipeline: cfg.name, plugin: plugin.id, type: plugin.type }, 'Created source instance');
      } catch (err) {
        this.errors.push(...errorMessages(err));
      }
    }
  }

  /**
   * What a source of this pipeline gets to carry version 2 frames on (a relay: every sink a chain
   * sink, nothing in the flow that reads an entry): frames are carried while every sink sends
   * version 2, with the source's own id sequence for a frame without an id.
   */
  private carrier(ref: { source?: Source }, ids: IdSequence | undefined): FrameCarrier {
    return {
      active: () => wireVersions(this.runners) === 1 << PROTOCOL_V2,
      nextId: ids ? () => ids.next() : undefined,
      emit: (items, done) => {
        if (ref.source) this.emitFrames(ref.source, items, done);
      },
    };
  }

  private updateSaturation(): void {
    if (!this.saturated && this.fanout.full()) {
      this.saturated = true;
      // a link that goes down (or comes back) changes who blocks (`on_full = "auto"`, DESIGN.md
      // §25) without a queue moving: while paused, look again a few times a second
      if (!this.stopping && !this.recheck) {
        this.recheck = setInterval(this.recheckLater, SATURATION_RECHECK_MS);
        this.recheck.unref();
      }
      if (!this.paused) {
        this.paused = true;
        for (const s of this.sources) s.pause?.();
      }
    } else if (this.saturated && this.fanout.belowHalf()) {
      this.saturated = false;
      clearInterval(this.recheck);
      this.recheck = undefined;
      if (this.paused && !this.stopping) {
        this.paused = false;
        for (const s of this.sources) s.resume?.();
      }
    }
  }

  /** Hands the runner's queue to its sink, a batch at a time, while the sink takes them. */
  private pump(r: SinkRunner): void {
    while (!r.busy && r.queue.length > 0) {
      const batch = r.queue.take(MAX_BATCH);
      let result: Promise<void> | void;
      // Sinks count their own failures; one that throws anyway loses the batch, counted here
      // (dropped with a count: its entries are settled).
      const lost = (err: unknown) => {
        r.counters.total_processed! -= batch.length;
        this.pipelineCounters.total_dropped_by_sink += batch.length;
        this.opts.log.error({ pipeline: this.cfg.name, plugin: r.sink.id, error: errorMessage(err), entries: batch.length }, 'Sink write failed');
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
            this.pump(r);
          },
          (err: unknown) => {
            lost(err);
            if (!r.sink.settles) settleAll(batch);
            r.busy = false;
            this.pump(r);
          },
        );
      } else if (!r.sink.settles) settleAll(batch);
    }
    if (this.saturated) this.updateSaturation();
    if (this.idleWaiter && allIdle(this.runners)) {
      const w = this.idleWaiter;
      this.idleWaiter = undefined;
      w();
    }
  }

  private pumpAll(): void {
    this.pumpScheduled = false;
    for (const r of this.runners) this.pump(r);
  }

  /** While the sinks are saturated, a batch of a source that cannot pause is dropped with a count (and done): true when it was. */
  private refused(source: Source, count: number, done: (() => void) | undefined): boolean {
    if (!this.saturated || source.pausable) return false;
    source.counters.dropped_entries! += count;
    done?.();
    return true;
  }

  /** A source's batch: ids stamped, through the flow, offered to the sinks' queues; pumped soon after. */
  private emitBatch(source: Source, ids: IdSequence | undefined, entries: Entry[], done?: () => void): void {
    carried(entries.length);
    if (this.refused(source, entries.length, done)) return;
    const flow = this.flow;
    if (!flow) return;
    const passed: BatchIds = { ids: [] };
    const ticket = openTicket(done, this.journal, passed);
    const now = Date.now();
    const offered: FramedItem[] = [];
    for (const entry of entries) {
      if (ids && entry.id === undefined) entry.id = ids.next();
      const line = flow.process(entry, now);
      if (line === undefined) continue;
      // an entry without an id passed the window unseen: nothing to hand on
      if (this.journal && entry.id !== undefined) passed.ids.push(entry.id);
      if (this.wireAhead) {
        const item = framedItem(entry, line, ticket);
        offered.push(item);
        this.fanout.offer(item);
      } else this.fanout.offer({ entry, line, ticket, paths: 0 });
    }
    // Chain lines are written now, while the link may still wait for acknowledgements, so that
    // when its window opens the sink only sends (a hop's window is small: 1,000 entries by default)
    if (offered.length > 0) {
      const versions = wireVersions(this.runners);
      encodeAhead(bySinks(offered), versions, now, this.cfg.name);
      // held as frames alone until acknowledged (routes took their look in the fan-out above)
      if (this.framesSuffice && versions === 1 << PROTOCOL_V2) releaseEntries(offered);
    }
    if (this.journal) packBatchIds(this.journal, passed);
    settle(ticket);
    this.updateSaturation();
    this.pumpSoon(source);
  }

  /**
   * A chain source's batch of frames carried on (FrameCarrier): through the flow's count and dedup
   * (the entries' ids were stamped by passFrame), offered to the sinks' queues as they are. The
   * frames are written and the entries let go already, as emitBatch leaves them for such a pipeline.
   */
  private emitFrames(source: Source, items: PassedItem[], done?: () => void): void {
    carried(items.length);
    if (this.refused(source, items.length, done)) return;
    const flow = this.flow;
    if (!flow) return;
    const passed: BatchIds = { ids: [] };
    const ticket = openTicket(done, this.journal, passed);
    const now = Date.now();
    for (const item of items) {
      if (!flow.pass(item.id, now)) continue;
      if (this.journal && item.id !== undefined) passed.ids.push(item.id);
      (item as { ticket?: Ticket }).ticket = ticket;
      this.fanout.offer(item);
    }
    if (this.journal) packBatchIds(this.journal, passed);
    settle(ticket);
    this.updateSaturation();
    this.pumpSoon(source);
  }

  private pumpSoon(source: Source): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    // A sender waiting on this source's acknowledgements gets its entries pumped right after
    // the source's callback (its window waits on it); a file source's next read is already
    // under way meanwhile, so its pump waits a loop turn and overlaps that read.
    if (source.acksUpstream) queueMicrotask(this.pumpAllLater);
    else setImmediate(this.pumpAllLater);
  }

  /**
   * Entries sink `from` gives up on go to its dead letter sink `to` (DESIGN.md §24; dead-letters.ts
   * makes them); the queue takes them past its bound rather than lose one.
   */
  private deadLetter(from: string, to: string, items: readonly DeadLetterItem[], reason: string, status?: number): void {
    const source = this.runners.find((r) => r.sink.id === from);
    const target = this.runners.find((r) => r.sink.id === to);
    if (!source || !target || !this.flow) return;
    const letters = deadLetterItems(items, status === undefined ? { from, reason } : { from, reason, status }, target.sink, this.flow.format, this.cfg.name);
    for (const item of letters) target.queue.push(item);
    source.counters.dead_lettered = (source.counters.dead_lettered ?? 0) + letters.length;
    this.pump(target);
  }

  /** `fanout = "any"` or `"balance"`: a sink whose link broke hands over what it holds */
  private failover(sink: Sink, items: SinkItem[]): boolean {
    const r = this.runners.find((x) => x.sink === sink);
    if (!r || this.stopping) return false;
    return this.fanout.failover(r, items);
  }

  async open(): Promise<void> {
    for (const sink of this.sinks) await sink.open?.();
    for (const source of this.sources) await source.open?.();
  }

  start(positions: PipelinePositions, since: Readonly<Record<string, number>>, dedup?: DedupWindow): void {
    if (dedup) this.flow?.dedup?.load(dedup);
    const now = Date.now();
    for (const source of this.sources) source.start(positions[source.id] ?? {}, since[source.id] ?? now);
  }

  stop(timeoutMs: number): Promise<number> {
    this.stopped ??= this.drainAndClose(timeoutMs);
    return this.stopped;
  }

  private async drainAndClose(timeoutMs: number): Promise<number> {
    this.stopping = true;
    clearInterval(this.recheck);
    this.recheck = undefined;
    const deadline = Date.now() + timeoutMs;
    await Promise.all(this.sources.map((s) => s.stop(deadline).catch(() => undefined)));
    this.pumpAll();
    if (!allIdle(this.runners)) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => {
          this.idleWaiter = resolve;
        }),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
        }),
      ]);
      clearTimeout(timer);
    }
    await Promise.all(this.sinks.map((s) => s.close(deadline).catch(() => undefined)));
    let abandoned = 0;
    // what a disk buffer still holds is sent again after the next start (DESIGN.md §23)
    const kept = this.sources.reduce((n, s) => n + (s.kept?.() ?? 0), 0);
    for (const r of this.runners) {
      const left = r.queue.clear() + (r.sink.held?.() ?? 0);
      r.counters.abandoned = left - Math.min(left, kept);
      abandoned += r.counters.abandoned;
    }
    return abandoned;
  }

  counters(): PipelineCounters {
    const flow = this.flow!;
    const out: PipelineCounters = {
      total_dropped_by_sink: this.pipelineCounters.total_dropped_by_sink,
      ...(this.pipelineCounters.unrouted === undefined ? {} : { unrouted: this.pipelineCounters.unrouted }),
      flow: { ...flow.counters },
      sources: {},
      sinks: {},
    };
    if (flow.rateLimiter) out.rate_limit = { ...flow.rateLimiter.counters };
    if (flow.transforms) out.transforms = transformCounters(flow.transforms);
    for (const s of this.sources) out.sources[s.id] = { ...s.counters };
    for (const r of this.runners) out.sinks[r.sink.id] = { ...r.sink.counters, ...r.counters };
    return out;
  }

  doneIds(): DedupWindow | undefined {
    return this.journal?.take();
  }

  checkpointed(positions: PipelinePositions): void {
    for (const s of this.sources) s.checkpointed?.(positions[s.id] ?? {});
  }

  report(reports: readonly NodeReport[]): void {
    if (this.stopping) return;
    for (const sink of this.sinks) sink.report?.(reports);
  }

  positions(): PipelinePositions {
    const out: PipelinePositions = {};
    for (const s of this.sources) {
      const p = s.positions?.();
      if (p) out[s.id] = p;
    }
    return out;
  }
}

/** Loads the code of the pipeline's own plugin types (and no other), then builds it; every fault found is in the BuildError. */
export async function buildPipeline(cfg: PipelineConfig, opts: BuildOptions): Promise<Pipeline> {
  const pipeline = new AssembledPipeline(cfg, opts, await loadPlugins(cfg), await loadTransformCode(cfg));
  if (pipeline.errors.length > 0) throw new BuildError(pipeline.errors);
  return pipeline;
}
