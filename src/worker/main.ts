// Worker entry: builds exactly one pipeline from the table it is sent, reports built or
// build_failed, starts on order, ships counters and positions every second, drains on stop.
// Signals are the primary's business; a closed IPC channel (primary gone) ends the worker at once.

import { errorMessage, PluginError } from '../core/errors.js';
import { createLogger, type Logger } from '../core/log.js';
import { type FromWorker, isToWorker, type ToWorker } from '../ipc/messages.js';
import { watchCertificates } from '../net/cert-expiry.js';
import { createDropWarner, type DropWarner } from './drop-warn.js';
import { sampleGauges } from './gauges.js';
import { IpcLogStream } from './ipc-log.js';
import { buildPipeline, type Pipeline } from './pipeline.js';

const STATS_INTERVAL_MS = 1000;

for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, () => {});
process.on('disconnect', () => process.exit(0));

const logStream = new IpcLogStream();
let log: Logger | undefined;
let pipeline: Pipeline | undefined;
let statsTimer: NodeJS.Timeout | undefined;
let dropWarner: DropWarner | undefined;

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
        pipeline = buildPipeline(msg.pipeline, { log, checkOnly: false, debug: msg.level === 'debug', node: msg.node, dataDir: msg.data_dir });
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
