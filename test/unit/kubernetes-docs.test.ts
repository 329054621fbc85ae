// docs/kubernetes.md (issue 29, point 6): linked from the README, covers install, pointing the
// edge elsewhere, scraping and tuning, and what it tells operators to type agrees with the
// manifests (its file table, its YAML, the DaemonSet patch's paths).

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { parse as parseYaml } from 'yaml';
import { buildKustomization, KUSTOMIZE_DIR, workloads } from '../helpers/kubernetes.js';
import { ROOT } from '../helpers/node.js';

const doc = readFileSync(join(ROOT, 'docs', 'kubernetes.md'), 'utf8');
/** YAML examples, a list item's indentation taken off */
const yamlBlocks = [...doc.matchAll(/^( *)```yaml\n([\s\S]*?)^\1```/gm)].map((m) => m[2]!.replace(new RegExp(`^${m[1]}`, 'gm'), ''));

test('the README links docs/kubernetes.md, which covers install, elsewhere, scraping and tuning', (t) => {
  t.regex(readFileSync(join(ROOT, 'README.md'), 'utf8'), /\]\(docs\/kubernetes\.md\)/);
  t.regex(doc, /cert-manager\.yaml/, 'installs cert-manager');
  t.regex(doc, /kubectl apply -k deploy\/kubernetes/);
  t.regex(doc, /^## Pointing the edges at relays elsewhere$/m);
  t.regex(doc, /^## Scraping$/m);
  t.regex(doc, /^## Tuning$/m);
});

test('every file the document lists is in deploy/kubernetes, and every YAML example parses', (t) => {
  const listed = [...doc.matchAll(/^\| `([^`|]+)`(?:, `([^`|]+)`)?(?:, `([^`|]+)`)? \|/gm)].flatMap((m) => m.slice(1).filter(Boolean) as string[]);
  t.true(listed.length >= 8, `the file table lists ${listed.length} files`);
  for (const f of listed) t.true(existsSync(join(KUSTOMIZE_DIR, f)), `${f} exists`);
  t.true(yamlBlocks.length >= 3);
  for (const block of yamlBlocks) t.notThrows(() => parseYaml(block));
});

test('the patch that points the edge elsewhere replaces the relay host variables', (t) => {
  const edge = workloads(buildKustomization().objects).find((w) => w.kind === 'DaemonSet')!;
  const overlay = yamlBlocks.map((b) => parseYaml(b) as { patches?: { target: { kind: string; name: string }; patch: string }[] }).find((y) => y?.patches);
  const patch = overlay?.patches?.[0];
  t.deepEqual(patch?.target, { kind: 'DaemonSet', name: edge.name });
  const ops = parseYaml(patch?.patch ?? '[]') as { op: string; path: string }[];
  const named = ops.map((op) => {
    const m = /^\/spec\/template\/spec\/containers\/0\/env\/(\d+)\/value$/.exec(op.path);
    return m ? edge.container.env?.[Number(m[1])]?.name : undefined;
  });
  t.deepEqual(named, ['RELAY_A_HOST', 'RELAY_B_HOST']);
});
