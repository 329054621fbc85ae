// The Node flags a pipeline worker runs with (DESIGN.md §1: the primary forks one worker per
// pipeline): the primary's own, and the young generation's semi-space, set explicitly.
//
// An entry lives from its read until every sink finished it: across a hop's round trip, a chain
// acknowledgement, an http_chain 204. 32 MiB semi-spaces (64 MiB of young generation at a
// backlog's peak) once let more of them die young while the shipped edges held 20,000 entries per
// link; with 5,000 (deploy/edge.toml then; 2,000 now) they live a fraction as long, and on the compose fleet's
// backlog (bench/fleet.js, interleaved pairs) 16 MiB cost no more CPU over all nodes (5.65 and
// 6.99 s against 5.69 and 8.05 s per 300,000 lines) for 30–50 MiB less at the edge's peak.

/** The young generation's semi-space of a pipeline worker, MiB (V8's own default on 64-bit). */
export const WORKER_SEMI_SPACE_MB = 16;

const SEMI_SPACE_FLAG = /^--max[-_]semi[-_]space[-_]size(=|$)/;

/**
 * The worker's `execArgv`: the primary's own flags, then `--max-semi-space-size` unless the
 * operator set it already (in the node's flags or in NODE_OPTIONS): theirs wins.
 */
export function workerExecArgv(execArgv: readonly string[] = process.execArgv, nodeOptions: string = process.env.NODE_OPTIONS ?? ''): string[] {
  const own = [...execArgv, ...nodeOptions.split(/\s+/)].some((flag) => SEMI_SPACE_FLAG.test(flag));
  return own ? [...execArgv] : [...execArgv, `--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`];
}
