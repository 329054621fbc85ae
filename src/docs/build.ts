// `npm run docs`: writes docs/configuration.md from the schema and the plugin specs, and
// docs/counters.md from the counter declarations. Exits 1, naming the keys, when any key lacks its
// one-line `doc` (the files are then left as they were).

import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { errorMessage } from '../core/errors.js';
import { renderCountersReference } from './counters-reference.js';
import { renderConfigurationReference } from './reference.js';

/** docs/configuration.md of this checkout (dist/src/docs/ → the repository root). */
export const CONFIGURATION_MD = fileURLToPath(new URL('../../../docs/configuration.md', import.meta.url));
/** docs/counters.md of this checkout. */
export const COUNTERS_MD = fileURLToPath(new URL('../../../docs/counters.md', import.meta.url));

// `docs.js [configuration.md target] [counters.md target]`: the repository's files by default
const [configurationTarget = CONFIGURATION_MD, countersTarget = COUNTERS_MD] = process.argv.slice(2);
try {
  writeFileSync(configurationTarget, renderConfigurationReference());
  process.stdout.write(`wrote ${configurationTarget}\n`);
  writeFileSync(countersTarget, renderCountersReference());
  process.stdout.write(`wrote ${countersTarget}\n`);
} catch (err) {
  process.stderr.write(`docs: ${errorMessage(err)}\n`);
  process.exit(1);
}
