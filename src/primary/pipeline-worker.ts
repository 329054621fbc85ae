// One cluster worker running one pipeline of one generation, as the supervisor holds it: its
// orders (build, start, stop), its state, the build it awaits and how it exited.

import type { Worker } from 'node:cluster';
import type { LogLevel, PipelineConfig } from '../config/schema.js';
import type { PipelineCounters } from '../core/counters.js';
import { errorMessage } from '../core/errors.js';
import type { ToWorker, WorkerGauges } from '../ipc/messages.js';

/** How long a new generation's workers may take to report `built`. */
export const BUILD_DEADLINE_MS = 10_000;
/** Extra time after `shutdown_timeout_ms` before a worker that has not exited is killed. */
const STOP_GRACE_MS = 2000;

export type WorkerState = 'building' | 'built' | 'running' | 'stopping' | 'exited';

/** A pipeline that failed to build; the message names it as `pipeline=<name>` (DESIGN.md §3). */
export class PipelineBuildError extends Error {
  constructor(
    readonly pipeline: string,
    readonly reason: string,
    /** a resource the configuration names was not available (a listener's address in use) */
    readonly unavailable = false,
  ) {
    super(`pipeline=${pipeline}: ${reason}`);
  }
}

export interface StopResult {
  readonly abandoned: number;
  readonly clean: boolean;
}

/** One worker process running one pipeline of one generation. */
export class PipelineWorker {
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
    /** `report_interval_ms` > 0: its chain sinks offer and send node reports */
    readonly reports = false,
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
    else this.send({ type: 'build', generation: this.generation, pipeline: this.pipeline, level: this.level, node: this.node, data_dir: this.dataDir, reports: this.reports });
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

/** The reason alone, for records that carry the pipeline in their own field. */
export const buildFailure = (err: unknown) => (err instanceof PipelineBuildError ? err.reason : errorMessage(err));

/**
 * Waits for every worker's `built`, up to the build deadline; rejects with a PipelineBuildError
 * naming the first pipeline that failed (or the first still building at the deadline).
 */
export async function awaitBuilt(workers: readonly PipelineWorker[]): Promise<void> {
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
