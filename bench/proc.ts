// /proc readers for the bench: a process's children, its peak RSS and the bytes it has read.

import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Child pids of `pid` (the pipeline workers of a primary). */
export function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** A `kB` field of /proc/<pid>/status (VmRSS, VmHWM, …), bytes; 0 if absent. */
export function statusBytes(pid: number | 'self', field: string): number {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
  return m ? Number(m[1]) * 1024 : 0;
}

/** Peak resident set size (VmHWM), bytes. */
export function peakRss(pid: number | 'self'): number {
  return statusBytes(pid, 'VmHWM');
}

/** Bytes the process has read through read(2)/pread(2) so far (`rchar`). */
export function bytesRead(pid: number): number {
  const m = /^rchar:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

/** CPU time (user + system) the process has used so far, ms (`/proc/<pid>/stat`, clock ticks of 10 ms). */
export function cpuMs(pid: number): number {
  const [user, system] = cpuSplitMs(pid);
  return user + system;
}

/** CPU time the process has used so far in user mode and in the kernel, ms (`/proc/<pid>/stat`, clock ticks of 10 ms); 0 once gone. */
export function cpuSplitMs(pid: number): [user: number, system: number] {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return [Number(fields[11]) * 10, Number(fields[12]) * 10];
  } catch {
    return [0, 0];
  }
}

/** CPU time so far of a process's main thread and of its other threads (`/proc/<pid>/task/<tid>/stat`), ms, summed per name. */
export function threadCpuMs(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      // the event loop's thread is the process's own id; the others (GC helpers, libuv's pool) are all "node"
      const name = tid === String(pid) ? 'main' : 'other';
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(name, (out.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) * 10);
    }
  } catch {
    /* gone */
  }
  return out;
}

/**
 * The end of a run at a receiving worker: polls `finished()` every 2 ms (until `deadlineMs`,
 * then throws with `progress()`), sampling the bytes `worker` has read (`rchar`); resolves with
 * the first moment (performance.now()) it had read all but the last 64 KiB of what it read by
 * the time `finished()` held. Workers report counters once a second, too coarse for a run of a
 * few seconds; the entries of a read are taken within it, and the slack leaves out the small
 * messages read later (the primary's IPC, a server's heartbeat).
 */
export async function readEnd(worker: number, finished: () => boolean, progress: () => string, deadlineMs: number): Promise<number> {
  const samples: [number, number][] = [];
  const deadline = Date.now() + deadlineMs;
  while (!finished()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${deadlineMs} ms: ${progress()}`);
    samples.push([performance.now(), bytesRead(worker)]);
    await new Promise((r) => setTimeout(r, 2));
  }
  const read = bytesRead(worker);
  return samples.find(([, r]) => r >= read - 65536)?.[0] ?? performance.now();
}

/**
 * Writes every dirty page of the machine to disk (sync(1)) before a timed window opens. A bench
 * writes its input (the hop's 200 MB, the fleet's 60 MB backlog) and its nodes write their output
 * just before; the kernel writes such pages back 30 s later (vm.dirty_expire_centisecs), on the
 * same two cores, inside whichever run is timed then. Without this, the fleet bench's hop ran at
 * 215,000-486,000 lines/s over twelve benches, the third of its three the slowest in seven of them
 * (after two rounds of writes); with it, 352,000-457,000 over six (docs/benchmarks.md).
 */
export function settleDisk(): void {
  execFileSync('sync');
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every `everyMs` until it returns a truthy value; throws naming `what` after `timeoutMs`. */
export async function until<T>(check: () => T, what: string, timeoutMs: number, everyMs = 5): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = check();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${what}`);
    await sleep(everyMs);
  }
}
