// auto_reload: watches the configuration file and the TLS files it names, by their directories
// (editors replace files by rename; kubelet swaps a `..data` symlink and never writes the file),
// and calls back with the files whose content changed, after a quiet period.

import { type FSWatcher, readFileSync, realpathSync, watch } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import type { Config } from '../config/schema.js';

const DEBOUNCE_MS = 300;

/** The PEM file keys of a `tls` block (DESIGN.md §10). */
const TLS_FILE_KEYS = ['cert_file', 'key_file', 'ca_file', 'client_ca_file'] as const;

export interface TlsFiles {
  /** files of `admin.tls`, which the primary reads itself */
  readonly admin: readonly string[];
  /** files of the pipelines' plugins, read when a generation builds */
  readonly pipelines: readonly string[];
}

/** Absolute paths of the PEM files an enabled `tls` block names (nested anywhere in a plugin's table). */
function tlsFilesIn(value: unknown, out: Set<string>): void {
  if (typeof value !== 'object' || value === null) return;
  if (Array.isArray(value)) {
    for (const v of value) tlsFilesIn(v, out);
    return;
  }
  for (const [key, v] of Object.entries(value)) {
    if (key === 'tls' && typeof v === 'object' && v !== null && (v as { enabled?: unknown }).enabled === true) {
      for (const k of TLS_FILE_KEYS) {
        const path = (v as Record<string, unknown>)[k];
        if (typeof path === 'string' && path !== '') out.add(resolve(path));
      }
    } else {
      tlsFilesIn(v, out);
    }
  }
}

/** Every TLS file the configuration names, the admin endpoint's apart from the pipelines'. */
export function tlsFilesOf(config: Config): TlsFiles {
  const admin = new Set<string>();
  tlsFilesIn({ tls: config.admin.tls }, admin);
  const pipelines = new Set<string>();
  for (const p of config.pipelines) for (const plugin of [...p.plugin_sources, ...p.plugin_sinks]) tlsFilesIn(plugin.config, pipelines);
  return { admin: [...admin], pipelines: [...pipelines] };
}

/** A digest of the file's content as read through its symlinks now; a missing or unreadable file has its error code. */
function fingerprint(path: string): string {
  try {
    // node:crypto when the file is first read: only a node with auto_reload watches (~2 MiB of an idle primary)
    return process.getBuiltinModule('node:crypto').createHash('sha256').update(readFileSync(path)).digest('hex');
  } catch (err) {
    return `error:${(err as NodeJS.ErrnoException).code ?? 'unknown'}`;
  }
}

/** The directory `dir` resolves to now through its links; itself when it cannot be resolved. */
function realOf(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return dir;
  }
}

export interface FileWatch {
  /**
   * Watches exactly `paths` from now on. A path watched before keeps the content it was last
   * seen with, so a change made while the set was being replaced (during a reload) is still
   * reported; a new path is taken as it is now.
   */
  setFiles(paths: readonly string[]): void;
  stop(): void;
}

/**
 * Watches files through their directories: any event on a watched name, or on a kubelet
 * `..`-name (`..data`, `..data_tmp`, `..<timestamp>`), starts a quiet period after which every
 * watched file is read again; `onChange` gets the absolute paths whose content differs from the
 * last time. A watch that cannot start (no inotify watches left, the directory gone) or fails
 * later calls `onError` once and stops; SIGHUP still reloads.
 */
export function createFileWatch(onChange: (changed: readonly string[]) => void, onError: (err: unknown) => void): FileWatch {
  const seen = new Map<string, string>();
  /** per directory watched, its watcher and the real directory it was opened on */
  const watchers = new Map<string, { watcher: FSWatcher; real: string }>();
  /** per directory, the base names watched in it */
  const names = new Map<string, Set<string>>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const check = () => {
    timer = undefined;
    if (stopped) return;
    // A directory reached through a `..data` link (a projected item at `certs/tls.crt`) now
    // resolves to the new payload: the old watch went with the removed one.
    for (const [dir, w] of watchers) {
      if (realOf(dir) === w.real) continue;
      w.watcher.close();
      watchers.delete(dir);
      if (!open(dir)) return;
    }
    const changed: string[] = [];
    for (const [path, before] of seen) {
      const now = fingerprint(path);
      if (now !== before) {
        seen.set(path, now);
        changed.push(path);
      }
    }
    if (changed.length > 0) onChange(changed);
  };
  const schedule = () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(check, DEBOUNCE_MS);
  };
  const stop = () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    timer = undefined;
    for (const w of watchers.values()) w.watcher.close();
    watchers.clear();
  };
  const fail = (err: unknown) => {
    if (stopped) return;
    stop();
    onError(err);
  };
  /** Watches `dir`; false when it cannot (then the whole watch has failed). */
  const open = (dir: string): boolean => {
    let watcher: FSWatcher;
    try {
      watcher = watch(dir, (_event, changed) => {
        if (changed === null || changed.startsWith('..') || names.get(dir)?.has(changed)) schedule();
      });
    } catch (err) {
      fail(err);
      return false;
    }
    watcher.once('error', fail);
    watchers.set(dir, { watcher, real: realOf(dir) });
    return true;
  };

  return {
    setFiles(paths) {
      if (stopped) return;
      const wanted = new Set(paths.map((p) => resolve(p)));
      for (const path of seen.keys()) if (!wanted.has(path)) seen.delete(path);
      for (const path of wanted) if (!seen.has(path)) seen.set(path, fingerprint(path));
      names.clear();
      for (const path of wanted) {
        const dir = dirname(path);
        if (!names.has(dir)) names.set(dir, new Set());
        names.get(dir)!.add(basename(path));
      }
      for (const [dir, w] of watchers) {
        if (names.has(dir)) continue;
        w.watcher.close();
        watchers.delete(dir);
      }
      for (const dir of names.keys()) if (!watchers.has(dir) && !open(dir)) return;
      // what changed between the last look and this one
      schedule();
    },
    stop,
  };
}
