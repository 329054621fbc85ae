// Test helpers that do to files what kubelet does: a ConfigMap or Secret volume updated the way
// its AtomicWriter does it (a `..<timestamp>` directory, the `..data` symlink swapped to it by a
// rename, the old directory removed; the visible names are links through `..data` and are never
// written).

import { mkdirSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync, existsSync, lstatSync } from 'node:fs';
import { join } from 'node:path';

export interface AtomicVolume {
  /** the mount point */
  readonly dir: string;
  /** the path a container sees for `name` (a link to `..data/<name>`) */
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
    for (const [name, content] of Object.entries(payload)) writeFileSync(join(dir, fresh, name), content);
    const tmp = join(dir, '..data_tmp');
    symlinkSync(fresh, tmp);
    renameSync(tmp, data);
    for (const name of Object.keys(payload)) {
      const visible = join(dir, name);
      if (!lstatExists(visible)) symlinkSync(join('..data', name), visible);
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
