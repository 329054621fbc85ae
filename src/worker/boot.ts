// The pipeline worker's executable (the primary's cluster forks it): V8's optimizing compiler is
// held off first (worker/optimizer.ts), before the worker's modules are resolved and loaded (the
// first work V8 would optimize), then the worker itself (worker/main.ts).

import { holdOptimizer } from './optimizer.js';

holdOptimizer();
await import('./main.js');
