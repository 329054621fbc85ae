// What the `file` source reads: the files one directory's `pattern` or the `include` globs match
// (less `exclude`), the directories whose events may announce a new one, and where a file with a
// given inode lies now (a rotated file's new name). Stat helpers that never throw.

import { type Dirent, type FSWatcher, lstat as lstatCb, stat as statCb, watch } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import fg from 'fast-glob';

export interface FileStat {
  readonly ino: number;
  readonly dev: number;
  readonly size: number;
  readonly birthtimeMs: number;
}

export function statPath(path: string): Promise<FileStat | undefined> {
  return new Promise((resolve) =>
    statCb(path, (err, st) => resolve(err ? undefined : { ino: st.ino, dev: st.dev, size: st.size, birthtimeMs: st.birthtimeMs })),
  );
}

/** Whether `path` is a directory (following a symlink); false when it is missing or unreadable. */
export function isDirectory(path: string): Promise<boolean> {
  return new Promise((resolve) => statCb(path, (err, st) => resolve(!err && st.isDirectory())));
}

/** Whether `path` is a regular file (following a symlink); false when it is missing or unreadable. */
function isFile(path: string): Promise<boolean> {
  return new Promise((resolve) => statCb(path, (err, st) => resolve(!err && st.isFile())));
}

/** The inode of the regular file at `path` itself (a symlink is not followed). */
export function fileInode(path: string): Promise<number | undefined> {
  return new Promise((resolve) => lstatCb(path, (err, st) => resolve(err || !st.isFile() ? undefined : st.ino)));
}

/** Where the files with these inodes are in `directory` now (any name, matching or not). */
export async function findInDirectory(directory: string, inodes: ReadonlySet<number>): Promise<Map<number, string>> {
  const found = new Map<number, string>();
  let names: string[];
  try {
    names = await readdir(directory);
  } catch {
    return found;
  }
  for (const name of names) {
    const path = join(directory, name);
    const ino = await fileInode(path);
    if (ino !== undefined && inodes.has(ino) && !found.has(ino)) found.set(ino, path);
    if (found.size === inodes.size) break;
  }
  return found;
}

/**
 * The directory patterns (relative to the glob's static base) that the directories holding its
 * files match: `a/*\/b/*.log` gives `a`, `a/*`, `a/*\/b`; from a `**` on, everything below.
 */
export function directoryGlobs(glob: string): { base: string; patterns: string[] } {
  const [task] = fg.generateTasks([glob]);
  const base = task?.base ?? dirname(glob);
  const rest = glob.slice(base === '.' ? 0 : base.length).replace(/^\/+/, '').split('/');
  const patterns: string[] = [];
  for (let i = 1; i < rest.length; i++) {
    if (rest[i - 1] === '**') {
      patterns.push(rest.slice(0, i).join('/'));
      break;
    }
    patterns.push(rest.slice(0, i).join('/'));
  }
  return { base, patterns };
}

/** Finds the files a `file` source reads. */
export interface Finder {
  /**
   * the matching files, sorted; `missing`: the directories that do not exist (the directory
   * form's, or an `include` glob's fixed prefix, e.g. `/var/log/pods` of `/var/log/pods/**\/*.log`)
   */
  find(): Promise<{ paths: string[]; missing: string[] }>;
  /** the directories whose entries may become matching files: watched for events */
  directories(files: readonly string[]): Promise<string[]>;
  /** a name that appeared in a watched directory may be a file to discover */
  mayMatch(name: string): boolean;
}

const GLOB_OPTIONS = { onlyFiles: true, dot: false, followSymbolicLinks: true, suppressErrors: true } as const;

/**
 * The `directory` + `pattern` form: one directory, not recursive. Listed by one readdir, not by
 * fast-glob: the same files (the regular files and links to them whose names match, no dot file
 * unless the pattern starts with a dot, test/unit/file-discovery.test.ts) for a fifth of the
 * garbage (5.7 KB a call against 28). Discovery runs every second, and part of what a fast-glob
 * walk made outlived young collections (48 KB promoted a scavenge in an idle worker, 6.6 now):
 * the heap grew by about 0.4 MiB a minute until the next full collection, now flat.
 */
export function directoryFinder(directory: string, pattern: string): Finder {
  const body = pattern
    .split(/([*?])/)
    .map((part) => (part === '*' ? '[^/]*' : part === '?' ? '[^/]' : part.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')))
    .join('');
  // as fast-glob's `dot: false`: a wildcard never matches a name's leading dot; a pattern's own dot does
  const name = new RegExp(pattern.startsWith('.') ? `^${body}$` : `^(?!\\.)${body}$`);
  return {
    async find() {
      const paths: string[] = [];
      let entries: Dirent[] = [];
      try {
        entries = await readdir(directory, { withFileTypes: true });
      } catch {
        // missing or unreadable: nothing found (said below when the directory is missing)
      }
      for (const entry of entries) {
        if (!name.test(entry.name)) continue;
        const path = join(directory, entry.name);
        // a symbolic link counts as what it leads to (a broken one as nothing)
        if (entry.isFile() || (entry.isSymbolicLink() && (await isFile(path)))) paths.push(path);
      }
      paths.sort();
      return { paths, missing: paths.length === 0 && !(await isDirectory(directory)) ? [directory] : [] };
    },
    directories: () => Promise.resolve([directory]),
    mayMatch: (n) => name.test(n),
  };
}

/** The `include`/`exclude` form: absolute globs, `**` allowed. */
export function globFinder(include: readonly string[], exclude: readonly string[]): Finder {
  const dirGlobs = include.map(directoryGlobs);
  return {
    async find() {
      const paths = await fg([...include], { ...GLOB_OPTIONS, ignore: [...exclude], absolute: true, unique: true });
      // fast-glob says nothing of a base that is not there (a wrong hostPath): the source does
      const missing: string[] = [];
      for (const { base } of dirGlobs) if (!missing.includes(base) && !(await isDirectory(base))) missing.push(base);
      return { paths: paths.sort(), missing };
    },
    async directories(files) {
      const dirs = new Set<string>();
      for (const { base, patterns } of dirGlobs) {
        if (!(await isDirectory(base))) continue;
        dirs.add(base);
        if (patterns.length === 0) continue;
        const found = await fg(patterns, { cwd: base, onlyDirectories: true, dot: false, followSymbolicLinks: true, suppressErrors: true, absolute: true });
        for (const d of found) dirs.add(d);
      }
      for (const f of files) dirs.add(dirname(f));
      return [...dirs];
    },
    // a new directory (a pod's) or a new file anywhere below: the globs decide
    mayMatch: () => true,
  };
}

/**
 * One fs.watch per directory, kept in step with the list discovery gives. A watcher that fails
 * (no inotify watches left, the directory gone) is closed; polling still finds what it missed.
 */
export class DirectoryWatchers {
  private readonly watchers = new Map<string, FSWatcher>();

  constructor(private readonly onEvent: (event: string, name: string | null) => void) {}

  get size(): number {
    return this.watchers.size;
  }

  /** Watches exactly `dirs` from now on; returns true when a directory was added. */
  sync(dirs: readonly string[]): boolean {
    const wanted = new Set(dirs);
    for (const [dir, w] of this.watchers) {
      if (wanted.has(dir)) continue;
      w.close();
      this.watchers.delete(dir);
    }
    let added = false;
    for (const dir of wanted) {
      if (this.watchers.has(dir)) continue;
      try {
        const w = watch(dir, { persistent: false }, (event, name) => this.onEvent(event, typeof name === 'string' ? name : null));
        w.on('error', () => {
          w.close();
          if (this.watchers.get(dir) === w) this.watchers.delete(dir);
        });
        this.watchers.set(dir, w);
        added = true;
      } catch {
        // missing, or no inotify watch left: polling alone for this one
      }
    }
    return added;
  }

  close(): void {
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
  }
}
