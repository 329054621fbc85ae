// Dial at start for the HTTP sinks that deliver (http_chain, otlp; DESIGN.md §25): one empty
// request, repeated with backoff until the peer answers at all, so an unreachable peer is told
// (WARN `<kind> cannot connect, retrying`) and `/readyz` says so before any entry flows.

import type { ClientRequest, IncomingHttpHeaders } from 'node:http';
import type { Backoff } from '../core/backoff.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/log.js';

export interface ProbeOptions {
  /** a new request, not yet ended */
  readonly request: () => ClientRequest;
  /** what the request carries (an empty batch in the sink's encoding); none by default */
  readonly body?: Buffer;
  /** a request unanswered this long fails, ms */
  readonly timeoutMs: number;
  readonly backoff: Backoff;
  readonly log: Logger;
  readonly remote: string;
  /** the WARN line of the first failure, e.g. `Chain link cannot connect, retrying` */
  readonly line: string;
  /** failed attempts; none when the sink counts its own */
  readonly counters?: { reconnects: number };
  /** the peer answered (any status): the link is up */
  onAnswer(status: number, headers: IncomingHttpHeaders): void;
  /** the attempt failed (no connection, TLS, timeout) */
  onFailure(error: string): void;
}

/** Starts probing; stop() ends it (idempotent). One attempt at a time; it ends at the first answer. */
export function startProbe(o: ProbeOptions): { stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let told = false;
  const attempt = () => {
    timer = undefined;
    if (stopped) return;
    const req = o.request();
    let over = false;
    req.setTimeout(o.timeoutMs, () => req.destroy(new Error(`no answer within ${o.timeoutMs} ms`)));
    req.on('error', (err) => {
      if (over || stopped) return;
      over = true;
      const error = errorMessage(err);
      o.onFailure(error);
      if (o.counters) o.counters.reconnects++;
      if (told) o.log.debug({ remote: o.remote, error }, o.line);
      else o.log.warn({ remote: o.remote, error }, o.line);
      told = true;
      timer = setTimeout(attempt, o.backoff.next());
    });
    req.on('response', (res) => {
      res.resume();
      if (over || stopped) return;
      over = true;
      o.backoff.reset();
      o.onAnswer(res.statusCode ?? 0, res.headers);
    });
    req.end(o.body);
  };
  attempt();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
