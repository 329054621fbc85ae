import test from 'ava';
import { spawnOwnedNode, waitFor } from '../helpers/node.js';

test('no configuration runs the demo pipeline and SIGTERM exits 0', async (t) => {
  const node = spawnOwnedNode(t, []);
  await waitFor(() => node.out.length >= 2, 'demo entries on stdout');
  t.regex(node.out[0]!, /^[a-z]+( [a-z]+){19}$/);
  t.is(await node.stop(), 0);
});
