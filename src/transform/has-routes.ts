// Whether a pipeline routes (DESIGN.md §24), apart from the routes' code (routes.ts): a worker
// asks it before it loads the transform and route code, which a pipeline without them never does.

import type { SinkConfig } from '../core/plugin-config.js';

/** True when any sink of the pipeline has `when`, `else` or `dead_letter`. */
export const hasRoutes = (sinks: readonly SinkConfig[]): boolean => sinks.some((s) => s.when !== undefined || s.else === true || s.dead_letter !== undefined);
