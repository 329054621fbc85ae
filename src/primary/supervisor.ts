// The supervisor: one cluster worker per pipeline, grouped in generations. Starts, restarts
// crashed pipelines alone (backoff: restarts.ts), reloads new-before-old handing over what the
// old workers leave (carried-state.ts), and shuts down under one deadline. A worker as held
// here is pipeline-worker.ts; the signals that drive all this are run.ts's.
// Entries never pass through here; only orders, counters, positions and log lines do.

import cluster from 'node:cluster';
import { fileURLToPath } from 'node:url';
import type { Config, PipelineConfig } from '../config/schema.js';
import type { PipelineCounters } from '../core/counters.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import type { NodeReport } from '../core/node-report.js';
import { type FromWorker, isFromWorker, type PipelinePositions, type ToWorker, type WorkerGauges } from '../ipc/messages.js';
import { CarriedState } from './carried-state.js';
import type { CheckpointState } from './checkpoint.js';
import { findKeptBuffers } from './kept-buffers.js';
import { awaitBuilt, buildFailure, PipelineBuildError, PipelineWorker } from './pipeline-worker.js';
import { CrashRestarts } from './restarts.js';
import type { ServiceLog } from './service-log.js';
import { workerEnv, workerExecArgv } from './worker-flags.js';

/** How the first generation's start ended: `invalid` exits 78, `unavailable` 69 (DESIGN.md §2). */
export type StartResult = 'started' | 'invalid' | 'unavailable';

/**
 * What `/readyz` says of a pipeline; only `running` is ready. `buffer_error`: running, but a
 * source's disk buffer cannot write (DESIGN.md §23).
 */
export type PipelineState = 'starting' | 'running' | 'reloading' | 'backoff' | 'stopping' | 'buffer_error';

/** A source's disk buffer cannot write (its `buffer_failing` gauge). */
function bufferFailing(counters: PipelineCounters | undefined): boolean {
  if (!counters) return false;
  for (const c of Object.values(counters.sources)) if (c.buffer_failing === 1) return true;
  return false;
}

/** One pipeline as the admin endpoint reads it. */
export interface PipelineView {
  readonly name: string;
  readonly config: PipelineConfig;
  readonly state: PipelineState;
  readonly pid: number | undefined;
  readonly restarts: number;
  /** the latest counters its worker sent; undefined before the first */
  readonly counters: PipelineCounters | undefined;
  readonly gauges: WorkerGauges | undefined;
  readonly positions: PipelinePositions;
  /** per sink id: entries abandoned by this pipeline's stopped workers */
  readonly abandoned: Readonly<Record<string, number>>;
}

export interface SupervisorOptions {
  readonly log: ServiceLog;
  /** Loads the configuration again for a reload (file + env + flags). */
  readonly reloadConfig: () => Config;
  /** Called after a reload put a new configuration in force. */
  readonly onReloaded?: (config: Config) => void;
}

export class Supervisor {
  generation = 0;
  private config: Config;
  private readonly log: Logger;
  /** the current generation, by pipeline name */
  private current = new Map<string, PipelineWorker>();
  private readonly live = new Set<PipelineWorker>();
  /** positions, run starts and dedup windows that outlive a worker (reloads, restarts, checkpoints) */
  private readonly carried = new CarriedState();
  /** the state the checkpoint file holds (loaded at start, then each one written); none without data_dir */
  private saved: CheckpointState | undefined;
  private readonly restarts = new CrashRestarts();
  /** the first generation's start; a reload asked for meanwhile waits for it */
  private starting: Promise<StartResult> | undefined;
  private reloading: Promise<void> | undefined;
  private reloadQueued = false;
  private shuttingDown = false;
  /** the old generation is being stopped for a new one (reload steps 4 and 5) */
  private handingOver = false;
  /** reloads that put a new configuration in force, and ones refused */
  readonly reloads = { ok: 0, failed: 0 };
  /** per pipeline name, per sink id: entries abandoned by stopped workers (§16 reason `abandoned`) */
  private readonly abandoned = new Map<string, Record<string, number>>();
  /** when the node started, epoch ms */
  readonly startedAt = Date.now();
  /** node reports the workers' chain sources received (the fleet view) */
  onReports: ((reports: readonly NodeReport[]) => void) | undefined;
  /** `data_dir` as the node started (read at start only, like the checkpoint's) */
  private readonly dataDir: string;
  /** the data_dir checkpoint's counters, shown with every pipeline's */
  checkpointCounters: { readonly checkpoint_writes: number; readonly checkpoint_errors: number } | undefined;

  constructor(
    config: Config,
    private readonly opts: SupervisorOptions,
  ) {
    this.config = config;
    this.dataDir = config.data_dir;
    this.log = opts.log.logger;
    cluster.setupPrimary({ exec: fileURLToPath(new URL('../worker/boot.js', import.meta.url)), execArgv: workerExecArgv(), silent: false });
  }

  get currentConfig(): Config {
    return this.config;
  }

  /** Process ids of the current generation's workers, by pipeline name. */
  workerPids(): Record<string, number | undefined> {
    const out: Record<string, number | undefined> = {};
    for (const [name, w] of this.current) out[name] = w.pid;
    return out;
  }

  /** `config`: the configuration the worker's generation belongs to (for its `quiet`). */
  private fork(pipeline: PipelineConfig, generation: number, config: Config = this.config): PipelineWorker {
    const worker = cluster.fork(workerEnv());
    const pw = new PipelineWorker(worker, pipeline, generation, this.opts.log.levelFor(config.quiet), config.node_name, this.dataDir, config.report_interval_ms > 0);
    this.live.add(pw);
    worker.on('message', (msg: unknown) => {
      if (isFromWorker(msg)) this.onMessage(pw, msg);
    });
    worker.on('error', () => undefined);
    worker.once('exit', (code: number | null, signal: string | null) => {
      pw.onExit(code, signal);
      this.live.delete(pw);
      this.onExit(pw, code, signal);
    });
    return pw;
  }

  private onMessage(pw: PipelineWorker, msg: FromWorker): void {
    switch (msg.type) {
      case 'ready':
        pw.onReady();
        return;
      case 'log':
        this.opts.log.writeLines(msg.lines);
        return;
      case 'reports':
        this.onReports?.(msg.reports);
        return;
      case 'built':
        pw.onBuilt();
        return;
      case 'build_failed':
        pw.onBuildFailed(msg.error, msg.unavailable);
        return;
      case 'stats':
        pw.counters = msg.counters;
        pw.gauges = msg.gauges;
        if (msg.dedup) this.carried.windowFor(pw.pipeline)?.load(msg.dedup);
        if (pw.state === 'running' && this.current.get(pw.name) === pw) this.carried.setPositions(pw.name, msg.positions);
        return;
      case 'stopped':
        pw.counters = msg.counters;
        this.carryAbandoned(pw.name, msg.counters);
        if (msg.dedup) this.carried.windowFor(pw.pipeline)?.load(msg.dedup);
        pw.onStopped({ abandoned: msg.abandoned, clean: msg.abandoned === 0 });
        if (pw.state !== 'building' && pw.state !== 'built') this.carried.setPositions(pw.name, msg.positions);
        return;
    }
  }

  private onExit(pw: PipelineWorker, code: number | null, signal: string | null): void {
    // A worker that dies built but not yet started is a crash too; startWorker() handles it.
    if (pw.planned || this.shuttingDown || this.current.get(pw.name) !== pw || pw.startedAt === 0) return;
    this.crashed(pw, code, signal, Date.now() - pw.startedAt);
  }

  private crashed(pw: PipelineWorker, code: number | null, signal: string | null, ranMs: number): void {
    this.log.error({ pipeline: pw.name, code: signal ? null : code, signal: signal ?? null }, 'Pipeline process exited unexpectedly');
    this.restarts.count(pw.name);
    this.scheduleRestart(pw.pipeline, ranMs);
  }

  private scheduleRestart(pipeline: PipelineConfig, ranMs: number): void {
    const generation = this.generation;
    this.restarts.schedule(pipeline.name, ranMs, () => {
      if (this.shuttingDown || generation !== this.generation) return;
      void this.restart(pipeline);
    });
  }

  private async restart(pipeline: PipelineConfig): Promise<void> {
    const pw = this.fork(pipeline, this.generation);
    this.current.set(pipeline.name, pw);
    try {
      await awaitBuilt([pw]);
    } catch (err) {
      this.log.error({ pipeline: pipeline.name, error: buildFailure(err) }, 'Failed to create pipeline');
      pw.kill();
      if (!this.shuttingDown && this.current.get(pipeline.name) === pw) this.scheduleRestart(pipeline, 0);
      return;
    }
    if (this.shuttingDown || this.current.get(pipeline.name) !== pw) {
      await pw.stop(0);
      return;
    }
    this.startWorker(pw);
  }

  private startWorker(pw: PipelineWorker): void {
    if (pw.state === 'exited') {
      // It died while waiting for its start (during the old generation's drain, say).
      this.crashed(pw, pw.exit?.code ?? null, pw.exit?.signal ?? null, 0);
      return;
    }
    pw.state = 'running';
    pw.startedAt = Date.now();
    this.log.info({ pipeline: pw.name, generation: pw.generation }, 'Starting pipeline');
    const since = this.carried.runStarts(pw.pipeline, pw.startedAt);
    pw.send({ type: 'start', positions: this.carried.positionsOf(pw.name), since, dedup: this.carried.windowFor(pw.pipeline)?.snapshot() });
    // what the checkpoint on disk holds: a disk buffer deletes the segments it says were delivered
    // at once, not only after the next checkpoint (which waits for a change)
    const saved = this.saved?.pipelines[pw.name];
    if (saved) pw.send({ type: 'checkpointed', positions: saved.positions });
  }

  /** Sends `msg` to every running worker of the current generation. */
  sendToRunning(msg: ToWorker): void {
    for (const w of this.current.values()) if (w.state === 'running') w.send(msg);
  }

  /** Takes over what a checkpoint kept (DESIGN.md §15): positions, run starts, dedup windows. */
  restore(state: CheckpointState): void {
    this.saved = state;
    this.carried.restore(state, this.config.pipelines);
  }

  /** The checkpoint was written with `state`: each running worker learns what it holds of its pipeline. */
  checkpointed(state: CheckpointState): void {
    this.saved = state;
    for (const [name, w] of this.current) {
      const p = state.pipelines[name];
      if (p && w.state === 'running') w.send({ type: 'checkpointed', positions: p.positions });
    }
  }

  /** What a checkpoint keeps, now. */
  checkpointState(): CheckpointState {
    return this.carried.checkpointState();
  }

  /**
   * Starts the first generation. When any pipeline fails to build, logs `Failed to create
   * pipeline` for each failure, stops every worker and resolves `invalid`, or `unavailable` when
   * every failure was a resource the configuration names being unavailable (an address in use).
   */
  start(): Promise<StartResult> {
    this.starting ??= this.startFirst();
    return this.starting;
  }

  private async startFirst(): Promise<StartResult> {
    this.generation = 1;
    const workers = this.config.pipelines.map((p) => this.fork(p, this.generation));
    const results = await Promise.allSettled(workers.map((w) => awaitBuilt([w])));
    // A signal during start: shutdown() is already stopping these workers.
    if (this.shuttingDown) return 'started';
    const failures: unknown[] = [];
    results.forEach((r, i) => {
      if (r.status === 'rejected') {
        failures.push(r.reason);
        this.log.error({ pipeline: workers[i]!.name, error: buildFailure(r.reason) }, 'Failed to create pipeline');
      }
    });
    if (failures.length > 0) {
      await Promise.all(workers.map((w) => w.stop(0)));
      return failures.every((f) => f instanceof PipelineBuildError && f.unavailable) ? 'unavailable' : 'invalid';
    }
    for (const w of workers) this.current.set(w.name, w);
    for (const w of workers) this.startWorker(w);
    void this.warnKeptBuffers();
    return 'started';
  }

  /**
   * WARN `Disk buffer kept` for each disk buffer directory the configuration no longer names
   * that still holds entries to send (see kept-buffers.ts); after a start and after each reload.
   */
  private async warnKeptBuffers(): Promise<void> {
    if (!this.dataDir) return;
    try {
      for (const k of await findKeptBuffers(this.dataDir, this.config, (name) => this.carried.positionsOf(name))) {
        this.log.warn({ pipeline: k.pipeline, plugin: k.source, path: k.path, entries: k.entries }, `Disk buffer kept: ${k.entries} entries still to send`);
      }
    } catch (err) {
      this.log.warn({ error: errorMessage(err) }, 'Disk buffers not checked');
    }
  }

  /** Runs a reload; one arriving while another runs is coalesced into one more after it. */
  reload(): Promise<void> {
    if (this.shuttingDown) return Promise.resolve();
    if (this.reloading) {
      this.reloadQueued = true;
      return this.reloading;
    }
    this.reloading = (async () => {
      // A SIGHUP during the start: two generations would otherwise start side by side.
      if ((await this.starting) !== 'started') {
        this.reloading = undefined;
        return;
      }
      do {
        this.reloadQueued = false;
        await this.reloadOnce();
      } while (this.reloadQueued && !this.shuttingDown);
      this.reloading = undefined;
    })();
    return this.reloading;
  }

  private async reloadOnce(): Promise<void> {
    let next: Config;
    try {
      next = this.opts.reloadConfig();
    } catch (err) {
      this.reloads.failed++;
      this.log.error({ error: errorMessage(err) }, 'Failed to bootstrap new service, keeping old service running');
      return;
    }
    const generation = this.generation + 1;
    const fresh = next.pipelines.map((p) => this.fork(p, generation, next));
    try {
      await awaitBuilt(fresh);
    } catch (err) {
      const error = errorMessage(err);
      // The failed generation is gone before the record says so: only the old one runs.
      for (const w of fresh) w.kill();
      await Promise.all(fresh.map((w) => w.exited));
      this.reloads.failed++;
      this.log.error({ error }, 'Failed to bootstrap new service, keeping old service running');
      return;
    }
    if (this.shuttingDown) {
      for (const w of fresh) w.kill();
      return;
    }
    // Old generation out: sources stop, queues drain, clients closed, final positions reported.
    this.generation = generation;
    this.handingOver = true;
    this.restarts.cancelAll();
    const old = [...this.current.values()];
    this.current = new Map(fresh.map((w) => [w.name, w]));
    await this.stopWorkers(old);
    this.carried.keepOnly((name) => this.current.has(name));
    this.config = next;
    this.opts.log.setQuiet(next.quiet);
    for (const w of fresh) this.startWorker(w);
    this.handingOver = false;
    this.reloads.ok++;
    this.log.info({ generation }, 'Configuration reloaded');
    this.opts.onReloaded?.(next);
    await this.warnKeptBuffers();
  }

  private async stopWorkers(workers: readonly PipelineWorker[]): Promise<void> {
    await Promise.all(workers.map((w) => w.stop(this.config.shutdown_timeout_ms)));
  }

  /** Graceful shutdown; resolves true when everything drained in time. */
  async shutdown(): Promise<boolean> {
    this.shuttingDown = true;
    this.restarts.cancelAll();
    const all = [...this.live];
    const results = await Promise.all(all.map((w) => w.stop(this.config.shutdown_timeout_ms)));
    return results.every((r) => r.clean);
  }

  /** Second signal: no more waiting. */
  killAll(): void {
    this.shuttingDown = true;
    for (const w of this.live) w.kill();
  }

  /** Counters of the current generation with the pipeline's `restarts`, for the status report. */
  statusSnapshot(): { name: string; counters: Record<string, unknown> }[] {
    return [...this.current.values()].map((w) => ({
      name: w.name,
      counters: { ...(w.counters ?? {}), restarts: this.restarts.of(w.name), ...this.checkpointCounters },
    }));
  }

  private carryAbandoned(name: string, counters: PipelineCounters): void {
    const carried = this.abandoned.get(name) ?? {};
    for (const [id, c] of Object.entries(counters.sinks)) carried[id] = (carried[id] ?? 0) + (c.abandoned ?? 0);
    this.abandoned.set(name, carried);
  }

  /**
   * Each pipeline of the configuration in force as the admin endpoint sees it (DESIGN.md §16):
   * its state, process, restarts, latest counters and gauges, and file positions.
   */
  pipelineViews(): PipelineView[] {
    return this.config.pipelines.map((p) => {
      const w = this.current.get(p.name);
      return {
        name: p.name,
        config: p,
        state: this.stateOf(p.name, w),
        pid: w?.state === 'exited' ? undefined : w?.pid,
        restarts: this.restarts.of(p.name),
        counters: w?.counters,
        gauges: w?.gauges,
        positions: this.carried.positionsOf(p.name),
        abandoned: this.abandoned.get(p.name) ?? {},
      };
    });
  }

  private stateOf(name: string, w: PipelineWorker | undefined): PipelineState {
    if (this.shuttingDown) return 'stopping';
    if (this.handingOver) return 'reloading';
    if (this.restarts.waiting(name) || w?.state === 'exited') return 'backoff';
    if (w?.state === 'running') return bufferFailing(w.counters) ? 'buffer_error' : 'running';
    return 'starting';
  }

  uptimeSeconds(): number {
    return Math.round((Date.now() - this.startedAt) / 1000);
  }
}
