// pino options shared by the primary and the workers: level as its name, ISO time, no pid/hostname noise.

import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

/** The service log's levels (`logging.level`). */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/**
 * Now as `Date.prototype.toISOString` writes it, from the UTC fields: V8's toISOString reads
 * ICU's time zone data (~640 KiB of pages in each process that calls it), which an idle primary
 * otherwise never touches.
 */
export function isoNow(now = Date.now()): string {
  const d = new Date(now);
  const y = d.getUTCFullYear();
  const year = y >= 0 && y <= 9999 ? pad(y, 4) : `${y < 0 ? '-' : '+'}${pad(Math.abs(y), 6)}`;
  return `${year}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(d.getUTCMilliseconds(), 3)}Z`;
}

export function loggerOptions(level: LogLevel | 'silent'): LoggerOptions {
  return {
    level,
    base: undefined,
    // pino's isoTime, written from the UTC fields (see isoNow)
    timestamp: () => `,"time":"${isoNow()}"`,
    formatters: { level: (label) => ({ level: label }) },
    hooks: { logMethod: withoutBoundKeys },
  };
}

/**
 * A log line has each key once: a key a child logger already binds (`pipeline`, `plugin`) is
 * left out of the call's object, where pino would write it a second time. Log calls are rare
 * (never per entry), so reading the bindings here costs nothing that matters.
 */
function withoutBoundKeys(this: Logger, args: Parameters<Logger['info']>, method: Logger['info']): void {
  const first: unknown = args[0];
  if (typeof first === 'object' && first !== null && !(first instanceof Error)) {
    let copy: Record<string, unknown> | undefined;
    for (const key of Object.keys(this.bindings())) {
      if (!Object.hasOwn(first, key)) continue;
      copy ??= { ...(first as Record<string, unknown>) };
      delete copy[key];
    }
    if (copy) args[0] = copy;
  }
  method.apply(this, args);
}

export function createLogger(level: LogLevel | 'silent', dest: DestinationStream): Logger {
  return pino(loggerOptions(level), dest);
}
