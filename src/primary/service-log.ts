// The service log: the primary is its only writer. Its own records and the workers' forwarded
// lines go to stderr, stdout, or pino-roll files pruned by size and age; `quiet` or `none` silences it.

import { once } from 'node:events';
import { join } from 'node:path';
import pino, { type DestinationStream } from 'pino';
import type { LoggingConfig } from '../config/schema.js';
import { chunkLines, PIPE_BUF } from '../core/lines.js';
import { createLogger, type Logger } from '../core/log.js';
import { pruneRotated } from '../core/prune.js';
import { MiB } from '../core/spec.js';

/** How often rotated files are pruned: the total can pass its bound by what is written in this time. */
const PRUNE_INTERVAL_MS = 500;

export interface ServiceLog {
  readonly logger: Logger;
  /** the level workers of a generation are told to log at, given that configuration's `quiet` */
  levelFor(quiet: boolean): LoggingConfig['level'] | 'silent';
  /** `quiet` is re-applied on reload (only `logging.*` is fixed at start) */
  setQuiet(quiet: boolean): void;
  /** Writes lines forwarded by a worker (already pino JSON). */
  writeLines(lines: readonly string[]): void;
  close(): Promise<void>;
}

type Destination = DestinationStream & { end?: () => void; flushSync?: () => void };

/** The configured destination, created when first needed (a quiet start creates no log file). */
function openDestination(cfg: LoggingConfig): { dest: Destination; stopPruning: () => void } {
  if (cfg.output !== 'file') return { dest: pino.destination({ dest: cfg.output === 'stdout' ? 1 : 2, sync: true }), stopPruning: () => {} };
  const f = cfg.file;
  const dest = pino.transport({
    target: 'pino-roll',
    // pino-roll reads a number as MiB
    options: { file: join(f.directory, f.name), size: f.max_size_bytes / MiB, extension: '.log', mkdir: true },
  }) as Destination;
  const prune = () =>
    void pruneRotated({
      directory: f.directory,
      name: f.name,
      maxTotalBytes: f.max_total_size_bytes,
      retentionMs: f.retention_ms,
    }).catch(() => undefined);
  prune();
  const timer = setInterval(prune, PRUNE_INTERVAL_MS);
  timer.unref();
  return { dest, stopPruning: () => clearInterval(timer) };
}

export function createServiceLog(cfg: LoggingConfig, quiet: boolean): ServiceLog {
  const off = cfg.output === 'none';
  let muted = quiet || off;
  let opened: ReturnType<typeof openDestination> | undefined;
  const real = () => (opened ??= openDestination(cfg)).dest;
  const logger = createLogger(muted ? 'silent' : cfg.level, {
    write(s: string) {
      if (!muted) real().write(s);
    },
  });
  return {
    logger,
    levelFor: (q) => (q || off ? 'silent' : cfg.level),
    setQuiet(q) {
      muted = q || off;
      logger.level = muted ? 'silent' : cfg.level;
    },
    // A worker's lines follow its own generation's `quiet` (a quiet one is told `silent`), so a
    // generation built during a reload that ends quiet logs its build, and a draining one its end.
    writeLines(lines) {
      if (lines.length === 0 || off) return;
      const dest = real();
      // stdout and stderr may be a pipe shared with the workers' stdout sinks: never tear a line
      if (cfg.output === 'file') dest.write(`${lines.join('\n')}\n`);
      else for (const chunk of chunkLines(lines, PIPE_BUF)) dest.write(chunk);
    },
    async close() {
      if (!opened) return;
      opened.stopPruning();
      if (cfg.output === 'file') {
        const stream = opened.dest as unknown as NodeJS.WritableStream & { end(): void };
        const closed = once(stream, 'close');
        stream.end();
        await Promise.race([closed, new Promise((r) => setTimeout(r, 2000))]);
      } else {
        opened.dest.flushSync?.();
      }
    },
  };
}
