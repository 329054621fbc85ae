// Cross-checks the schema cannot express: names and ids that are safe as directory names, unique
// names and ids, one stdin, and no two listeners on one host:port (workers share listening
// handles through the primary, so the OS would not refuse it).

import { ConfigError, throwConfigFaults } from '../core/errors.js';
import { createLogger } from '../core/log.js';
import { compileTransforms } from '../transform/index.js';
import { checkRoutes } from '../transform/routes.js';
import type { Config, PipelineConfig, PluginConfig, SinkConfig } from './schema.js';
import { joinPath } from './spec.js';

/** Plugin types that listen on `host`/`port` (default host 0.0.0.0). */
const LISTENERS: Readonly<Record<'source' | 'sink', ReadonlySet<string>>> = {
  source: new Set(['tcp_chain', 'http_chain', 'syslog', 'otlp']),
  sink: new Set(['tcp', 'http']),
};

const WILDCARD = new Set(['0.0.0.0', '::', '']);

/** The shortest period of node reports, ms (0 turns them off). */
const MIN_REPORT_INTERVAL_MS = 100;

/** Steps compiled only to check them log nothing. */
const silent = createLogger('silent', { write() {} });

/**
 * Pipeline names and plugin ids become directory names (`<data_dir>/buffers/<pipeline>/<source
 * id>/`): letters, digits, `_`, `-` and `.`, not starting with `.`, at most 64 characters. So no
 * `/` can make two pairs share a directory and no `..` can leave `buffers/`.
 */
const NAME_RE = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$/;

/** Why `name` cannot be a pipeline name or plugin id; undefined when it can. */
export function nameFault(name: string): string | undefined {
  if (NAME_RE.test(name)) return undefined;
  return `must be 1 to 64 letters, digits, "_", "-" or "." and not start with ".", got ${JSON.stringify(name)}`;
}

/**
 * Runs on a configuration that passed the schema check (loadConfig calls it only then), so names,
 * types and ports are typed. Collects every clash, in file order, and throws them together.
 */
export function validateConfig(config: Config): Config {
  const faults: ConfigError[] = [];
  const names = new Set<string>();
  const listeners: { host: string; port: number; udp: boolean; where: string }[] = [];
  const fileSinks = new Map<string, string>();
  let stdinAt: string | undefined;

  // a report every few ms would be a message storm through every relay, not a heartbeat
  if (config.report_interval_ms > 0 && config.report_interval_ms < MIN_REPORT_INTERVAL_MS) {
    faults.push(new ConfigError('report_interval_ms', `must be 0 (off) or at least ${MIN_REPORT_INTERVAL_MS}, got ${config.report_interval_ms}`));
  }
  const pipelines = config.pipelines.map((p, i): PipelineConfig => {
    const at = joinPath('pipelines', i);
    const badName = nameFault(p.name);
    if (badName) faults.push(new ConfigError(joinPath(at, 'name'), badName));
    if (names.has(p.name)) faults.push(new ConfigError(joinPath(at, 'name'), `duplicate pipeline name ${JSON.stringify(p.name)}`));
    names.add(p.name);
    const scan = (kind: 'source' | 'sink', key: string): PluginConfig[] => {
      const ids = new Set<string>();
      return (kind === 'source' ? p.plugin_sources : p.plugin_sinks).map((plugin, j) => {
        const pluginAt = joinPath(joinPath(at, key), j);
        const where = joinPath(pluginAt, 'config');
        const cfg = plugin.config;
        const id = plugin.id ?? plugin.type;
        const badId = nameFault(id);
        if (badId) faults.push(new ConfigError(joinPath(pluginAt, plugin.id === undefined ? 'type' : 'id'), plugin.id === undefined ? `is the default id and ${badId}` : badId));
        if (ids.has(id)) faults.push(new ConfigError(joinPath(pluginAt, 'id'), `duplicate id ${JSON.stringify(id)}`));
        ids.add(id);
        if (kind === 'source' && plugin.type === 'stdin') {
          if (stdinAt) faults.push(new ConfigError(joinPath(pluginAt, 'type'), `only one stdin source is allowed (another at ${stdinAt})`));
          else stdinAt = pluginAt;
        }
        const buffer = cfg.buffer;
        if (kind === 'source' && !config.data_dir && typeof buffer === 'object' && buffer !== null && (buffer as { type?: unknown }).type === 'disk') {
          faults.push(new ConfigError(joinPath(joinPath(where, 'buffer'), 'type'), 'a disk buffer needs data_dir (the top-level key) to be set'));
        }
        if (LISTENERS[kind].has(plugin.type) && typeof cfg.port === 'number') {
          const host = typeof cfg.host === 'string' ? cfg.host : '0.0.0.0';
          // a UDP port is another port than the TCP one of the same number (syslog on 514 takes both)
          const udp = cfg.mode === 'udp';
          const clash = listeners.find((l) => l.port === cfg.port && l.udp === udp && (l.host === host || WILDCARD.has(l.host) || WILDCARD.has(host)));
          if (clash) faults.push(new ConfigError(joinPath(where, 'port'), `${host}:${cfg.port} is already used by ${clash.where}`));
          else listeners.push({ host, port: cfg.port, udp, where });
        }
        if (kind === 'sink' && plugin.type === 'file' && typeof cfg.directory === 'string' && typeof cfg.name === 'string') {
          const file = `${cfg.directory.replace(/\/+$/, '')}/${cfg.name}`;
          const other = fileSinks.get(file);
          if (other) faults.push(new ConfigError(joinPath(where, 'name'), `file ${file} is already written by ${other}`));
          else fileSinks.set(file, where);
        }
        return Object.freeze({ ...plugin, id });
      });
    };
    const sources = scan('source', 'plugin_sources');
    const sinks = scan('sink', 'plugin_sinks') as SinkConfig[];
    // transforms and routes compile here, so `check` lists every bad `when` of the file at once
    try {
      compileTransforms(p.flow.transforms ?? [], joinPath(joinPath(at, 'flow'), 'transforms'), p.name, silent);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      faults.push(...('faults' in err ? (err as { faults: ConfigError[] }).faults : [err]));
    }
    checkRoutes(sinks, joinPath(at, 'plugin_sinks'), faults);
    return Object.freeze({ ...p, plugin_sources: Object.freeze(sources), plugin_sinks: Object.freeze(sinks) });
  });
  throwConfigFaults(faults);
  return Object.freeze({ ...config, pipelines: Object.freeze(pipelines) });
}
