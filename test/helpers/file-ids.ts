// The file source run in this process over fixed inputs (plain lines with a truncation and a
// rotation, CRI and docker json-file lines with partials open at the end, Java traces grouped by
// `multiline`, alone and after CRI), each then resumed from the positions it reported: the entry
// ids and the positions that go into the checkpoint, written so that they compare across runs
// (a file's inode and device, which differ from run to run, replaced by its name). The fixture
// test/fixtures/file-ids-stable.json holds what the code of e418f6b gave.

import { createHash } from 'node:crypto';
import { appendFileSync, mkdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import pino from 'pino';
import type { Entry } from '../../src/core/entry.js';
import type { FilePosition, Source, SourceContext, SourcePositions } from '../../src/core/source.js';
import { createFileSource } from '../../src/sources/file.js';
import { JAVA_TRACE } from './lines.js';
import { waitFor } from './node.js';

const NODE = 'edge-1';
const PIPELINE = 'p';
const PLUGIN = 'f';

/** An entry as recorded: its id with the file's part named, and what else a line makes of it. */
export interface RecordedEntry {
  readonly id: string;
  readonly message: string;
  readonly source: string;
  readonly level?: string;
  readonly node?: string;
  /** the runtime's time (container lines only; others take the time they were read) */
  readonly time?: number;
  readonly fields?: Record<string, unknown>;
}

/** What one phase of a scenario gave: the entries in the order emitted, the positions after, some counters. */
export interface RecordedPhase {
  readonly entries: RecordedEntry[];
  readonly positions: Record<string, Record<string, unknown>>;
  readonly counters: Record<string, number>;
}

export type Recorded = Record<string, Record<string, RecordedPhase>>;

/**
 * The id prefix of a file's lines as today's code makes it (DESIGN.md §14), computed here on its
 * own so that a change of what goes into it shows: node, pipeline, source, device, inode, birth
 * time (where the platform has one) and truncations.
 */
function filePrefix(dev: number, ino: number, born: number, truncations: number): string {
  const parts = born > 0 ? [NODE, PIPELINE, PLUGIN, dev, ino, born, truncations] : [NODE, PIPELINE, PLUGIN, dev, ino, truncations];
  return `${createHash('sha1').update(parts.join('\0')).digest('base64url').slice(0, 16)}.`;
}

/** A scenario's files by the name they have at the end (relative to its root), to name ids and positions by. */
class FileNames {
  private readonly byIno = new Map<number, string>();
  private readonly byPrefix = new Map<string, string>();
  dev = 0;

  constructor(private readonly root: string) {}

  /** Learns the file now at `rel` (call again after a rename). */
  learn(rel: string): void {
    const st = statSync(join(this.root, rel));
    this.dev = st.dev;
    this.byIno.set(st.ino, rel);
    for (let n = 0; n < 4; n++) this.byPrefix.set(filePrefix(st.dev, st.ino, st.birthtimeMs, n), `<${rel}#${n}>`);
  }

  id(id: string | undefined): string {
    if (id === undefined) return '<none>';
    const dot = id.indexOf('.') + 1;
    return (this.byPrefix.get(id.slice(0, dot)) ?? id.slice(0, dot)) + id.slice(dot);
  }

  positions(positions: SourcePositions): Record<string, Record<string, unknown>> {
    const out: Record<string, Record<string, unknown>> = {};
    for (const [path, pos] of Object.entries(positions).sort(([a], [b]) => a.localeCompare(b))) {
      // as the checkpoint file keeps it
      const kept = JSON.parse(JSON.stringify(pos)) as Record<string, unknown>;
      kept.inode = this.byIno.get(pos.inode) ?? `inode ${pos.inode}`;
      if (pos.dev !== undefined) kept.dev = pos.dev === this.dev ? '<dev>' : pos.dev;
      out[relative(this.root, path)] = kept;
    }
    return out;
  }

  /** Positions recorded by positions() as a source takes them back, with this run's inodes. */
  restore(recorded: Record<string, Record<string, unknown>>): SourcePositions {
    const out: SourcePositions = {};
    for (const [rel, kept] of Object.entries(recorded)) {
      const pos = { ...kept } as Record<string, unknown>;
      pos.inode = statSync(join(this.root, kept.inode as string)).ino;
      if (kept.dev === '<dev>') pos.dev = this.dev;
      out[join(this.root, rel)] = pos as unknown as FilePosition;
    }
    return out;
  }
}

/** A file source `f` of pipeline `p` on node `edge-1` stamping ids, every batch done at once. */
class Run {
  readonly emitted: Entry[] = [];
  readonly source: Source;

  constructor(config: Record<string, unknown>) {
    const ctx: SourceContext = {
      pipeline: PIPELINE,
      log: pino({ level: 'silent' }),
      checkOnly: false,
      emit: (entries, done) => {
        this.emitted.push(...entries);
        done?.();
      },
      idNode: NODE,
      node: NODE,
      isSaturated: () => false,
    };
    this.source = createFileSource({ id: PLUGIN, type: 'file', config: { from: 'start', check_interval_ms: 100, watch_events: false, ...config } }, ctx);
  }

  counter(name: string): number {
    return (this.source.counters as Record<string, number>)[name] ?? 0;
  }

  /** Waits until `bytes` were read: the entries of a read are emitted, and done, in the same turn. */
  async readTo(bytes: number, what: string): Promise<void> {
    await waitFor(() => this.counter('bytes_read') >= bytes, `${what}: ${bytes} bytes read (${this.counter('bytes_read')} so far)`);
  }

  /** The entries emitted since `from`, then the positions and counters. */
  phase(names: FileNames, from: number): RecordedPhase {
    const entries = this.emitted.slice(from).map((e): RecordedEntry => {
      const stream = (e.fields as { stream?: unknown } | undefined)?.stream;
      return {
        id: names.id(e.id),
        message: e.message,
        source: e.source,
        ...(e.level === undefined ? {} : { level: e.level }),
        ...(e.node === undefined ? {} : { node: e.node }),
        ...(stream === undefined ? {} : { time: e.time }),
        ...(e.fields === undefined ? {} : { fields: JSON.parse(JSON.stringify(e.fields)) as Record<string, unknown> }),
      };
    });
    const counters: Record<string, number> = {};
    for (const [k, v] of Object.entries(this.source.counters)) if (k !== 'lag_bytes') counters[k] = v;
    return { entries, positions: names.positions(this.source.positions!()), counters };
  }
}

const size = (path: string) => statSync(path).size;

/** Plain lines: a JSON one, CRLF, an empty line, multi-byte characters, an over-long line, a held partial; then truncated; then rotated. */
async function plain(root: string, fixture: Recorded | undefined): Promise<Record<string, RecordedPhase>> {
  const names = new FileNames(root);
  const app = join(root, 'app.log');
  const first = `first line\n\nsecond\r\nünïcode ☃ line\n{"level":"warn","msg":"json line","n":1}\n${'x'.repeat(100)}\nlast before partial\npartial wit`;
  writeFileSync(app, first);
  names.learn('app.log');
  const run = new Run({ directory: root, pattern: '*.log', max_line_bytes: 64 });
  run.source.start({}, Date.now());
  const out: Record<string, RecordedPhase> = {};
  try {
    await run.readTo(size(app), 'plain: the file');
    out.read = run.phase(names, 0);
    let seen = run.emitted.length;
    // truncated: shorter than what was read, it is read again from its start under new ids
    const second = 'after truncation 1\nafter truncation 2\n';
    writeFileSync(app, second);
    await waitFor(() => run.counter('truncations') === 1, 'plain: the truncation seen');
    await run.readTo(Buffer.byteLength(first) + Buffer.byteLength(second), 'plain: the truncated file');
    out.truncated = run.phase(names, seen);
    seen = run.emitted.length;
    // rotated (renamed away, a new file under the name) with a partial line in the old one
    const third = 'before rotation\nrotated partial';
    appendFileSync(app, third);
    renameSync(app, join(root, 'app.log.1'));
    writeFileSync(app, 'new file line 1\n');
    names.learn('app.log.1');
    names.learn('app.log');
    await waitFor(() => run.counter('rotations') === 1, 'plain: the rotation seen');
    await run.readTo(Buffer.byteLength(first + second + third) + size(app), 'plain: both files');
    await waitFor(() => run.emitted.some((e) => e.message === 'new file line 1'), 'plain: the new file read');
    out.rotated = run.phase(names, seen);
  } finally {
    await run.source.stop();
  }
  // resumed from the positions today's main reported (the fixture's, else this run's)
  const again = new Run({ directory: root, pattern: '*.log', max_line_bytes: 64 });
  again.source.start(names.restore((fixture?.plain ?? out).rotated!.positions), Date.now());
  try {
    appendFileSync(app, 'new file line 2\n');
    // the rest of the partial line flushed before: its head was delivered, the rest is passed over
    appendFileSync(join(root, 'app.log.1'), ' continued\nlate line in the rotated file\n');
    await waitFor(() => again.emitted.some((e) => e.message === 'new file line 2') && again.emitted.some((e) => e.message === 'late line in the rotated file'), 'plain: resumed');
    out.resumed = again.phase(names, 0);
  } finally {
    await again.source.stop();
  }
  return out;
}

const T1 = '2026-11-25T10:45:00.123456789Z';
const T2 = '2026-11-25T10:45:01.5Z';
const T3 = '2026-11-25T10:45:02.000000001+02:00';
const cri = (time: string, stream: string, tag: string, content: string) => `${time} ${stream} ${tag} ${content}\n`;
const docker = (log: string, stream: string, time: string) => `${JSON.stringify({ log, stream, time })}\n`;

/** Makes `<root>/pods/<ns>_<pod>_<uid>/<container>/` and returns `<n>.log` in it, relative to root. */
function podLog(root: string, ns: string, pod: string, container: string, n = 0): string {
  const dir = join('pods', `${ns}_${pod}_uid-${pod}`, container);
  mkdirSync(join(root, dir), { recursive: true });
  return join(dir, `${n}.log`);
}

/** Container lines (`auto`, with Kubernetes metadata): CRI and docker json-file partials, both streams open at the end, then resumed and completed. */
async function containers(root: string, fixture: Recorded | undefined): Promise<Record<string, RecordedPhase>> {
  const names = new FileNames(root);
  const criLog = podLog(root, 'shop', 'cart', 'app');
  const dockerLog = podLog(root, 'web', 'front', 'nginx', 2);
  const criText =
    cri(T1, 'stdout', 'F', 'hello') +
    cri(T2, 'stdout', 'P', 'part one, ') +
    cri(T3, 'stderr', 'P', 'err part, ') +
    cri(T2, 'stdout', 'P:tag', 'part two, ') +
    'not a CRI line\n' +
    cri(T2, 'stdout', 'F', 'part three') +
    cri(T3, 'stderr', 'F', '{"level":"error","msg":"json inside"}') +
    cri(T1, 'stderr', 'P', 'open on stderr ') +
    cri('2026-13-45T99:00:00Z', 'stdout', 'F', 'invalid time') +
    cri(T2, 'stdout', 'F', 'after the open one') +
    cri(T1, 'stdout', 'P', 'open on stdout ');
  const dockerText = docker('GET / 200\n', 'stdout', T1) + docker('upstream partial, ', 'stderr', T2) + docker('then joined\n', 'stderr', T3) + docker('open at the end ', 'stdout', T3);
  writeFileSync(join(root, criLog), criText);
  writeFileSync(join(root, dockerLog), dockerText);
  names.learn(criLog);
  names.learn(dockerLog);
  const config = { include: [join(root, 'pods', '*', '*', '*.log')], container_format: 'auto', kubernetes_metadata: true };
  const run = new Run(config);
  run.source.start({}, Date.now());
  const out: Record<string, RecordedPhase> = {};
  try {
    await run.readTo(Buffer.byteLength(criText + dockerText), 'containers: both files');
    await waitFor(() => run.emitted.some((e) => e.message === 'after the open one') && run.emitted.some((e) => e.message === 'upstream partial, then joined'), 'containers: entries');
    out.read = run.phase(names, 0);
  } finally {
    await run.source.stop();
  }
  const again = new Run(config);
  again.source.start(names.restore((fixture?.containers ?? out).read!.positions), Date.now());
  try {
    appendFileSync(join(root, criLog), cri(T3, 'stderr', 'F', 'closed on stderr') + cri(T3, 'stdout', 'F', 'closed on stdout') + cri(T1, 'stdout', 'F', 'last'));
    appendFileSync(join(root, dockerLog), docker('closed\n', 'stdout', T1) + docker('last\n', 'stderr', T1));
    await waitFor(() => again.emitted.filter((e) => e.message === 'last').length === 2, 'containers: resumed');
    out.resumed = again.phase(names, 0);
  } finally {
    await again.source.stop();
  }
  return out;
}

const MULTILINE = { preset: 'java', timeout_ms: 600_000 };

/** Java traces grouped by `multiline` (the last one open at the end, then resumed and ended), plain and after CRI. */
async function multiline(root: string, fixture: Recorded | undefined): Promise<Record<string, RecordedPhase>> {
  const names = new FileNames(root);
  const plainDir = join(root, 'plain');
  const criDir = join(root, 'cri');
  mkdirSync(plainDir);
  mkdirSync(criDir);
  const trace = JAVA_TRACE.map((l) => `${l}\n`).join('');
  const plainText = `INFO before\n${trace}INFO between\n${trace}`;
  const criText = cri(T1, 'stdout', 'F', 'INFO before') + JAVA_TRACE.map((l, i) => cri(T2, i % 2 === 0 ? 'stdout' : 'stderr', i === 3 ? 'P' : 'F', l)).join('') + cri(T2, 'stderr', 'F', ' (joined)');
  writeFileSync(join(plainDir, 'app.log'), plainText);
  writeFileSync(join(criDir, 'app.log'), criText);
  names.learn('plain/app.log');
  names.learn('cri/app.log');
  const plainRun = () => new Run({ directory: plainDir, pattern: '*.log', multiline: MULTILINE });
  const criRun = () => new Run({ directory: criDir, pattern: '*.log', container_format: 'cri', multiline: MULTILINE });
  const out: Record<string, RecordedPhase> = {};
  // `more` ends the open groups (and opens others); `last`: the message of the last one it ends
  for (const [key, make, path, text, more, last] of [
    ['plain', plainRun, join(plainDir, 'app.log'), plainText, 'INFO after\n', JAVA_TRACE.join('\n')],
    ['cri', criRun, join(criDir, 'app.log'), criText, cri(T3, 'stdout', 'F', 'INFO after') + cri(T3, 'stderr', 'F', 'ERROR after'), ' (joined)'],
  ] as const) {
    const run = make();
    run.source.start({}, Date.now());
    try {
      await run.readTo(Buffer.byteLength(text), `multiline ${key}`);
      out[`${key} read`] = run.phase(names, 0);
    } finally {
      await run.source.stop();
    }
    const again = make();
    again.source.start(names.restore((fixture?.multiline ?? out)[`${key} read`]!.positions), Date.now());
    try {
      appendFileSync(path, more);
      await waitFor(() => again.emitted.some((e) => e.message === last), `multiline ${key}: resumed`);
      out[`${key} resumed`] = again.phase(names, 0);
    } finally {
      await again.source.stop();
    }
  }
  return out;
}

/**
 * Runs every scenario in a directory of its own under `root`. Resumed phases start from the
 * positions in `fixture` when given (those today's main wrote), else from this run's.
 */
export async function recordFileIds(root: string, fixture?: Recorded): Promise<Recorded> {
  const dir = (name: string) => {
    const path = join(root, name);
    mkdirSync(path);
    return path;
  };
  return {
    plain: await plain(dir('plain'), fixture),
    containers: await containers(dir('containers'), fixture),
    multiline: await multiline(dir('multiline'), fixture),
  };
}
