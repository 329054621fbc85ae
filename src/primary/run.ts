// The primary's run: service log, supervisor, signals, status reporter, auto reload.

import { resolve } from 'node:path';
import type { Config } from '../config/schema.js';
import { ConfigError, errorMessage } from '../core/errors.js';
import type { AdminServer } from './admin.js';
import { type Checkpointer, DataDirInUse, lockDataDir, readCheckpoint, startCheckpointer } from './checkpoint.js';
import { FleetTable } from './fleet.js';
import { type Reports, startReports } from './reports.js';
import { createServiceLog } from './service-log.js';
import { startStatusReporter } from './status.js';
import { Supervisor } from './supervisor.js';
import { createFileWatch, type FileWatch, tlsFilesOf } from './watch.js';

export const EXIT_OK = 0;
export const EXIT_RUNTIME = 1;
/** EX_UNAVAILABLE: a resource the configuration names is not available at start (an address in use). */
export const EXIT_UNAVAILABLE = 69;
export const EXIT_CONFIG = 78;

export interface RunOptions {
  readonly config: Config;
  readonly file: string | undefined;
  /** Loads the configuration again (file + env + flags), for reloads. */
  readonly reloadConfig: () => Config;
}

/** Runs the node until a signal ends it; resolves the exit code. */
export async function runPrimary(opts: RunOptions): Promise<number> {
  const serviceLog = createServiceLog(opts.config.logging, opts.config.quiet);
  const log = serviceLog.logger;
  let onReloaded: (config: Config) => void = () => {};
  const sup = new Supervisor(opts.config, { log: serviceLog, reloadConfig: opts.reloadConfig, onReloaded: (c) => onReloaded(c) });

  // data_dir is read at start only: a reload that changes it takes effect at the next start
  const dataDir = opts.config.data_dir;
  let unlock: () => void = () => {};
  let checkpointer: Checkpointer | undefined;
  if (dataDir) {
    try {
      unlock = lockDataDir(dataDir);
    } catch (err) {
      if (err instanceof DataDirInUse) log.error({ data_dir: dataDir, pid: err.pid }, 'data_dir is in use');
      else log.error({ data_dir: dataDir, error: errorMessage(err) }, 'data_dir is not available');
      await serviceLog.close();
      return EXIT_UNAVAILABLE;
    }
    const state = readCheckpoint(dataDir, opts.config.checkpoint_ttl_ms, log);
    if (state) sup.restore(state);
    checkpointer = startCheckpointer(dataDir, opts.config.checkpoint_interval_ms, log, () => sup.checkpointState(), (state) => sup.checkpointed(state));
    sup.checkpointCounters = checkpointer.counters;
  }
  const release = async () => {
    checkpointer?.stop();
    await checkpointer?.flush();
    unlock();
  };

  let finish!: (code: number) => void;
  const done = new Promise<number>((resolve) => {
    finish = resolve;
  });
  let stopping = false;
  const onStop = (signal: string) => {
    if (stopping) {
      log.warn({ signal }, 'Second signal, exiting at once');
      sup.killAll();
      finish(EXIT_RUNTIME);
      return;
    }
    stopping = true;
    log.info({ signal }, 'Shutting down');
    sup.shutdown().then(
      (clean) => finish(clean ? EXIT_OK : EXIT_RUNTIME),
      (err: unknown) => {
        log.error({ error: errorMessage(err) }, 'Shutdown failed');
        finish(EXIT_RUNTIME);
      },
    );
  };
  process.on('SIGTERM', () => onStop('SIGTERM'));
  process.on('SIGINT', () => onStop('SIGINT'));
  process.on('SIGHUP', () => void sup.reload());

  // the fleet view, like the admin endpoint that serves it, is set up at start only
  const fleet = opts.config.fleet.enabled ? new FleetTable(opts.config.fleet) : undefined;
  // Up before the pipelines, so /readyz says 503 while they start.
  let admin: AdminServer | undefined;
  try {
    // off by default (port 0): then neither the server nor prom-client is loaded
    if (opts.config.admin.port !== 0) admin = await (await import('./admin.js')).startAdmin(opts.config.admin, sup, log, fleet);
  } catch (err) {
    const config = err instanceof ConfigError;
    log.error({ error: errorMessage(err) }, config ? 'Invalid admin configuration' : 'Admin endpoint cannot listen');
    await release();
    await serviceLog.close();
    return config ? EXIT_CONFIG : EXIT_UNAVAILABLE;
  }

  const started = await sup.start();
  if (started !== 'started') {
    await admin?.close();
    await release();
    await serviceLog.close();
    return started === 'unavailable' ? EXIT_UNAVAILABLE : EXIT_CONFIG;
  }

  const reports: Reports = startReports(sup, fleet);
  sup.onReports = (r) => reports.take(r);
  let stopReporter = opts.config.status_reporter ? startStatusReporter(sup, log, opts.config.status_interval_ms) : () => {};
  // auto_reload: the configuration file and every TLS file it names (kubelet's atomic volume
  // updates included: DESIGN.md §22). Pipeline certificates are read when a generation builds, so
  // a new one reloads; the admin endpoint's are put in force by the primary itself.
  let watch: FileWatch | undefined;
  const configFile = opts.file ? resolve(opts.file) : undefined;
  // admin.* is applied at start only: its files are those of the first configuration
  const adminTlsFiles = tlsFilesOf(opts.config).admin;
  const onFilesChanged = (changed: readonly string[]) => {
    if (admin && changed.some((f) => adminTlsFiles.includes(f))) admin.reloadTls();
    if (changed.some((f) => tlsFilesOf(sup.currentConfig).pipelines.includes(f))) {
      void sup.reload();
      return;
    }
    if (!changed.includes(configFile!)) return;
    // An unchanged effective configuration does nothing; a broken one reloads (and is refused, logged).
    let next: string;
    try {
      next = JSON.stringify(opts.reloadConfig());
    } catch {
      next = '';
    }
    if (next !== JSON.stringify(sup.currentConfig)) void sup.reload();
  };
  const armWatch = () => {
    if (!configFile || !sup.currentConfig.auto_reload) {
      watch?.stop();
      watch = undefined;
      return;
    }
    watch ??= createFileWatch(onFilesChanged, (err) => {
      watch = undefined;
      log.error({ file: opts.file, error: errorMessage(err) }, 'Cannot watch the configuration file, auto_reload is off until the next reload');
    });
    watch.setFiles([configFile, ...adminTlsFiles, ...tlsFilesOf(sup.currentConfig).pipelines]);
  };
  armWatch();
  onReloaded = (c) => {
    reports.reconfigure(c);
    stopReporter();
    stopReporter = c.status_reporter ? startStatusReporter(sup, log, c.status_interval_ms) : () => {};
    armWatch();
  };

  const code = await done;
  reports.stop();
  stopReporter();
  watch?.stop();
  await admin?.close();
  // after the drain: the final acknowledged positions and windows
  await release();
  await serviceLog.close();
  return code;
}
