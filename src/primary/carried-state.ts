// What outlives a pipeline's worker, in the primary: the positions its sources reported, when
// each source's run began, and its dedup window. Handed to the next worker of the pipeline
// (reload, crash restart) and written to the checkpoint (DESIGN.md §14, §15).

import type { PipelineConfig } from '../config/schema.js';
import { PackedWindow } from '../core/dedup-window.js';
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

  /** The pipeline's last reported positions; none before its first report. */
  positionsOf(name: string): PipelinePositions {
    return this.positions.get(name) ?? {};
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
    for (const map of [this.positions, this.since, this.windows, this.seenAt]) for (const name of map.keys()) if (!keep(name)) map.delete(name);
  }

  setPositions(name: string, positions: PipelinePositions): void {
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
    for (const [name, positions] of this.positions) {
      pipelines[name] = {
        positions,
        seen_at: this.seenAt.get(name) ?? Date.now(),
        since: this.since.get(name) ?? {},
        dedup: this.windows.get(name)?.set.snapshot(),
      };
    }
    return { version: 1, pipelines };
  }
}
