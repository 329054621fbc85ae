// A pipeline worker's optimizing compiler (src/worker/optimizer.ts): held off at its start unless
// the operator's Node flags speak of it, on once the pipeline carried OPTIMIZE_AFTER_ENTRIES
// entries. The compiler itself is checked in a real worker (test/integration/idle-primary.test.ts);
// here, what decides. Serial: the module's state and V8's flags are this process's own.

import { execFileSync } from 'node:child_process';
import test from 'ava';
import { carried, holdOptimizer, maglevByDefault, OPTIMIZE_AFTER_ENTRIES, optimizerHeld } from '../../src/worker/optimizer.js';

test.serial("the operator's flags about the optimizing compiler win: nothing is held off", (t) => {
  for (const [execArgv, nodeOptions] of [
    [['--no-opt'], ''],
    [['--noopt'], ''],
    [['--opt'], ''],
    [['--turbofan'], ''],
    [['--no-turbofan'], ''],
    [['--max-opt=2'], ''],
    [['--max_opt=2'], ''],
    [[], '--jitless'],
    [[], '--no-warnings  --jitless'],
    [['--enable-source-maps', '--no-maglev'], ''],
  ] as const) {
    t.false(holdOptimizer(execArgv, nodeOptions), `held off with ${[...execArgv, nodeOptions].join(' ')}`);
    t.false(optimizerHeld());
  }
});

test.serial('held off without such flags, on once the pipeline carried enough entries, in batches', (t) => {
  // flags that only begin alike, or speak of something else, are not about the compiler
  t.true(holdOptimizer(['--max-semi-space-size=16', '--optimize-for-size', '--turbo-inlining', '--enable-source-maps'], '--no-warnings'));
  t.true(optimizerHeld());
  carried(0);
  carried(OPTIMIZE_AFTER_ENTRIES - 2);
  t.true(optimizerHeld(), `on after ${OPTIMIZE_AFTER_ENTRIES - 2} entries`);
  carried(500);
  t.false(optimizerHeld(), `still held after ${OPTIMIZE_AFTER_ENTRIES + 498} entries`);
  carried(1);
  t.false(optimizerHeld());
});

test('Maglev is held off with TurboFan only where Node runs it by default (from Node 24)', (t) => {
  for (const v of ['20.19.0', '20.20.2', '22.23.3']) t.false(maglevByDefault(v), v);
  for (const v of ['24.0.0', '24.21.0', '26.1.0']) t.true(maglevByDefault(v), v);
  // and this runtime's own answer agrees with V8's flag default, as `node --v8-options` prints it
  const help = execFileSync(process.execPath, ['--v8-options'], { encoding: 'utf8' });
  const m = /^ {2}--maglev \(.*\n\s+type: bool\s+default: (--no-maglev|--maglev)/m.exec(help);
  t.truthy(m, 'the --maglev flag and its default in node --v8-options');
  t.is(maglevByDefault(), m![1] === '--maglev');
});
