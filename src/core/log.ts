// pino options shared by the primary and the workers: level as its name, ISO time, no pid/hostname noise.

import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { isoString } from './iso-time.js';

export type { Logger };

/** The service log's levels (`logging.level`). */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Now as `Date.prototype.toISOString` writes it, from the UTC fields (see core/iso-time.ts). */
export function isoNow(now = Date.now()): string {
  return isoString(now);
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
