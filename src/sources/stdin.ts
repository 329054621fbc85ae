// `stdin` source: lines from the node's standard input, one batch per chunk read, grouped into
// multiline entries when asked. End of input ends the source (its held partial line and open
// entry are emitted), not the process. Pausable.

import type { Entry } from '../core/entry.js';
import { pluginConfig } from '../core/plugin-config.js';
import { BUFFER_FIELDS } from '../buffer/config.js';
import type { PluginSpec } from '../config/spec.js';
import type { LineCounters } from '../lines/line.js';
import { MULTILINE_FIELDS, type MultilineConfig, multilineRules } from '../lines/multiline.js';
import { LineReader } from '../lines/reader.js';
import type { Source, SourceFactory } from './types.js';

/** Longest line kept whole, bytes; longer ones are cut and counted in `truncated_lines`. */
const MAX_LINE_BYTES = 1048576;
/** How often open multiline entries are checked for their timeout, ms. */
const EXPIRE_INTERVAL_MS = 100;

export const STDIN_SOURCE: PluginSpec = {
  doc: "reads the node's standard input line by line; at most one in the whole configuration; end of input ends the source, not the process",
  fields: {
    raw: { t: 'boolean', def: false, doc: 'take every line as plain text, never parse JSON lines' },
    multiline: {
      t: 'table',
      optional: true,
      fields: MULTILINE_FIELDS,
      doc: 'joins the lines of a stack trace (or any group) into one entry; the open one is emitted when input ends or the source stops (input cannot be read again)',
    },
    ...BUFFER_FIELDS,
  },
};

export const createStdinSource: SourceFactory = (plugin, ctx): Source => {
  const cfg = pluginConfig<{ raw: boolean; multiline?: MultilineConfig }>('source', plugin, STDIN_SOURCE.fields);
  const multiline = cfg.multiline && multilineRules('source', plugin.id, cfg.multiline, MAX_LINE_BYTES);
  const counters = {
    total_entries: 0,
    dropped_entries: 0,
    bytes_read: 0,
    truncated_lines: 0,
    parse_errors: 0,
    multiline_entries: 0,
    multiline_splits: 0,
    multiline_timeouts: 0,
  } satisfies LineCounters & Record<string, number>;
  const reader = new LineReader(
    { format: 'none', maxLineBytes: MAX_LINE_BYTES, multiline, raw: cfg.raw, name: 'stdin', source: 'stdin', k8s: undefined, node: undefined },
    counters,
    { offset: 0, idPrefix: undefined },
  );
  const input = process.stdin;
  let started = false;
  let ended = false;
  let expireTimer: NodeJS.Timeout | undefined;

  const emit = (batch: Entry[]) => {
    if (batch.length === 0) return;
    counters.total_entries += batch.length;
    ctx.emit(batch);
  };
  /** Emits the held partial line and the open entries. */
  const flush = () => {
    const batch: Entry[] = [];
    reader.flush(batch);
    emit(batch);
  };
  const expire = () => {
    const batch: Entry[] = [];
    reader.expire(batch);
    emit(batch);
  };
  const onData = (chunk: Buffer) => {
    counters.bytes_read += chunk.length;
    const batch: Entry[] = [];
    reader.push(chunk, batch);
    emit(batch);
  };
  const onEnd = () => {
    if (ended) return;
    ended = true;
    flush();
    detach();
  };
  const onError = (err: Error) => {
    ctx.log.warn({ error: err.message }, 'Standard input failed');
    onEnd();
  };
  const detach = () => {
    if (expireTimer) clearInterval(expireTimer);
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
      if (multiline) expireTimer = setInterval(expire, EXPIRE_INTERVAL_MS).unref();
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
      // what was read cannot be read again by a successor: the open entry goes now
      flush();
      detach();
      // a paused stdin still holds the event loop open
      input.unref?.();
      (input as unknown as { destroy?: () => void }).destroy?.();
    },
  };
};
