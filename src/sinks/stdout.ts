// `stdout` sink: whole lines only; on a pipe or FIFO each write is at most PIPE_BUF (4096) bytes,
// which the kernel writes atomically, so several workers sharing stdout never tear a line.

import { fstatSync } from 'node:fs';
import { chunkLines, PIPE_BUF } from '../core/lines.js';
import { pluginConfig, SINK_QUEUE_FIELDS } from '../core/plugin-config.js';
import type { OnFull, Sink, SinkFactory } from './types.js';

const CHUNK = 65536;

interface StdoutConfig {
  readonly target: 'stdout' | 'stderr';
  readonly buffer_size: number;
  readonly on_full: OnFull;
}

export const createStdoutSink: SinkFactory = (plugin): Sink => {
  const cfg = pluginConfig<StdoutConfig>('sink', plugin, {
    target: { t: 'string', def: 'stdout', oneOf: ['stdout', 'stderr'] },
    ...SINK_QUEUE_FIELDS,
  });
  const stream = cfg.target === 'stdout' ? process.stdout : process.stderr;
  let limit = CHUNK;
  /** the latest lines written, as many as the bytes the stream still buffers cover */
  let unflushed: string[] = [];
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
    counters: {},
    bufferSize: cfg.buffer_size,
    onFull: cfg.on_full,
    async open() {
      const st = fstatSync(cfg.target === 'stdout' ? 1 : 2);
      limit = st.isFIFO() || st.isSocket() ? PIPE_BUF : CHUNK;
    },
    write(batch) {
      let ok = true;
      const lines = batch.map((i) => i.line);
      for (const chunk of chunkLines(lines, limit)) ok = stream.write(chunk) && ok;
      if (stream.writableLength === 0) unflushed = [];
      else {
        unflushed = unflushed.length > 0 ? unflushed.concat(lines) : lines;
        unflushed = unflushed.slice(unflushed.length - buffered());
      }
      if (!ok) return new Promise<void>((resolve) => stream.once('drain', resolve));
    },
    // What the stream still buffers is lost when the worker exits, so a cut drain counts it.
    held: buffered,
    async close() {},
  };
};
