// Test helpers: TOML tables that many node configs share.

/** A `[[pipelines.plugin_<kind>]]` table with `id` and `type`, host 127.0.0.1 and `port`, then `config` lines. */
export const localPluginToml = (kind: 'sources' | 'sinks', id: string, type: string, port: number, config = ''): string => `[[pipelines.plugin_${kind}]]
id = "${id}"
type = "${type}"
[pipelines.plugin_${kind}.config]
host = "127.0.0.1"
port = ${port}
${config}`;

/** A random source table; `config` lines go into its config table. */
export const randomSourceToml = (config: string): string => `[[pipelines.plugin_sources]]
type = "random"
[pipelines.plugin_sources.config]
${config}
`;
