// Creates a CA and per-name certificates at test time with deploy/pki.sh (the same script
// compose's `pki` service runs).

import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './node.js';

export interface Pki {
  readonly dir: string;
  readonly ca: string;
  /** the CA's key, which deploy/pki.sh keeps out of `dir` (in `<dir>-ca`) */
  readonly caKey: string;
  cert(name: string): string;
  key(name: string): string;
}

/** Writes `dir/ca.crt` (the CA key goes to `<dir>-ca/`) and `dir/<name>.crt|.key` for each name (CN and SANs = name, plus localhost, 127.0.0.1). */
export function makePki(dir: string, names: readonly string[]): Pki {
  execFileSync('sh', [join(ROOT, 'deploy', 'pki.sh'), dir, ...names], { stdio: 'ignore' });
  return {
    dir,
    ca: join(dir, 'ca.crt'),
    caKey: join(`${dir.replace(/\/+$/, '')}-ca`, 'ca.key'),
    cert: (name) => join(dir, `${name}.crt`),
    key: (name) => join(dir, `${name}.key`),
  };
}
