// The dialling half of the sinks that keep one connection to one peer (tcp_chain, syslog): one
// attempt at a time, cut after a dial timeout; a connection whose writes do not drain is cut
// after a write timeout; redials after the backoff's delay; an outage is told once (its first
// failure at WARN, the rest at DEBUG). What "ready" means and what is sent is the plugin's.

import { connect as netConnect, type Socket } from 'node:net';
import type { ConnectionOptions } from 'node:tls';
import type { Backoff } from '../core/backoff.js';
import { errorMessage } from '../core/errors.js';

export type DialState = 'idle' | 'connecting' | 'ready' | 'waiting';

export interface DialLoopOptions {
  readonly host: string;
  readonly port: number;
  /** TLS client options; plain TCP when undefined */
  readonly tls: ConnectionOptions | undefined;
  /** an attempt not ready() within this is cut, ms */
  readonly dialTimeoutMs: number;
  /** a connection whose writes have not drained within this is cut, ms */
  readonly writeTimeoutMs: number;
  /** what the dial timeout's error says was missing: "no connection", "no answer" */
  readonly missing: string;
  readonly backoff: Backoff;
  /** `reconnects` counts the redials */
  readonly counters: { reconnects: number };
  /** Opens one attempt (the state is then 'connecting'): connectStream(), or a socket of its own. */
  readonly open: () => void;
}

export class DialLoop {
  state: DialState = 'idle';
  /** the link was ready once since the plugin was built */
  everConnected = false;
  private dialTimer: NodeJS.Timeout | undefined;
  private writeTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private outageTold = false;
  private stopped = false;

  constructor(private readonly opts: DialLoopOptions) {}

  /** Starts an attempt when idle (not while connecting, ready or waiting to redial, nor once stopped). */
  dial(): void {
    if (this.state !== 'idle' || this.stopped) return;
    this.state = 'connecting';
    this.opts.open();
  }

  /**
   * A TCP (or TLS) socket for the attempt under way, cut when not ready() within the dial
   * timeout. On 'close' the loop is idle again and `onClose` gets the first error's message and
   * whether the connection had been ready.
   */
  connectStream(onClose: (failure: string | undefined, wasReady: boolean) => void): Socket {
    const { host, port, tls, dialTimeoutMs } = this.opts;
    // node:tls is loaded by the first TLS dial: a plain link's worker never holds it (~1.8 MiB of RSS)
    const s = tls ? process.getBuiltinModule('node:tls').connect({ ...tls, host, port }) : netConnect({ host, port });
    let failure: string | undefined;
    this.dialTimer = setTimeout(() => s.destroy(new Error(`${this.opts.missing} within dial_timeout_ms (${dialTimeoutMs} ms)`)), dialTimeoutMs);
    s.setNoDelay(true);
    s.on('drain', () => {
      clearTimeout(this.writeTimer);
      this.writeTimer = undefined;
    });
    s.on('error', (err) => {
      failure ??= errorMessage(err);
    });
    s.on('close', () => onClose(failure, this.closed()));
    return s;
  }

  /** The attempt is through: the backoff and the outage start over. */
  ready(): void {
    clearTimeout(this.dialTimer);
    this.state = 'ready';
    this.everConnected = true;
    this.outageTold = false;
    this.opts.backoff.reset();
  }

  /** After a write that returned false: `socket` is cut unless it drains within the write timeout. */
  watchWrite(socket: Socket): void {
    if (this.writeTimer) return;
    this.writeTimer = setTimeout(() => socket.destroy(new Error(`write timeout after ${this.opts.writeTimeoutMs} ms`)), this.opts.writeTimeoutMs);
  }

  /** The connection or attempt is gone: timers cleared, idle again; true when it had been ready. */
  closed(): boolean {
    clearTimeout(this.dialTimer);
    clearTimeout(this.writeTimer);
    this.writeTimer = undefined;
    const wasReady = this.state === 'ready';
    if (this.state !== 'waiting') this.state = 'idle';
    return wasReady;
  }

  /** Whether this failure is the first of its outage (to be told at WARN); never while closing. */
  firstOfOutage(closing: boolean): boolean {
    if (this.outageTold || closing) return false;
    this.outageTold = true;
    return true;
  }

  /** Dials again after the backoff's next delay, counted in `reconnects`; once at a time, never once stopped. */
  redial(): void {
    if (this.retryTimer || this.stopped) return;
    this.opts.counters.reconnects++;
    this.state = 'waiting';
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.state = 'idle';
      this.dial();
    }, this.opts.backoff.next());
  }

  /** No more dialling: a pending redial is dropped. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
  }
}
