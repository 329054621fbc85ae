// The import graph of a TypeScript tree (relative imports only, `import type` included: a type
// that two floors share is a layering fact too), its circles, and the layering rule of
// STYLE.md: `core/` is the ground floor and imports nothing from the rest of `src/`.

import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/** file (relative to the root, `/`-separated) -> the files it imports */
export type ImportGraph = Map<string, string[]>;

// `import … from '…'`, `export … from '…'`, `import '…'` and `import('…')`, across line breaks
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, d.name);
    if (d.isDirectory()) out.push(...tsFiles(p));
    else if (d.name.endsWith('.ts') && !d.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

const toKey = (root: string, file: string) => relative(root, file).split(sep).join('/');

/** Reads every `.ts` file under `root` and the relative imports between them. */
export function importGraph(root: string): ImportGraph {
  const graph: ImportGraph = new Map();
  for (const file of tsFiles(root)) {
    const text = readFileSync(file, 'utf8');
    const deps: string[] = [];
    for (const m of text.matchAll(SPECIFIER)) {
      const target = resolve(dirname(file), m[1]!.replace(/\.js$/, '.ts'));
      if (!target.startsWith(root + sep)) continue; // package.json and the like
      if (target.endsWith('.ts')) deps.push(toKey(root, target));
    }
    graph.set(toKey(root, file), deps);
  }
  return graph;
}

/** Every circle of the graph, each as the files of one strongly connected component (Tarjan). */
export function importCircles(graph: ImportGraph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const circles: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) circles.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return circles;
}

/** Imports from a file of `floor/` to a file outside it, as `from -> to`. */
export function importsLeaving(graph: ImportGraph, floor: string): string[] {
  const out: string[] = [];
  for (const [from, deps] of graph) {
    if (!from.startsWith(`${floor}/`)) continue;
    for (const to of deps) if (!to.startsWith(`${floor}/`)) out.push(`${from} -> ${to}`);
  }
  return out;
}

/**
 * The ways a file of `from/` reaches a file of `to/`, directly or through others: for each file of
 * `to/` reached, one path as `a -> b -> …`, sorted. Empty when `from/` never reaches `to/`.
 */
export function pathsBetween(graph: ImportGraph, from: string, to: string): string[] {
  const via = new Map<string, string>();
  const queue = [...graph.keys()].filter((f) => f.startsWith(`${from}/`)).sort();
  for (const f of queue) via.set(f, f);
  const out: string[] = [];
  // each file is queued once: the walk ends after at most as many steps as the graph has files
  for (let i = 0; i < queue.length; i++) {
    const f = queue[i]!;
    for (const d of graph.get(f) ?? []) {
      if (via.has(d)) continue;
      const path = `${via.get(f)!} -> ${d}`;
      via.set(d, path);
      if (d.startsWith(`${to}/`)) out.push(path);
      else queue.push(d);
    }
  }
  return out.sort();
}
