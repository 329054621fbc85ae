// The worker's log destination: pino lines batched into few `log` IPC messages
// (a debug flood must not become one message per record). The primary is the only writer.
// When the primary falls behind (its own output blocked), lines are dropped and counted here
// rather than queued in the IPC channel without bound; one WARN line says how many.

import type { DestinationStream } from 'pino';
import { isoNow } from '../core/log.js';

const MAX_LINES = 500;
const FLUSH_MS = 50;
/** `log` messages handed to the channel but not yet written out; past it, lines are dropped. */
const MAX_IN_FLIGHT = 20;

export class IpcLogStream implements DestinationStream {
  private lines: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  private inFlight = 0;
  /** lines dropped since the last report */
  private dropped = 0;

  write(line: string): void {
    if (this.inFlight >= MAX_IN_FLIGHT) {
      this.dropped++;
      return;
    }
    this.lines.push(line.endsWith('\n') ? line.slice(0, -1) : line);
    if (this.lines.length >= MAX_LINES) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  /** Sends what is buffered; `done` runs once the message has been handed to the channel. */
  flush(done?: () => void): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.dropped > 0 && this.inFlight < MAX_IN_FLIGHT) {
      // the same shape as the worker's pino records (see core/log.ts)
      this.lines.push(
        JSON.stringify({ level: 'warn', time: isoNow(), dropped: this.dropped, msg: 'Service log lines dropped, the primary fell behind' }),
      );
      this.dropped = 0;
    }
    if (this.lines.length === 0 || !process.connected) {
      done?.();
      return;
    }
    const lines = this.lines;
    this.lines = [];
    this.inFlight++;
    process.send!({ type: 'log', lines }, undefined, {}, () => {
      this.inFlight--;
      if (this.dropped > 0 && this.inFlight === 0) this.timer ??= setTimeout(() => this.flush(), FLUSH_MS);
      done?.();
    });
  }
}
