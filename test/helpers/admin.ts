// Test helpers for the admin endpoint (DESIGN.md §16): GETs and other methods on it, and a strict
// parser of the Prometheus text exposition format (0.0.4) the tests hold /metrics to.

/** One request to the admin endpoint on 127.0.0.1; resolves status and body. */
export async function adminRequest(port: number, path: string, method = 'GET'): Promise<{ status: number; body: string; type: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: await res.text(), type: res.headers.get('content-type') ?? '' };
}

/** `/status` parsed (the shape of src/primary/node-status.ts, loosely typed for assertions). */
export async function adminStatus(port: number): Promise<AdminStatus> {
  const { status, body } = await adminRequest(port, '/status');
  if (status !== 200) throw new Error(`/status answered ${status}`);
  return JSON.parse(body) as AdminStatus;
}

export interface AdminStatus {
  generation: number;
  ready: boolean;
  pipelines: Record<
    string,
    {
      state: string;
      pid: number | null;
      restarts: number;
      resident_memory_bytes: number | null;
      counters: { flow: Record<string, number>; rate_limit?: Record<string, number>; sources: Record<string, Record<string, number>>; sinks: Record<string, Record<string, number>> };
      types: { sources: Record<string, string>; sinks: Record<string, string> };
      filtered_entries: number;
      drops: { component: string; reason: string; count: number }[];
      links: Record<string, string>;
      certificate_expiry_seconds: Record<string, number>;
    }
  >;
}

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Family {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  readonly samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function parseValue(raw: string, where: string): number {
  if (raw === '+Inf') return Number.POSITIVE_INFINITY;
  if (raw === '-Inf') return Number.NEGATIVE_INFINITY;
  if (raw === 'NaN') return Number.NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(raw)) throw new Error(`${where}: bad value ${JSON.stringify(raw)}`);
  return Number(raw);
}

/** Labels `{a="x",b="y\"z"}`: escapes only \\, \" and \n; no duplicate names. */
function parseLabels(text: string, where: string): { labels: Record<string, string>; rest: string } {
  const labels: Record<string, string> = {};
  let i = 1;
  for (;;) {
    if (text[i] === '}') return { labels, rest: text.slice(i + 1) };
    const eq = text.indexOf('=', i);
    if (eq < 0) throw new Error(`${where}: label without =`);
    const name = text.slice(i, eq);
    if (!LABEL.test(name)) throw new Error(`${where}: bad label name ${JSON.stringify(name)}`);
    if (name in labels) throw new Error(`${where}: duplicate label ${name}`);
    if (text[eq + 1] !== '"') throw new Error(`${where}: label value not quoted`);
    let j = eq + 2;
    let value = '';
    for (;;) {
      const ch = text[j];
      if (ch === undefined) throw new Error(`${where}: unterminated label value`);
      if (ch === '"') break;
      if (ch === '\\') {
        const next = text[j + 1];
        if (next === 'n') value += '\n';
        else if (next === '\\' || next === '"') value += next;
        else throw new Error(`${where}: bad escape \\${next}`);
        j += 2;
      } else if (ch === '\n') {
        throw new Error(`${where}: newline in label value`);
      } else {
        value += ch;
        j++;
      }
    }
    labels[name] = value;
    i = j + 1;
    if (text[i] === ',') i++;
    else if (text[i] !== '}') throw new Error(`${where}: expected , or } after label ${name}`);
  }
}

/**
 * Parses the exposition text strictly: every family has one HELP and one TYPE before its samples,
 * sample names belong to the family just declared, label syntax and values are checked, and the
 * text ends with a newline. Throws on the first fault, naming the line.
 */
export function parseExposition(text: string): Map<string, Family> {
  if (!text.endsWith('\n')) throw new Error('exposition does not end with a newline');
  const families = new Map<string, Family>();
  let current: { name: string; help?: string; type?: Family['type']; samples: Sample[] } | undefined;
  const close = () => {
    if (!current) return;
    if (current.help === undefined || current.type === undefined) throw new Error(`family ${current.name} lacks HELP or TYPE`);
    if (families.has(current.name)) throw new Error(`family ${current.name} appears twice`);
    families.set(current.name, { name: current.name, help: current.help, type: current.type, samples: current.samples });
  };
  const lines = text.slice(0, -1).split('\n');
  lines.forEach((line, n) => {
    const where = `line ${n + 1}`;
    if (line === '') return; // the format ignores empty lines (prom-client puts one between families)
    const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (meta) {
      const [, kind, name, rest] = meta as unknown as [string, string, string, string];
      if (!NAME.test(name)) throw new Error(`${where}: bad metric name ${name}`);
      if (current?.name !== name) {
        close();
        current = { name, samples: [] };
      }
      if (current.samples.length > 0) throw new Error(`${where}: ${kind} after samples of ${name}`);
      if (kind === 'HELP') {
        if (current.help !== undefined) throw new Error(`${where}: second HELP for ${name}`);
        current.help = rest;
      } else {
        if (current.type !== undefined) throw new Error(`${where}: second TYPE for ${name}`);
        if (!TYPES.has(rest)) throw new Error(`${where}: bad type ${rest}`);
        current.type = rest as Family['type'];
      }
      return;
    }
    if (line.startsWith('#')) return;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(.*)$/.exec(line);
    if (!m) throw new Error(`${where}: not a sample: ${line}`);
    const name = m[1]!;
    let rest = m[2]!;
    let labels: Record<string, string> = {};
    if (rest.startsWith('{')) ({ labels, rest } = parseLabels(rest, where));
    const parts = rest.split(' ');
    if (parts[0] !== '' || parts.length < 2 || parts.length > 3) throw new Error(`${where}: bad sample tail ${JSON.stringify(rest)}`);
    const value = parseValue(parts[1]!, where);
    if (parts[2] !== undefined && !/^-?\d+$/.test(parts[2])) throw new Error(`${where}: bad timestamp`);
    if (!current) throw new Error(`${where}: sample before any HELP/TYPE`);
    const base = current.name;
    const okName = name === base || (['histogram', 'summary'].includes(current.type ?? '') && [`${base}_bucket`, `${base}_sum`, `${base}_count`].includes(name));
    if (!okName) throw new Error(`${where}: sample ${name} outside its family (${base})`);
    current.samples.push({ name, labels, value });
  });
  close();
  return families;
}

/** The value of the sample of `family` whose labels include `labels`; undefined when none. */
export function sampleValue(families: ReadonlyMap<string, Family>, family: string, labels: Readonly<Record<string, string>> = {}): number | undefined {
  return families.get(family)?.samples.find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}
