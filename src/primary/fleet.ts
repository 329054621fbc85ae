// The fleet view's table (DESIGN.md §26): the latest report of every node this node hears of,
// by node name, in the order they were last heard of. Bounded by `max_nodes` (the node heard of
// longest ago is forgotten, counted) and by `forget_after_ms` (a node silent that long is gone
// and removed, counted).

import type { FleetConfig } from '../config/schema.js';
import { isoTime } from '../core/entry-json.js';
import { lagOf, type NodeReport } from '../core/node-report.js';

/** `live`: reported within 3 of its intervals; `silent`: not since; `gone`: not within forget_after_ms (then removed). */
export type FleetState = 'live' | 'silent' | 'gone';
export const FLEET_STATES: readonly FleetState[] = ['live', 'silent', 'gone'];

/** Intervals without a report after which a node is silent. */
export const SILENT_AFTER_INTERVALS = 3;

interface Known {
  readonly report: NodeReport;
  /** when its latest report arrived here, epoch ms (this node's clock, not the sender's) */
  readonly lastSeen: number;
}

/** A node as `/fleet` shows it. */
export interface FleetNode {
  readonly node: string;
  readonly state: FleetState;
  /** RFC 3339 */
  readonly last_seen: string;
  readonly via: readonly string[];
  readonly report: NodeReport;
}

/** What the metrics read of the table. */
export interface FleetSample {
  readonly states: Readonly<Record<FleetState, number>>;
  /** per node: last seen (epoch seconds) and lag bytes */
  readonly nodes: ReadonlyArray<{ readonly node: string; readonly lastSeenSeconds: number; readonly lagBytes: number }>;
  readonly forgotten: Readonly<Record<ForgetReason, number>>;
}

export type ForgetReason = 'max_nodes' | 'forget_after';

export class FleetTable {
  private readonly nodes = new Map<string, Known>();
  /** nodes removed, by why: cumulative */
  readonly forgotten: Record<ForgetReason, number> = { max_nodes: 0, forget_after: 0 };

  constructor(private readonly cfg: FleetConfig) {}

  get size(): number {
    return this.nodes.size;
  }

  /** Keeps `report` as its node's latest, heard of at `now`. */
  take(report: NodeReport, now: number): void {
    // last heard of goes last: the first in the map is the one heard of longest ago
    this.nodes.delete(report.node);
    this.nodes.set(report.node, { report, lastSeen: now });
    if (this.nodes.size > this.cfg.max_nodes) {
      const oldest = this.nodes.keys().next().value as string;
      this.nodes.delete(oldest);
      this.forgotten.max_nodes++;
    }
  }

  private stateOf(k: Known, now: number): FleetState {
    const since = now - k.lastSeen;
    if (since > this.cfg.forget_after_ms) return 'gone';
    return since > SILENT_AFTER_INTERVALS * k.report.interval_ms ? 'silent' : 'live';
  }

  /** Removes the nodes gone at `now` (counted): the oldest come first, so the sweep stops at the first not gone. */
  sweep(now: number): void {
    for (const [node, k] of this.nodes) {
      if (now - k.lastSeen <= this.cfg.forget_after_ms) break;
      this.nodes.delete(node);
      this.forgotten.forget_after++;
    }
  }

  /** Every node, most recently heard of first. */
  view(now: number): FleetNode[] {
    const out: FleetNode[] = [];
    for (const [node, k] of this.nodes) {
      out.push({ node, state: this.stateOf(k, now), last_seen: isoTime(k.lastSeen), via: k.report.via, report: k.report });
    }
    return out.reverse();
  }

  sample(now: number): FleetSample {
    const states: Record<FleetState, number> = { live: 0, silent: 0, gone: 0 };
    const nodes: { node: string; lastSeenSeconds: number; lagBytes: number }[] = [];
    for (const [node, k] of this.nodes) {
      states[this.stateOf(k, now)]++;
      nodes.push({ node, lastSeenSeconds: k.lastSeen / 1000, lagBytes: lagOf(k.report) });
    }
    return { states, nodes, forgotten: { ...this.forgotten } };
  }
}
