// The per-client queue of the network sinks (DESIGN.md §7): frames wait here, bounded by
// `client_buffer_size`, while the client's socket takes one chunk at a time. What of a burst
// exceeds the bound is dropped (and counted by the caller); a socket that has not drained within
// the write timeout gets the `onTimeout` call, and the sink disconnects it.

/** What a client queue writes to: a net/TLS socket or an HTTP response. */
export interface FrameWriter {
  write(chunk: string): boolean;
  on(event: 'drain', listener: () => void): unknown;
  removeListener(event: 'drain', listener: () => void): unknown;
}

export interface ClientQueueOptions {
  /** bound, in frames (`client_buffer_size`) */
  readonly capacity: number;
  /** a blocked write that has not drained within this many ms calls `onTimeout`; 0 = never */
  readonly writeTimeoutMs: number;
  readonly onTimeout: () => void;
}

/** Most characters joined into one socket write. */
const CHUNK_CHARS = 64 * 1024;

export class ClientQueue {
  private readonly ring: (string | undefined)[];
  private head = 0;
  private size = 0;
  private blocked = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private waiters: (() => void)[] = [];

  constructor(
    private readonly out: FrameWriter,
    private readonly opts: ClientQueueOptions,
  ) {
    this.ring = new Array<string | undefined>(opts.capacity);
    out.on('drain', this.onDrain);
  }

  /** Frames waiting in the queue (not yet handed to the socket). */
  get length(): number {
    return this.size;
  }

  /** True while the socket has refused a write and not drained yet. */
  get isBlocked(): boolean {
    return this.blocked;
  }

  /**
   * Queues the frames in order and starts writing; the frames beyond the free room are dropped.
   * Returns how many were dropped.
   */
  push(frames: readonly string[]): number {
    if (this.closed) return 0;
    const cap = this.opts.capacity;
    const room = cap - this.size;
    const n = Math.min(room, frames.length);
    let tail = (this.head + this.size) % cap;
    for (let i = 0; i < n; i++) {
      this.ring[tail] = frames[i];
      tail = tail + 1 === cap ? 0 : tail + 1;
    }
    this.size += n;
    this.flush();
    return frames.length - n;
  }

  /** Writes a control frame (a heartbeat) only when the client is idle: nothing queued, not blocked. */
  ping(frame: string): void {
    if (this.closed || this.blocked || this.size > 0) return;
    if (!this.out.write(frame)) this.block();
  }

  /** Resolves once every queued frame was handed to the socket and it is not blocked, or on close. */
  flushed(): Promise<void> {
    if (this.closed || (this.size === 0 && !this.blocked)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Stops writing and forgets the frames; returns how many were forgotten (0 when already closed). */
  close(): number {
    if (this.closed) return 0;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const forgotten = this.size;
    this.ring.fill(undefined);
    this.size = 0;
    this.out.removeListener('drain', this.onDrain);
    this.wake();
    return forgotten;
  }

  private flush(): void {
    const cap = this.opts.capacity;
    while (!this.blocked && this.size > 0 && !this.closed) {
      let chunk = '';
      while (this.size > 0 && chunk.length < CHUNK_CHARS) {
        chunk += this.ring[this.head]!;
        this.ring[this.head] = undefined;
        this.head = this.head + 1 === cap ? 0 : this.head + 1;
        this.size--;
      }
      if (!this.out.write(chunk)) this.block();
    }
    if (!this.blocked && this.size === 0) this.wake();
  }

  private block(): void {
    this.blocked = true;
    if (this.opts.writeTimeoutMs > 0 && !this.timer) this.timer = setTimeout(this.onTimedOut, this.opts.writeTimeoutMs);
  }

  private readonly onDrain = (): void => {
    if (this.closed) return;
    this.blocked = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.flush();
  };

  private readonly onTimedOut = (): void => {
    this.timer = undefined;
    if (!this.closed && this.blocked) this.opts.onTimeout();
  };

  private wake(): void {
    if (this.waiters.length === 0) return;
    const w = this.waiters;
    this.waiters = [];
    for (const resolve of w) resolve();
  }
}
