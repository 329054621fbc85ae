// The transform steps' and routes' code (src/transform/, DESIGN.md §24), loaded when a pipeline
// is built that has steps or routes: the worker of a pipeline with neither holds none of it
// (about 0.5–1 MiB of an idle worker; docs/capacity.md, "An idle node").

import type { PipelineConfig } from '../config/schema.js';
import { hasRoutes } from '../transform/has-routes.js';
import type { compileTransforms } from '../transform/index.js';
import type { checkRoutes } from '../transform/routes.js';

export interface TransformCode {
  readonly compileTransforms: typeof compileTransforms;
  readonly checkRoutes: typeof checkRoutes;
}

/** The code, when the pipeline has transform steps or routes; undefined (nothing loaded) otherwise. */
export async function loadTransformCode(cfg: PipelineConfig): Promise<TransformCode | undefined> {
  if ((cfg.flow.transforms?.length ?? 0) === 0 && !hasRoutes(cfg.plugin_sinks)) return undefined;
  const [{ compileTransforms }, { checkRoutes }] = await Promise.all([import('../transform/index.js'), import('../transform/routes.js')]);
  return { compileTransforms, checkRoutes };
}
