// The operator's reference of every configuration key, made from the schema and the plugin
// registries (one source of truth): docs/configuration.md (`npm run docs`) and `check --explain`.

import { CONFIG_FIELDS } from '../config/schema.js';
import type { Fields, PluginSpec, Spec } from '../config/spec.js';
import { SINK_SPECS } from '../sinks/specs.js';
import { SOURCE_SPECS } from '../sources/specs.js';

/** One key as the reference shows it: `key` relative to its section, `path` the full dotted name. */
export interface KeyRow {
  readonly key: string;
  readonly path: string;
  readonly spec: Spec;
}

/** A TOML table (or a plugin type) with its keys, nested tables flattened into dotted keys. */
export interface Section {
  /** how the heading names it: `top level`, `[[pipelines]]` as the file spells it, or "`http` sink" */
  readonly title: string;
  /** dotted prefix of its keys: `""`, `pipelines.flow.filters`, `sinks.http` */
  readonly path: string;
  readonly doc: string | undefined;
  readonly rows: readonly KeyRow[];
}

export interface Reference {
  readonly config: readonly Section[];
  readonly sources: readonly Section[];
  readonly sinks: readonly Section[];
}

const join = (base: string, key: string) => (base ? `${base}.${key}` : key);

/** Rows of `fields` under `prefix`; arrays of tables become sections of their own (pushed to `out`). */
function walk(fields: Fields, sectionPath: string, prefix: string, rows: KeyRow[], out: Section[]): void {
  for (const [name, spec] of Object.entries(fields)) {
    const key = join(prefix, name);
    const path = join(sectionPath, key);
    if (spec.t === 'tables') {
      tableSection(`[[${path}]]`, path, spec.doc, spec.fields, out);
      continue;
    }
    if (spec.t === 'variants') {
      // the keys every table has, then one section per variant with its own keys
      tableSection(`[[${path}]]`, path, spec.doc, spec.common, out);
      for (const [name, variant] of Object.entries(spec.variants)) {
        tableSection(`[[${path}]] ${spec.tag} = "${name}"`, `${path}.${name}`, variant.doc, variant.fields, out);
      }
      continue;
    }
    rows.push({ key, path, spec });
    if (spec.t === 'table') walk(spec.fields, sectionPath, key, rows, out);
  }
}

function tableSection(title: string, path: string, doc: string | undefined, fields: Fields, out: Section[]): void {
  const rows: KeyRow[] = [];
  const nested: Section[] = [];
  walk(fields, path, '', rows, nested);
  out.push({ title, path, doc, rows }, ...nested);
}

function pluginSections(kind: 'sources' | 'sinks', specs: Readonly<Record<string, PluginSpec>>): Section[] {
  return Object.entries(specs)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([type, spec]) => {
      const out: Section[] = [];
      tableSection(`\`${type}\` ${kind === 'sources' ? 'source' : 'sink'}`, `${kind}.${type}`, spec.doc, spec.fields, out);
      return out[0]!;
    });
}

/** The whole reference, as the schema and the registries hold it now. */
export function buildReference(
  config: Fields = CONFIG_FIELDS,
  sources: Readonly<Record<string, PluginSpec>> = SOURCE_SPECS,
  sinks: Readonly<Record<string, PluginSpec>> = SINK_SPECS,
): Reference {
  const top: Section[] = [];
  tableSection('top level', '', 'keys outside any table', config, top);
  return { config: top, sources: pluginSections('sources', sources), sinks: pluginSections('sinks', sinks) };
}

function sections(ref: Reference): Section[] {
  return [...ref.config, ...ref.sources, ...ref.sinks];
}

/**
 * Every key or plugin type without a one-line `doc` (or with one of several lines), by full
 * path. The generator refuses to write the reference while any is listed.
 */
export function undocumented(ref: Reference): string[] {
  const bad = (doc: string | undefined) => !doc?.trim() || doc.includes('\n');
  const out: string[] = [];
  for (const s of sections(ref)) {
    if (bad(s.doc)) out.push(s.path);
    for (const r of s.rows) if (bad(r.spec.doc)) out.push(r.path);
  }
  return out;
}

const UNIT_SUFFIXES: readonly (readonly [string, string])[] = [
  ['_ms', 'ms'],
  ['_bytes', 'bytes'],
  ['_mb', 'MiB'],
  ['_hours', 'hours'],
  ['_days', 'days'],
];

export function unitOf(row: KeyRow): string {
  if (row.spec.unit) return row.spec.unit;
  return UNIT_SUFFIXES.find(([suffix]) => row.key.endsWith(suffix))?.[1] ?? '';
}

export function typeOf(spec: Spec): string {
  switch (spec.t) {
    case 'string':
      return spec.oneOf ? spec.oneOf.map((v) => JSON.stringify(v)).join(' | ') : 'string';
    case 'number': {
      const kind = spec.int ? 'integer' : 'number';
      if (spec.min !== undefined && spec.max !== undefined) return `${kind}, ${spec.min} to ${spec.max}`;
      if (spec.min !== undefined) return `${kind} >= ${spec.min}`;
      if (spec.max !== undefined) return `${kind} <= ${spec.max}`;
      return kind;
    }
    case 'boolean':
      return 'boolean';
    case 'strings':
      return 'array of strings';
    case 'table':
      return spec.optional ? 'table (optional)' : 'table';
    case 'tables':
    case 'variants':
      return 'array of tables';
    case 'free':
      return 'table';
  }
}

export function defaultOf(spec: Spec): string {
  if ('required' in spec && spec.required) return 'required';
  if (spec.defDoc !== undefined) return spec.defDoc;
  if ('def' in spec && spec.def !== undefined) return JSON.stringify(spec.def);
  return '';
}

const cell = (text: string) => text.replaceAll('|', '\\|');
const code = (text: string) => (text ? `\`${text}\`` : '');

function renderSection(s: Section, heading: string): string {
  const lines = [`${heading} ${s.title}`, '', `${s.doc ?? ''}`, ''];
  if (s.rows.length === 0) return lines.join('\n');
  lines.push('| Key | Type | Default | Unit | Meaning |', '|---|---|---|---|---|');
  for (const r of s.rows) {
    const def = defaultOf(r.spec);
    lines.push(`| ${[code(r.key), cell(typeOf(r.spec)), def === 'required' ? '*required*' : r.spec.defDoc !== undefined ? `*${cell(def)}*` : cell(code(def)), unitOf(r), cell(r.spec.doc ?? '')].join(' | ')} |`);
  }
  lines.push('');
  for (const r of s.rows) {
    if (!r.spec.values) continue;
    lines.push(`\`${r.key}\`:`, '');
    for (const [value, meaning] of Object.entries(r.spec.values)) lines.push(`- \`${JSON.stringify(value)}\`: ${meaning}`);
    lines.push('');
  }
  return lines.join('\n');
}

const PREAMBLE = `# Configuration reference

<!-- Generated by \`npm run docs\` from src/config/schema.ts and the plugin specs in src/sources/ and src/sinks/. Do not edit: change a key's \`doc\` there and regenerate. -->

The configuration is one TOML file (\`logrelay -c FILE\`). Unknown keys are errors everywhere,
named with their full path. Durations end in \`_ms\`, sizes in \`_bytes\` or \`_mb\` (MiB).
A key marked *required* has no default. An empty default means unset.

Every scalar key outside arrays can also be set from the command line, \`--logging.level=debug\`,
or from the environment by its upper-case path with dots turned into underscores,
\`LOGGING_LEVEL=debug\` (no product prefix). Precedence: command line > environment > file >
defaults. Inside the file, \`\${NAME}\`, \`\${NAME:-default}\`, \`\${NAME-default}\`,
\`\${NAME:?message}\` and \`$$\` are replaced before parsing.

\`logrelay check --explain KEY\` prints one entry of this reference, e.g.
\`logrelay check --explain sinks.http.port\` or \`logrelay check --explain buffer_size\`.

A whole configuration: one pipeline reading standard input and serving it over HTTP. Each
plugin's keys go in its \`config\` table:

\`\`\`toml
[[pipelines]]
name = "app"

[[pipelines.plugin_sources]]
id = "in"
type = "stdin"

[[pipelines.plugin_sinks]]
id = "out"
type = "http"
[pipelines.plugin_sinks.config]
port = 8080
\`\`\`
`;

/** docs/configuration.md. Throws, naming every key, when any key lacks its one-line `doc`. */
export function renderConfigurationReference(ref: Reference = buildReference()): string {
  const missing = undocumented(ref);
  if (missing.length > 0) throw new Error(`configuration keys without a one-line doc string: ${missing.join(', ')}`);
  const parts = [PREAMBLE, '## Node and pipelines', ''];
  for (const s of ref.config) parts.push(renderSection(s, '###'));
  parts.push('## Sources', '', 'Set with `type` in `[[pipelines.plugin_sources]]`; keys in its `config` table.', '');
  for (const s of ref.sources) parts.push(renderSection(s, '###'));
  parts.push('## Sinks', '', 'Set with `type` in `[[pipelines.plugin_sinks]]`; keys in its `config` table.', '');
  for (const s of ref.sinks) parts.push(renderSection(s, '###'));
  return `${parts.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd()}\n`;
}

/** `pipelines[0].flow` and `pipelines.0.flow` both read `pipelines.flow`. */
function normalise(key: string): string {
  return key
    .replace(/\[\d*\]/g, '')
    .split('.')
    .filter((part) => part !== '' && !/^\d+$/.test(part))
    .join('.');
}

function explainRow(r: KeyRow): string {
  const lines = [r.path, `  type: ${typeOf(r.spec)}`];
  const def = defaultOf(r.spec);
  if (def) lines.push(`  default: ${def}`);
  const unit = unitOf(r);
  if (unit) lines.push(`  unit: ${unit}`);
  lines.push(`  ${r.spec.doc ?? ''}`);
  for (const [value, meaning] of Object.entries(r.spec.values ?? {})) lines.push(`    ${JSON.stringify(value)}: ${meaning}`);
  return lines.join('\n');
}

/**
 * The reference of `key` as text: a section (`sinks.http`, `logging`) with its keys, one key by
 * its full path (`sinks.http.port`), or every key whose path ends with it (`buffer_size`).
 * Undefined when nothing matches.
 */
export function explainKey(key: string, ref: Reference = buildReference()): string | undefined {
  const want = normalise(key);
  if (!want) return undefined;
  const all = sections(ref);
  const section = all.find((s) => s.path === want);
  if (section) return [`${section.path}: ${section.doc ?? ''}`, ...section.rows.map(explainRow)].join('\n\n') + '\n';
  const rows = all.flatMap((s) => s.rows);
  let found = rows.filter((r) => r.path === want || r.path.startsWith(`${want}.`));
  if (found.length === 0) found = rows.filter((r) => r.path.endsWith(`.${want}`));
  if (found.length === 0) return undefined;
  return found.map(explainRow).join('\n\n') + '\n';
}
