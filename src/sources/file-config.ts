// The `file` source's configuration: its keys (DESIGN.md §6, §21) and the checks only the source
// can make (exactly one of the two path forms, absolute globs, multiline patterns that compile).

import type { PluginConfig } from '../config/schema.js';
import type { PluginSpec } from '../config/spec.js';
import { PluginError } from '../core/errors.js';
import { pluginConfig } from '../core/plugin-config.js';
import type { ContainerFormat } from '../lines/container.js';
import { MULTILINE_FIELDS, type MultilineConfig, type MultilineRules, multilineRules } from '../lines/multiline.js';
import { isAbsolute } from 'node:path';

export interface FileSourceConfig {
  readonly directory?: string;
  readonly pattern: string;
  readonly include: readonly string[];
  readonly exclude: readonly string[];
  readonly from: 'end' | 'start';
  readonly check_interval_ms: number;
  readonly watch_events: boolean;
  readonly raw: boolean;
  readonly max_line_bytes: number;
  readonly container_format: ContainerFormat;
  readonly kubernetes_metadata: boolean;
  readonly multiline?: MultilineConfig;
}

export const FILE_SOURCE: PluginSpec = {
  doc: 'tails the files of one directory that match a pattern, or of `include` globs, following rotation and truncation; container formats and multiline entries (docs/sources.md: Container logs and multiline entries)',
  fields: {
    directory: { t: 'string', nonEmpty: true, doc: 'directory whose files are read (not recursive); may appear after the start. Set this (with `pattern`) or `include`' },
    pattern: { t: 'string', def: '*', nonEmpty: true, doc: 'file name pattern: `*` and `?` only, dot files excluded; only with `directory`' },
    include: {
      t: 'strings',
      doc: 'absolute globs of the files to read (fast-glob: `*`, `?`, `**`, `[…]`, `{a,b}`; dot files excluded); instead of `directory` + `pattern`',
    },
    exclude: { t: 'strings', def: ['**/*.gz', '**/*.tmp'], doc: 'globs of files never read, winning over `include` (a file renamed to one is still read to its end)' },
    container_format: {
      t: 'string',
      def: 'none',
      oneOf: ['none', 'cri', 'docker', 'auto'],
      doc: "how each line is wrapped by a container runtime; partial lines are joined per file and stream, `fields.stream` and the runtime's time set",
      values: {
        none: 'plain lines',
        cri: 'CRI (containerd, CRI-O): `<time> <stdout|stderr> <P|F> <content>`',
        docker: 'docker json-file: `{"log":"…","stream":"…","time":"…"}`',
        auto: 'decided per file from its first line',
      },
    },
    kubernetes_metadata: {
      t: 'boolean',
      def: false,
      doc: '`fields.k8s` (namespace, pod, pod_uid, container, restart_count) and `source` = the container, from a `/var/log/pods/<namespace>_<pod>_<uid>/<container>/<n>.log` path (or a `/var/log/containers/` link to one)',
    },
    multiline: { t: 'table', optional: true, fields: MULTILINE_FIELDS, doc: 'joins the lines of a stack trace (or any group) into one entry, after container parsing, per stream' },
    from: {
      t: 'string',
      def: 'end',
      oneOf: ['end', 'start'],
      doc: 'where files present at start are read from (files that appear later are read whole)',
      values: { end: 'only lines written after the start', start: 'the whole file' },
    },
    check_interval_ms: {
      t: 'number',
      def: 1000,
      int: true,
      min: 10,
      doc: 'the latest a new file (or the directory) is noticed; with `watch_events`, file system events announce one sooner. Tailing polls every 100 ms regardless',
    },
    watch_events: {
      t: 'boolean',
      def: true,
      doc: 'notice new and growing files through file system events (inotify) where the platform has them; false: polling only (network file systems, where events do not arrive)',
    },
    raw: { t: 'boolean', def: false, doc: 'take every line as plain text, never parse JSON lines' },
    max_line_bytes: { t: 'number', def: 1048576, int: true, min: 1, doc: 'longer lines are cut and counted in `truncated_lines`' },
  },
};

/** Validates a `file` source's `config`; faults name their key (`failed to create source <id>: <key>: <reason>`). */
export function fileSourceConfig(plugin: PluginConfig): { cfg: FileSourceConfig; multiline: MultilineRules | undefined } {
  const cfg = pluginConfig<FileSourceConfig>('source', plugin, FILE_SOURCE.fields);
  const fault = (key: string, reason: string) => new PluginError('source', plugin.id, key, reason);
  if (cfg.pattern.includes('/')) throw fault('pattern', 'must not contain "/" (the source is not recursive)');
  if ((cfg.directory === undefined) === (cfg.include.length === 0)) {
    throw fault(cfg.directory === undefined ? 'directory' : 'include', 'set exactly one of `directory` (with `pattern`) and `include`');
  }
  if (cfg.include.length > 0 && Object.hasOwn(plugin.config, 'pattern')) throw fault('pattern', 'only with `directory` (the `include` globs name the files)');
  cfg.include.forEach((glob, i) => {
    if (!isAbsolute(glob)) throw fault(`include[${i}]`, `must be an absolute path, got ${JSON.stringify(glob)}`);
  });
  const multiline = cfg.multiline && multilineRules('source', plugin.id, cfg.multiline, cfg.max_line_bytes);
  return { cfg, multiline };
}
