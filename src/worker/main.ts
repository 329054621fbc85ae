// The worker (loaded by its executable, worker/boot.ts): builds exactly one pipeline from the
// table it is sent, reports built or build_failed, starts on order, ships counters and positions
// every second, drains on stop.
// Signals are the primary's business; a closed IPC channel (primary gone) ends the worker at once.

import { errorMessage, PluginError } from '../core/errors.js';
import { createLogger, type Logger } from '../core/log.js';
import type { NodeReport } from '../core/node-report.js';
import { type FromWorker, isToWorker, type ToWorker } from '../ipc/messages.js';
import { watchCertificates } from '../net/cert-expiry.js';
import { createDropWarner, type DropWarner } from './drop-warn.js';
import { sampleGauges } from './gauges.js';
import { IpcLogStream } from './ipc-log.js';
import type { Pipeline } from './pipeline-api.js';
import { buildPipeline } from './pipeline.js';

const STATS_INTERVAL_MS = 1000;
/** Reports received by the chain sources go to the primary together, at most this often, ms. */
const REPORTS_COALESCE_MS = 50;
/** Most reports held for one such message (one per node and path: a newer one replaces the older); at this many it goes at once. */
const MAX_REPORTS_HELD = 5000;

for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, () => {});
process.on('disconnect', () => process.exit(0));

const logStream = new IpcLogStream();
let log: Logger | undefined;
let pipeline: Pipeline | undefined;
let statsTimer: NodeJS.Timeout | undefined;
let dropWarner: DropWarner | undefined;
/** node reports received and not yet passed to the primary, by node and path */
const receivedReports = new Map<string, NodeReport>();
let reportsTimer: NodeJS.Timeout | undefined;

function sendReports(): void {
  clearTimeout(reportsTimer);
  reportsTimer = undefined;
  const reports = [...receivedReports.values()];
  receivedReports.clear();
  if (reports.length > 0) send({ type: 'reports', reports });
}

function onReport(report: NodeReport): void {
  const key = `${report.node}\u0000${report.via.join('\u0000')}`;
  receivedReports.delete(key);
  receivedReports.set(key, report);
  if (receivedReports.size >= MAX_REPORTS_HELD) sendReports();
  else reportsTimer ??= setTimeout(sendReports, REPORTS_COALESCE_MS);
}

function send(msg: FromWorker, done?: () => void): void {
  if (!process.connected) return;
  process.send!(msg, undefined, {}, () => done?.());
}

function sendStats(): void {
  if (!pipeline) return;
  const counters = pipeline.counters();
  const positions = pipeline.positions();
  dropWarner?.check(counters);
  send({ type: 'stats', counters, positions, gauges: sampleGauges(positions), dedup: pipeline.doneIds() });
}

async function onMessage(msg: ToWorker): Promise<void> {
  switch (msg.type) {
    case 'build': {
      log = createLogger(msg.level, logStream);
      try {
        pipeline = await buildPipeline(msg.pipeline, { log, checkOnly: false, debug: msg.level === 'debug', node: msg.node, dataDir: msg.data_dir, reports: msg.reports, onReport });
        await pipeline.open();
        watchCertificates(log, pipeline.name);
        dropWarner = createDropWarner(log, pipeline.name, Object.fromEntries(msg.pipeline.plugin_sinks.map((p) => [p.id, p.type])));
        logStream.flush();
        send({ type: 'built' });
      } catch (err) {
        logStream.flush();
        send({ type: 'build_failed', error: errorMessage(err), unavailable: err instanceof PluginError && err.unavailable }, () => process.exit(0));
      }
      return;
    }
    case 'start': {
      pipeline?.start(msg.positions, msg.since, msg.dedup);
      statsTimer ??= setInterval(sendStats, STATS_INTERVAL_MS);
      return;
    }
    case 'checkpointed': {
      pipeline?.checkpointed(msg.positions);
      return;
    }
    case 'reports': {
      pipeline?.report(msg.reports);
      return;
    }
    case 'stop': {
      if (statsTimer) clearInterval(statsTimer);
      const abandoned = pipeline ? await pipeline.stop(msg.timeout_ms) : 0;
      if (abandoned > 0 && pipeline) log?.error({ pipeline: pipeline.name, abandoned }, 'Drain deadline passed, entries abandoned');
      // losses since the last tick are told now, not lost with the process
      if (pipeline) dropWarner?.check(pipeline.counters(), true);
      // A cut drain may leave a write stuck in the thread pool (a stalled disk or FIFO), and exit()
      // joins the pool's threads: it would hang until the primary's kill. What was abandoned is
      // reported first, so the process may end at once.
      const end = () => (abandoned > 0 ? process.kill(process.pid, 'SIGKILL') : process.exit(0));
      logStream.flush(() => {
        const counters = pipeline?.counters();
        if (pipeline && counters) {
          send({ type: 'stopped', abandoned, counters, positions: pipeline.positions(), dedup: pipeline.doneIds() }, end);
        } else {
          send({ type: 'stopped', abandoned, counters: { total_dropped_by_sink: 0, flow: {}, sources: {}, sinks: {} }, positions: {} }, end);
        }
      });
      return;
    }
  }
}

process.on('message', (msg: unknown) => {
  if (!isToWorker(msg)) return;
  onMessage(msg).catch((err: unknown) => {
    log?.error({ error: errorMessage(err) }, 'Worker failure');
    logStream.flush(() => process.exit(1));
  });
});
send({ type: 'ready' });
