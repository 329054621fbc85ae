// `/metrics` (DESIGN.md §16): the Prometheus families made with prom-client from the node status,
// on a registry of our own. Each family's collect() reads the status taken for the scrape, so
// the values are those `/status` shows. Labels only pipeline, component, type, reason (and
// build_info's version and node, reloads' result): never a path, a peer or a client.

import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { FLEET_STATES, type FleetSample } from './fleet.js';
import type { NodeStatus, PipelineStatus } from './node-status.js';

export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
/** How long a rendered exposition serves scrapes whose status is unchanged, ms (process_* may be this old). */
const RENDER_REUSE_MS = 1000;

type Labels = Record<string, string>;
/** One sample of a family: its labels and value. */
type Sample = readonly [Labels, number];
/** `fleet`: the fleet table's figures, on a node with the fleet view on (DESIGN.md §26). */
type Sampler = (status: NodeStatus, fleet: FleetSample | undefined) => Iterable<Sample>;

/** For each pipeline, the samples `each` gives, labelled with the pipeline. */
const perPipeline =
  (each: (p: PipelineStatus) => Iterable<Sample>): Sampler =>
  function* (status) {
    for (const [pipeline, p] of Object.entries(status.pipelines)) {
      for (const [labels, value] of each(p)) yield [{ pipeline, ...labels }, value];
    }
  };

/** One sample per component (source and sink) that has `key` among its counters. */
const perComponent = (key: string | readonly string[], kinds: readonly ('sources' | 'sinks')[] = ['sources', 'sinks'], withType = false): Sampler =>
  perPipeline(function* (p): Generator<Sample> {
    const keys = typeof key === 'string' ? [key] : key;
    for (const kind of kinds) {
      for (const [component, c] of Object.entries(p.counters[kind])) {
        const k = keys.find((name) => c[name] !== undefined);
        if (k === undefined) continue;
        const labels: Labels = withType ? { component, type: p.types[kind][component] ?? '' } : { component };
        yield [labels, c[k]!];
      }
    }
  });

const REJECT_REASONS: readonly (readonly [string, readonly string[]])[] = [
  ['max_connections', ['rejected_conns', 'rejected_clients']],
  ['auth', ['auth_rejected']],
  ['tls', ['tls_handshake_errors']],
];

interface Family {
  readonly name: string;
  readonly help: string;
  readonly kind: 'counter' | 'gauge';
  readonly labels: readonly string[];
  readonly samples: Sampler;
}

const FAMILIES: readonly Family[] = [
  {
    name: 'logrelay_build_info',
    help: 'Always 1; the labels name the version and the node.',
    kind: 'gauge',
    labels: ['version', 'node'],
    samples: (s) => [[{ version: s.version, node: s.node }, 1]],
  },
  { name: 'logrelay_config_generation', help: 'Generation of the configuration in force.', kind: 'gauge', labels: [], samples: (s) => [[{}, s.generation]] },
  {
    name: 'logrelay_reloads_total',
    help: 'Reloads by result (ok: the new configuration is in force; failed: the old one kept running).',
    kind: 'counter',
    labels: ['result'],
    samples: (s) => [
      [{ result: 'ok' }, s.reloads.ok],
      [{ result: 'failed' }, s.reloads.failed],
    ],
  },
  {
    name: 'logrelay_pipeline_up',
    help: '1 while the pipeline runs, 0 otherwise.',
    kind: 'gauge',
    labels: ['pipeline'],
    samples: perPipeline((p) => [[{}, p.state === 'running' || p.state === 'buffer_error' ? 1 : 0]]),
  },
  { name: 'logrelay_pipeline_restarts_total', help: 'Crash restarts of the pipeline process.', kind: 'counter', labels: ['pipeline'], samples: perPipeline((p) => [[{}, p.restarts]]) },
  {
    name: 'logrelay_pipeline_resident_memory_bytes',
    help: 'Resident memory of the pipeline process.',
    kind: 'gauge',
    labels: ['pipeline'],
    samples: perPipeline((p) => (p.resident_memory_bytes === null ? [] : [[{}, p.resident_memory_bytes]])),
  },
  {
    name: 'logrelay_source_entries_total',
    help: 'Entries read by a source.',
    kind: 'counter',
    labels: ['pipeline', 'component', 'type'],
    samples: perComponent('total_entries', ['sources'], true),
  },
  {
    name: 'logrelay_sink_entries_total',
    help: 'Entries handed to a sink.',
    kind: 'counter',
    labels: ['pipeline', 'component', 'type'],
    samples: perComponent('total_processed', ['sinks'], true),
  },
  {
    name: 'logrelay_dropped_entries_total',
    help: 'Entries lost, by component and reason.',
    kind: 'counter',
    labels: ['pipeline', 'component', 'reason'],
    samples: perPipeline((p) => p.drops.map((d): Sample => [{ component: d.component, reason: d.reason }, d.count])),
  },
  { name: 'logrelay_filtered_entries_total', help: 'Entries removed by filters (not a loss).', kind: 'counter', labels: ['pipeline'], samples: perPipeline((p) => [[{}, p.filtered_entries]]) },
  {
    name: 'logrelay_duplicates_dropped_total',
    help: 'Duplicate entries suppressed (not a loss).',
    kind: 'counter',
    labels: ['pipeline'],
    samples: perPipeline((p) => [[{}, p.counters.flow.duplicates_dropped ?? 0]]),
  },
  {
    name: 'logrelay_transform_events_total',
    help: 'What each transform step did to entries, by outcome (processed, parse_failed, redacted, dropped, sampled_out, throttled, bad_values).',
    kind: 'counter',
    labels: ['pipeline', 'component', 'outcome'],
    samples: perPipeline(function* (p): Generator<Sample> {
      for (const [component, c] of Object.entries(p.counters.transforms ?? {})) {
        for (const [outcome, value] of Object.entries(c)) yield [{ component, outcome }, value];
      }
    }),
  },
  { name: 'logrelay_parse_errors_total', help: 'Input a source could not parse.', kind: 'counter', labels: ['pipeline', 'component'], samples: perComponent('parse_errors', ['sources']) },
  {
    name: 'logrelay_rejected_connections_total',
    help: 'Connections refused, by reason.',
    kind: 'counter',
    labels: ['pipeline', 'component', 'reason'],
    samples: perPipeline(function* (p): Generator<Sample> {
      for (const kind of ['sources', 'sinks'] as const) {
        for (const [component, c] of Object.entries(p.counters[kind])) {
          for (const [reason, keys] of REJECT_REASONS) {
            const k = keys.find((name) => c[name] !== undefined);
            if (k !== undefined) yield [{ component, reason }, c[k]!];
          }
        }
      }
    }),
  },
  {
    name: 'logrelay_clients',
    help: 'Clients connected to a listening plugin.',
    kind: 'gauge',
    labels: ['pipeline', 'component'],
    samples: perComponent(['active_clients', 'active_connections']),
  },
  // the nats source's link to its server counts among the links, as the nats sink's does
  {
    name: 'logrelay_chain_connected',
    help: '1 while a link (chain, syslog or nats sink, nats source) is connected to its peer.',
    kind: 'gauge',
    labels: ['pipeline', 'component'],
    samples: perComponent('connected'),
  },
  {
    name: 'logrelay_chain_unacked_entries',
    help: 'Entries a link sent (sinks) or received (nats source) whose acknowledgement is still owed.',
    kind: 'gauge',
    labels: ['pipeline', 'component'],
    samples: perComponent('unacked'),
  },
  {
    name: 'logrelay_link_bytes_total',
    help: 'Bytes of chain links: stage "raw" before compression (sinks), "wire" as sent (sinks) or received (sources).',
    kind: 'counter',
    labels: ['pipeline', 'component', 'stage'],
    samples: perPipeline(function* (p): Generator<Sample> {
      for (const kind of ['sources', 'sinks'] as const) {
        for (const [component, c] of Object.entries(p.counters[kind])) {
          if (c.bytes_raw !== undefined) yield [{ component, stage: 'raw' }, c.bytes_raw];
          const wire = c.bytes_sent ?? c.bytes_received;
          if (wire !== undefined) yield [{ component, stage: 'wire' }, wire];
        }
      }
    }),
  },
  { name: 'logrelay_chain_reconnects_total', help: 'Failed or broken links, each followed by a backoff.', kind: 'counter', labels: ['pipeline', 'component'], samples: perComponent('reconnects') },
  {
    name: 'logrelay_chain_retries_total',
    help: 'Requests (http_chain and otlp batches, nats publishes) a link sent again after a failed attempt, connected or not.',
    kind: 'counter',
    labels: ['pipeline', 'component'],
    samples: perComponent('retries', ['sinks']),
  },
  {
    name: 'logrelay_file_lag_bytes',
    help: 'Bytes in a file source\u2019s files not read yet.',
    kind: 'gauge',
    labels: ['pipeline', 'component'],
    samples: perPipeline((p) => Object.entries(p.file_lag_bytes).map(([component, v]): Sample => [{ component }, v])),
  },
  { name: 'logrelay_buffer_bytes', help: 'Bytes of a source\u2019s disk buffer on disk.', kind: 'gauge', labels: ['pipeline', 'component'], samples: perComponent('buffer_bytes', ['sources']) },
  {
    name: 'logrelay_buffer_entries',
    help: 'Entries in a source\u2019s disk buffer not yet acknowledged downstream.',
    kind: 'gauge',
    labels: ['pipeline', 'component'],
    samples: perComponent('buffer_entries', ['sources']),
  },
  {
    name: 'logrelay_buffer_errors_total',
    help: 'Failed writes and syncs of a source\u2019s disk buffer, and corrupt records found in it.',
    kind: 'counter',
    labels: ['pipeline', 'component'],
    samples: perPipeline(function* (p): Generator<Sample> {
      for (const [component, c] of Object.entries(p.counters.sources)) {
        if (c.buffer_bytes !== undefined) yield [{ component }, (c.buffer_write_errors ?? 0) + (c.buffer_corrupt_records ?? 0)];
      }
    }),
  },
  {
    name: 'logrelay_checkpoint_errors_total',
    help: 'Failed checkpoint writes.',
    kind: 'counter',
    labels: ['pipeline'],
    samples: perPipeline((p) => [[{}, p.counters.checkpoint_errors]]),
  },
  {
    name: 'logrelay_tls_certificate_expiry_timestamp_seconds',
    help: 'The earliest notAfter among a plugin\u2019s certificates, Unix seconds.',
    kind: 'gauge',
    labels: ['pipeline', 'component'],
    samples: perPipeline((p) => Object.entries(p.certificate_expiry_seconds).map(([component, v]): Sample => [{ component }, v])),
  },
  // The fleet view (only where it is on): one series per node, bounded by fleet.max_nodes, gone
  // with its node. The `node` label is the one place a name from outside this node is a label.
  {
    name: 'logrelay_fleet_nodes',
    help: 'Nodes in the fleet view, by state (live, silent, gone).',
    kind: 'gauge',
    labels: ['state'],
    samples: (_s, f) => (f ? FLEET_STATES.map((state): Sample => [{ state }, f.states[state]]) : []),
  },
  {
    name: 'logrelay_fleet_node_last_seen_timestamp_seconds',
    help: 'When the fleet view last got a report of the node, Unix seconds (this node\u2019s clock).',
    kind: 'gauge',
    labels: ['node'],
    samples: (_s, f) => (f ? f.nodes.map((n): Sample => [{ node: n.node }, n.lastSeenSeconds]) : []),
  },
  {
    name: 'logrelay_fleet_node_lag_bytes',
    help: 'Bytes in the node\u2019s file sources not read yet, as its latest report gave them.',
    kind: 'gauge',
    labels: ['node'],
    samples: (_s, f) => (f ? f.nodes.map((n): Sample => [{ node: n.node }, n.lagBytes]) : []),
  },
  {
    name: 'logrelay_fleet_nodes_forgotten_total',
    help: 'Nodes the fleet view removed: max_nodes (room for a newer one) or forget_after (no report within fleet.forget_after_ms).',
    kind: 'counter',
    labels: ['reason'],
    samples: (_s, f) => (f ? Object.entries(f.forgotten).map(([reason, n]): Sample => [{ reason }, n]) : []),
  },
];

/** The names of the §16 families (tests and `top` check against it). */
export const FAMILY_NAMES: readonly string[] = FAMILIES.map((f) => f.name);

/** What docs/counters.md says of each family: the same name, kind, labels and help /metrics serves. */
export const METRIC_FAMILIES: ReadonlyArray<Pick<Family, 'name' | 'help' | 'kind' | 'labels'>> = FAMILIES.map(({ name, help, kind, labels }) => ({ name, help, kind, labels }));

export interface Metrics {
  /** The exposition text for this status (and the fleet table's figures, where the view is on). */
  render(status: NodeStatus, fleet?: FleetSample): Promise<string>;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  let status: NodeStatus | undefined;
  let fleetSample: FleetSample | undefined;
  for (const f of FAMILIES) {
    const common = { name: f.name, help: f.help, labelNames: f.labels, registers: [registry] };
    if (f.kind === 'counter') {
      new Counter({
        ...common,
        collect() {
          this.reset();
          if (status) for (const [labels, value] of f.samples(status, fleetSample)) this.inc(labels, value);
        },
      });
    } else {
      new Gauge({
        ...common,
        collect() {
          this.reset();
          if (status) for (const [labels, value] of f.samples(status, fleetSample)) this.set(labels, value);
        },
      });
    }
  }
  // Counters change once a second (when stats arrive): a scrape whose status is the same as the
  // last one's, within RENDER_REUSE_MS, gets that text, and concurrent scrapes share one render.
  let last: { key: string; at: number; text: Promise<string> } | undefined;
  return {
    render(s, fleet) {
      const key = JSON.stringify({ ...s, uptime_seconds: 0, fleet });
      const now = Date.now();
      if (last && last.key === key && now - last.at < RENDER_REUSE_MS) return last.text;
      status = s;
      fleetSample = fleet;
      // prom-client writes a NaN sample (an event-loop lag with no sample yet) as `Nan`; the format says `NaN`.
      const text = registry.metrics().then((t) => t.replace(/ Nan$/gm, ' NaN'));
      last = { key, at: now, text };
      text.catch(() => {
        if (last?.text === text) last = undefined;
      });
      return text;
    },
  };
}
