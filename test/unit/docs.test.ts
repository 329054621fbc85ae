// The hand-written reference in docs/ stays whole: the README links every page, links between
// pages resolve, and every counter the code keeps is explained in docs/counters.md.

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import test from 'ava';
import { checkPipelines } from '../../src/check.js';
import { loadConfig } from '../../src/config/load.js';
import { IdSequence } from '../../src/core/ids.js';
import { ROOT, tempDir } from '../helpers/node.js';

const DOCS = join(ROOT, 'docs');
const PAGES = ['configuration.md', 'counters.md', 'protocol.md', 'operations.md', 'kubernetes.md', 'syslog.md', 'fleet.md', 'transforms.md', 'benchmarks.md', 'tls.md', 'otlp.md', 'nats.md', 'delivery.md', 'sources.md', 'sinks.md', 'flow.md', 'development.md', 'capacity.md'];
const read = (...path: string[]) => readFileSync(join(ROOT, ...path), 'utf8');

test('the README links every page of docs/ and no longer sends operators to a file outside the repository', (t) => {
  const readme = read('README.md');
  const existing = readdirSync(DOCS).filter((f) => f.endsWith('.md'));
  for (const page of existing) t.true(readme.includes(`](docs/${page})`), `the README links docs/${page}`);
  t.false(readme.includes('shared/DESIGN.md'));
  t.deepEqual(existing.sort(), [...PAGES].sort());
});

test('the README is a README: at most 300 lines', (t) => {
  const lines = read('README.md').split('\n').length - 1;
  t.true(lines <= 300, `README.md has ${lines} lines; move the reference into docs/`);
});

test('relative links in the README and docs/ lead to files that exist', (t) => {
  for (const file of ['README.md', ...PAGES.map((p) => join('docs', p))]) {
    for (const [, target] of read(file).matchAll(/\]\(([^)#:]+)(#[^)]*)?\)/g)) {
      t.true(existsSync(join(ROOT, dirname(file), target!)), `${file} links ${target}`);
    }
  }
});

/** The names of every counter object literal in src/ (`counters = { … }`, `counters: { … }`). */
function counterNames(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
  for (const file of walk(join(ROOT, 'src'))) {
    for (const [, body] of readFileSync(file, 'utf8').matchAll(/counters(?:: Counters)?\s*[=:]\s*\{([^{}]*)\}/g)) {
      // a type's declaration of the counters (readonly members) names no counter of its own
      if (body!.includes('readonly ')) continue;
      for (const [, name] of body!.matchAll(/([a-z_]+):/g)) names.add(name!);
    }
  }
  return names;
}

test('every counter the code keeps is explained in docs/counters.md', (t) => {
  const names = counterNames();
  t.true(names.has('total_entries') && names.has('available_tokens') && names.has('unacked'), 'the scan finds counters');
  const doc = read('docs', 'counters.md');
  const missing = [...names].filter((n) => !doc.includes(`\`${n}\``));
  t.deepEqual(missing, [], `add these counters to docs/counters.md: ${missing.join(', ')}`);
});

test('the first snippet of docs/configuration.md is a whole configuration that passes check', async (t) => {
  const md = read('docs', 'configuration.md');
  const snippet = /```toml\n([\s\S]*?)```/.exec(md)?.[1];
  t.truthy(snippet, 'a toml snippet');
  const dir = tempDir();
  try {
    const config = loadConfig({ file: dir.file('first.toml', snippet!), env: {}, flags: new Map() });
    t.deepEqual(await checkPipelines(config), []);
  } finally {
    dir.remove();
  }
});

test("protocol.md's id example has the shape of a real id", (t) => {
  const real = new IdSequence('edge-01', 'app', 'applog').next();
  const shape = /^[A-Za-z0-9_-]{16}\.[0-9a-z]+$/;
  t.regex(real, shape);
  const examples = [...read('docs', 'protocol.md').matchAll(/"id":"([^"…]+)"/g)].map((m) => m[1]!);
  t.true(examples.length > 0);
  for (const id of examples) t.regex(id, shape, id);
});

test('the operator docs point to what a reader of the repository has, not to DESIGN.md sections', (t) => {
  for (const page of ['README.md', ...PAGES.map((p) => join('docs', p))]) {
    const text = read(page);
    t.notRegex(text, /DESIGN\.md|§\d/, `${page} cites the design contract, which is not in the repository`);
    t.notRegex(text, /\bcontract\b|design doc/i, `${page} speaks of a contract or a design document, which readers do not have`);
  }
});

test('the shipped files in deploy/ cite the doc pages that say it, never DESIGN.md sections, and the sections they name exist', (t) => {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const d of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      if (d.isDirectory()) walk(join(dir, d.name));
      else files.push(join(dir, d.name));
    }
  };
  walk('deploy');
  t.true(files.length > 10, `files in deploy/: ${files.length}`);
  for (const file of files) {
    const text = read(file);
    // the dashboard's JSON escapes § as \u00a7
    t.notRegex(text, /DESIGN\.md|§\d|\\u00a7\d/, `${file} cites the design contract, which operators do not have`);
    for (const m of text.matchAll(/(README\.md|docs\/[a-z-]+\.md), "([^"]+)"/g)) t.true(read(m[1]!).includes(m[2]!), `${file}: ${m[1]} has no section "${m[2]}"`);
    for (const m of text.matchAll(/(docs\/[a-z-]+\.md)/g)) t.true(existsSync(join(ROOT, m[1]!)), `${file}: ${m[1]} exists`);
  }
});

test('the ids section of docs/delivery.md names every sink type whose pipeline stamps ids', async (t) => {
  const { SINKS } = await import('../../src/sinks/index.js');
  const { createLogger } = await import('../../src/core/log.js');
  const log = createLogger('error', { write: () => undefined });
  const para = read('docs', 'delivery.md').split('\n## Entry ids and dedup\n\n')[1]!.split('\n\n')[0]!;
  const configs: Record<string, Record<string, unknown>> = {
    tcp_chain: { host: '127.0.0.1', port: 1 },
    http_chain: { host: '127.0.0.1', port: 1 },
    nats: { servers: ['nats://127.0.0.1:4222'] },
    otlp: { endpoint: 'http://127.0.0.1:4318/v1/logs' },
  };
  const stamping: string[] = [];
  for (const [type, load] of Object.entries(SINKS)) {
    const factory = await load();
    let sink;
    try {
      sink = factory({ id: 's', type, config: configs[type] ?? { host: '127.0.0.1', port: 1, directory: '/tmp', name: 'x', servers: ['nats://127.0.0.1:4222'] } }, { pipeline: 'p', log, checkOnly: true, node: 'n' });
    } catch {
      continue;
    }
    if (sink.carriesIds) stamping.push(type);
  }
  t.deepEqual(stamping.sort(), Object.keys(configs).sort(), 'the sink types that carry ids');
  for (const type of stamping) t.true(para.includes(`\`${type}\``), `the ids paragraph names ${type}`);
});
