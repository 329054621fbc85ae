// A chain sink's link state (DESIGN.md §16): `connected` for the counters and the metric, and one
// log line per transition: INFO `Chain link up`, WARN `Chain link down`. Shared by both chain sinks.

import type { Logger } from '../core/log.js';

export interface LinkState {
  /** The link works (handshake answered, or a response came back); logs when it was down. */
  up(fields?: Record<string, unknown>): void;
  /** The link failed; logs when it was up. `quiet` (a planned close) changes the state without a line. */
  down(fields?: Record<string, unknown>, quiet?: boolean): void;
}

export function createLinkState(counters: { connected: number }, log: Logger, remote: string): LinkState {
  return {
    up(fields) {
      if (counters.connected === 1) return;
      counters.connected = 1;
      log.info({ remote, ...fields }, 'Chain link up');
    },
    down(fields, quiet = false) {
      if (counters.connected === 0) return;
      counters.connected = 0;
      if (!quiet) log.warn({ remote, ...fields }, 'Chain link down');
    },
  };
}
