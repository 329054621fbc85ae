// Test helpers that do to files what kubelet does: a ConfigMap or Secret volume updated the way
// its AtomicWriter does it (a `..<timestamp>` directory, the `..data` symlink swapped to it by a
// rename, the old directory removed; the visible names are links through `..data` and are never
// written), and container logs under /var/log/pods written and rotated as kubelet and the
// runtime do.

import { appendFileSync, existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';

export interface AtomicVolume {
  /** the mount point */
  readonly dir: string;
  /** the path a container sees for `name` (through a link to `..data/<top level of name>`) */
  path(name: string): string;
  /** Replaces the whole payload at once, as kubelet does when the ConfigMap or Secret changes. */
  update(files: Readonly<Record<string, string | Buffer>>): void;
}

let serial = 0;

/** `..2026_11_25_10_45_00.123456789`: kubelet's name for a payload directory, unique per call. */
function payloadName(): string {
  const iso = new Date().toISOString().replace(/[-:T]/g, '_').slice(0, 19);
  serial++;
  return `..${iso}.${String(process.pid).padStart(7, '0')}${String(serial).padStart(2, '0')}`;
}

/** Makes `dir` a volume holding `files`, laid out like kubelet's (see the module comment). */
export function atomicVolume(dir: string, files: Readonly<Record<string, string | Buffer>>): AtomicVolume {
  mkdirSync(dir, { recursive: true });
  const update = (payload: Readonly<Record<string, string | Buffer>>) => {
    const data = join(dir, '..data');
    const old = existsSync(data) ? readlinkSync(data) : undefined;
    const fresh = payloadName();
    mkdirSync(join(dir, fresh));
    for (const [name, content] of Object.entries(payload)) {
      mkdirSync(dirname(join(dir, fresh, name)), { recursive: true });
      writeFileSync(join(dir, fresh, name), content);
    }
    const tmp = join(dir, '..data_tmp');
    symlinkSync(fresh, tmp);
    renameSync(tmp, data);
    // the visible names are the payload's top level: an item `certs/tls.crt` is seen through `certs`
    for (const top of new Set(Object.keys(payload).map((name) => name.split('/')[0]!))) {
      const visible = join(dir, top);
      if (!lstatExists(visible)) symlinkSync(join('..data', top), visible);
    }
    if (old) rmSync(join(dir, old), { recursive: true, force: true });
  };
  update(files);
  return { dir, path: (name) => join(dir, name), update };
}

function lstatExists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

// ── Container logs as kubelet and the runtime write them (DESIGN.md §21) ─────────────────────────

export type ContainerFormat = 'cri' | 'docker';

/** The runtime's timestamp of a line: RFC 3339 with nanoseconds. */
const runtimeTime = (): string => new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1456789Z');

/**
 * One container's log under `<pods>/<namespace>_<pod>_<uid>/<container>/<restart>.log`, written
 * in the runtime's format (CRI for containerd and CRI-O, docker json-file for cri-dockerd), and
 * rotated the way kubelet does it: rename to `<n>.log.<stamp>`, a new `<n>.log`, the rotated file
 * gzipped later (the `.gz` written, the plain file deleted).
 */
export class ContainerLog {
  readonly dir: string;
  private restart = 0;
  private rotations = 0;

  constructor(
    pods: string,
    readonly namespace: string,
    readonly pod: string,
    readonly uid: string,
    readonly container: string,
    readonly format: ContainerFormat,
  ) {
    this.dir = join(pods, `${namespace}_${pod}_${uid}`, container);
    mkdirSync(this.dir, { recursive: true });
    writeFileSync(this.current, '');
  }

  get current(): string {
    return join(this.dir, `${this.restart}.log`);
  }

  get restartCount(): number {
    return this.restart;
  }

  /** Appends whole lines in one write. */
  write(lines: readonly string[], stream: 'stdout' | 'stderr' = 'stdout'): void {
    appendFileSync(this.current, lines.map((l) => this.piece(l, stream, true)).join(''));
  }

  /** Appends one line the runtime split in pieces (CRI `P` … `F`; docker: a `log` without `\n`). */
  writeSplit(pieces: readonly string[], stream: 'stdout' | 'stderr' = 'stdout'): void {
    appendFileSync(this.current, pieces.map((p, i) => this.piece(p, stream, i === pieces.length - 1)).join(''));
  }

  private piece(text: string, stream: string, last: boolean): string {
    if (this.format === 'cri') return `${runtimeTime()} ${stream} ${last ? 'F' : 'P'} ${text}\n`;
    return `${JSON.stringify({ log: last ? `${text}\n` : text, stream, time: runtimeTime() })}\n`;
  }

  /** kubelet's rotation: `<n>.log` renamed to `<n>.log.<stamp>`, a new empty `<n>.log`; returns the rotated path. */
  rotate(): string {
    this.rotations++;
    const rotated = `${this.current}.20261125-1045${String(this.rotations).padStart(2, '0')}`;
    renameSync(this.current, rotated);
    writeFileSync(this.current, '');
    return rotated;
  }

  /** kubelet compresses a rotated file: `<file>.gz` written, `<file>` deleted. */
  static compress(rotated: string): void {
    writeFileSync(`${rotated}.gz`, gzipSync(readFileSync(rotated)));
    unlinkSync(rotated);
  }

  /** The container restarted: the runtime writes `<n+1>.log`. */
  restarted(): void {
    this.restart++;
    writeFileSync(this.current, '');
  }
}
