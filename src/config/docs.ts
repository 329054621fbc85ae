// `npm run docs`: writes docs/configuration.md from the schema and the plugin specs. Exits 1,
// naming the keys, when any key lacks its one-line `doc` (the file is then left as it was).

import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { errorMessage } from '../core/errors.js';
import { renderConfigurationReference } from './reference.js';

/** docs/configuration.md of this checkout (dist/src/config/ → the repository root). */
export const CONFIGURATION_MD = fileURLToPath(new URL('../../../docs/configuration.md', import.meta.url));

const target = process.argv[2] ?? CONFIGURATION_MD;
try {
  writeFileSync(target, renderConfigurationReference());
  process.stdout.write(`wrote ${target}\n`);
} catch (err) {
  process.stderr.write(`docs: ${errorMessage(err)}\n`);
  process.exit(1);
}
