// The service log: the primary is its only writer. Its own records and the workers' forwarded
// lines go to stderr, stdout, or pino-roll files pruned by size and age; `quiet` or `none` silences it.

import { once } from 'node:events';
import { join } from 'node:path';
import pino, { type DestinationStream } from 'pino';
import type { LoggingConfig } from '../config/schema.js';
import { chunkLines, PIPE_BUF } from '../core/lines.js';
import { createLogger, type Logger } from '../core/log.js';
import { pruneRotated } from '../core/prune.js';

/** How often rotated files are pruned: the total can pass its bound by what is written in this time. */
const PRUNE_INTERVAL_MS = 500;

export interface ServiceLog {
  readonly logger: Logger;
  /** the level workers are told to log at */
  readonly level: LoggingConfig['level'] | 'silent';
  /** Writes lines forwarded by a worker (already pino JSON). */
  writeLines(lines: readonly string[]): void;
  close(): Promise<void>;
}

export function createServiceLog(cfg: LoggingConfig, quiet: boolean): ServiceLog {
  if (quiet || cfg.output === 'none') {
    return { logger: createLogger('silent', { write() {} }), level: 'silent', writeLines() {}, close: async () => {} };
  }
  let dest: DestinationStream & { end?: () => void; flushSync?: () => void };
  let pruneTimer: NodeJS.Timeout | undefined;
  if (cfg.output === 'file') {
    const f = cfg.file;
    dest = pino.transport({
      target: 'pino-roll',
      options: { file: join(f.directory, f.name), size: f.max_size_mb, extension: '.log', mkdir: true },
    });
    const prune = () =>
      void pruneRotated({
        directory: f.directory,
        name: f.name,
        maxTotalBytes: f.max_total_size_mb * 1024 * 1024,
        retentionMs: f.retention_hours * 3600_000,
      }).catch(() => undefined);
    prune();
    pruneTimer = setInterval(prune, PRUNE_INTERVAL_MS);
    pruneTimer.unref();
  } else {
    dest = pino.destination({ dest: cfg.output === 'stdout' ? 1 : 2, sync: true });
  }
  const logger = createLogger(cfg.level, dest);
  return {
    logger,
    level: cfg.level,
    writeLines(lines) {
      if (lines.length === 0) return;
      // stdout and stderr may be a pipe shared with the workers' stdout sinks: never tear a line
      if (cfg.output === 'file') dest.write(`${lines.join('\n')}\n`);
      else for (const chunk of chunkLines(lines, PIPE_BUF)) dest.write(chunk);
    },
    async close() {
      if (pruneTimer) clearInterval(pruneTimer);
      if (cfg.output === 'file') {
        const stream = dest as unknown as NodeJS.WritableStream & { end(): void };
        const closed = once(stream, 'close');
        stream.end();
        await Promise.race([closed, new Promise((r) => setTimeout(r, 2000))]);
      } else {
        dest.flushSync?.();
      }
    },
  };
}
