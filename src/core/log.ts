// pino options shared by the primary and the workers: level as its name, ISO time, no pid/hostname noise.

import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

/** The service log's levels (`logging.level`). */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export function loggerOptions(level: LogLevel | 'silent'): LoggerOptions {
  return {
    level,
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
}

export function createLogger(level: LogLevel | 'silent', dest: DestinationStream): Logger {
  return pino(loggerOptions(level), dest);
}
