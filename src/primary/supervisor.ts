// The supervisor: one cluster worker per pipeline, grouped in generations. Starts, restarts
// crashed pipelines alone with backoff, reloads new-before-old, and shuts down under one deadline.
// Entries never pass through here; only orders, counters, positions and log lines do.

import cluster, { type Worker } from 'node:cluster';
import { fileURLToPath } from 'node:url';
import type { Config, LogLevel, PipelineConfig } from '../config/schema.js';
import type { PipelineCounters } from '../core/counters.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { PackedWindow } from '../flow/dedup.js';
import { type FromWorker, isFromWorker, type PipelinePositions, type ToWorker, type WorkerGauges } from '../ipc/messages.js';
import type { CheckpointState, PipelineCheckpoint } from './checkpoint.js';
import type { ServiceLog } from './service-log.js';

/** How long a new generation's workers may take to report `built`. */
export const BUILD_DEADLINE_MS = 10_000;
const RESTART_MIN_MS = 250;
const RESTART_MAX_MS = 30_000;
const STABLE_RESET_MS = 60_000;
/** Extra time after `shutdown_timeout_ms` before a worker that has not exited is killed. */
const STOP_GRACE_MS = 2000;

type WorkerState = 'building' | 'built' | 'running' | 'stopping' | 'exited';

/** A pipeline that failed to build; the message names it as `pipeline=<name>` (DESIGN.md §3). */
class PipelineBuildError extends Error {
  constructor(
    readonly pipeline: string,
    readonly reason: string,
    /** a resource the configuration names was not available (a listener's address in use) */
    readonly unavailable = false,
  ) {
    super(`pipeline=${pipeline}: ${reason}`);
  }
}

interface StopResult {
  readonly abandoned: number;
  readonly clean: boolean;
}

/** One worker process running one pipeline of one generation. */
class PipelineWorker {
  state: WorkerState = 'building';
  /** set before a planned stop, so the exit is not taken for a crash */
  planned = false;
  /** the worker said `ready`: orders sent before that could be lost while its module loads */
  ready = false;
  private stopTimeoutMs = 0;
  startedAt = 0;
  /** how it exited, once it has */
  exit: { code: number | null; signal: string | null } | undefined;
  counters: PipelineCounters | undefined;
  gauges: WorkerGauges | undefined;
  readonly built: Promise<void>;
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
  private stopped: StopResult | undefined;
  private resolveBuilt!: () => void;
  private rejectBuilt!: (err: Error) => void;

  constructor(
    readonly worker: Worker,
    readonly pipeline: PipelineConfig,
    readonly generation: number,
    /** the service log level its configuration asks for */
    readonly level: LogLevel | 'silent',
    /** `node_name` of its configuration */
    readonly node: string,
    /** `data_dir` the node started with */
    readonly dataDir: string,
  ) {
    this.built = new Promise((resolve, reject) => {
      this.resolveBuilt = resolve;
      this.rejectBuilt = reject;
    });
    this.built.catch(() => undefined);
    this.exited = new Promise((resolve) => worker.once('exit', (code, signal) => resolve({ code, signal })));
  }

  get name(): string {
    return this.pipeline.name;
  }

  get pid(): number | undefined {
    return this.worker.process.pid;
  }

  send(msg: ToWorker): void {
    if (this.state !== 'exited' && this.worker.isConnected()) this.worker.send(msg);
  }

  /** First order once the worker listens: build, or stop if a stop was asked for meanwhile. */
  onReady(): void {
    this.ready = true;
    if (this.planned) this.send({ type: 'stop', timeout_ms: this.stopTimeoutMs });
    else this.send({ type: 'build', generation: this.generation, pipeline: this.pipeline, level: this.level, node: this.node, data_dir: this.dataDir });
  }

  onBuilt(): void {
    this.state = 'built';
    this.resolveBuilt();
  }

  onBuildFailed(error: string, unavailable: boolean): void {
    this.rejectBuilt(new PipelineBuildError(this.name, error, unavailable));
  }

  onStopped(result: StopResult): void {
    this.stopped = result;
  }

  onExit(code: number | null, signal: string | null): void {
    this.state = 'exited';
    this.exit = { code, signal };
    // No-op when already built; otherwise whoever waits for `built` learns now, not at the deadline.
    this.rejectBuilt(new Error(`pipeline process exited during build (code ${code}, signal ${signal})`));
  }

  /** Asks the worker to drain and exit; kills it if it has not exited by the deadline. */
  async stop(timeoutMs: number): Promise<StopResult> {
    this.planned = true;
    if (this.state !== 'exited') {
      this.state = 'stopping';
      this.stopTimeoutMs = timeoutMs;
      if (this.ready) this.send({ type: 'stop', timeout_ms: timeoutMs });
      let timer: NodeJS.Timeout | undefined;
      const killed = await Promise.race([
        this.exited.then(() => false),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), timeoutMs + STOP_GRACE_MS);
        }),
      ]);
      clearTimeout(timer);
      if (killed) {
        this.kill();
        await this.exited;
        return { abandoned: this.stopped?.abandoned ?? 0, clean: false };
      }
    }
    // A worker that exited before reporting (stopped while still building) had nothing to drain.
    return this.stopped ?? { abandoned: 0, clean: true };
  }

  kill(): void {
    this.planned = true;
    if (this.state !== 'exited') this.worker.process.kill('SIGKILL');
  }
}

/** How the first generation's start ended: `invalid` exits 78, `unavailable` 69 (DESIGN.md §2). */
export type StartResult = 'started' | 'invalid' | 'unavailable';

/**
 * What `/readyz` says of a pipeline; only `running` is ready. `buffer_error`: running, but a
 * source's disk buffer cannot write (DESIGN.md §23).
 */
export type PipelineState = 'starting' | 'running' | 'reloading' | 'backoff' | 'stopping' | 'buffer_error';

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

/** A source's disk buffer cannot write (its `buffer_failing` gauge). */
function bufferFailing(counters: PipelineCounters | undefined): boolean {
  if (!counters) return false;
  for (const c of Object.values(counters.sources)) if (c.buffer_failing === 1) return true;
  return false;
}

/** The reason alone, for records that carry the pipeline in their own field. */
const buildFailure = (err: unknown) => (err instanceof PipelineBuildError ? err.reason : errorMessage(err));

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
  /** last reported file positions by pipeline name; the primary's memory only */
  private readonly positions = new Map<string, PipelinePositions>();
  /**
   * per pipeline name, per source id: when the source's run began (kept over reloads and
   * restarts while its configuration stays the same) and that configuration
   */
  private readonly since = new Map<string, Record<string, { readonly at: number; readonly config: string }>>();
  /**
   * per pipeline name with dedup on: the ids whose entries its workers reported done, handed to
   * the next worker (reload, crash restart) and checkpointed
   */
  private readonly windows = new Map<string, { readonly key: string; readonly set: PackedWindow }>();
  /** per pipeline name: when its positions were last reported (checkpoint TTL) */
  private readonly seenAt = new Map<string, number>();
  private readonly restarts = new Map<string, number>();
  private readonly restartAttempts = new Map<string, number>();
  private readonly restartTimers = new Map<string, NodeJS.Timeout>();
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
  private readonly startedAt = Date.now();
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
    cluster.setupPrimary({ exec: fileURLToPath(new URL('../worker/main.js', import.meta.url)), silent: false });
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
    const worker = cluster.fork();
    const pw = new PipelineWorker(worker, pipeline, generation, this.opts.log.levelFor(config.quiet), config.node_name, this.dataDir);
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
      case 'built':
        pw.onBuilt();
        return;
      case 'build_failed':
        pw.onBuildFailed(msg.error, msg.unavailable);
        return;
      case 'stats':
        pw.counters = msg.counters;
        pw.gauges = msg.gauges;
        if (msg.dedup) this.windowFor(pw.pipeline)?.load(msg.dedup);
        if (pw.state === 'running' && this.current.get(pw.name) === pw) this.setPositions(pw.name, msg.positions);
        return;
      case 'stopped':
        pw.counters = msg.counters;
        this.carryAbandoned(pw.name, msg.counters);
        if (msg.dedup) this.windowFor(pw.pipeline)?.load(msg.dedup);
        pw.onStopped({ abandoned: msg.abandoned, clean: msg.abandoned === 0 });
        if (pw.state !== 'building' && pw.state !== 'built') this.setPositions(pw.name, msg.positions);
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
    this.restarts.set(pw.name, (this.restarts.get(pw.name) ?? 0) + 1);
    this.scheduleRestart(pw.pipeline, ranMs);
  }

  private scheduleRestart(pipeline: PipelineConfig, ranMs: number): void {
    const name = pipeline.name;
    if (ranMs >= STABLE_RESET_MS) this.restartAttempts.set(name, 0);
    const attempt = this.restartAttempts.get(name) ?? 0;
    const delay = Math.min(RESTART_MAX_MS, RESTART_MIN_MS * 2 ** attempt);
    this.restartAttempts.set(name, attempt + 1);
    const generation = this.generation;
    const timer = setTimeout(() => {
      this.restartTimers.delete(name);
      if (this.shuttingDown || generation !== this.generation) return;
      void this.restart(pipeline);
    }, delay);
    this.restartTimers.set(name, timer);
  }

  private async restart(pipeline: PipelineConfig): Promise<void> {
    const pw = this.fork(pipeline, this.generation);
    this.current.set(pipeline.name, pw);
    try {
      await this.awaitBuilt([pw]);
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
    // A source that ran unchanged in the predecessor keeps its start time; a new or changed one
    // (another directory or pattern sees other files: those are not new) starts now.
    const before = this.since.get(pw.name) ?? {};
    const runs: Record<string, { at: number; config: string }> = {};
    const since: Record<string, number> = {};
    for (const s of pw.pipeline.plugin_sources) {
      const config = JSON.stringify([s.type, s.config]);
      const was = before[s.id];
      runs[s.id] = was?.config === config ? was : { at: pw.startedAt, config };
      since[s.id] = runs[s.id]!.at;
    }
    this.since.set(pw.name, runs);
    pw.send({ type: 'start', positions: this.positions.get(pw.name) ?? {}, since, dedup: this.windowFor(pw.pipeline)?.snapshot() });
  }

  private setPositions(name: string, positions: PipelinePositions): void {
    this.positions.set(name, positions);
    this.seenAt.set(name, Date.now());
  }

  /** The primary's copy of a pipeline's dedup window; a changed window size starts a new one from the old ids. */
  private windowFor(pipeline: PipelineConfig): PackedWindow | undefined {
    const dedup = pipeline.flow.dedup;
    if (!dedup?.enabled) return undefined;
    const key = `${dedup.window_entries}/${dedup.window_ms}`;
    const had = this.windows.get(pipeline.name);
    if (had?.key === key) return had.set;
    const set = new PackedWindow(dedup.window_entries, dedup.window_ms);
    if (had) set.load(had.set.snapshot());
    this.windows.set(pipeline.name, { key, set });
    return set;
  }

  /** Takes over what a checkpoint kept (DESIGN.md §15): positions, run starts, dedup windows. */
  restore(state: CheckpointState): void {
    for (const [name, p] of Object.entries(state.pipelines)) {
      this.positions.set(name, p.positions);
      this.seenAt.set(name, p.seen_at);
      this.since.set(name, { ...p.since });
      if (p.dedup) {
        const cfg = this.config.pipelines.find((c) => c.name === name);
        const set = cfg ? this.windowFor(cfg) : undefined;
        set?.load(p.dedup);
      }
    }
  }

  /** The checkpoint was written with `state`: each running worker learns what it holds of its pipeline. */
  checkpointed(state: CheckpointState): void {
    for (const [name, w] of this.current) {
      const p = state.pipelines[name];
      if (p && w.state === 'running') w.send({ type: 'checkpointed', positions: p.positions });
    }
  }

  /** What a checkpoint keeps, now. */
  checkpointState(): CheckpointState {
    const pipelines: Record<string, PipelineCheckpoint> = {};
    for (const [name, positions] of this.positions) {
      pipelines[name] = {
        positions,
        seen_at: this.seenAt.get(name) ?? Date.now(),
        since: this.since.get(name) ?? {},
        dedup: this.windows.get(name)?.set.snapshot(),
      };
    }
    return { version: 1, pipelines };
  }

  /**
   * Waits for every worker's `built`, up to the build deadline; rejects with a PipelineBuildError
   * naming the first pipeline that failed (or the first still building at the deadline).
   */
  private async awaitBuilt(workers: readonly PipelineWorker[]): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const late = workers.find((w) => w.state === 'building') ?? workers[0]!;
        reject(new PipelineBuildError(late.name, `build deadline of ${BUILD_DEADLINE_MS} ms passed`));
      }, BUILD_DEADLINE_MS);
    });
    const built = workers.map((w) =>
      w.built.catch((err: unknown) => {
        throw err instanceof PipelineBuildError ? err : new PipelineBuildError(w.name, errorMessage(err));
      }),
    );
    try {
      await Promise.race([Promise.all(built), deadline]);
    } finally {
      clearTimeout(timer);
    }
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
    const results = await Promise.allSettled(workers.map((w) => this.awaitBuilt([w])));
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
    return 'started';
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
      await this.awaitBuilt(fresh);
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
    for (const t of this.restartTimers.values()) clearTimeout(t);
    this.restartTimers.clear();
    const old = [...this.current.values()];
    this.current = new Map(fresh.map((w) => [w.name, w]));
    await this.stopWorkers(old);
    for (const name of this.positions.keys()) if (!this.current.has(name)) this.positions.delete(name);
    for (const name of this.since.keys()) if (!this.current.has(name)) this.since.delete(name);
    for (const name of this.windows.keys()) if (!this.current.has(name)) this.windows.delete(name);
    this.config = next;
    this.opts.log.setQuiet(next.quiet);
    for (const w of fresh) this.startWorker(w);
    this.handingOver = false;
    this.reloads.ok++;
    this.log.info({ generation }, 'Configuration reloaded');
    this.opts.onReloaded?.(next);
  }

  private async stopWorkers(workers: readonly PipelineWorker[]): Promise<void> {
    await Promise.all(workers.map((w) => w.stop(this.config.shutdown_timeout_ms)));
  }

  /** Graceful shutdown; resolves true when everything drained in time. */
  async shutdown(): Promise<boolean> {
    this.shuttingDown = true;
    for (const t of this.restartTimers.values()) clearTimeout(t);
    this.restartTimers.clear();
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
      counters: { ...(w.counters ?? {}), restarts: this.restarts.get(w.name) ?? 0, ...this.checkpointCounters },
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
        restarts: this.restarts.get(p.name) ?? 0,
        counters: w?.counters,
        gauges: w?.gauges,
        positions: this.positions.get(p.name) ?? {},
        abandoned: this.abandoned.get(p.name) ?? {},
      };
    });
  }

  private stateOf(name: string, w: PipelineWorker | undefined): PipelineState {
    if (this.shuttingDown) return 'stopping';
    if (this.handingOver) return 'reloading';
    if (this.restartTimers.has(name) || w?.state === 'exited') return 'backoff';
    if (w?.state === 'running') return bufferFailing(w.counters) ? 'buffer_error' : 'running';
    return 'starting';
  }

  uptimeSeconds(): number {
    return Math.round((Date.now() - this.startedAt) / 1000);
  }
}
