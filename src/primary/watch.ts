// auto_reload: watches the configuration file's directory (editors replace files by rename)
// and calls back after a quiet period.

import { watch } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';

const DEBOUNCE_MS = 300;

export function watchConfigFile(file: string, onChange: () => void): () => void {
  const abs = resolve(file);
  const name = basename(abs);
  let timer: NodeJS.Timeout | undefined;
  const watcher = watch(dirname(abs), (_event, changed) => {
    if (changed !== null && changed !== name) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(onChange, DEBOUNCE_MS);
  });
  watcher.on('error', () => undefined);
  return () => {
    if (timer) clearTimeout(timer);
    watcher.close();
  };
}
