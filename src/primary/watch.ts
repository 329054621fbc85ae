// auto_reload: watches the configuration file's directory (editors replace files by rename)
// and calls back after a quiet period.

import { type FSWatcher, watch } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';

const DEBOUNCE_MS = 300;

/**
 * Watches `file`; `onChange` runs after a quiet period. A watch that cannot start (no inotify
 * watches left, the directory gone) or fails later calls `onError` once and stops; SIGHUP still
 * reloads. Returns the function that stops watching.
 */
export function watchConfigFile(file: string, onChange: () => void, onError: (err: unknown) => void): () => void {
  const abs = resolve(file);
  const name = basename(abs);
  let timer: NodeJS.Timeout | undefined;
  let watcher: FSWatcher;
  try {
    watcher = watch(dirname(abs), (_event, changed) => {
      if (changed !== null && changed !== name) return;
      if (timer) clearTimeout(timer);
      timer = setTimeout(onChange, DEBOUNCE_MS);
    });
  } catch (err) {
    onError(err);
    return () => {};
  }
  const stop = () => {
    if (timer) clearTimeout(timer);
    watcher.close();
  };
  watcher.once('error', (err) => {
    stop();
    onError(err);
  });
  return stop;
}
