// The one interface through which sources use a disk buffer (DESIGN.md §23): `withBuffer` builds
// a source with its factory, and when its `buffer.type` is "disk" puts the buffer between it and
// the pipeline. The source's emit() appends (its `done`, the sender's acknowledgement, runs after
// the sync that covers it); its isSaturated() says whether the buffer stops taking; the
// pipeline's pause/resume reach the buffer's reader, never the source. Any source type whose spec
// has BUFFER_FIELDS gets this without a line of its own.

import { join } from 'node:path';
import type { PluginConfig } from '../config/schema.js';
import { checkFields, MiB } from '../config/spec.js';
import type { Entry } from '../core/entry.js';
import { ConfigError, errorMessage, PluginError } from '../core/errors.js';
import type { Source, SourceContext, SourceFactory, SourcePositions } from '../core/source.js';
import { BUFFER_FIELDS, BUFFER_POSITION_KEY, type BufferConfig, wantsDiskBuffer } from './config.js';

export { wantsDiskBuffer };
import { type BufferCounters, bufferCounters, DiskBuffer } from './disk-buffer.js';

/** How long a buffer that cannot be opened waits before the next attempt, ms. */
const OPEN_RETRY_MS = 1000;
/** WARN `Disk buffer full` at most this often while it fills up again and again, ms. */
const FULL_LOG_INTERVAL_MS = 60_000;

export interface BufferHost {
  /** `data_dir`; empty: none (a disk buffer is then a configuration error) */
  readonly dataDir: string;
  /** `node_name`, part of the ids the buffer stamps */
  readonly node: string;
  /** most entries read from the buffer and not yet done: what the pipeline's queues hold */
  readonly window: number;
}

/** The directory of one source's disk buffer. */
export function bufferDir(dataDir: string, pipeline: string, source: string): string {
  return join(dataDir, 'buffers', pipeline, source);
}

/** Builds the source with `factory`; with a disk buffer, wrapped by it. */
export function withBuffer(factory: SourceFactory, plugin: PluginConfig, ctx: SourceContext, host: BufferHost): Source {
  if (!wantsDiskBuffer(plugin)) return factory(plugin, ctx);
  // emit() and isSaturated() are handed to the factory before the buffer and the source exist
  const at: { buffer?: DiskBuffer; source?: Source; cfg?: BufferConfig; counters: BufferCounters } = { counters: bufferCounters() };
  /**
   * The source stops taking: a buffer not open yet, failing, full with when_full = "block", or
   * behind its syncs. The last only for a source whose senders wait on no acknowledgement
   * (syslog, stdin), where nothing else bounds what waits for a sync; a chain or OTLP sender's
   * window bounds it already (and a saturated http source answers 503, which a short wait for a
   * sync must not cause).
   */
  const blocking = () => {
    const b = at.buffer;
    return !!b && (!b.opened || b.isFailing || (b.behind && !at.source?.acksUpstream) || (b.full && at.cfg?.when_full === 'block'));
  };

  const emit = (entries: Entry[], done?: () => void) => {
    if (entries.length === 0) {
      done?.();
      return;
    }
    const { buffer } = at;
    if (!buffer || buffer.full) {
      if (!buffer || !at.source?.pausable || (at.cfg?.when_full === 'drop_newest' && !buffer.isFailing)) {
        at.counters.dropped_buffer_full += entries.length;
        done?.();
        return;
      }
      // block: what one read brought still goes in; the source is paused now (onState)
    }
    buffer.append(entries, Date.now(), done);
  };
  const saturationReason = () => {
    const b = at.buffer;
    if (b && !b.opened) return 'disk buffer opening';
    if (!b?.full) return undefined;
    return b.isFailing ? 'disk buffer cannot write' : 'disk buffer full';
  };
  // entries go into the buffer: none is carried past it as a frame
  const source = factory(plugin, { ...ctx, emit, isSaturated: blocking, saturationReason, frames: undefined });
  at.source = source;
  const table = checkBuffer(plugin);
  at.cfg = table;
  if (!host.dataDir) throw new PluginError('source', plugin.id, 'buffer.type', 'a disk buffer needs data_dir (the top-level key) to be set');
  // the source's counters object is the one shipped: the buffer counts into it
  Object.assign(source.counters, at.counters);
  const shared = source.counters as unknown as BufferCounters;
  at.counters = shared;
  if (ctx.checkOnly) return source;

  const dir = bufferDir(host.dataDir, ctx.pipeline, plugin.id);
  const buffer = new DiskBuffer({
    dir,
    segmentBytes: Math.round(table.segment_size_bytes),
    maxBytes: Math.round(table.max_size_bytes),
    log: ctx.log,
    counters: shared,
    node: host.node,
    pipeline: ctx.pipeline,
    source: plugin.id,
  });
  at.buffer = buffer;
  let handed = 0;
  let stopping = false;
  let started = false;
  let fullLoggedAt = 0;
  buffer.onState = () => {
    // a full buffer is told (a failing one logs its own ERROR): senders are refused or entries dropped meanwhile
    if (buffer.full && !buffer.isFailing && Date.now() - fullLoggedAt >= FULL_LOG_INTERVAL_MS) {
      fullLoggedAt = Date.now();
      ctx.log.warn({ dir, max_size_mb: table.max_size_bytes / MiB, when_full: table.when_full }, 'Disk buffer full');
    }
    if (stopping || !started) return;
    if (blocking()) source.pause?.();
    else source.resume?.();
  };

  const openBuffer = async (positions: SourcePositions, since: number) => {
    for (;;) {
      try {
        await buffer.open(handed);
        break;
      } catch (err) {
        if (stopping) return;
        shared.buffer_failing = 1;
        shared.buffer_write_errors++;
        ctx.log.error({ dir, error: errorMessage(err) }, 'Disk buffer write failed');
        await new Promise((r) => setTimeout(r, OPEN_RETRY_MS));
      }
    }
    shared.buffer_failing = 0;
    if (stopping) return;
    started = true;
    source.start(positions, since);
    buffer.startReading((entries, done) => ctx.emit(entries, done), host.window);
  };

  return {
    id: source.id,
    type: source.type,
    counters: source.counters,
    // the reader pauses: the source itself stops only when the buffer is full
    pausable: true,
    // the reader's window waits on what it emitted: the pipeline pumps right after each batch, so
    // a reader that keeps up takes each append from the cache in the turn it was written
    acksUpstream: true,
    open: source.open?.bind(source),
    start(positions, since) {
      handed = positions[BUFFER_POSITION_KEY]?.offset ?? 0;
      void openBuffer(positions, since);
    },
    pause: () => buffer.pause(),
    resume: () => buffer.resume(),
    async stop(deadline = Date.now()) {
      stopping = true;
      await source.stop(deadline);
      await buffer.close(deadline);
    },
    positions() {
      return { ...source.positions?.(), [BUFFER_POSITION_KEY]: { inode: 0, offset: buffer.opened ? buffer.acked : handed } };
    },
    kept: () => buffer.inFlight,
    checkpointed(positions) {
      buffer.saved(positions[BUFFER_POSITION_KEY]?.offset);
    },
  };
}

/** The `buffer` table, checked (the factory checked its keys already; this adds the cross-key rule). */
function checkBuffer(plugin: PluginConfig): BufferConfig {
  let cfg: BufferConfig;
  try {
    cfg = checkFields((BUFFER_FIELDS.buffer as { fields: typeof BUFFER_FIELDS }).fields, (plugin.config as Record<string, unknown>).buffer, 'buffer') as unknown as BufferConfig;
  } catch (err) {
    if (err instanceof ConfigError) throw new PluginError('source', plugin.id, err.path, err.message.slice(err.path.length + 2));
    throw err;
  }
  if (cfg.max_size_bytes < 2 * cfg.segment_size_bytes) {
    // quoted in MiB as the operator wrote them (bytes / MiB is exact)
    throw new PluginError('source', plugin.id, 'buffer.max_size_mb', `must be at least two segments (2 × segment_size_mb = ${(2 * cfg.segment_size_bytes) / MiB}), got ${cfg.max_size_bytes / MiB}`);
  }
  return cfg;
}
