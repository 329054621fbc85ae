// The primary loads no plugin code, and a pipeline worker only the plugins its own pipeline names
// (src/sources/index.ts and src/sinks/index.ts load a type's code when a pipeline names it, and
// src/worker/plugins.ts the disk buffer's when a source has one):
// checked on the modules two real processes loaded, recorded by a module loader hook.

import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { childPids, ownedTempDir, spawnOwnedNode, waitFor, waitReady } from '../helpers/node.js';

/** Registers HOOKS in every process started with `--import` of it (workers inherit NODE_OPTIONS). */
const REGISTER = "import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n";
/** Appends the URL of every module a process loads to `loaded.<pid>.txt` beside it. */
const HOOKS = `import { appendFileSync } from 'node:fs';
const out = new URL(\`./loaded.\${process.pid}.txt\`, import.meta.url);
export async function load(url, context, next) {
  appendFileSync(out, url + '\\n');
  return next(url, context);
}
`;

/** The modules of `dist/src/`, the packages and the Node modules imported that a process loaded, as `src/…`, `package:…` and `node:…`. */
function loadedBy(dir: string, pid: number): string[] {
  const file = join(dir, `loaded.${pid}.txt`);
  if (!existsSync(file)) return [];
  const out = new Set<string>();
  for (const url of readFileSync(file, 'utf8').split('\n')) {
    const src = /\/dist\/(src\/.+\.js)$/.exec(url);
    const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    if (src) out.add(src[1]!);
    else if (pkg) out.add(`package:${pkg[1]}`);
    else if (url.startsWith('node:')) out.add(url);
  }
  return [...out].sort();
}

/** The worker's own plugins (a file source, a null sink) and the registries. */
const OWN_PLUGINS = /^src\/(sources\/(index|types|file(-[a-z]+)*)|sinks\/(index|types|null))\.js$/;

test('the primary loads no plugin code, and a worker only the source and sink types of its pipeline (and no disk buffer code without a buffer); no node:crypto or node:zlib in the primary', async (t) => {
  const dir = ownedTempDir(t);
  dir.file('register.mjs', REGISTER);
  dir.file('hooks.mjs', HOOKS);
  const config = dir.file(
    'node.toml',
    `[[pipelines]]\nname = "app"\n[[pipelines.plugin_sources]]\nid = "in"\ntype = "file"\n[pipelines.plugin_sources.config]\ndirectory = "${dir.path}"\npattern = "*.log"\n[[pipelines.plugin_sinks]]\nid = "out"\ntype = "null"\n`,
  );
  const node = spawnOwnedNode(t, ['-c', config], { env: { NODE_OPTIONS: `--import=${join(dir.path, 'register.mjs')}` } });
  await waitReady(node, 'the node');
  const [worker] = await waitFor(async () => ((await childPids(node.child.pid!)).length === 1 ? childPids(node.child.pid!) : undefined), 'one worker');
  const primary = loadedBy(dir.path, node.child.pid!);
  const own = loadedBy(dir.path, worker!);
  await node.stop();

  t.true(primary.includes('src/primary/supervisor.js'), `the hook saw the primary's modules: ${primary.join(' ')}`);
  t.deepEqual(
    primary.filter((m) => /^src\/(sources|sinks|worker|flow|lines|chain|otlp|nats)\//.test(m) || /^package:(prom-client|@nats-io|fast-glob)$/.test(m)),
    [],
    'pipeline and plugin code in the primary (the admin endpoint is off: no prom-client either)',
  );
  t.deepEqual(
    primary.filter((m) => /^src\/(tail|top)\.js$/.test(m) || m === 'package:eventsource'),
    [],
    'the tail and top commands, in a running node',
  );
  t.true(own.includes('src/sources/file.js') && own.includes('src/sinks/null.js'), `the worker loaded its plugins: ${own.join(' ')}`);
  t.deepEqual(
    own.filter((m) => (/^src\/(sources|sinks|otlp|nats)\//.test(m) && !OWN_PLUGINS.test(m)) || /^package:@nats-io\//.test(m)),
    [],
    'plugins the pipeline does not name, in its worker',
  );
  t.deepEqual(
    own.filter((m) => /^src\/buffer\/(source|disk-buffer|writer|writer-thread|reader|recover)\.js$/.test(m)),
    [],
    'the disk buffer, in a worker whose sources have none',
  );
  t.deepEqual(
    own.filter((m) => m.startsWith('src/transform/') && m !== 'src/transform/has-routes.js'),
    [],
    'the transform steps\' and routes\' code, in a worker whose pipeline has neither',
  );
  // what an idle node would hold for nothing (docs/capacity.md, "An idle node")
  t.deepEqual(primary.filter((m) => ['node:crypto', 'node:tls', 'node:zlib'].includes(m)), [], 'node modules the primary of a plain file node never uses');
});

test('a worker whose pipeline has transform steps and routes loads their code, and they run', async (t) => {
  const dir = ownedTempDir(t);
  dir.file('register.mjs', REGISTER);
  dir.file('hooks.mjs', HOOKS);
  const logs = join(dir.path, 'logs');
  const out = join(dir.path, 'out');
  mkdirSync(logs);
  mkdirSync(out);
  const config = dir.file(
    'node.toml',
    `[[pipelines]]\nname = "app"\n[pipelines.flow.format]\ntype = "json"\n[[pipelines.flow.transforms]]\ntype = "set"\nfields = { "fields.tagged" = true }\n` +
      `[[pipelines.plugin_sources]]\nid = "in"\ntype = "file"\n[pipelines.plugin_sources.config]\ndirectory = "${logs}"\npattern = "*.log"\nfrom = "start"\n` +
      `[[pipelines.plugin_sinks]]\nid = "hello"\ntype = "file"\nwhen = "message =~ 'hello'"\n[pipelines.plugin_sinks.config]\ndirectory = "${out}"\nname = "hello"\n` +
      `[[pipelines.plugin_sinks]]\nid = "rest"\ntype = "null"\nelse = true\n`,
  );
  writeFileSync(join(logs, 'app.log'), 'other line\nhello world\n');
  const node = spawnOwnedNode(t, ['-c', config], { env: { NODE_OPTIONS: `--import=${join(dir.path, 'register.mjs')}` } });
  await waitReady(node, 'the node');
  const [worker] = await waitFor(async () => ((await childPids(node.child.pid!)).length === 1 ? childPids(node.child.pid!) : undefined), 'one worker');
  const written = () => readdirSync(out).map((f) => readFileSync(join(out, f), 'utf8')).join('');
  const text = await waitFor(() => (written().includes('hello world') ? written() : undefined), 'the routed line written');
  const own = loadedBy(dir.path, worker!);
  await node.stop();

  t.true(own.includes('src/transform/index.js') && own.includes('src/transform/routes.js'), `the worker loaded the transform and route code: ${own.join(' ')}`);
  const lines = text.trim().split('\n').map((l) => JSON.parse(l) as { message: string; fields?: { tagged?: boolean } });
  t.deepEqual(
    lines.map((l) => [l.message, l.fields?.tagged]),
    [['hello world', true]],
    'the step set its field, the route took the line its condition holds for and no other',
  );
});
