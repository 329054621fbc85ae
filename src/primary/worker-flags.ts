// The Node flags a pipeline worker runs with (DESIGN.md §1: the primary forks one worker per
// pipeline): the primary's own, and a larger young generation for the garbage collector.
//
// An entry lives from its read until every sink finished it: across a hop's round trip, a chain
// acknowledgement, an http_chain 204. With V8's default semi-spaces (16 MiB on 64-bit), entries
// still in flight when a young-generation collection runs are copied, then promoted, and the old
// generation's collector pays for them again; with 32 MiB most are done before that. Measured on
// the compose fleet (bench/fleet.js): about 16 % more unique lines a second, for at most 32 MiB
// more memory per worker (two semi-spaces), taken only while allocation is that fast.

/** The young generation's semi-space of a pipeline worker, MiB. */
export const WORKER_SEMI_SPACE_MB = 32;

const SEMI_SPACE_FLAG = /^--max[-_]semi[-_]space[-_]size(=|$)/;

/**
 * The worker's `execArgv`: the primary's own flags, then `--max-semi-space-size` unless the
 * operator set it already (in the node's flags or in NODE_OPTIONS): theirs wins.
 */
export function workerExecArgv(execArgv: readonly string[] = process.execArgv, nodeOptions: string = process.env.NODE_OPTIONS ?? ''): string[] {
  const own = [...execArgv, ...nodeOptions.split(/\s+/)].some((flag) => SEMI_SPACE_FLAG.test(flag));
  return own ? [...execArgv] : [...execArgv, `--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`];
}
