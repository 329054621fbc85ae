// A chain sink's link state (DESIGN.md §16): `connected` for the counters and the metric, and one
// log line per transition: INFO `Chain link up`, WARN `Chain link down`. Shared by both chain sinks
// and the otlp sink, whose lines read `OTLP export up` and `OTLP export down`.

import type { Logger } from '../core/log.js';

export interface LinkState {
  /** The link works (handshake answered, or a response came back); logs when it was down. */
  up(fields?: Record<string, unknown>): void;
  /** The link failed; logs when it was up. `quiet` (a planned close) changes the state without a line. */
  down(fields?: Record<string, unknown>, quiet?: boolean): void;
}

/** `name`: how the lines call the link (`<name> up`, `<name> down`). */
export function createLinkState(counters: { connected: number }, log: Logger, remote: string, name = 'Chain link'): LinkState {
  return {
    up(fields) {
      if (counters.connected === 1) return;
      counters.connected = 1;
      log.info({ remote, ...fields }, `${name} up`);
    },
    down(fields, quiet = false) {
      if (counters.connected === 0) return;
      counters.connected = 0;
      if (!quiet) log.warn({ remote, ...fields }, `${name} down`);
    },
  };
}
