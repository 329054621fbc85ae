// Model test of line assembly (DESIGN.md §21): random CRI files (lines split into partials, the
// two streams interleaved, garbage lines, stack-trace-like groups, max_lines splits) read in
// random batches with restarts from a lagging acknowledged position, then rotated away; compared
// with a plain reference of the rules: after dropping copies by id, every stream's entries are
// the reference's, and every copy of an id is the same whole entry.

import test from 'ava';
import fc from 'fast-check';
import { LineAssembler } from '../../src/lines/assembler.js';
import type { LineCounters, LogicalLine, Resume } from '../../src/lines/line.js';
import { multilineRules } from '../../src/lines/multiline.js';

const T = '2026-11-25T10:45:00.000000001Z';
const MAX_LINES = 3;

type Key = 'stdout' | 'stderr' | '';
/** A logical line: its stream ('' for a garbage line), text, and how it is cut into pieces. */
interface Spec {
  readonly key: Key;
  readonly cont: boolean;
  readonly cuts: readonly number[];
}

const specArb = fc.record({
  key: fc.constantFrom<Key>('stdout', 'stdout', 'stderr', 'stderr', ''),
  cont: fc.boolean(),
  cuts: fc.array(fc.nat({ max: 12 }), { maxLength: 3 }),
});

const caseArb = fc.record({
  specs: fc.array(specArb, { minLength: 1, maxLength: 40 }),
  /** which stream's next piece goes next, as a sequence of picks */
  picks: fc.array(fc.nat({ max: 2 }), { minLength: 200, maxLength: 200 }),
  batches: fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 60, maxLength: 60 }),
  /** per batch: restart after it (0 none; n: from the mark n-1 batches back) */
  restarts: fc.array(fc.nat({ max: 6 }), { minLength: 60, maxLength: 60 }),
  /** the file is rotated away after this share of its lines (1: all written), partial lines open */
  rotateAt: fc.oneof(fc.constant(1), fc.double({ min: 0, max: 1, noNaN: true })),
});

/** A physical line and what it carries: its stream, the logical line it is a piece of, and that piece. */
interface Physical {
  readonly text: string;
  readonly key: Key;
  readonly spec: number;
  readonly piece: string;
}

/** The physical lines of a case: each logical line's pieces, interleaved across the streams in per-stream order. */
function physical(specs: readonly Spec[], picks: readonly number[]): Physical[] {
  const queues = new Map<Key, Physical[]>([
    ['stdout', []],
    ['stderr', []],
    ['', []],
  ]);
  specs.forEach((s, n) => {
    const text = `${s.cont ? ' c' : 'S'}${n}${'x'.repeat(n % 5)}`;
    if (s.key === '') {
      queues.get('')!.push({ text, key: '', spec: n, piece: text });
      return;
    }
    const cuts = [...new Set(s.cuts.map((c) => Math.min(c, text.length)))].sort((a, b) => a - b);
    let from = 0;
    for (const c of cuts) {
      queues.get(s.key)!.push({ text: `${T} ${s.key} P ${text.slice(from, c)}`, key: s.key, spec: n, piece: text.slice(from, c) });
      from = c;
    }
    queues.get(s.key)!.push({ text: `${T} ${s.key} F ${text.slice(from)}`, key: s.key, spec: n, piece: text.slice(from) });
  });
  const lines: Physical[] = [];
  const order: Key[] = ['stdout', 'stderr', ''];
  let p = 0;
  for (;;) {
    const left = order.filter((k) => queues.get(k)!.length > 0);
    if (left.length === 0) break;
    const k = left[(picks[p++ % picks.length] ?? 0) % left.length]!;
    lines.push(queues.get(k)!.shift()!);
  }
  return lines;
}

/** Each stream's logical lines in what a file holds: pieces joined, a last line cut short by the rotation as far as it got. */
function logicalLines(lines: readonly Physical[]): Map<Key, string[]> {
  const bySpec = new Map<number, { key: Key; text: string }>();
  for (const l of lines) {
    const seen = bySpec.get(l.spec);
    if (seen) seen.text += l.piece;
    else bySpec.set(l.spec, { key: l.key, text: l.piece });
  }
  const out = new Map<Key, string[]>([
    ['stdout', []],
    ['stderr', []],
    ['', []],
  ]);
  for (const { key, text } of bySpec.values()) out.get(key)!.push(text);
  return out;
}

/** The rules, plainly: per stream, a line that does not begin with a space begins an entry; at most MAX_LINES a piece. */
function reference(texts: readonly string[]): string[] {
  const out: string[] = [];
  let group: string[] = [];
  for (const t of texts) {
    if (group.length > 0 && (!t.startsWith(' ') || group.length === MAX_LINES)) {
      out.push(group.join('\n'));
      group = [];
    }
    group.push(t);
  }
  if (group.length > 0) out.push(group.join('\n'));
  return out;
}

const zero = (): LineCounters => ({ parse_errors: 0, truncated_lines: 0, multiline_entries: 0, multiline_splits: 0, multiline_timeouts: 0 });

test('assembly with partials, interleaved streams, groups, splits, lagging restarts and a rotation (open partials emitted as they are) matches the reference', (t) => {
  const rules = multilineRules('source', 'm', { condition_pattern: '^\\s', mode: 'continue_through', timeout_ms: 1000, max_lines: MAX_LINES }, 1 << 20);
  const opts = { format: 'cri' as const, maxLineBytes: 1 << 20, multiline: rules };
  let restartsDone = 0;
  fc.assert(
    fc.property(caseArb, ({ specs, picks, batches, restarts, rotateAt }) => {
      const all = physical(specs, picks);
      const held = all.slice(0, Math.ceil(all.length * rotateAt));
      const texts = logicalLines(held);
      const lines = held.map((l) => l.text);
      const starts: number[] = [];
      const ends: number[] = [];
      let at = 0;
      for (const l of lines) {
        starts.push(at);
        ends.push((at += Buffer.byteLength(l) + 1));
      }
      const out: LogicalLine[] = [];
      let asm = new LineAssembler(opts, zero());
      const marks: Resume[] = [];
      let i = 0;
      for (let b = 0; i < lines.length; b++) {
        const n = batches[b % batches.length]!;
        const to = Math.min(lines.length, i + n);
        asm.push(lines.slice(i, to), ends.slice(i, to), starts[i]!, 0, out);
        marks.push(asm.resume(ends[to - 1]!));
        i = to;
        const back = restarts[b % restarts.length]!;
        if (back > 0 && b < 40) {
          // a crash or reload: the successor starts from an acknowledged mark, possibly lagging
          const mark = marks[Math.max(0, marks.length - back)]!;
          asm = new LineAssembler(opts, zero(), mark);
          i = starts.indexOf(mark.offset);
          if (i < 0) i = lines.length;
          restartsDone++;
        }
      }
      // rotated away: everything open goes
      asm.flush(at, 0, out);
      const byId = new Map<number, LogicalLine>();
      for (const l of out) {
        const seen = byId.get(l.idAt);
        if (seen) {
          if (seen.text !== l.text || seen.stream !== l.stream) return false;
        } else byId.set(l.idAt, l);
      }
      for (const key of ['stdout', 'stderr', ''] as const) {
        const got = [...byId.values()].filter((l) => (l.stream ?? '') === key).sort((x, y) => x.start - y.start);
        const want = reference(texts.get(key)!);
        if (JSON.stringify(got.map((l) => l.text)) !== JSON.stringify(want)) return false;
      }
      return true;
    }),
    { numRuns: 3000, seed: 20261125 },
  );
  t.true(restartsDone > 1000, `restarts exercised: ${restartsDone}`);
});
