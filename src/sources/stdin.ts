// `stdin` source: lines from the node's standard input, one batch per chunk read. End of input
// ends the source (its held partial line is emitted), not the process. Pausable.

import type { Entry } from '../core/entry.js';
import { parseLine } from '../core/entry.js';
import { pluginConfig } from '../core/plugin-config.js';
import { BUFFER_FIELDS } from '../buffer/config.js';
import type { PluginSpec } from '../config/spec.js';
import { LineSplitter } from './file.js';
import type { Source, SourceFactory } from './types.js';

/** Longest line kept whole, bytes; longer ones are cut and counted in `truncated_lines`. */
const MAX_LINE_BYTES = 1048576;

export const STDIN_SOURCE: PluginSpec = {
  doc: "reads the node's standard input line by line; at most one in the whole configuration; end of input ends the source, not the process",
  fields: {
    raw: { t: 'boolean', def: false, doc: 'take every line as plain text, never parse JSON lines' },
    ...BUFFER_FIELDS,
  },
};

export const createStdinSource: SourceFactory = (plugin, ctx): Source => {
  const cfg = pluginConfig<{ raw: boolean }>('source', plugin, STDIN_SOURCE.fields);
  const counters = { total_entries: 0, dropped_entries: 0, bytes_read: 0, truncated_lines: 0 };
  const lines = new LineSplitter(MAX_LINE_BYTES);
  const input = process.stdin;
  let started = false;
  let ended = false;

  const emit = (out: string[]) => {
    counters.truncated_lines = lines.truncated;
    if (out.length === 0) return;
    const now = Date.now();
    const batch: Entry[] = new Array(out.length);
    for (let i = 0; i < out.length; i++) batch[i] = parseLine(out[i]!, 'stdin', now, cfg.raw);
    counters.total_entries += batch.length;
    ctx.emit(batch);
  };
  const onData = (chunk: Buffer) => {
    counters.bytes_read += chunk.length;
    const out: string[] = [];
    lines.push(chunk, out);
    emit(out);
  };
  const onEnd = () => {
    if (ended) return;
    ended = true;
    const out: string[] = [];
    lines.flush(out);
    emit(out);
    detach();
  };
  const onError = (err: Error) => {
    ctx.log.warn({ error: err.message }, 'Standard input failed');
    onEnd();
  };
  const detach = () => {
    input.off('data', onData);
    input.off('end', onEnd);
    input.off('error', onError);
    input.pause();
  };

  return {
    id: plugin.id,
    type: 'stdin',
    counters,
    pausable: true,
    start() {
      if (started) return;
      started = true;
      input.on('data', onData);
      input.once('end', onEnd);
      input.on('error', onError);
      if (ctx.isSaturated()) input.pause();
      else input.resume();
    },
    pause() {
      if (started && !ended) input.pause();
    },
    resume() {
      if (started && !ended) input.resume();
    },
    async stop() {
      if (!started || ended) return;
      ended = true;
      detach();
      // a paused stdin still holds the event loop open
      input.unref?.();
      (input as unknown as { destroy?: () => void }).destroy?.();
    },
  };
};
