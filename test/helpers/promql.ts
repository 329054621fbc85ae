// The metric names a PromQL expression reads, for checking alert rules and dashboards against
// what the node exports: every identifier that is not a function, keyword, label or duration.

/** Families the contract names that another branch adds (DESIGN.md §23); drop each once it is exported. */
export const PENDING_FAMILIES: readonly string[] = ['logrelay_buffer_errors_total'];

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

/** Metric names in `expr`, each once, in order of appearance. */
export function metricNames(expr: string): string[] {
  const names: string[] = [];
  // strings, label matchers and grouping/range brackets hold no metric names
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\{?[A-Za-z_]\w*\}?/g, ' ');
  for (const m of bare.matchAll(/(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(?![\w.])/g)) {
    const name = m[1]!;
    const after = bare.slice(m.index! + name.length).trimStart();
    if (after.startsWith('(')) continue; // a function
    if (KEYWORDS.has(name.toLowerCase())) continue;
    if (/^\d/.test(name)) continue;
    if (!names.includes(name)) names.push(name);
  }
  return names;
}
