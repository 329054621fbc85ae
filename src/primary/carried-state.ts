// What outlives a pipeline's worker, in the primary: the positions its sources reported, when
// each source's run began, and its dedup window. Handed to the next worker of the pipeline
// (reload, crash restart) and written to the checkpoint (DESIGN.md §14, §15).

import { BUFFER_POSITION_KEY } from '../buffer/config.js';
import type { PipelineConfig } from '../config/schema.js';
import { PackedWindow } from '../core/dedup-window.js';
import type { FilePosition } from '../core/positions.js';
import type { PipelinePositions } from '../ipc/messages.js';
import type { CheckpointState, PipelineCheckpoint } from './checkpoint.js';

export class CarriedState {
  /** last reported file positions by pipeline name; the primary's memory only */
  private readonly positions = new Map<string, PipelinePositions>();
  /**
   * per pipeline name, per source id: when the source's run began (kept over reloads and
   * restarts while its configuration stays the same) and that configuration
   */
  private readonly since = new Map<string, Record<string, { readonly at: number; readonly config: string }>>();
  /**
   * per pipeline name with dedup on: the ids whose entries its workers reported done, handed to
   * the next worker (reload, crash restart) and checkpointed
   */
  private readonly windows = new Map<string, { readonly key: string; readonly set: PackedWindow }>();
  /** per pipeline name: when its positions were last reported (checkpoint TTL) */
  private readonly seenAt = new Map<string, number>();
  /**
   * per pipeline name, per source id: the acknowledged sequence of a disk buffer that is no
   * longer configured (buffer removed, source renamed or removed, pipeline removed). Its
   * directory is kept with what it still holds; the position is kept with it, in the checkpoint
   * too, so a disk buffer configured there again resumes where it stopped.
   */
  private readonly keptBuffers = new Map<string, Record<string, FilePosition>>();

  /** The pipeline's last reported positions, with its kept disk buffers'; none before its first report. */
  positionsOf(name: string): PipelinePositions {
    const positions = this.positions.get(name) ?? {};
    const kept = this.keptBuffers.get(name);
    if (!kept) return positions;
    const all = { ...positions };
    for (const [id, at] of Object.entries(kept)) all[id] = { ...all[id], [BUFFER_POSITION_KEY]: at };
    return all;
  }

  /** The disk buffer positions of `before` that `after` no longer reports go to the kept ones. */
  private keepBuffers(name: string, before: PipelinePositions | undefined, after: PipelinePositions): void {
    let kept = this.keptBuffers.get(name);
    if (kept) for (const id of Object.keys(kept)) if (after[id]?.[BUFFER_POSITION_KEY]) delete kept[id];
    if (before) {
      for (const [id, sp] of Object.entries(before)) {
        const at = sp[BUFFER_POSITION_KEY];
        if (!at || after[id]?.[BUFFER_POSITION_KEY]) continue;
        kept ??= {};
        kept[id] = at;
      }
    }
    if (kept && Object.keys(kept).length > 0) this.keptBuffers.set(name, kept);
    else this.keptBuffers.delete(name);
  }

  /** Per source id, when its run began, for a worker of `pipeline` starting at `now` (epoch ms). */
  runStarts(pipeline: PipelineConfig, now: number): Record<string, number> {
    // A source that ran unchanged in the predecessor keeps its start time; a new or changed one
    // (another directory or pattern sees other files: those are not new) starts now.
    const before = this.since.get(pipeline.name) ?? {};
    const runs: Record<string, { at: number; config: string }> = {};
    const since: Record<string, number> = {};
    for (const s of pipeline.plugin_sources) {
      const config = JSON.stringify([s.type, s.config]);
      const was = before[s.id];
      runs[s.id] = was?.config === config ? was : { at: now, config };
      since[s.id] = runs[s.id]!.at;
    }
    this.since.set(pipeline.name, runs);
    return since;
  }

  /** Forgets the pipelines `keep` says no to (gone from the configuration). */
  keepOnly(keep: (name: string) => boolean): void {
    // a removed pipeline's disk buffers stay on disk, and so do their positions
    for (const name of this.positions.keys()) if (!keep(name)) this.keepBuffers(name, this.positions.get(name), {});
    for (const map of [this.positions, this.since, this.windows, this.seenAt]) for (const name of map.keys()) if (!keep(name)) map.delete(name);
  }

  setPositions(name: string, positions: PipelinePositions): void {
    this.keepBuffers(name, this.positions.get(name), positions);
    this.positions.set(name, positions);
    this.seenAt.set(name, Date.now());
  }

  /** The primary's copy of a pipeline's dedup window; a changed window size starts a new one from the old ids. */
  windowFor(pipeline: PipelineConfig): PackedWindow | undefined {
    const dedup = pipeline.flow.dedup;
    if (!dedup?.enabled) return undefined;
    const key = `${dedup.window_entries}/${dedup.window_ms}`;
    const had = this.windows.get(pipeline.name);
    if (had?.key === key) return had.set;
    const set = new PackedWindow(dedup.window_entries, dedup.window_ms);
    if (had) set.load(had.set.snapshot());
    this.windows.set(pipeline.name, { key, set });
    return set;
  }

  /** Takes over what a checkpoint kept (DESIGN.md §15): positions, run starts, dedup windows. */
  restore(state: CheckpointState, pipelines: readonly PipelineConfig[]): void {
    for (const [name, p] of Object.entries(state.pipelines)) {
      this.positions.set(name, p.positions);
      this.seenAt.set(name, p.seen_at);
      this.since.set(name, { ...p.since });
      if (p.dedup) {
        const cfg = pipelines.find((c) => c.name === name);
        const set = cfg ? this.windowFor(cfg) : undefined;
        set?.load(p.dedup);
      }
    }
  }

  /** What a checkpoint keeps, now. */
  checkpointState(): CheckpointState {
    const pipelines: Record<string, PipelineCheckpoint> = {};
    for (const name of new Set([...this.positions.keys(), ...this.keptBuffers.keys()])) {
      pipelines[name] = {
        positions: this.positionsOf(name),
        seen_at: this.seenAt.get(name) ?? Date.now(),
        since: this.since.get(name) ?? {},
        dedup: this.windows.get(name)?.set.snapshot(),
      };
    }
    return { version: 1, pipelines };
  }
}
