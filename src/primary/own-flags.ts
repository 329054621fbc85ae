// The primary's own V8 flags, set at run time before the rest of the code is loaded
// (bin/logrelay.js sets them, then imports cli.js): the process the operator starts is
// the primary itself (DESIGN.md §2), so there is no command line of ours to put them on.
//
// No optimizing compiler (TurboFan) in the primary. It runs little JavaScript: a stats message
// per worker a second, the status report, a scrape of /metrics, a reload; none of it is hot
// enough to gain from TurboFan, which compiles on its own at start (module resolution makes a
// few path functions "hot") and then keeps its code pages and zone memory resident: ~4 MiB of
// an idle primary's RSS (docs/capacity.md). Ignition and Sparkplug still run everything. The
// primary's CPU over a million-entry CRI file pipeline (bench/run.js) is 0.00-0.02 s with
// TurboFan or without it, against 3.1-3.8 s in the worker. The baseline compiler (Sparkplug)
// stays: without it an idle primary held ~0.7 MiB less, but took 0.03-0.04 s over the same run.
// Workers never inherit it: `setFlagsFromString` does not change `process.execArgv`, which is
// what `cluster.fork` passes on, and the entries' path needs TurboFan; a worker holds it off
// only until its pipeline carries entries (src/worker/optimizer.ts,
// test/integration/idle-primary.test.ts).
//
// No mid-tier compiler (Maglev) either: Node 24's V8 runs it by default and `--no-opt` leaves it
// on; in an idle Node 24 primary it held about 1.7 MiB (57.7 MiB against 59.3-59.5). Node 20 and
// 22 have it off by default, so there the flag changes nothing.

import { setFlagsFromString } from 'node:v8';

/** The flags the primary sets on itself. */
export const PRIMARY_V8_FLAGS = ['--no-opt', '--no-maglev'] as const;

/** The flags `tail` puts back: it prints a stream of entries, a hot loop of its own. */
export const CLIENT_V8_FLAGS = ['--opt'] as const;

export function setOwnFlags(flags: readonly string[]): void {
  for (const flag of flags) setFlagsFromString(flag);
}

