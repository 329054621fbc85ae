// What an idle node keeps out of its memory (docs/capacity.md, "An idle node"), checked in a
// real node's processes with a module loaded into them by `--import`:
//  - V8's optimizing compilers: the primary runs without them (bin/logrelay.js sets `--no-opt`
//    and `--no-maglev` on itself, src/primary/own-flags.ts); a pipeline worker holds them off
//    while idle and turns them on once its pipeline carries entries (src/worker/optimizer.ts);
//  - ICU's time zone data: the primary's node reports write their times from the UTC fields
//    (src/core/iso-time.ts), never by Date.prototype.toISOString, which reads it.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { OPTIMIZE_AFTER_ENTRIES } from '../../src/worker/optimizer.js';
import { childPids, ownedTempDir, spawnOwnedNode, waitFor, waitReady } from '../helpers/node.js';

/**
 * Loaded into both processes with `--import` (workers inherit NODE_OPTIONS): once the node runs,
 * every 250 ms (at most 240 times) asks V8 to optimize a new small function on its next call,
 * calls it, and writes the probe's number and V8's optimization status of it to `opt.<pid>.txt`.
 * Natives syntax is turned on at run time (NODE_OPTIONS takes no such V8 flag) and used through
 * `new Function`, parsed after it.
 */
const PROBE = `import { writeFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
setFlagsFromString('--allow-natives-syntax');
const status = new Function('f', 'return %GetOptimizationStatus(f)');
const prepare = new Function('f', '%PrepareFunctionForOptimization(f)');
const optimizeNext = new Function('f', '%OptimizeFunctionOnNextCall(f)');
const maglevNext = new Function('f', '%OptimizeMaglevOnNextCall(f)');
let n = 0;
/** a new small function (its own source: no code shared with the other probe's), called three times with \`ask\` before the third; its status */
const tried = (ask, k) => {
  const twice = new Function('a', \`return a * \${k} + \${n}\`);
  prepare(twice);
  twice(1);
  twice(2);
  ask(twice);
  twice(3);
  return status(twice);
};
const probe = () => {
  n++;
  writeFileSync(new URL(\`./opt.\${process.pid}.txt\`, import.meta.url), \`\${n} \${tried(optimizeNext, 2)} \${tried(maglevNext, 3)}\`);
  if (n < 240) setTimeout(probe, 250).unref();
};
setTimeout(probe, 1500).unref();
`;

/** V8's OptimizationStatus bit for a function running optimized code (src/runtime/runtime.h). */
const OPTIMIZED = 1 << 4;

/** A plain file node's config, its files in `dir`; `head` goes first. */
const fileNode = (dir: string, head = ''): string =>
  `${head}[[pipelines]]\nname = "app"\n[[pipelines.plugin_sources]]\nid = "in"\ntype = "file"\n[pipelines.plugin_sources.config]\ndirectory = "${dir}"\npattern = "*.log"\n[[pipelines.plugin_sinks]]\nid = "out"\ntype = "null"\n`;

/**
 * Loaded with `--import`, acting in the primary alone (a worker has an IPC channel): records each
 * call of Date.prototype.toISOString (its stack, to `iso.<pid>.txt`), and counts the times made
 * either way (a byte of `times.<pid>.txt` per call of toISOString or read of a Date's UTC year,
 * which every RFC 3339 text made from the UTC fields does).
 */
const DATE_PROBE = `import { appendFileSync } from 'node:fs';
if (typeof process.send !== 'function') {
const toISOString = Date.prototype.toISOString;
const getUTCFullYear = Date.prototype.getUTCFullYear;
Date.prototype.toISOString = function () {
  appendFileSync(new URL(\`./iso.\${process.pid}.txt\`, import.meta.url), new Error('toISOString').stack + '\\n');
  appendFileSync(new URL(\`./times.\${process.pid}.txt\`, import.meta.url), '.');
  return toISOString.call(this);
};
Date.prototype.getUTCFullYear = function () {
  appendFileSync(new URL(\`./times.\${process.pid}.txt\`, import.meta.url), '.');
  return getUTCFullYear.call(this);
};
}
`;

test('the primary runs without the optimizing compiler; its worker holds it off while idle and turns it on with its entries', async (t) => {
  const dir = ownedTempDir(t);
  dir.file('probe.mjs', PROBE);
  const config = dir.file('node.toml', fileNode(dir.path));
  const node = spawnOwnedNode(t, ['-c', config], { env: { NODE_OPTIONS: `--import=${join(dir.path, 'probe.mjs')}` } });
  await waitReady(node, 'the node');
  const [worker] = await waitFor(async () => ((await childPids(node.child.pid!)).length === 1 ? childPids(node.child.pid!) : undefined), 'one worker');
  /** the probe's latest [number, status asked for the optimizing compiler, status asked for Maglev] in process `pid` */
  const probeOf = (pid: number): [number, number, number] | undefined => {
    const file = join(dir.path, `opt.${pid}.txt`);
    if (!existsSync(file)) return undefined;
    const [n, status, maglev] = readFileSync(file, 'utf8').split(' ').map(Number);
    return n === undefined || status === undefined || maglev === undefined || Number.isNaN(maglev) ? undefined : [n, status, maglev];
  };
  // idle: two probes in the worker, the pipeline started and nothing read
  const [, primary, primaryMaglev] = await waitFor(() => probeOf(node.child.pid!), "the primary's probe");
  const [idleN, idle, idleMaglev] = await waitFor(() => {
    const p = probeOf(worker!);
    return p !== undefined && p[0] >= 2 ? p : undefined;
  }, "the idle worker's second probe");
  t.is(primary & OPTIMIZED, 0, `the primary optimized a function (status ${primary})`);
  t.is(idle & OPTIMIZED, 0, `the idle worker optimized a function (status ${idle}, probe ${idleN})`);
  // Maglev, the mid tier that Node 24's V8 runs by default and --no-opt leaves on: off in both
  // (on Node 20 and 22 it is off by default, so this checks something only where it is on)
  t.is(primaryMaglev & OPTIMIZED, 0, `the primary compiled a function with Maglev (status ${primaryMaglev})`);
  t.is(idleMaglev & OPTIMIZED, 0, `the idle worker compiled a function with Maglev (status ${idleMaglev}, probe ${idleN})`);

  // entries: as many as hold it off, and as many again
  writeFileSync(join(dir.path, 'app.log'), 'a line of the application\n'.repeat(2 * OPTIMIZE_AFTER_ENTRIES));
  const [busyN] = await waitFor(() => {
    const p = probeOf(worker!);
    return p !== undefined && p[1] & OPTIMIZED ? p : undefined;
  }, 'the worker optimizing a function asked to after its pipeline carried entries');
  const [, primaryAfter, primaryMaglevAfter] = probeOf(node.child.pid!)!;
  await node.stop();

  t.true(busyN > idleN, `probe ${busyN} after ${idleN}`);
  t.is(primaryAfter & OPTIMIZED, 0, `the primary optimized a function (status ${primaryAfter})`);
  t.is(primaryMaglevAfter & OPTIMIZED, 0, `the primary compiled a function with Maglev (status ${primaryMaglevAfter})`);
});

test("the primary's node reports make their times without toISOString (no ICU time zone data in an idle primary)", async (t) => {
  const dir = ownedTempDir(t);
  dir.file('probe.mjs', DATE_PROBE);
  // a node report every 100 ms: two times each (started_at, sent_at)
  const config = dir.file('node.toml', fileNode(dir.path, 'report_interval_ms = 100\n'));
  const node = spawnOwnedNode(t, ['-c', config], { env: { NODE_OPTIONS: `--import=${join(dir.path, 'probe.mjs')}` } });
  await waitReady(node, 'the node');
  const pid = node.child.pid!;
  const times = () => {
    const file = join(dir.path, `times.${pid}.txt`);
    return existsSync(file) ? readFileSync(file, 'utf8').length : 0;
  };
  await waitFor(() => times() >= 40, 'the primary making times (20 node reports)');
  const iso = join(dir.path, `iso.${pid}.txt`);
  const calls = existsSync(iso) ? readFileSync(iso, 'utf8') : '';
  await node.stop();

  t.is(calls, '', 'toISOString called in the primary');
});
