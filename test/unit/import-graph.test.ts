// The house rules of STYLE.md over src/: no import circle, and `core/` imports nothing from the
// rest of `src/`. Part of `npm test`, so either fault fails the build.

import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { importCircles, importGraph, importsLeaving } from '../helpers/import-graph.js';

const SRC = fileURLToPath(new URL('../../../src', import.meta.url));

test('src/ has no import circle', (t) => {
  const graph = importGraph(SRC);
  t.true(graph.size > 50, `read ${graph.size} files under ${SRC}`);
  t.deepEqual(importCircles(graph), [], 'files that import each other, directly or through others');
});

test('src/core/ imports nothing from the rest of src/', (t) => {
  const graph = importGraph(SRC);
  t.true([...graph.keys()].some((f) => f.startsWith('core/')), 'core/ files were read');
  t.deepEqual(importsLeaving(graph, 'core'), []);
});

test('the checker sees a circle through three files, type imports and re-exports, and an import leaving core/', (t) => {
  const root = mkdtempSync(join(tmpdir(), 'logrelay-graph-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'core'));
  mkdirSync(join(root, 'config'));
  mkdirSync(join(root, 'net'));
  writeFileSync(join(root, 'core/log.ts'), "import type {\n  LogLevel,\n} from '../config/schema.js';\nexport const x = 1;\n");
  writeFileSync(join(root, 'config/schema.ts'), "export { TLS_FIELDS } from '../net/tls.js';\n");
  writeFileSync(join(root, 'net/tls.ts'), "import { x } from '../core/log.js';\nimport('./lazy.js');\n");
  writeFileSync(join(root, 'net/lazy.ts'), "import '../../outside.js';\nexport {};\n");
  const graph = importGraph(root);
  t.deepEqual(importCircles(graph), [['config/schema.ts', 'core/log.ts', 'net/tls.ts']]);
  t.deepEqual(importsLeaving(graph, 'core'), ['core/log.ts -> config/schema.ts']);
  t.deepEqual(graph.get('net/tls.ts'), ['core/log.ts', 'net/lazy.ts']);
});

test('what plugins share lives beside them: no shared folder imports a plugin', (t) => {
  const graph = importGraph(SRC);
  // docs/ (the reference generators) reads every registry on purpose: it writes the operator's reference
  const shared = ['core', 'net', 'chain', 'syslog', 'nats', 'otlp', 'lines', 'buffer', 'ipc', 'flow'];
  const faults: string[] = [];
  for (const [from, deps] of graph) {
    if (!shared.includes(from.split('/')[0]!)) continue;
    for (const to of deps) if (to.startsWith('sinks/') || to.startsWith('sources/')) faults.push(`${from} -> ${to}`);
  }
  t.deepEqual(faults, []);
});

test('the primary never touches entries: primary/ and ipc/ import nothing from flow/, worker/, sources/ or sinks/', (t) => {
  const graph = importGraph(SRC);
  const faults: string[] = [];
  for (const [from, deps] of graph) {
    if (!from.startsWith('primary/') && !from.startsWith('ipc/')) continue;
    for (const to of deps) if (/^(flow|worker|sources|sinks)\//.test(to)) faults.push(`${from} -> ${to}`);
  }
  t.deepEqual(faults, []);
});
