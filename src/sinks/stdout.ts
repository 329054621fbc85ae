// `stdout` sink: whole lines only; on a pipe or FIFO each write is at most PIPE_BUF (4096) bytes,
// which the kernel writes atomically, so several workers sharing stdout never tear a line.

import { fstatSync } from 'node:fs';
import { chunkLines, PIPE_BUF } from '../core/lines.js';
import { pluginConfig, sinkQueueFields } from '../core/plugin-config.js';
import type { PluginSpec } from '../config/spec.js';
import type { OnFull } from '../core/queue.js';
import type { Sink, SinkFactory } from './types.js';

const CHUNK = 65536;

interface StdoutConfig {
  readonly target: 'stdout' | 'stderr';
  readonly buffer_size: number;
  /** bound of the queue together with what the sink holds unacknowledged, bytes of formatted lines */
  readonly buffer_max_bytes: number;
  readonly on_full: OnFull;
}

export const STDOUT_SINK: PluginSpec = {
  doc: "writes formatted lines to the node's standard output (or error), whole lines only",
  fields: {
    target: { t: 'string', def: 'stdout', oneOf: ['stdout', 'stderr'], doc: 'which standard stream' },
    ...sinkQueueFields('shows'),
  },
};

export const createStdoutSink: SinkFactory = (plugin, ctx): Sink => {
  const cfg = pluginConfig<StdoutConfig>('sink', plugin, STDOUT_SINK.fields);
  const stream = cfg.target === 'stdout' ? process.stdout : process.stderr;
  let limit = CHUNK;
  /** the latest lines written, as many as the bytes the stream still buffers cover */
  let unflushed: string[] = [];
  /** the reader went away (EPIPE) or the stream failed: entries are dropped and counted from then on */
  let failed = false;
  let wakeWriter: (() => void) | undefined;
  /** lines of the write under way not yet handed to the stream (it waits for 'drain') */
  let waiting = 0;
  const counters = { dropped_writes: 0 };
  /** Resolves on the stream's next 'drain' (or when it fails). */
  const drained = () =>
    new Promise<void>((resolve) => {
      const wake = () => {
        wakeWriter = undefined;
        stream.off('drain', wake);
        resolve();
      };
      wakeWriter = wake;
      stream.once('drain', wake);
    });
  /** How many lines at the end of `unflushed` the stream's buffered bytes cover. */
  const buffered = (): number => {
    let bytes = stream.writableLength;
    let n = 0;
    for (let i = unflushed.length - 1; i >= 0 && bytes > 0; i--, n++) bytes -= Buffer.byteLength(unflushed[i]!) + 1;
    return n;
  };
  return {
    id: plugin.id,
    type: 'stdout',
    counters,
    bufferSize: cfg.buffer_size,
    bufferMaxBytes: cfg.buffer_max_bytes,
    onFull: cfg.on_full,
    async open() {
      const st = fstatSync(cfg.target === 'stdout' ? 1 : 2);
      limit = st.isFIFO() || st.isSocket() ? PIPE_BUF : CHUNK;
      // Unhandled, an EPIPE (`| head` exited) would crash the worker again on every restart.
      stream.on('error', (err: NodeJS.ErrnoException) => {
        if (failed) return;
        failed = true;
        counters.dropped_writes += buffered();
        unflushed = [];
        ctx.log.error({ error: err.code ?? err.message }, 'Sink output closed, entries dropped');
        wakeWriter?.();
      });
    },
    write(batch) {
      if (failed) {
        counters.dropped_writes += batch.length;
        return;
      }
      const lines = batch.map((i) => i.line);
      const chunks = chunkLines(lines, limit);
      const track = () => {
        if (stream.writableLength === 0) unflushed = [];
        else {
          unflushed = unflushed.length > 0 ? unflushed.concat(lines) : lines;
          unflushed = unflushed.slice(unflushed.length - buffered());
        }
      };
      // One chunk at a time: chunks queued behind a full pipe are written later in one large
      // write(2), which the kernel may split anywhere, mid-line, letting another process's line
      // in between; a single chunk of at most PIPE_BUF bytes is written whole or not at all.
      let next = 0;
      const linesIn = (chunk: string) => chunk.split('\n').length - 1;
      const writeOn = (): Promise<void> | void => {
        waiting = 0;
        while (next < chunks.length && !failed) {
          const ok = stream.write(chunks[next++]!);
          if (!ok) {
            track();
            for (let k = next; k < chunks.length; k++) waiting += linesIn(chunks[k]!);
            return drained().then(writeOn);
          }
        }
        // the stream failed meanwhile: what was not handed to it is dropped, counted
        for (; next < chunks.length; next++) counters.dropped_writes += linesIn(chunks[next]!);
        track();
      };
      return writeOn();
    },
    // What the stream still buffers is lost when the worker exits, so a cut drain counts it.
    held: () => (failed ? 0 : buffered() + waiting),
    async close() {},
  };
};
