// `logrelay check`: every plugin built without binding, opening or connecting; every error printed.

import type { Config } from './config/schema.js';
import { errorMessage } from './core/errors.js';
import { createLogger } from './core/log.js';
import { BuildError } from './worker/pipeline-api.js';
import { buildPipeline } from './worker/pipeline.js';

/** Every build error of every pipeline, as `pipeline=<name>: <error>`. */
export async function checkPipelines(config: Config): Promise<string[]> {
  const log = createLogger('silent', { write() {} });
  const errors: string[] = [];
  for (const p of config.pipelines) {
    try {
      await buildPipeline(p, { log, checkOnly: true, debug: false, node: config.node_name, dataDir: config.data_dir });
    } catch (err) {
      const list = err instanceof BuildError ? err.errors : [errorMessage(err)];
      for (const e of list) errors.push(`pipeline=${p.name}: ${e}`);
    }
  }
  return errors;
}
