// Cross-checks the schema cannot express: unique names and ids, one stdin, and no two listeners
// on one host:port (workers share listening handles through the primary, so the OS would not refuse it).

import { ConfigError } from '../core/errors.js';
import type { Config, PipelineConfig, PluginConfig } from './schema.js';
import { joinPath } from './spec.js';

/** Plugin types that listen on `host`/`port` (default host 0.0.0.0). */
const LISTENERS: Readonly<Record<'source' | 'sink', ReadonlySet<string>>> = {
  source: new Set(['tcp_chain', 'http_chain']),
  sink: new Set(['tcp', 'http']),
};

const WILDCARD = new Set(['0.0.0.0', '::', '']);

function withIds(plugins: readonly PluginConfig[], path: string): PluginConfig[] {
  const seen = new Set<string>();
  return plugins.map((p, i) => {
    const id = p.id ?? p.type;
    if (seen.has(id)) throw new ConfigError(joinPath(joinPath(path, i), 'id'), `duplicate id ${JSON.stringify(id)}`);
    seen.add(id);
    return Object.freeze({ ...p, id });
  });
}

export function validateConfig(config: Config): Config {
  const names = new Set<string>();
  const listeners: { host: string; port: number; where: string }[] = [];
  const fileSinks = new Map<string, string>();
  let stdinAt: string | undefined;

  const pipelines = config.pipelines.map((p, i): PipelineConfig => {
    const at = joinPath('pipelines', i);
    if (names.has(p.name)) throw new ConfigError(joinPath(at, 'name'), `duplicate pipeline name ${JSON.stringify(p.name)}`);
    names.add(p.name);
    const sources = withIds(p.plugin_sources, joinPath(at, 'plugin_sources'));
    const sinks = withIds(p.plugin_sinks, joinPath(at, 'plugin_sinks'));
    const scan = (kind: 'source' | 'sink', list: PluginConfig[], key: string) =>
      list.forEach((plugin, j) => {
        const pluginAt = joinPath(joinPath(at, key), j);
        const where = joinPath(pluginAt, 'config');
        const cfg = plugin.config;
        if (kind === 'source' && plugin.type === 'stdin') {
          if (stdinAt) throw new ConfigError(joinPath(pluginAt, 'type'), `only one stdin source is allowed (another at ${stdinAt})`);
          stdinAt = pluginAt;
        }
        if (LISTENERS[kind].has(plugin.type) && typeof cfg.port === 'number') {
          const host = typeof cfg.host === 'string' ? cfg.host : '0.0.0.0';
          const clash = listeners.find((l) => l.port === cfg.port && (l.host === host || WILDCARD.has(l.host) || WILDCARD.has(host)));
          if (clash) throw new ConfigError(joinPath(where, 'port'), `${host}:${cfg.port} is already used by ${clash.where}`);
          listeners.push({ host, port: cfg.port, where });
        }
        if (kind === 'sink' && plugin.type === 'file' && typeof cfg.directory === 'string' && typeof cfg.name === 'string') {
          const key2 = `${cfg.directory.replace(/\/+$/, '')}/${cfg.name}`;
          const other = fileSinks.get(key2);
          if (other) throw new ConfigError(joinPath(where, 'name'), `file ${key2} is already written by ${other}`);
          fileSinks.set(key2, where);
        }
      });
    scan('source', sources, 'plugin_sources');
    scan('sink', sinks, 'plugin_sinks');
    return Object.freeze({ ...p, plugin_sources: Object.freeze(sources), plugin_sinks: Object.freeze(sinks) });
  });
  return Object.freeze({ ...config, pipelines: Object.freeze(pipelines) });
}
