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

/** The folder of a file key: `sinks/tcp.ts` → `sinks`; a file at the root (`cli.ts`) is its own `.`. */
export const folderOf = (file: string): string => (file.includes('/') ? file.slice(0, file.indexOf('/')) : '.');

/**
 * The graph of folders: folder → the other folders its files import, each with the file imports
 * behind it (`from -> to`), so a fault can name the lines to change.
 */
export type FolderGraph = Map<string, Map<string, string[]>>;

export function folderGraph(graph: ImportGraph): FolderGraph {
  const out: FolderGraph = new Map();
  const edgesOf = (folder: string) => {
    let edges = out.get(folder);
    if (!edges) out.set(folder, (edges = new Map()));
    return edges;
  };
  for (const [from, deps] of graph) {
    const edges = edgesOf(folderOf(from));
    for (const to of deps) {
      const target = folderOf(to);
      edgesOf(target);
      if (target === folderOf(from)) continue;
      const files = edges.get(target) ?? [];
      files.push(`${from} -> ${to}`);
      edges.set(target, files);
    }
  }
  return out;
}

/** The folder graph as an ImportGraph (folder → folders), for importCircles and the floors. */
const folderLinks = (folders: FolderGraph): ImportGraph => new Map([...folders].map(([f, edges]) => [f, [...edges.keys()]]));

/**
 * Every circle of folders (a strongly connected component of more than one folder), each as
 * `circle: a, b` followed by the file imports along the folder edges inside it: what to change.
 */
export function folderCircles(folders: FolderGraph): string[] {
  return importCircles(folderLinks(folders)).map((scc) => {
    const inside = new Set(scc);
    const edges: string[] = [];
    for (const from of scc) {
      for (const [to, files] of folders.get(from) ?? []) if (inside.has(to)) edges.push(`  ${from}/ -> ${to}/: ${files.join(', ')}`);
    }
    return [`circle: ${scc.join(', ')}`, ...edges].join('\n');
  });
}

/**
 * The floor of every folder when the folders form floors: 0 for one that imports no other
 * folder, else one above the highest floor it imports. Undefined when there is a circle.
 */
export function folderFloors(folders: FolderGraph): Map<string, number> | undefined {
  if (importCircles(folderLinks(folders)).length > 0) return undefined;
  const floors = new Map<string, number>();
  const floorOf = (f: string): number => {
    const known = floors.get(f);
    if (known !== undefined) return known;
    const below = [...(folders.get(f)?.keys() ?? [])].map(floorOf);
    const floor = below.length === 0 ? 0 : Math.max(...below) + 1;
    floors.set(f, floor);
    return floor;
  };
  for (const f of folders.keys()) floorOf(f);
  return floors;
}

/**
 * Where a folder of `lower` reaches a folder of `upper` through imports, directly or through
 * other folders: one line each, with the shortest folder path (`chain/ reaches sinks/: chain -> worker -> sinks`).
 */
export function reachFaults(folders: FolderGraph, lower: readonly string[], upper: readonly string[]): string[] {
  const faults: string[] = [];
  for (const from of lower) {
    // breadth first: `via` holds the folder each one was first reached from
    const via = new Map<string, string>([[from, from]]);
    const todo = [from];
    for (let i = 0; i < todo.length; i++) {
      for (const to of folders.get(todo[i]!)?.keys() ?? []) {
        if (via.has(to)) continue;
        via.set(to, todo[i]!);
        todo.push(to);
      }
    }
    for (const to of upper) {
      if (!via.has(to) || to === from) continue;
      const path = [to];
      for (let at = to; at !== from; at = via.get(at)!) path.unshift(via.get(at)!);
      faults.push(`${from}/ reaches ${to}/: ${path.join(' -> ')}`);
    }
  }
  return faults;
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
