// The Node flags a pipeline worker runs with (DESIGN.md §1: the primary forks one worker per
// pipeline): the primary's own, and the young generation's semi-space, set explicitly; and
// what its environment adds (glibc's malloc arenas, below).
//
// An entry lives from its read until every sink finished it: across a hop's round trip, a chain
// acknowledgement, an http_chain 204. 32 MiB semi-spaces (64 MiB of young generation at a
// backlog's peak) once let more of them die young while the shipped edges held 20,000 entries per
// link; with 5,000 (deploy/edge.toml) they live a fraction as long, and on the compose fleet's
// backlog (bench/fleet.js, interleaved pairs) 16 MiB cost no more CPU over all nodes (5.65 and
// 6.99 s against 5.69 and 8.05 s per 300,000 lines) for 30–50 MiB less at the edge's peak. The
// shipped edge asks for 8 MiB in its NODE_OPTIONS, which wins over this (docs/capacity.md).

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

/**
 * glibc's malloc arenas in a pipeline worker. glibc gives threads arenas of their own (up to eight
 * per core), and a worker's threads (V8's compiler and collector helpers, libuv's pool for file
 * reads and compression) each keep what they freed in theirs: a busy edge worker peaked 15–20 MiB
 * higher with them than with two, at the same CPU per line (docs/capacity.md, "The workers'
 * malloc arenas"). The JavaScript heap and Buffers do not come from malloc arenas, so two is no
 * bottleneck. An operator's own MALLOC_ARENA_MAX wins; a C library other than glibc ignores it.
 */
export const WORKER_MALLOC_ARENAS = 2;

/** What the worker's environment adds to the primary's: MALLOC_ARENA_MAX unless the operator set it. */
export function workerEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return env.MALLOC_ARENA_MAX === undefined ? { MALLOC_ARENA_MAX: String(WORKER_MALLOC_ARENAS) } : {};
}
