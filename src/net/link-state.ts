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

/** A link made of requests (http_chain, otlp): its state follows their outcomes, not the socket's. */
export interface RequestLinkState {
  /** A request succeeded (2xx): the link is up; logs when it was down. */
  succeeded(fields?: Record<string, unknown>): void;
  /**
   * A request failed (a status retried, a network error, a timeout): the link goes down, with
   * the last failure's fields, once requests kept failing for `downAfterMs` with no success between.
   */
  failed(fields?: Record<string, unknown>): void;
  /** A planned close: down without a line. */
  close(): void;
}

/**
 * Up only while requests succeed: a receiver that answers 503 to everything is not "up" because
 * it answers. `downAfterMs` is the sink's `backoff_max_ms`: one failed attempt is no outage, a
 * run of them that lasts through the longest retry delay is.
 */
export function createRequestLinkState(counters: { connected: number }, log: Logger, remote: string, name: string, downAfterMs: number): RequestLinkState {
  const link = createLinkState(counters, log, remote, name);
  let timer: NodeJS.Timeout | undefined;
  let last: Record<string, unknown> = {};
  return {
    succeeded(fields) {
      clearTimeout(timer);
      timer = undefined;
      link.up(fields);
    },
    failed(fields) {
      last = fields ?? {};
      if (timer || counters.connected === 0) return;
      timer = setTimeout(() => {
        timer = undefined;
        link.down({ ...last, failing_ms: downAfterMs });
      }, downAfterMs);
    },
    close() {
      clearTimeout(timer);
      timer = undefined;
      link.down({}, true);
    },
  };
}
