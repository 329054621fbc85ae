// What a built pipeline offers the worker (and `check`): the Pipeline interface, the options it is
// built with, and the error that lists every fault a build found. pipeline.ts assembles one.

import type { Logger } from '../core/log.js';
import type { NodeReport } from '../core/node-report.js';
import type { PipelineCounters } from '../core/counters.js';
import type { DedupWindow } from '../flow/dedup.js';
import type { PipelinePositions } from '../ipc/messages.js';
import type { Sink } from '../sinks/types.js';
import type { Source } from '../sources/types.js';

/** Every fault found while building, each as `failed to create …` or a flow key path. */
export class BuildError extends Error {
  constructor(readonly errors: readonly string[]) {
    super(errors.join('; '));
    this.name = 'BuildError';
  }
}

export interface BuildOptions {
  readonly log: Logger;
  readonly checkOnly: boolean;
  /** level is debug: the filter stage logs its per-entry lines */
  readonly debug: boolean;
  /** `node_name`: part of entry ids, the default `node` of chain sinks */
  readonly node: string;
  /** `data_dir`, where disk buffers live (DESIGN.md §23); empty or absent: none */
  readonly dataDir?: string;
  /** `report_interval_ms` > 0: chain sinks offer and send node reports */
  readonly reports?: boolean;
  /** where node reports received by chain sources go (the worker passes them to the primary) */
  readonly onReport?: (report: NodeReport) => void;
}

export interface Pipeline {
  readonly name: string;
  readonly sources: readonly Source[];
  readonly sinks: readonly Sink[];
  /** Build step: bind listeners, open files. */
  open(): Promise<void>;
  /** `since`: per source id, when its run began (see the `start` message) */
  start(positions: PipelinePositions, since: Readonly<Record<string, number>>, dedup?: DedupWindow): void;
  /** Sources stop, queues drain, sinks close, all within `timeoutMs`; returns the entries abandoned. */
  stop(timeoutMs: number): Promise<number>;
  counters(): PipelineCounters;
  positions(): PipelinePositions;
  /** dedup ids whose entries are done since the last call (for the primary's copy of the window) */
  doneIds(): DedupWindow | undefined;
  /** The checkpoint saved these positions (disk buffers delete the segments they passed). */
  checkpointed(positions: PipelinePositions): void;
  /** Node reports to send upstream: every chain sink sends them (never as entries). */
  report(reports: readonly NodeReport[]): void;
}
