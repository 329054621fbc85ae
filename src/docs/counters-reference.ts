// docs/counters.md is generated from these declarations (`npm run docs`), as configuration.md is
// from the schema: every counter, which plugin types keep it, and what its rise means; the
// metrics table comes from the families /metrics serves. A test runs every plugin type and
// checks that what a running node reports is exactly what is declared here.

import { DROP_REASONS } from '../core/drops.js';
import { METRIC_FAMILIES } from '../primary/metrics.js';
import { SINK_SPECS } from '../sinks/specs.js';
import { SOURCE_SPECS } from '../sources/specs.js';
import { TRANSFORM_SPECS } from '../transform/spec.js';

/** Who keeps a counter: every plugin of the section's kind, or the listed types. */
export type Owners = 'every' | readonly string[];

export interface CounterDecl {
  readonly name: string;
  readonly owners: Owners;
  /** a condition the counter exists under (`with dedup`), when it is not always there */
  readonly when?: string;
  /** a gauge: goes up and down (all others only rise) */
  readonly gauge?: boolean;
  /** what rising means */
  readonly doc: string;
}

export interface CounterSection {
  /** the component kind in `/status` and the status report: sources, sinks, flow, rate_limit, pipeline */
  readonly kind: 'sources' | 'sinks' | 'flow' | 'rate_limit' | 'transforms' | 'pipeline';
  readonly title: string;
  readonly counters: readonly CounterDecl[];
}

const LISTENERS = ['tcp_chain', 'http_chain', 'syslog', 'otlp'];

/** Sources that take a `buffer` table (DESIGN.md §23). */
const BUFFERED = ['syslog', 'stdin', 'tcp_chain', 'http_chain', 'otlp'];
const WITH_DISK_BUFFER = 'with a disk buffer (`buffer.type = "disk"`)';

const BUFFER_COUNTERS: readonly CounterDecl[] = [
  {
    name: 'buffer_bytes',
    owners: BUFFERED,
    when: WITH_DISK_BUFFER,
    gauge: true,
    doc: 'bytes of segment files on disk; near `max_size_mb` the source stops taking (or drops, `when_full`)',
  },
  { name: 'buffer_entries', owners: BUFFERED, when: WITH_DISK_BUFFER, gauge: true, doc: 'entries written and not yet acknowledged downstream: the backlog waiting on disk' },
  { name: 'buffer_syncs', owners: BUFFERED, when: WITH_DISK_BUFFER, doc: 'group commits (one `fdatasync` each); `total_entries` / `buffer_syncs` is the entries per sync' },
  {
    name: 'buffer_corrupt_records',
    owners: BUFFERED,
    when: WITH_DISK_BUFFER,
    doc: 'records whose length or CRC was wrong while reading (the rest of that segment skipped, logged ERROR `Disk buffer corrupt record`)',
  },
  { name: 'buffer_truncated_bytes', owners: BUFFERED, when: WITH_DISK_BUFFER, doc: 'bytes of torn tails cut at start (a crash mid-write; logged WARN `Disk buffer tail cut`)' },
  { name: 'buffer_write_errors', owners: BUFFERED, when: WITH_DISK_BUFFER, doc: 'failed writes or syncs (each attempt; logged ERROR `Disk buffer write failed`)' },
  { name: 'buffer_failing', owners: BUFFERED, when: WITH_DISK_BUFFER, gauge: true, doc: '1 while writes fail: the source takes nothing and `/readyz` says `buffer_error`' },
  {
    name: 'dropped_buffer_full',
    owners: BUFFERED,
    when: WITH_DISK_BUFFER,
    doc: 'entries dropped because the buffer was full (`when_full = "drop_newest"`, or a udp source, which cannot pause); metric reason `buffer_full`',
  },
];

export const COUNTER_SECTIONS: readonly CounterSection[] = [
  {
    kind: 'sources',
    title: 'Sources',
    counters: [
      { name: 'total_entries', owners: 'every', doc: 'entries produced and handed to the flow' },
      {
        name: 'dropped_entries',
        owners: 'every',
        doc: 'entries lost because the pipeline was saturated and this source cannot pause (`random`), or every live path of a `fanout = "any"` or `"balance"` pipeline was full',
      },
      { name: 'active_watchers', owners: ['file'], gauge: true, doc: 'files being tailed now' },
      { name: 'rotations', owners: ['file'], doc: 'a file was renamed away and a new one took its name; normal with logrotate' },
      { name: 'truncations', owners: ['file'], doc: 'a file shrank below the read position (copytruncate) and is read again from 0' },
      { name: 'bytes_read', owners: ['file', 'stdin'], doc: 'bytes read from files or standard input' },
      {
        name: 'truncated_lines',
        owners: ['file', 'stdin'],
        doc: 'lines longer than `max_line_bytes` (container lines: once joined) were cut: raise the limit or fix the writer',
      },
      { name: 'lag_bytes', owners: ['file'], gauge: true, doc: 'bytes in watched files beyond the acknowledged positions: downstream is behind or down' },
      { name: 'multiline_entries', owners: ['file', 'stdin'], doc: 'entries joined from more than one line (`multiline`)' },
      {
        name: 'multiline_splits',
        owners: ['file', 'stdin'],
        doc: 'an entry reached `max_lines` or `max_bytes` and was emitted in parts (nothing dropped): a group that never ends, or limits too low',
      },
      {
        name: 'multiline_timeouts',
        owners: ['file', 'stdin'],
        doc: 'an open entry was emitted because no line came for `timeout_ms` (normal for the last trace of a quiet file)',
      },
      { name: 'active_connections', owners: LISTENERS, gauge: true, doc: 'links, requests or syslog connections open now' },
      { name: 'rejected_conns', owners: ['tcp_chain', 'http_chain', 'syslog', 'otlp'], doc: 'connections refused over `max_connections`' },
      {
        name: 'parse_errors',
        owners: [...LISTENERS, 'nats', 'file', 'stdin'],
        doc: 'lines, hellos or messages that were not valid (wrong protocol version, not JSON, over `max_line_bytes`, no syslog PRI): a misconfigured or foreign peer; for `otlp`, a request body that does not inflate or decode, and each record over `max_line_bytes` once mapped; for `file` (with `container_format`), lines not in the container format, emitted as plain text',
      },
      { name: 'tls_handshake_errors', owners: LISTENERS, doc: 'failed TLS handshakes: a client without a valid certificate, or a plain-text client on a TLS port' },
      { name: 'auth_rejected', owners: LISTENERS, doc: 'clients with a valid certificate whose identity is not in `allow` (each logged WARN `Authorization rejected`)' },
      { name: 'total_requests', owners: ['http_chain', 'otlp'], doc: 'requests received' },
      { name: 'reports_received', owners: ['tcp_chain', 'http_chain'], doc: 'node reports taken from peers (the fleet view, docs/fleet.md); passed to the primary, never entries' },
      {
        name: 'reports_rejected',
        owners: ['tcp_chain', 'http_chain'],
        doc: 'node reports refused: not a report, or behind `auth` for a node the peer does not speak for (its `node` is not the peer\u2019s identity and its `via` does not end with it)',
      },
      {
        name: 'carried_entries',
        owners: ['tcp_chain'],
        doc: 'entries received as version 2 frames and sent on as those frames, undecoded (a relay: every sink a chain sink speaking version 2, no filter, rate limit, transform or route, the `raw` format, no disk buffer; see docs/protocol.md); the others are decoded and encoded again',
      },
      { name: 'bytes_received', owners: ['tcp_chain', 'http_chain'], doc: 'bytes read off the links as they came (compressed or not, after TLS): `tcp_chain` the hellos and streams, `http_chain` the request bodies' },
      {
        name: 'rejected_requests',
        owners: ['otlp'],
        doc: 'requests answered 4xx or 5xx (405, 415, 400, 413, 403, 404, and 503 while the pipeline is saturated: the exporter retries those)',
      },
      { name: 'truncated_messages', owners: ['syslog'], doc: 'frames over `max_message_bytes` were cut' },
      {
        name: 'kernel_drops',
        owners: ['syslog'],
        when: 'with `mode = "udp"`, on Linux',
        doc: 'datagrams the kernel dropped because the socket\u2019s receive buffer was full (the worker was busy during a burst), read once a second from the `drops` column of /proc/net/udp and udp6; metric reason `kernel`. Raise `receive_buffer_bytes` (and `net.core.rmem_max`), or send over TCP',
      },
      { name: 'connected', owners: ['nats'], gauge: true, doc: '1 while the connection to a NATS server is up' },
      ...BUFFER_COUNTERS,
      { name: 'reconnects', owners: ['nats'], doc: 'lost connections to the NATS servers; steady growth means the servers are down or refusing' },
      { name: 'unacked', owners: ['nats'], gauge: true, doc: 'messages received and not yet acknowledged to JetStream (their entries are not all done downstream yet)' },
    ],
  },
  {
    kind: 'flow',
    title: 'Flow',
    counters: [
      { name: 'total_processed', owners: 'every', doc: 'entries that entered the flow stage' },
      { name: 'total_passed', owners: 'every', doc: 'entries that left the flow for the sinks' },
      { name: 'total_dropped', owners: 'every', doc: 'entries the filters or the rate limiter took out (filtered entries are not losses)' },
      {
        name: 'duplicates_dropped',
        owners: 'every',
        when: 'with `dedup.enabled`',
        doc: 'entries whose `id` was seen within the window: redundant paths or resends working as intended, not a loss',
      },
    ],
  },
  {
    kind: 'rate_limit',
    title: 'Rate limiter',
    counters: [
      {
        name: 'dropped_total',
        owners: 'every',
        doc: 'every entry the rate limiter dropped: the bucket was empty (`policy = "drop"`) or the entry was over `max_entry_size_bytes`; the metric splits them (`rate_limited` = `dropped_total` − `dropped_by_size_total`, `oversize`)',
      },
      { name: 'dropped_by_size_total', owners: 'every', doc: 'entries over `max_entry_size_bytes` (also counted in `dropped_total`)' },
      { name: 'available_tokens', owners: 'every', gauge: true, doc: 'tokens in the bucket; near 0 means the pipeline runs at its rate limit' },
    ],
  },
  {
    kind: 'transforms',
    title: 'Transform steps',
    counters: [
      { name: 'processed', owners: 'every', doc: 'entries the step ran on (its `when` held, or it has none)' },
      {
        name: 'parse_failed',
        owners: ['parse'],
        doc: 'text that did not parse, was not text, or was over `max_bytes`; the entry was kept, dropped or tagged as `on_error` says (a drop is not a loss)',
      },
      { name: 'bad_values', owners: ['parse', 'set', 'rename'], doc: 'values that did not convert (`types`) or that `time` or `level` would not take; the old value stays' },
      { name: 'redacted', owners: ['redact'], doc: 'matches replaced' },
      { name: 'dropped', owners: ['drop'], doc: 'entries dropped on purpose; done at once, not a loss' },
      { name: 'sampled_out', owners: ['sample'], doc: 'entries left out by sampling; done at once, not a loss' },
      { name: 'throttled', owners: ['throttle'], doc: 'entries over their key\u2019s rate, dropped (WARN `Entries throttled` at most once a minute per key); done at once, not a loss' },
    ],
  },
  {
    kind: 'pipeline',
    title: 'Pipeline',
    counters: [
      { name: 'unrouted', owners: 'every', when: 'with sink routes (`when`, `else`)', doc: 'entries no sink\u2019s route took (no `when` held and no `else` sink); done at once, not a loss' },
      {
        name: 'total_dropped_by_sink',
        owners: 'every',
        doc: "entries dropped because a sink's input queue (`buffer_size`, `buffer_max_bytes`) was full with `on_full = \"drop\"`, or with `on_full = \"auto\"` while its link was down and another sink was live: that sink is slower than the input, or its destination is down",
      },
      { name: 'restarts', owners: 'every', doc: 'the worker crashed and was restarted (logged ERROR `Pipeline process exited unexpectedly`)' },
      { name: 'checkpoint_writes', owners: 'every', doc: 'checkpoints written (the node\u2019s, shown with every pipeline; 0 without `data_dir`)' },
      {
        name: 'checkpoint_errors',
        owners: 'every',
        doc: 'checkpoint writes that failed (disk full, permissions); logged ERROR `Checkpoint write failed`; 0 without `data_dir`',
      },
    ],
  },
  {
    kind: 'sinks',
    title: 'Sinks',
    counters: [
      { name: 'total_processed', owners: 'every', doc: 'entries taken off the sink\u2019s queue and handled (counted by the pipeline)' },
      {
        name: 'dropped_queue_full',
        owners: 'every',
        doc: 'entries a full queue of this sink dropped (`on_full = "drop"`); with `dropped_link_down` their sum is the pipeline\u2019s `total_dropped_by_sink`',
      },
      {
        name: 'dropped_link_down',
        owners: 'every',
        doc: 'entries a full queue of this sink dropped with `on_full = "auto"` while its link was down and another sink of the pipeline was live (metric reason `link_down`); 0 while the link is up, when the sink blocks instead',
      },
      { name: 'abandoned', owners: 'every', doc: 'entries still queued or unacknowledged when a drain was cut short by `shutdown_timeout_ms` (logged ERROR)' },
      {
        name: 'skipped',
        owners: 'every',
        when: 'in a `fanout = "any"` pipeline',
        doc: 'entries this path did not take because it was full or down while another path took them; not a loss',
      },
      {
        name: 'failed_over',
        owners: 'every',
        when: 'in a `fanout = "any"` or `"balance"` pipeline',
        doc: 'unacknowledged entries of a broken link handed to a live path that did not hold them already',
      },
      {
        name: 'dropped_writes',
        owners: ['tcp', 'http', 'stdout', 'file'],
        doc: '`tcp`/`http`: entries dropped for one slow client (its `client_buffer_size` was full), metric reason `client_slow`; `stdout`: entries lost after the reader went away, `file`: entries lost to a failed write (disk full, directory removed), metric reason `write_failed`',
      },
      { name: 'rotations', owners: ['file'], doc: 'the current file reached `max_size_mb` and a new one was started' },
      { name: 'bytes_written', owners: ['file'], doc: 'bytes written to the files' },
      { name: 'active_clients', owners: ['tcp', 'http'], gauge: true, doc: 'connected clients' },
      { name: 'rejected_conns', owners: ['tcp'], doc: 'clients refused over `max_connections`' },
      { name: 'rejected_clients', owners: ['http'], doc: 'clients refused over `max_connections`' },
      { name: 'tls_handshake_errors', owners: ['tcp', 'http'], doc: 'failed TLS handshakes of clients' },
      { name: 'auth_rejected', owners: ['tcp', 'http'], doc: 'clients whose certificate identity is not in `allow`' },
      {
        name: 'connected',
        owners: ['tcp_chain', 'http_chain', 'syslog', 'nats', 'otlp'],
        gauge: true,
        doc: '1 while the link is up: `tcp_chain` and `syslog` while connected; `http_chain` and `otlp` from a 2xx answer until requests failed (a retried status, a network error) for `backoff_max_ms` with no success between (a receiver answering 503 to everything is down); `nats` while connected, and down too when publishes failed for `backoff_max_ms` (no stream, no acknowledgement)',
      },
      {
        name: 'reconnects',
        owners: ['tcp_chain', 'http_chain', 'syslog', 'nats'],
        doc: 'failed or broken links (each followed by a backoff); steady growth means the peer is down or refusing',
      },
      { name: 'unacked', owners: ['tcp_chain', 'nats'], gauge: true, doc: 'entries sent but not yet acknowledged; growing means the next node is slow to deliver' },
      { name: 'bytes_raw', owners: ['tcp_chain', 'http_chain'], doc: 'bytes of chain lines (and the hello) before compression; equals `bytes_sent` with `compression = "none"`' },
      { name: 'bytes_sent', owners: ['tcp_chain', 'http_chain'], doc: 'bytes written to the link (after compression, before TLS): `tcp_chain` the hello and the stream, `http_chain` the request bodies' },
      { name: 'synthesized', owners: ['tcp_chain', 'http_chain'], doc: 'entries that lacked `time` or `source` and were completed before sending' },
      { name: 'reports_sent', owners: ['tcp_chain', 'http_chain'], doc: 'node reports sent upstream, this node\u2019s own and those it forwards (docs/fleet.md)' },
      {
        name: 'reports_dropped',
        owners: ['tcp_chain', 'http_chain'],
        doc: 'node reports not sent: the link was down or backed up, a newer set came first, or the peer takes no reports (an older node); entries are never held up for them',
      },
      { name: 'batches_sent', owners: ['http_chain', 'otlp'], doc: 'batches the peer acknowledged (for `otlp`: any 2xx)' },
      {
        name: 'dropped_batches',
        owners: ['http_chain', 'otlp'],
        doc: '`http_chain`: batches the peer refused for good (a status other than 403, 408, 429, 5xx, or a 413 of a single entry: a larger batch refused 413 is split in two), each logged ERROR; `otlp`: entries (not batches) the receiver refused: a status other than 2xx, 429, 502, 503, 504 or a 413 of a single entry (ERROR `OTLP export rejected`), and `partial_success.rejected_log_records` (WARN `OTLP records rejected`); metric reason `batch_rejected`',
      },
      {
        name: 'dead_lettered',
        owners: ['http_chain', 'otlp', 'file'],
        when: 'with `dead_letter`',
        doc: 'entries this sink gave up on for good (`http_chain`: a permanent status; `otlp`: a rejected or partly rejected request; `file`: a failed write, tried twice) and handed to its dead letter sink with `fields.dead_letter`; not a loss, not in `dropped_batches`',
      },
      {
        name: 'retries',
        owners: ['http_chain', 'otlp', 'nats'],
        doc: '`http_chain` and `otlp`: batch requests that failed and will be sent again (`http_chain`: 403, 408, 429, 5xx; `otlp`: 429, 502, 503, 504; both: timeouts, network errors), after the backoff and never sooner than `Retry-After`; `http_chain` counts them in `reconnects` too; `nats`: failed publishes (an error reply, no stream, no acknowledgement in time), each retried',
      },
      { name: 'published', owners: ['nats'], doc: 'entries JetStream acknowledged (in batches of up to `max_batch_count` per message)' },
      { name: 'retried', owners: ['nats'], doc: 'entries published again in their batch (no acknowledgement within `request_timeout_ms`, an error reply, no stream yet, or a reconnect)' },
    ],
  },
];

/** Where each §16 metric comes from, beside its help text (a family missing here fails the generator). */
const METRIC_SOURCES: Readonly<Record<string, string>> = {
  logrelay_build_info: 'constant 1',
  logrelay_config_generation: 'the generation in force; rises with each reload',
  logrelay_reloads_total: 'reloads; a rising `failed` means a refused configuration (the old one keeps running)',
  logrelay_pipeline_up: 'the supervisor',
  logrelay_pipeline_restarts_total: '`restarts`',
  logrelay_pipeline_resident_memory_bytes: "the worker's RSS",
  logrelay_source_entries_total: 'source `total_entries`',
  logrelay_sink_entries_total: 'sink `total_processed`',
  logrelay_dropped_entries_total: `losses by reason (${DROP_REASONS.map((r) => `\`${r}\``).join(', ')}): \`queue_full\` (\`dropped_queue_full\`), \`source_saturated\` (\`dropped_entries\`), \`rate_limited\` (\`dropped_total\` − \`dropped_by_size_total\`), \`oversize\` (\`dropped_by_size_total\`), \`client_slow\` (\`tcp\`/\`http\` \`dropped_writes\`), \`write_failed\` (\`stdout\`/\`file\` \`dropped_writes\`), \`batch_rejected\` (\`dropped_batches\`), \`abandoned\`, \`buffer_full\` (\`dropped_buffer_full\`), \`link_down\` (\`dropped_link_down\`), \`kernel\` (\`kernel_drops\`)`,
  logrelay_filtered_entries_total: 'entries the filters took out',
  logrelay_duplicates_dropped_total: '`duplicates_dropped`',
  logrelay_transform_events_total: 'per step id (`component`), its counters: `processed`, `parse_failed`, `redacted`, `dropped`, `sampled_out`, `throttled`, `bad_values`',
  logrelay_parse_errors_total: '`parse_errors`',
  logrelay_rejected_connections_total: 'reasons `max_connections` (`rejected_conns`/`rejected_clients`), `auth` (`auth_rejected`), `tls` (`tls_handshake_errors`)',
  logrelay_clients: '`active_clients`, `active_connections`',
  logrelay_chain_connected: '`connected` of chain, syslog, nats and otlp sinks and of the nats source',
  logrelay_chain_unacked_entries: '`unacked` of `tcp_chain` and nats sinks and of the nats source',
  logrelay_chain_reconnects_total: '`reconnects` of chain, syslog and nats sinks and of the nats source',
  logrelay_link_bytes_total: 'sink `bytes_raw` (`stage="raw"`) and `bytes_sent` (`stage="wire"`), source `bytes_received` (`stage="wire"`) of chain links; wire ÷ raw is the compression ratio',
  logrelay_chain_retries_total: '`retries` of http_chain, otlp and nats sinks (`http_chain` counts its failed requests in `reconnects` too)',
  logrelay_file_lag_bytes: '`lag_bytes`',
  logrelay_buffer_bytes: '`buffer_bytes`',
  logrelay_buffer_entries: '`buffer_entries`',
  logrelay_buffer_errors_total: '`buffer_write_errors` + `buffer_corrupt_records`',
  logrelay_checkpoint_errors_total: '`checkpoint_errors`',
  logrelay_fleet_nodes: 'the fleet table (`fleet.enabled`): nodes by state; none where the view is off',
  logrelay_fleet_node_last_seen_timestamp_seconds: 'the fleet table: when each node\u2019s latest report arrived; the series goes with its node',
  logrelay_fleet_node_lag_bytes: 'the fleet table: `lag_bytes` of each node\u2019s latest report, summed over its pipelines',
  logrelay_fleet_nodes_forgotten_total: 'the fleet table: nodes removed for room (`max_nodes`) or as gone (`forget_after`)',
  logrelay_tls_certificate_expiry_timestamp_seconds: "the earliest `notAfter` among the plugin's certificates (Unix seconds; `/status` calls it `certificate_expiry_seconds`)",
};

const typesOf = (kind: CounterSection['kind']): readonly string[] =>
  kind === 'sources' ? Object.keys(SOURCE_SPECS) : kind === 'sinks' ? Object.keys(SINK_SPECS) : kind === 'transforms' ? Object.keys(TRANSFORM_SPECS) : [kind];

/**
 * Every declared counter as `kind/type/name`; a counter that exists only under a condition
 * (`when`: dedup, fanout any, a disk buffer) is `kind/* /name` (without the space), else one key
 * per owning type.
 */
export function declaredCounters(): Set<string> {
  const out = new Set<string>();
  for (const s of COUNTER_SECTIONS) {
    for (const c of s.counters) {
      if (c.when) out.add(`${s.kind}/*/${c.name}`);
      else for (const type of c.owners === 'every' ? typesOf(s.kind) : c.owners) out.add(`${s.kind}/${type}/${c.name}`);
    }
  }
  return out;
}

const ownerText = (s: CounterSection, c: CounterDecl): string => {
  const who =
    c.owners === 'every'
      ? s.kind === 'sources'
        ? 'every source'
        : s.kind === 'sinks'
          ? 'every sink'
          : s.kind === 'rate_limit'
            ? 'rate limiter'
            : s.kind === 'transforms'
              ? 'every step'
              : s.kind
      : `${c.owners.map((o) => `\`${o}\``).join(', ')}`;
  return c.when ? `${who} ${c.when}` : who;
};

const cell = (text: string) => text.replaceAll('|', '\\|');

const INTRO = `# Counters and metrics

<!-- Generated by \`npm run docs\` from src/docs/counters-reference.ts and the metric families of
src/primary/metrics.ts; edit those, not this file. -->

Every component keeps cumulative counters in memory; each worker sends its pipeline's counters to
the primary once a second. They appear in three places, with the same values:

- the **status report** (\`status_reporter = true\`, every \`status_interval_ms\`, at DEBUG): one
  line per pipeline with every counter flattened, e.g. \`flow.total_dropped\`,
  \`sources.applog.total_entries\`, \`sinks.out.total_processed\`;
- the admin endpoint's **\`/status\`** (JSON, counters nested by component) and **\`/metrics\`**
  (Prometheus, the families below), when \`admin.port\` is set;
- an \`http\` sink's own \`GET /status\`: that sink only: \`server\` (its address, \`tls\`,
  \`active_clients\`, its limits and \`uptime_seconds\`), \`endpoints\`, and \`statistics\`:
  \`total_processed\`, \`dropped_writes\`, \`rejected_clients\`, \`auth_rejected\`.

Counters only rise; gauges (marked) go up and down. They restart from 0 when a pipeline's worker
is replaced (a reload or a crash restart); Prometheus' \`rate()\` handles that as a counter reset.

**How fresh a figure is.** What the three places show is what the worker last sent, so it may be
up to a second old, and a status report may carry the figures of the second before it was logged:
read a burst's totals from a report logged two seconds or more after its last entry went out.
Counters of one component may also move at different moments for one entry: an \`http_chain\` sink
counts an entry in \`total_processed\` when it joins a batch, the batch's bytes (\`bytes_raw\`,
\`bytes_sent\`) when it is posted and \`batches_sent\` when it is answered, and it has no
\`unacked\` count.

**Losses and non-losses.** Every entry lost is counted where it is lost, and the worker logs
WARN \`Entries dropped\` (pipeline, plugin, reason, count): the first within a second, then at most
once a minute per pipeline and reason. Entries a filter rejected and duplicates suppressed are
not losses. Every loss is in \`logrelay_dropped_entries_total\` with its reason, so one alert on
its rise sees them all.
`;

const OUTRO = `
Useful alerts (\`deploy/prometheus/\` has them as rules): any rise of
\`logrelay_dropped_entries_total\`; \`logrelay_pipeline_up == 0\`; \`logrelay_chain_connected == 0\`
for a minute; \`logrelay_chain_retries_total\` or \`logrelay_chain_reconnects_total\` rising for 10
minutes (a link that keeps failing, even one that succeeds now and then and so still says
connected); \`logrelay_file_lag_bytes\` growing; a \`logrelay_reloads_total{result="failed"}\`
rise; a certificate expiry within 14 days (the node also logs WARN \`Certificate expires soon\`).
`;

/** The text of docs/counters.md. */
export function renderCountersReference(): string {
  const out = [INTRO];
  for (const s of COUNTER_SECTIONS) {
    out.push(`## ${s.title}`, '', '| Counter | Owner | What rising means |', '|---|---|---|');
    for (const c of s.counters) out.push(`| \`${c.name}\` | ${cell(ownerText(s, c))} | ${c.gauge ? '(gauge) ' : ''}${cell(c.doc)} |`);
    out.push('');
  }
  out.push(
    '## Metrics (`/metrics`)',
    '',
    'Base units; counters end in `_total`; labels are only `pipeline`, `component` (the plugin id),',
    '`type`, `reason` and `result`. Values equal the counters above.',
    '',
    '| Metric | Kind | Labels | Meaning | Made from |',
    '|---|---|---|---|---|',
  );
  for (const f of METRIC_FAMILIES) {
    const from = METRIC_SOURCES[f.name];
    if (from === undefined) throw new Error(`metric ${f.name} has no entry in METRIC_SOURCES (src/docs/counters-reference.ts)`);
    out.push(`| \`${f.name}\` | ${f.kind} | ${f.labels.map((l) => `\`${l}\``).join(', ')} | ${cell(f.help)} | ${cell(from)} |`);
  }
  out.push("| `process_*`, `nodejs_*` | | | the primary's process metrics (prom-client defaults) | |");
  out.push(OUTRO);
  return out.join('\n');
}
