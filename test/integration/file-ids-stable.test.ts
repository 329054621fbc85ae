// Entry ids and resume positions of the file source stay byte-identical across refactors (issue
// 39 point 4): the fixture holds what the code of e418f6b gave for fixed inputs (plain lines
// truncated and rotated, CRI and docker json-file partials, multiline Java traces alone and after
// CRI), and each scenario resumes from the positions recorded there, as from a checkpoint that
// code wrote. Written on that commit (built) with
//   node --input-type=module -e "import {mkdtempSync,writeFileSync} from 'node:fs';
//     const {recordFileIds} = await import('./dist/test/helpers/file-ids.js');
//     writeFileSync('test/fixtures/file-ids-stable.json', JSON.stringify(await recordFileIds(mkdtempSync('/tmp/ids-')), null, 2) + '\n')"

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { type Recorded, recordFileIds } from '../helpers/file-ids.js';
import { ownedTempDir, ROOT } from '../helpers/node.js';

const FIXTURE = join(ROOT, 'test', 'fixtures', 'file-ids-stable.json');

test('file entry ids, checkpoint positions and resumption match what e418f6b wrote', async (t) => {
  const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Recorded;
  const got = await recordFileIds(ownedTempDir(t, 'logrelay-file-ids-').path, fixture);
  for (const [scenario, phases] of Object.entries(fixture)) {
    for (const [phase, want] of Object.entries(phases)) {
      const have = got[scenario]?.[phase];
      t.deepEqual(have?.entries, want.entries, `${scenario} ${phase}: entries and their ids`);
      t.deepEqual(have?.positions, want.positions, `${scenario} ${phase}: positions`);
      t.deepEqual(have?.counters, want.counters, `${scenario} ${phase}: counters`);
    }
  }
  t.deepEqual(Object.keys(got), Object.keys(fixture), 'the same scenarios');
});
