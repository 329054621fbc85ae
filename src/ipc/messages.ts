// The tagged IPC messages between the primary and a pipeline worker: one union per direction,
// shared by both sides, with guards. Never a message per entry.

import type { LogLevel, PipelineConfig } from '../config/schema.js';
import type { PipelineCounters } from '../core/counters.js';
import type { DedupWindow } from '../core/dedup-window.js';
import type { NodeReport } from '../core/node-report.js';
import type { SourcePositions } from '../core/positions.js';

/** Positions of a whole pipeline: source id → file path → position. */
export type PipelinePositions = Record<string, SourcePositions>;

/** What the admin endpoint shows beside the counters (DESIGN.md §16), sampled with each `stats`. */
export interface WorkerGauges {
  /** the worker's resident set size, bytes */
  readonly rss_bytes: number;
  /** per plugin id: the earliest notAfter among its certificates, epoch seconds */
  readonly cert_expiry_seconds: Readonly<Record<string, number>>;
  /** per file source id: bytes in its files not yet read */
  readonly file_lag_bytes: Readonly<Record<string, number>>;
}

export type ToWorker =
  | {
      readonly type: 'build';
      readonly generation: number;
      readonly pipeline: PipelineConfig;
      readonly level: LogLevel | 'silent';
      /** `node_name` */
      readonly node: string;
      /** `data_dir` as the node started with it (disk buffers, DESIGN.md §23); empty: none */
      readonly data_dir?: string;
      /** `report_interval_ms` > 0: chain sinks offer and send node reports */
      readonly reports?: boolean;
    }
  /**
   * `since`: per source id, when that source's run began (epoch ms): the first start of the
   * pipeline it belongs to, carried over reloads and crash restarts, so a file born in a handover
   * counts as new to the successor as it would have to its predecessor.
   */
  | {
      readonly type: 'start';
      readonly positions: PipelinePositions;
      readonly since: Readonly<Record<string, number>>;
      /** the dedup window the predecessor (or the checkpoint) left */
      readonly dedup?: DedupWindow;
    }
  | { readonly type: 'stop'; readonly timeout_ms: number }
  /** the checkpoint now holds these positions of the pipeline (what a disk buffer may delete) */
  | { readonly type: 'checkpointed'; readonly positions: PipelinePositions }
  /** node reports for the chain sinks to send upstream: once per interval, and what was forwarded meanwhile */
  | { readonly type: 'reports'; readonly reports: readonly NodeReport[] };

export type FromWorker =
  /** the worker is listening for orders (messages sent earlier could be lost while its module loads) */
  | { readonly type: 'ready' }
  | { readonly type: 'built' }
  /** `unavailable`: a resource the configuration names is not available (address in use), not a configuration fault */
  | { readonly type: 'build_failed'; readonly error: string; readonly unavailable: boolean }
  /** `dedup`: ids whose entries were done since the last message (DESIGN.md §14) */
  | {
      readonly type: 'stats';
      readonly counters: PipelineCounters;
      readonly positions: PipelinePositions;
      readonly gauges: WorkerGauges;
      readonly dedup?: DedupWindow;
    }
  | { readonly type: 'log'; readonly lines: readonly string[] }
  /** node reports the chain sources received since the last such message (coalesced, never one per entry) */
  | { readonly type: 'reports'; readonly reports: readonly NodeReport[] }
  | {
      readonly type: 'stopped';
      readonly abandoned: number;
      readonly counters: PipelineCounters;
      readonly positions: PipelinePositions;
      readonly dedup?: DedupWindow;
    };

const TO_WORKER = new Set<ToWorker['type']>(['build', 'start', 'stop', 'checkpointed', 'reports']);
const FROM_WORKER = new Set<FromWorker['type']>(['ready', 'built', 'build_failed', 'stats', 'log', 'stopped', 'reports']);

function tagged(msg: unknown): msg is { type: string } {
  return typeof msg === 'object' && msg !== null && typeof (msg as { type?: unknown }).type === 'string';
}

export function isToWorker(msg: unknown): msg is ToWorker {
  return tagged(msg) && TO_WORKER.has(msg.type as ToWorker['type']);
}

export function isFromWorker(msg: unknown): msg is FromWorker {
  return tagged(msg) && FROM_WORKER.has(msg.type as FromWorker['type']);
}
