// Multiline groups (DESIGN.md §21): consecutive lines of one stream joined into one entry by a
// start pattern, a condition pattern and one of four modes (as Vector's `multiline`), bounded by
// `max_lines`/`max_bytes` (split, never dropped) and emitted after `timeout_ms` of quiet. Pure and
// synchronous: the caller passes the time and takes what is emitted.

import type { Fields } from '../config/spec.js';
import { PluginError, type PluginKind } from '../core/errors.js';
import type { LineCounters, LogicalLine } from './line.js';

export type MultilineMode = 'continue_through' | 'continue_past' | 'halt_before' | 'halt_with';
export type MultilinePreset = 'java' | 'python' | 'go';

/** The `multiline` table of the `file` and `stdin` sources. */
export const MULTILINE_FIELDS: Fields = {
  preset: {
    t: 'string',
    oneOf: ['java', 'python', 'go'],
    doc: 'ready-made patterns instead of `start_pattern`, `condition_pattern` and `mode`',
    values: {
      java: 'a line, then `at …`, `... n more`, `Caused by: …`, `Suppressed: …` lines',
      python: '`Traceback (most recent call last):`, its indented lines, and the exception line that ends it',
      go: '`panic:` or `fatal error:` and the dump after it: indented lines, `goroutine N [state]:` headers, function lines at column 0 (`main.main()`, `main.lookup(...)`), `created by …`, `[signal …` and `exit status N`; any other line begins the next entry',
    },
  },
  start_pattern: { t: 'string', doc: 'JavaScript regular expression: a line that may begin an entry (unset: any line); a line matching none while no entry is open is an entry of its own' },
  condition_pattern: { t: 'string', doc: 'JavaScript regular expression the `mode` applies to lines after the first of an entry (required without `preset`)' },
  mode: {
    t: 'string',
    oneOf: ['continue_through', 'continue_past', 'halt_before', 'halt_with'],
    doc: 'how `condition_pattern` extends an entry (required without `preset`)',
    values: {
      continue_through: 'lines that match continue the entry; the first that does not begins the next',
      continue_past: 'lines that match continue the entry, and so does the one after the last of them, which ends it',
      halt_before: 'lines that do not match continue the entry; one that matches begins the next',
      halt_with: 'lines that do not match continue the entry; one that matches ends it',
    },
  },
  timeout_ms: { t: 'number', def: 1000, int: true, min: 1, doc: 'an open entry with no new line for this long is emitted (counted in `multiline_timeouts`)' },
  max_lines: { t: 'number', def: 500, int: true, min: 1, unit: 'lines', doc: 'an entry this long is emitted and its next lines begin another (counted in `multiline_splits`)' },
  max_bytes: { t: 'number', int: true, min: 1, doc: 'an entry this long (joined with `\\n`) is emitted and its next lines begin another; default: the source\'s `max_line_bytes`' },
};

/** The `multiline` table as validated by the spec. */
export interface MultilineConfig {
  readonly preset?: MultilinePreset;
  readonly start_pattern?: string;
  readonly condition_pattern?: string;
  readonly mode?: MultilineMode;
  readonly timeout_ms: number;
  readonly max_lines: number;
  readonly max_bytes?: number;
}

/** Compiled rules of one `multiline` table. */
export interface MultilineRules {
  /** undefined: any line may begin an entry */
  readonly start: RegExp | undefined;
  readonly condition: RegExp;
  readonly mode: MultilineMode;
  readonly timeoutMs: number;
  readonly maxLines: number;
  readonly maxBytes: number;
}

const PRESETS: Readonly<Record<MultilinePreset, { start?: string; condition: string; mode: MultilineMode }>> = {
  // the first line is any line (the message); frames, elisions and causes continue it
  java: {
    condition: String.raw`^\s+at\s|^\s+\.\.\.\s+\d+\s+(?:more|common frames omitted)|^\s*Caused by:|^\s*Suppressed:`,
    mode: 'continue_through',
  },
  // the first line is exempt from the condition: `Traceback` opens, the first line at column 0 ends
  // it (the exception line); a chained traceback's "During handling …" is an entry of its own
  python: { start: String.raw`^Traceback \(most recent call last\):`, condition: String.raw`^\S`, mode: 'halt_with' },
  // a panic and its dump: indented frames, `goroutine N [state]:` headers, `created by`, and
  // `[signal …` continue it; a line at column 0 with anything else begins the next entry
  go: {
    start: String.raw`^(?:panic: |fatal error: )`,
    condition: String.raw`^(?:\s|goroutine \d+ \[|created by |\[signal |[\w./*()-]+\(.*\)$|exit status \d+$)`,
    mode: 'continue_through',
  },
};

function compile(kind: PluginKind, id: string, key: string, pattern: string): RegExp {
  try {
    return new RegExp(pattern);
  } catch (err) {
    throw new PluginError(kind, id, key, `not a valid regular expression: ${(err as Error).message}`);
  }
}

/**
 * Compiles a `multiline` table once; a pattern that does not compile, or a table that is neither
 * a preset nor patterns with a mode, fails naming its key (`multiline.condition_pattern`).
 * `maxBytes` is used when the table sets no `max_bytes`.
 */
export function multilineRules(kind: PluginKind, id: string, cfg: MultilineConfig, maxBytes: number): MultilineRules {
  const common = { timeoutMs: cfg.timeout_ms, maxLines: cfg.max_lines, maxBytes: cfg.max_bytes ?? maxBytes };
  if (cfg.preset !== undefined) {
    for (const key of ['start_pattern', 'condition_pattern', 'mode'] as const) {
      if (cfg[key] !== undefined) throw new PluginError(kind, id, `multiline.${key}`, 'must not be set with `preset`');
    }
    const p = PRESETS[cfg.preset];
    return { start: p.start === undefined ? undefined : new RegExp(p.start), condition: new RegExp(p.condition), mode: p.mode, ...common };
  }
  if (cfg.condition_pattern === undefined) throw new PluginError(kind, id, 'multiline.condition_pattern', 'is required without `preset`');
  if (cfg.mode === undefined) throw new PluginError(kind, id, 'multiline.mode', 'is required without `preset`');
  return {
    start: cfg.start_pattern === undefined ? undefined : compile(kind, id, 'multiline.start_pattern', cfg.start_pattern),
    condition: compile(kind, id, 'multiline.condition_pattern', cfg.condition_pattern),
    mode: cfg.mode,
    ...common,
  };
}

/** An entry being grouped. */
interface Group {
  readonly first: LogicalLine;
  readonly texts: string[];
  bytes: number;
  end: number;
  /** when its last line came, epoch ms */
  lastAt: number;
}

/**
 * Groups one file's (or input's) logical lines into entries, per stream. `push` lines in order;
 * what completes goes to `out`; `expire` emits the entries quiet for `timeout_ms`, `flush` all.
 */
export class MultilineGroups {
  private readonly open = new Map<string, Group>();

  constructor(
    private readonly rules: MultilineRules,
    private readonly counters: LineCounters,
  ) {}

  /** Adds where each stream's open entry begins to `starts`. */
  openStarts(starts: Record<string, number>): void {
    for (const [key, g] of this.open) starts[key] = Math.min(starts[key] ?? g.first.start, g.first.start);
  }

  /** Whether an entry is open. */
  get isOpen(): boolean {
    return this.open.size > 0;
  }

  /** When the earliest open entry times out (epoch ms), or undefined when none is open. */
  nextTimeout(): number | undefined {
    let min: number | undefined;
    for (const g of this.open.values()) if (min === undefined || g.lastAt < min) min = g.lastAt;
    return min === undefined ? undefined : min + this.rules.timeoutMs;
  }

  push(line: LogicalLine, now: number, out: LogicalLine[]): void {
    const key = line.stream ?? '';
    const g = this.open.get(key);
    if (g === undefined) {
      this.begin(key, line, now, out);
      return;
    }
    const matched = this.rules.condition.test(line.text);
    switch (this.rules.mode) {
      case 'continue_through':
        if (matched) this.append(key, g, line, now, out);
        else {
          this.emit(key, g, out);
          this.begin(key, line, now, out);
        }
        return;
      case 'halt_before':
        if (!matched) this.append(key, g, line, now, out);
        else {
          this.emit(key, g, out);
          this.begin(key, line, now, out);
        }
        return;
      case 'continue_past':
      case 'halt_with': {
        const last = this.append(key, g, line, now, out);
        if (matched === (this.rules.mode === 'halt_with')) this.emit(key, last, out);
        return;
      }
    }
  }

  /** Emits the entries with no new line for `timeout_ms` before `now`. */
  expire(now: number, out: LogicalLine[]): void {
    for (const [key, g] of this.open) {
      if (now - g.lastAt < this.rules.timeoutMs) continue;
      this.counters.multiline_timeouts++;
      this.emit(key, g, out);
    }
  }

  /** Emits every open entry (its file was rotated away, deleted, or input ended). */
  flush(out: LogicalLine[]): void {
    for (const [key, g] of [...this.open].sort((x, y) => x[1].first.start - y[1].first.start)) this.emit(key, g, out);
  }

  /** Forgets every open entry (the reader starts again before them). */
  reset(): void {
    this.open.clear();
  }

  /** A line no entry is open for: it begins one when it may, else it is an entry of its own. */
  private begin(key: string, line: LogicalLine, now: number, out: LogicalLine[]): void {
    if (this.rules.start !== undefined && !this.rules.start.test(line.text)) out.push(line);
    else this.open.set(key, this.group(line, now));
  }

  private group(line: LogicalLine, now: number): Group {
    return { first: line, texts: [line.text], bytes: Buffer.byteLength(line.text), end: line.end, lastAt: now };
  }

  /** Adds `line` to `g`, or, when `g` is full, emits `g` and begins another with it; returns the group it went into. */
  private append(key: string, g: Group, line: LogicalLine, now: number, out: LogicalLine[]): Group {
    const bytes = Buffer.byteLength(line.text);
    if (g.texts.length >= this.rules.maxLines || g.bytes + 1 + bytes > this.rules.maxBytes) {
      this.counters.multiline_splits++;
      this.emit(key, g, out);
      const next = this.group(line, now);
      this.open.set(key, next);
      return next;
    }
    g.texts.push(line.text);
    g.bytes += 1 + bytes;
    g.end = line.end;
    g.lastAt = now;
    return g;
  }

  private emit(key: string, g: Group, out: LogicalLine[]): void {
    this.open.delete(key);
    if (g.texts.length === 1) {
      out.push(g.first);
      return;
    }
    this.counters.multiline_entries++;
    const f = g.first;
    out.push({ text: g.texts.join('\n'), start: f.start, end: g.end, idAt: f.idAt, stream: f.stream, time: f.time, nanos: f.nanos });
  }
}
