// The house rules of STYLE.md over src/: no import circle, between files or between folders (the
// folders form floors), `core/` imports nothing from the rest of `src/`, and what plugins share
// reaches no plugin. Part of `npm test`, so any fault fails the build.

import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { folderCircles, folderFloors, folderGraph, importCircles, importGraph, importsLeaving, pathsBetween, reachFaults } from '../helpers/import-graph.js';

const SRC = fileURLToPath(new URL('../../../src', import.meta.url));

test('src/ has no import circle', (t) => {
  const graph = importGraph(SRC);
  t.true(graph.size > 50, `read ${graph.size} files under ${SRC}`);
  t.deepEqual(importCircles(graph), [], 'files that import each other, directly or through others');
});

/** The folders plugins share, which must stay below every plugin: none may reach sources/ or sinks/. */
const PLUGIN_SHARED = ['lines', 'otlp', 'syslog', 'chain'];
const PLUGINS = ['sources', 'sinks'];

test('the folders of src/ form floors: no two import each other, directly or through others', (t) => {
  const folders = folderGraph(importGraph(SRC));
  t.true(folders.size > 15, `read ${folders.size} folders under ${SRC}`);
  const circles = folderCircles(folders);
  t.deepEqual(circles, [], `folders that import each other (change one of the imports listed):\n${circles.join('\n')}`);
  const floors = folderFloors(folders);
  if (floors) t.log([...floors].sort((a, b) => a[1] - b[1] || a[0].localeCompare(b[0])).map(([f, n]) => `${n} ${f}`).join('\n'));
});

test('lines/, otlp/, syslog/ and chain/ reach no plugin, directly or through other folders', (t) => {
  const folders = folderGraph(importGraph(SRC));
  for (const f of PLUGIN_SHARED) t.true(folders.has(f), `${f}/ was read`);
  t.deepEqual(reachFaults(folders, PLUGIN_SHARED, PLUGINS), []);
});

test('the floor checks fail on a planted violation: one extra import makes a folder circle, another a shared folder reaching a plugin', (t) => {
  const real = importGraph(SRC);
  const before = folderCircles(folderGraph(real));
  // the edge this session removed: the reference generator inside config/ reading the registries
  const circled = new Map(real);
  circled.set('config/reference.ts', ['sources/index.ts']);
  const after = folderCircles(folderGraph(circled));
  const planted = after.find((c) => !before.includes(c));
  t.truthy(planted, 'a new folder circle is reported');
  t.regex(planted!, /^circle: .*\bconfig\b.*\bsources\b/);
  t.true(planted!.includes('config/ -> sources/: config/reference.ts -> sources/index.ts'), planted);
  t.is(folderFloors(folderGraph(circled)), undefined, 'no floors while folders import each other');
  // through another folder: chain/ -> worker/ -> sinks/
  const reaching = new Map(real);
  reaching.set('chain/planted.ts', ['worker/main.ts']);
  t.deepEqual(
    reachFaults(folderGraph(reaching), PLUGIN_SHARED, PLUGINS).filter((f) => f.startsWith('chain/')),
    ['chain/ reaches sources/: chain -> worker -> sources', 'chain/ reaches sinks/: chain -> worker -> sinks'],
  );
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

test('the entry line lives below chain/ and buffer/: neither reaches the other, directly or through others', (t) => {
  const graph = importGraph(SRC);
  t.true([...graph.keys()].some((f) => f.startsWith('chain/')) && [...graph.keys()].some((f) => f.startsWith('buffer/')), 'chain/ and buffer/ files were read');
  t.deepEqual(pathsBetween(graph, 'chain', 'buffer'), []);
  t.deepEqual(pathsBetween(graph, 'buffer', 'chain'), []);
});

test('chain/ is the chain protocol: only the tcp_chain and http_chain plugins import it', (t) => {
  const graph = importGraph(SRC);
  const chainPlugins = ['sources/tcp-chain.ts', 'sources/http-chain.ts', 'sinks/tcp-chain.ts', 'sinks/http-chain.ts'];
  const faults: string[] = [];
  for (const [from, deps] of graph) {
    if (from.startsWith('chain/') || chainPlugins.includes(from)) continue;
    for (const to of deps) if (to.startsWith('chain/')) faults.push(`${from} -> ${to}`);
  }
  t.deepEqual(faults, []);
});

test('the checker sees a folder reach another through a third, and not the other way', (t) => {
  const root = mkdtempSync(join(tmpdir(), 'logrelay-graph-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  for (const dir of ['core', 'chain', 'buffer', 'net']) mkdirSync(join(root, dir));
  writeFileSync(join(root, 'core/entry-line.ts'), 'export const line = 1;\n');
  writeFileSync(join(root, 'chain/protocol.ts'), "import { line } from '../core/entry-line.js';\nimport type { X } from '../net/source-config.js';\n");
  writeFileSync(join(root, 'net/source-config.ts'), "export { BUFFER_FIELDS } from '../buffer/config.js';\n");
  writeFileSync(join(root, 'buffer/config.ts'), "import { line } from '../core/entry-line.js';\n");
  writeFileSync(join(root, 'buffer/reader.ts'), "import './config.js';\n");
  const graph = importGraph(root);
  t.deepEqual(pathsBetween(graph, 'chain', 'buffer'), ['chain/protocol.ts -> net/source-config.ts -> buffer/config.ts']);
  t.deepEqual(pathsBetween(graph, 'buffer', 'chain'), []);
});
