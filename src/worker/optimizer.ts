// V8's optimizing compiler (TurboFan) in a pipeline worker: held off from the worker's start
// (worker/boot.ts) until its pipeline has carried its first OPTIMIZE_AFTER_ENTRIES entries, then
// on for the worker's life (docs/capacity.md, "An idle node").
//
// Why: the first function V8 optimizes brings the compiler's own code pages of the node binary
// into the process, about 4 MiB of RSS, and an idle worker optimizes anyway: module resolution
// at start, then the file source's polls (each file every 100 ms, the directory every second)
// make small functions of node:fs hot within a minute. None of that gains from optimized code.
// Entries do: without TurboFan a CRI file pipeline costs its worker about 8.5 µs an entry
// against 3.5, so the compiler comes on with the entries. The entries before it cost about 5 µs
// more each, about 5 ms once in the worker's life; a worker that carries a trickle of lines
// (fewer than OPTIMIZE_AFTER_ENTRIES since it started) stays as lean as an idle one. What V8
// learnt meanwhile (type feedback, how hot each function is) stays, so the entries' path is
// optimized soon after, as it would have been from the start. Nothing the operator sees waits
// on it: the polls, the link and the first entries run at once, on V8's other two tiers.
// From Node 24, V8's mid tier (Maglev) is on by default (Node 20 and 22 leave it off), and
// `--no-opt` does not stop it: a function Maglev compiled while TurboFan was held off stayed at
// Maglev after `--opt` (Node 24.21, 2e6 calls more; functions first hot later did reach TurboFan),
// so a pipeline's hot path could be left below TurboFan for good. There Maglev is held off and
// turned back on with TurboFan (both then reach TurboFan, as on Node 20 and 22); where it is off
// by default it is left off.
// The operator's own Node flags win: with any flag that speaks of the optimizing compiler
// (`--no-opt`, `--jitless`, `--max-opt`, …) in the worker's flags or NODE_OPTIONS, V8 is left
// as they say.

import { setFlagsFromString } from 'node:v8';

/** Entries a worker's pipeline carries before the optimizing compiler comes on. */
export const OPTIMIZE_AFTER_ENTRIES = 1000;

/** Node flags that decide about V8's optimizing compiler (`_` read as `-`, as V8 does): where the operator gives one, theirs stands. */
const OPTIMIZER_FLAG = /^--(no-?)?(opt|turbofan|jitless|max-opt|always-opt|maglev)(=|$)/;

/** entries still to carry before the compiler comes on; 0: it is on (or the operator's flags decide) */
let left = 0;
/** Maglev was held off with TurboFan (and comes back with it) */
let maglev = false;

/** Whether this Node.js runs V8's Maglev tier by default: from Node 24 (20 and 22 leave it off). */
export function maglevByDefault(version: string = process.versions.node): boolean {
  return Number(version.split('.')[0]) >= 24;
}

/**
 * At the worker's start, before the rest of its code is loaded: the optimizing compiler off until
 * the pipeline carries entries, unless the operator's flags speak of it. True when it was held off.
 */
export function holdOptimizer(execArgv: readonly string[] = process.execArgv, nodeOptions: string = process.env.NODE_OPTIONS ?? ''): boolean {
  if ([...execArgv, ...nodeOptions.split(/\s+/)].some((flag) => OPTIMIZER_FLAG.test(flag.replaceAll('_', '-')))) return false;
  maglev = maglevByDefault();
  setFlagsFromString('--no-opt');
  if (maglev) setFlagsFromString('--no-maglev');
  left = OPTIMIZE_AFTER_ENTRIES;
  return true;
}

/** A source's batch of `count` entries (or frames) went into the pipeline: the compiler comes on once enough have. */
export function carried(count: number): void {
  if (left === 0) return;
  left = Math.max(0, left - count);
  if (left > 0) return;
  setFlagsFromString('--opt');
  if (maglev) setFlagsFromString('--maglev');
}

/** Whether the optimizing compiler is still held off. */
export function optimizerHeld(): boolean {
  return left > 0;
}
