// The configuration contract (DESIGN.md §3): the schema with every default, and the frozen types
// the rest of the program reads (keys in operator units, `_mb` and `_hours`, arrive in bytes and
// ms: see convertedKey in core/spec.ts). Plugin `config` tables are validated by each plugin (sources/, sinks/).

import { hostname } from 'node:os';
import type { LogLevel } from '../core/log.js';
import type { PluginConfig, SinkConfig } from '../core/plugin-config.js';
import { AUTH_FIELDS, type AuthConfig, TLS_FIELDS, type TlsConfig } from '../core/tls-config.js';
import { TRANSFORM_COMMON_FIELDS, TRANSFORM_SPECS, type TransformConfig } from '../transform/spec.js';
import type { Fields } from './spec.js';

export type { LogLevel, PluginConfig, SinkConfig, TransformConfig };

export type LogOutput = 'stderr' | 'stdout' | 'file' | 'none';
export type FormatType = 'raw' | 'json' | 'txt';

export interface LoggingFileConfig {
  readonly directory: string;
  readonly name: string;
  /** `max_size_mb` of the file, in bytes */
  readonly max_size_bytes: number;
  /** `max_total_size_mb` of the file, in bytes */
  readonly max_total_size_bytes: number;
  /** `retention_hours` of the file, in ms */
  readonly retention_ms: number;
}

export interface LoggingConfig {
  readonly output: LogOutput;
  readonly level: LogLevel;
  readonly file: LoggingFileConfig;
}

export interface RateLimitConfig {
  /** entries per second; the limiter does not exist when <= 0 */
  readonly rate: number;
  /** bucket size; <= 0 means equal to rate */
  readonly burst: number;
  readonly policy: 'drop' | 'pass';
  /** 0 = no cap; enforced only when rate > 0 and policy = "drop" */
  readonly max_entry_size_bytes: number;
}

export interface FilterConfig {
  readonly type: 'include' | 'exclude';
  readonly logic: 'or' | 'and';
  readonly patterns: readonly string[];
}

export interface DedupConfig {
  readonly enabled: boolean;
  /** remember at most this many ids */
  readonly window_entries: number;
  /** and none longer than this, ms */
  readonly window_ms: number;
}

export interface FlowConfig {
  readonly dedup?: DedupConfig;
  readonly rate_limit?: RateLimitConfig;
  /** DESIGN.md §24: applied in order after the rate limiter, before the filters */
  readonly transforms?: readonly TransformConfig[];
  readonly filters: readonly FilterConfig[];
  readonly format: { readonly type: FormatType };
}

export type Fanout = 'all' | 'any' | 'balance';

export interface PipelineConfig {
  readonly name: string;
  /** all: every sink gets every entry; any: redundant paths (DESIGN.md §7) */
  readonly fanout: Fanout;
  readonly flow: FlowConfig;
  readonly plugin_sources: readonly PluginConfig[];
  readonly plugin_sinks: readonly SinkConfig[];
}

/** The admin endpoint (DESIGN.md §16), served by the primary; applied at start only, like `logging`. */
export interface AdminConfig {
  readonly host: string;
  /** 0 = off */
  readonly port: number;
  readonly tls: TlsConfig;
  readonly auth?: AuthConfig;
}

/** The fleet view (DESIGN.md §26): the table of every node heard of, on the admin endpoint. */
export interface FleetConfig {
  readonly enabled: boolean;
  /** most nodes kept; beyond it the one heard of longest ago is forgotten (counted) */
  readonly max_nodes: number;
  /** a node without a report this long is gone and removed, ms */
  readonly forget_after_ms: number;
}

export interface Config {
  /** this node's name: default `node` of chain sinks, part of entry ids */
  readonly node_name: string;
  /** empty: no checkpoints */
  readonly data_dir: string;
  readonly checkpoint_interval_ms: number;
  /** `checkpoint_ttl_hours` of the file, in ms */
  readonly checkpoint_ttl_ms: number;
  readonly auto_reload: boolean;
  readonly status_reporter: boolean;
  readonly status_interval_ms: number;
  readonly quiet: boolean;
  readonly shutdown_timeout_ms: number;
  /** period of this node's report upstream, ms; 0 = no reports */
  readonly report_interval_ms: number;
  readonly logging: LoggingConfig;
  readonly admin: AdminConfig;
  readonly fleet: FleetConfig;
  readonly pipelines: readonly PipelineConfig[];
}

const plugin = (kind: 'source' | 'sink'): Fields => ({
  id: {
    t: 'string',
    nonEmpty: true,
    doc: `unique within the pipeline; names the ${kind} in logs, counters and errors${kind === 'source' ? ' and its disk buffer directory' : ''}; letters, digits, \`_\`, \`-\`, \`.\`, not starting with \`.\`, at most 64; default the type`,
  },
  type: { t: 'string', required: true, doc: `the ${kind} type (see ${kind === 'source' ? 'Sources' : 'Sinks'} below)` },
  config: { t: 'free', doc: "the type's own keys (see its section below)" },
});

export const CONFIG_FIELDS: Fields = {
  node_name: { t: 'string', def: hostname(), defDoc: 'the machine\'s host name', nonEmpty: true, doc: 'this node\'s name: the default `node` of chain sinks, and part of every entry id' },
  data_dir: { t: 'string', def: '', doc: 'directory for the lock and the checkpoint (acknowledged file positions, dedup windows); empty: none' },
  checkpoint_interval_ms: { t: 'number', def: 1000, int: true, min: 10, doc: 'at most one checkpoint write per this period (and one at shutdown)' },
  checkpoint_ttl_hours: { t: 'number', def: 168.0, min: 0, doc: 'forget checkpointed pipelines whose positions were not reported for this long' },
  auto_reload: { t: 'boolean', def: false, doc: 'reload when the configuration file or a TLS file it names changes, kubelet\'s `..data` swaps of mounted ConfigMaps and Secrets included (SIGHUP reloads regardless)' },
  status_reporter: { t: 'boolean', def: true, doc: 'log a status report (every counter) at DEBUG every `status_interval_ms`' },
  status_interval_ms: { t: 'number', def: 30000, int: true, min: 100, doc: 'period of the status report' },
  quiet: { t: 'boolean', def: false, doc: 'no service log at all; pipeline output still flows' },
  shutdown_timeout_ms: { t: 'number', def: 5000, int: true, min: 0, doc: 'how long a shutdown or a reload lets the queues drain before abandoning what is left' },
  report_interval_ms: {
    t: 'number',
    def: 10000,
    int: true,
    min: 0,
    doc: "period of this node's report (its `/status` figures) sent upstream on every chain sink; 0 = off, else at least 100 (see docs/fleet.md)",
  },
  logging: {
    t: 'table',
    doc: "the node's own log (pino JSON lines); applied once at start, never on reload",
    fields: {
      output: {
        t: 'string',
        def: 'stderr',
        oneOf: ['stderr', 'stdout', 'file', 'none'],
        doc: 'where the service log goes',
        values: {
          stderr: 'standard error',
          stdout: 'standard output (shared with a `stdout` sink)',
          file: 'rotated files in `logging.file.directory`',
          none: 'nowhere',
        },
      },
      level: { t: 'string', def: 'info', oneOf: ['debug', 'info', 'warn', 'error'], doc: 'lowest level written' },
      file: {
        t: 'table',
        doc: 'the service log files when `output = "file"`: `<name>.<n>.log`, rotated by size and pruned',
        fields: {
          directory: { t: 'string', def: './log', nonEmpty: true, doc: 'directory of the log files; created if missing' },
          name: { t: 'string', def: 'logrelay', nonEmpty: true, doc: 'file name stem: files are `<name>.<n>.log`, the highest n is current' },
          max_size_mb: { t: 'number', def: 100, min: 0.001, doc: 'rotate the current file at this size' },
          max_total_size_mb: { t: 'number', def: 1000, min: 0.001, doc: 'delete the oldest rotated files beyond this total' },
          retention_hours: { t: 'number', def: 168.0, min: 0, doc: 'delete rotated files older than this' },
        },
      },
    },
  },
  admin: {
    t: 'table',
    doc: 'the admin endpoint, served by the primary: /livez, /readyz, /metrics (Prometheus), /status; applied at start only',
    fields: {
      host: { t: 'string', def: '127.0.0.1', nonEmpty: true, doc: 'address to listen on' },
      port: { t: 'number', def: 0, int: true, min: 0, max: 65535, doc: 'port to listen on; 0 = off (compose files use 9598)' },
      ...TLS_FIELDS,
      ...AUTH_FIELDS,
    },
  },
  fleet: {
    t: 'table',
    doc: 'the fleet view: keep the latest report of every node heard of and serve `/fleet` on the admin endpoint (see docs/fleet.md); applied at start only, like `admin`',
    fields: {
      enabled: { t: 'boolean', def: false, doc: 'keep the table (typically on the collector); it lists this node too' },
      max_nodes: { t: 'number', def: 10000, int: true, min: 1, unit: 'nodes', doc: 'most nodes kept; beyond it the one heard of longest ago is forgotten (`logrelay_fleet_nodes_forgotten_total`)' },
      forget_after_ms: { t: 'number', def: 86400000, int: true, min: 1, doc: 'a node without a report this long is `gone` and removed' },
    },
  },
  pipelines: {
    t: 'tables',
    min: 1,
    doc: 'one chain of sources → flow → sinks each, run in a worker process of its own',
    fields: {
      name: {
        t: 'string',
        required: true,
        nonEmpty: true,
        doc: 'unique; appears in logs and errors as `pipeline=<name>` and names its disk buffers\' directory; letters, digits, `_`, `-`, `.`, not starting with `.`, at most 64',
      },
      fanout: {
        t: 'string',
        def: 'all',
        oneOf: ['all', 'any', 'balance'],
        doc: 'how entries are offered to the sinks',
        values: {
          all: 'every sink gets every entry',
          any: 'redundant paths: every live sink with room gets every entry, a full or down sink skips, sources pause only when no sink has room',
          balance:
            'redundant paths, each entry sent once: round robin over the live sinks with room; a broken link\u2019s unacknowledged entries go to the others (`failed_over`); sources pause only when every live sink is full',
        },
      },
      flow: {
        t: 'table',
        doc: 'what happens to each entry between the sources and the sinks, in this order: dedup → rate limit → transforms → filters → format',
        fields: {
          dedup: {
            t: 'table',
            doc: 'duplicate suppression by entry id, the first flow stage (an edge with two chain paths delivers every entry twice)',
            fields: {
              enabled: { t: 'boolean', def: false, doc: 'drop an entry whose id was seen within the window (counted in `duplicates_dropped`, not a loss)' },
              window_entries: { t: 'number', def: 100000, int: true, min: 1, doc: 'remember at most this many ids (about 100 bytes each)' },
              window_ms: { t: 'number', def: 600000, int: true, min: 1, doc: 'and none longer than this' },
            },
          },
          rate_limit: {
            t: 'table',
            optional: true,
            doc: 'token bucket per pipeline, full at start',
            fields: {
              rate: { t: 'number', def: 0, unit: 'entries/s', doc: 'refill rate; the limiter does not exist when <= 0' },
              burst: { t: 'number', def: 0, unit: 'entries', doc: 'bucket size; <= 0 means equal to `rate`' },
              policy: {
                t: 'string',
                def: 'pass',
                oneOf: ['drop', 'pass'],
                doc: 'what happens to an entry when the bucket is empty',
                values: { drop: 'drop it (`dropped_total`)', pass: 'let it through: neither the rate nor the size check applies' },
              },
              max_entry_size_bytes: { t: 'number', def: 0, int: true, min: 0, doc: 'larger entries are dropped (`dropped_by_size_total`); 0 = no cap; only when rate > 0 and policy = "drop"' },
            },
          },
          transforms: {
            t: 'variants',
            tag: 'type',
            common: TRANSFORM_COMMON_FIELDS,
            variants: TRANSFORM_SPECS,
            doc: 'steps that change entries, applied in order after the rate limiter (see docs/transforms.md)',
          },
          filters: {
            t: 'tables',
            doc: 'applied in order on `"<source> <level> <message>"`; the first rejection ends the entry',
            fields: {
              type: {
                t: 'string',
                def: 'include',
                oneOf: ['include', 'exclude'],
                doc: 'whether a match keeps or drops the entry',
                values: { include: 'pass on a match', exclude: 'pass when nothing matches' },
              },
              logic: {
                t: 'string',
                def: 'or',
                oneOf: ['or', 'and'],
                doc: 'how the patterns combine',
                values: { or: 'any pattern matches', and: 'all patterns match' },
              },
              patterns: { t: 'strings', def: [], doc: 'JavaScript regular expressions, compiled once; none passes everything' },
            },
          },
          format: {
            t: 'table',
            doc: 'the one formatter of the pipeline: every sink gets the same line (chain sinks send the structured entry instead)',
            fields: {
              type: {
                t: 'string',
                def: 'raw',
                oneOf: ['raw', 'json', 'txt'],
                doc: 'the formatter',
                values: {
                  raw: 'the message as it is, no sanitising (cheapest)',
                  json: 'one JSON object per line: time, node, source, level, message, fields (empty ones left out)',
                  txt: '`<time> <LEVEL> <node/source> <message>` then the fields as JSON; control characters escaped',
                },
              },
            },
          },
        },
      },
      plugin_sources: { t: 'tables', min: 1, doc: 'where entries come from; at least one', fields: plugin('source') },
      plugin_sinks: {
        t: 'tables',
        min: 1,
        doc: 'where entries go; at least one',
        fields: {
          ...plugin('sink'),
          when: { t: 'string', doc: 'a condition: the sink gets only the entries for which it holds (see docs/transforms.md)' },
          else: { t: 'boolean', def: false, doc: 'the sink gets the entries no `when` sink of the pipeline took' },
          dead_letter: { t: 'string', nonEmpty: true, doc: 'the id of another sink of the pipeline that gets what this one would drop for good, with `fields.dead_letter`' },
        },
      },
    },
  },
};

/** The pipeline run when no configuration is given: random → stdout, raw. */
export const DEMO_CONFIG: Record<string, unknown> = {
  pipelines: [
    {
      name: 'demo',
      plugin_sources: [{ id: 'random', type: 'random' }],
      plugin_sinks: [{ id: 'out', type: 'stdout' }],
    },
  ],
};
