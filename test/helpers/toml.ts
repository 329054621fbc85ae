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

/** A `[[pipelines.plugin_sinks]]` table with `id` and `type`; `config` lines, if any, go into its config table. */
export const sinkToml = (id: string, type: string, config = ''): string =>
  `[[pipelines.plugin_sinks]]\nid = "${id}"\ntype = "${type}"\n${config ? `[pipelines.plugin_sinks.config]\n${config}\n` : ''}`;

/** A file sink table `id` writing `out.<n>.log` into `directory`; `config` lines follow in its config table. */
export const fileSinkToml = (id: string, directory: string, config = ''): string => sinkToml(id, 'file', `directory = ${JSON.stringify(directory)}\nname = "out"\n${config}`);

/** A file source table `id` on `directory`; `config` lines follow in its config table. */
export const fileSourceToml = (id: string, directory: string, config = ''): string =>
  `[[pipelines.plugin_sources]]\nid = "${id}"\ntype = "file"\n[pipelines.plugin_sources.config]\ndirectory = ${JSON.stringify(directory)}\n${config}\n`;

/**
 * Pipeline `p`: a file source `f` on `directory` with `config` lines in its config table, then
 * `sinks` (by default a stdout sink `out`).
 */
export const filePipeline = (directory: string, config = '', sinks = sinkToml('out', 'stdout')): string =>
  `\n[[pipelines]]\nname = "p"\n${fileSourceToml('f', directory, config)}${sinks}`;
