// The worker's log destination: pino lines batched into few `log` IPC messages
// (a debug flood must not become one message per record). The primary is the only writer.

import type { DestinationStream } from 'pino';

const MAX_LINES = 500;
const FLUSH_MS = 50;

export class IpcLogStream implements DestinationStream {
  private lines: string[] = [];
  private timer: NodeJS.Timeout | undefined;

  write(line: string): void {
    this.lines.push(line.endsWith('\n') ? line.slice(0, -1) : line);
    if (this.lines.length >= MAX_LINES) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  /** Sends what is buffered; `done` runs once the message has been handed to the channel. */
  flush(done?: () => void): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.lines.length === 0 || !process.connected) {
      done?.();
      return;
    }
    const lines = this.lines;
    this.lines = [];
    process.send!({ type: 'log', lines }, undefined, {}, () => done?.());
  }
}
