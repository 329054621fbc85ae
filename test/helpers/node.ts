// Test helpers: spawn bin/logrelay.js as a real child process, collect its output, wait with
// deadlines; free ports on 127.0.0.1; temp dirs.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { repeatedKeys } from './log-keys.js';

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const BIN = join(ROOT, 'bin', 'logrelay.js');

export interface LogRecord {
  level: string;
  msg: string;
  [key: string]: unknown;
}

export interface ExitStatus {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** How long, after the process exited, its stdout and stderr may take to reach their end. */
const CLOSE_GRACE_MS = 10_000;

export interface RunningNode {
  readonly child: ChildProcess;
  /** stdout lines so far */
  readonly out: string[];
  /** stderr lines that are not JSON */
  readonly errText: string[];
  /** service log records (JSON lines on stderr) */
  readonly records: LogRecord[];
  /**
   * The process ended ('exit'). Its output may still be in flight: assert on `out`, `errText` or
   * `records` only after `closed` (or `finish()`, `stop()`).
   */
  readonly exited: Promise<ExitStatus>;
  /** The process ended and its stdout and stderr were read to their end ('close'). */
  readonly closed: Promise<ExitStatus>;
  signal(sig: NodeJS.Signals): void;
  /**
   * Waits up to `ms` for the process to end and its output to be read to the end; past that,
   * SIGKILLs it and rejects, naming `what`.
   */
  finish(what?: string, ms?: number): Promise<ExitStatus>;
  /**
   * Stops with SIGTERM (then SIGKILL after `ms`) and returns the exit code once the output is
   * read to its end (stdout is resumed if the test paused it).
   */
  stop(ms?: number): Promise<number | null>;
}

export interface SpawnOptions {
  readonly env?: Record<string, string | undefined>;
  readonly cwd?: string;
  readonly stdin?: 'pipe' | 'ignore';
  /** a command the node is run through, e.g. setpriv dropping capabilities (it must exec node) */
  readonly via?: readonly string[];
}

export function spawnNode(args: readonly string[], opts: SpawnOptions = {}): RunningNode {
  const env: Record<string, string | undefined> = { ...process.env, ...opts.env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  const [command, ...prefix] = [...(opts.via ?? []), process.execPath];
  // LOGRELAY_CPU_PROF_DIR (benches): every node, its workers too (they inherit execArgv), writes a
  // V8 CPU profile there when it exits
  const profile = process.env.LOGRELAY_CPU_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.LOGRELAY_CPU_PROF_DIR}`] : [];
  // LOGRELAY_NODE_FLAGS (benches): V8 or Node flags for every node and its workers, space-separated
  if (process.env.LOGRELAY_NODE_FLAGS) profile.push(...process.env.LOGRELAY_NODE_FLAGS.split(' ').filter(Boolean));
  const child = spawn(command!, [...prefix, ...profile, BIN, ...args], {
    cwd: opts.cwd ?? ROOT,
    env: env as NodeJS.ProcessEnv,
    stdio: [opts.stdin ?? 'ignore', 'pipe', 'pipe'],
  });
  const out: string[] = [];
  const errText: string[] = [];
  const records: LogRecord[] = [];
  const lines = (stream: NodeJS.ReadableStream, onLine: (l: string) => void) => {
    let rest = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      rest += chunk;
      let i = rest.indexOf('\n');
      while (i >= 0) {
        onLine(rest.slice(0, i));
        rest = rest.slice(i + 1);
        i = rest.indexOf('\n');
      }
    });
  };
  lines(child.stdout!, (l) => out.push(l));
  lines(child.stderr!, (l) => {
    if (l.startsWith('{')) {
      let record: LogRecord | undefined;
      try {
        record = JSON.parse(l) as LogRecord;
      } catch {
        // not a record
      }
      if (record) {
        records.push(record);
        // Every service log line of every spawned node has each key once: a repeat fails the
        // test file that ran the node, naming the line.
        const repeated = repeatedKeys(l);
        if (repeated.length > 0) throw new Error(`service log line repeats ${repeated.join(', ')}: ${l}`);
        return;
      }
    }
    errText.push(l);
  });
  const exited = new Promise<ExitStatus>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const closed = new Promise<ExitStatus>((resolve) => child.once('close', (code: number | null, signal: NodeJS.Signals | null) => resolve({ code, signal })));
  const running = () => child.exitCode === null && child.signalCode === null;
  /** `closed`, or a rejection naming `what` after `ms` (the process SIGKILLed if still running). */
  const closedWithin = (what: string, ms: number): Promise<ExitStatus> =>
    within(closed, ms, () => {
      const state = running() ? 'still running (SIGKILLed now)' : 'exited, but its stdout/stderr stayed open (a process holding the pipe?)';
      child.kill('SIGKILL');
      return new Error(`timed out after ${ms} ms: ${what}: ${state}`);
    });
  return {
    child,
    out,
    errText,
    records,
    exited,
    closed,
    signal(sig) {
      if (running()) child.kill(sig);
    },
    finish(what = `${args.join(' ')} ends`, ms = 30_000) {
      return closedWithin(what, ms);
    },
    async stop(ms = 15_000) {
      if (running()) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), ms);
      await exited;
      clearTimeout(timer);
      // a paused reader would keep a worker blocked on the pipe, and the pipe open
      child.stdout?.resume();
      return (await closedWithin(`stopped node ${args.join(' ')} closes its output`, CLOSE_GRACE_MS)).code;
    },
  };
}

/**
 * Returns `start(name, toml, args, stdin)`: writes `<name>.toml` into `dir`, spawns a node on it
 * (stdin piped when asked) and adds it to `running`, for the test's teardown to stop.
 */
export function nodeStarter(dir: TempDir, running: RunningNode[]) {
  return (name: string, toml: string, args: string[] = [], stdin = false): RunningNode => {
    const node = spawnNode(['-c', dir.file(`${name}.toml`, toml), ...args], stdin ? { stdin: 'pipe' } : {});
    running.push(node);
    return node;
  };
}

/**
 * A temp directory and a starter for nodes kept in `running`; the test's teardown kills them
 * (with their workers, which write checkpoints and segments) before it removes the directory.
 */
export function killedNodesIn(t: Teardown, running: RunningNode[]): { dir: TempDir; start: ReturnType<typeof nodeStarter> } {
  const dir = tempDir();
  t.teardown(async () => {
    await Promise.all(running.splice(0).map((n) => killWithWorkers(n)));
    dir.remove();
  });
  return { dir, start: nodeStarter(dir, running) };
}

/** SIGKILLs a node's primary and its pipeline workers, as a crash would; resolves once the primary is gone. */
export async function killWithWorkers(node: RunningNode): Promise<void> {
  const workers = await childPids(node.child.pid!);
  node.child.kill('SIGKILL');
  for (const pid of workers) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await node.exited;
}

/**
 * `node.exited` within `ms`: past that, the node is SIGKILLed and this rejects naming `what`.
 * For a test that measures the exit itself, or keeps stdout paused past it; output is complete
 * only after `closed` (or `finish()`).
 */
export function exitedWithin(node: RunningNode, what: string, ms = 30_000): Promise<ExitStatus> {
  return within(node.exited, ms, () => {
    node.child.kill('SIGKILL');
    return new Error(`timed out after ${ms} ms: ${what}`);
  });
}

/** `promise`, or after `ms` a rejection with the error `late()` makes (and whatever it cleans up). */
export async function within<T>(promise: Promise<T>, ms: number, late: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A test's teardown registry (ava's `t`). */
export interface Teardown {
  teardown(fn: () => void): void;
}

/** spawnNode, with the test's teardown SIGKILLing the process (a node's workers follow: their IPC channel closes). */
export function spawnOwnedNode(t: Teardown, args: readonly string[], opts: SpawnOptions = {}): RunningNode {
  const node = spawnNode(args, opts);
  t.teardown(() => node.signal('SIGKILL'));
  return node;
}

/**
 * Spawns a node on `toml`, written as node.toml into a fresh temp dir; the test's teardown
 * SIGKILLs it and removes the dir.
 */
export function startOwnedNode(t: Teardown, toml: string, args: readonly string[] = [], stdin: 'pipe' | 'ignore' = 'ignore'): RunningNode {
  const dir = tempDir();
  const node = spawnNode(['-c', dir.file('node.toml', toml), ...args], { stdin });
  t.teardown(() => {
    node.child.kill('SIGKILL');
    dir.remove();
  });
  return node;
}

export interface DirNodeOptions {
  /** status_interval_ms; default 200 */
  readonly statusIntervalMs?: number;
  /** shutdown_timeout_ms; default 5000 */
  readonly shutdownTimeoutMs?: number;
  /** a command the node is run through (SpawnOptions.via) */
  readonly via?: readonly string[];
}

/**
 * Runs a node at debug on `body` (pipelines), written as logrelay.toml into `dir` after the status
 * interval and shutdown timeout; the test's teardown resumes its stdout (a test may have paused
 * it), stops it and removes `dir`.
 */
export function startNodeInDir(t: Teardown, dir: TempDir, body: string, opts: DirNodeOptions = {}): RunningNode {
  const config = dir.file('logrelay.toml', `status_interval_ms = ${opts.statusIntervalMs ?? 200}\nshutdown_timeout_ms = ${opts.shutdownTimeoutMs ?? 5000}\n${body}`);
  const node = spawnNode(['-c', config, '--logging.level=debug'], { via: opts.via });
  t.teardown(async () => {
    node.child.stdout?.resume();
    await node.stop();
    dir.remove();
  });
  return node;
}

/** Waits until the node logs `Starting pipeline`; `what` names it in the timeout message. */
export async function waitReady(node: RunningNode, what: string, timeoutMs = 20_000): Promise<void> {
  await waitFor(() => node.records.some((r) => r.msg === 'Starting pipeline'), `${what} started`, timeoutMs);
}

/** Polls `check` every 25 ms until it returns a truthy value; throws `message` after `timeoutMs`. */
export async function waitFor<T>(check: () => T | Promise<T>, message: string, timeoutMs = 20_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${message}`);
    await sleep(25);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Ports this test process has handed out: never twice. */
const handedOut = new Set<number>();

/**
 * The kernel's ephemeral range: where it takes the local port of every outgoing connection and
 * of a listen on port 0, so a port found there free may be taken by a connection of any process
 * before the node that was handed it binds it (a node exits 69, "address in use", at start).
 */
function ephemeralRange(): readonly [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (low! > 0 && high! >= low!) return [low!, high!];
  } catch {
    // not Linux: the IANA range
  }
  return [49152, 65535];
}

/** Lowest port handed out: above the registered services most machines run (below 10000). */
const LOW_PORT = 10_000;
/** Slices of the range below the ephemeral one: each test process draws from the slice of its pid, so two rarely draw the same port. */
const SLICES = 16;

/** Whether `port` can be listened on at 127.0.0.1 now. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/**
 * A port free on 127.0.0.1 right now (bound and released), below the kernel's ephemeral range,
 * where no outgoing connection takes it before its node binds it; drawn from this process's
 * slice of that range. Where the range leaves too little below it, a port the kernel picks.
 */
export async function freePort(): Promise<number> {
  const [ephemeralLow] = ephemeralRange();
  const span = Math.floor((ephemeralLow - LOW_PORT) / SLICES);
  if (span >= 256) {
    const base = LOW_PORT + (process.pid % SLICES) * span;
    // bounded: a slice has hundreds of ports, and a test process asks for a few dozen
    for (let attempt = 0; attempt < 200; attempt++) {
      const port = base + Math.floor(Math.random() * span);
      if (handedOut.has(port) || !(await bindable(port))) continue;
      handedOut.add(port);
      return port;
    }
  }
  for (let attempt = 0; attempt < 100; attempt++) {
    const srv = createServer();
    await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
    const port = (srv.address() as { port: number }).port;
    await new Promise<void>((resolve) => srv.close(() => resolve()));
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error('freePort: no port not handed out before in 100 attempts');
}

export interface TempDir {
  readonly path: string;
  file(name: string, content: string): string;
  remove(): void;
}

export function tempDir(prefix = 'logrelay-test-'): TempDir {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return {
    path,
    file(name, content) {
      const p = join(path, name);
      writeFileSync(p, content);
      return p;
    },
    remove() {
      // a node killed just before may still be writing its last file in here for a moment
      rmSync(path, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    },
  };
}

/** A fresh temp dir that the test's teardown removes. */
export function ownedTempDir(t: Teardown, prefix?: string): TempDir {
  const dir = tempDir(prefix);
  t.teardown(() => dir.remove());
  return dir;
}

/** Child pids of `pid` (from /proc), i.e. the pipeline workers of a primary. */
export async function childPids(pid: number): Promise<number[]> {
  const { readFile } = await import('node:fs/promises');
  try {
    const text = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8');
    return text.trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** The pid of a node's (first) pipeline worker, once it runs. */
export async function workerOf(node: RunningNode): Promise<number> {
  return waitFor(async () => (await childPids(node.child.pid!))[0], 'the pipeline worker pid');
}

/** True while the process exists and is not a zombie (an exited child nobody has reaped yet). */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/**
 * Those of `pids` that have `file` open (from /proc/<pid>/fd). A file source keeps the files it
 * tails open, so this tells which worker runs the pipeline that tails `file`.
 */
export function pidsHolding(pids: readonly number[], file: string): number[] {
  const target = realpathSync(file);
  const holds = (pid: number, fd: string) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`) === target;
    } catch {
      return false; // closed since the listing
    }
  };
  return pids.filter((pid) => {
    try {
      return readdirSync(`/proc/${pid}/fd`).some((fd) => holds(pid, fd));
    } catch {
      return false; // gone
    }
  });
}
