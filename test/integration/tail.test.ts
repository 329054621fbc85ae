// `logrelay tail URL` (DESIGN.md §2) against a running node: prints entries, survives a reload of
// that node by reconnecting, and exits 1 with a message on a 404 or a non-stream answer.

import test from 'ava';
import { freePort, spawnOwnedNode, startOwnedNode, waitFor } from '../helpers/node.js';
import { localPluginToml, randomSourceToml } from '../helpers/toml.js';

test.serial('tail prints entries, reconnects across a reload, and exits 1 on 404 or a wrong content type', async (t) => {
  const port = await freePort();
  const node = startOwnedNode(
    t,
    `
[[pipelines]]
name = "web"
${randomSourceToml('interval_ms = 50\nlength = 4')}${localPluginToml('sinks', 'web', 'http', port)}`,
  );
  const base = `http://127.0.0.1:${port}`;
  const tail = spawnOwnedNode(t, ['tail', `${base}/stream`]);
  const connects = () => tail.errText.filter((l) => l.includes('connected to')).length;
  await waitFor(() => connects() === 1 && tail.out.length >= 5, 'tail prints entries');
  for (const line of tail.out) t.regex(line, /^[a-z]+( [a-z]+){3}$/);

  node.signal('SIGHUP');
  await waitFor(() => node.records.some((r) => r.msg === 'Configuration reloaded'), 'node reloaded');
  await waitFor(() => connects() === 2, 'tail reconnected to the new generation');
  const seen = tail.out.length;
  await waitFor(() => tail.out.length >= seen + 5, 'tail keeps printing after the reload');
  t.is(tail.child.exitCode, null);

  const missing = spawnOwnedNode(t, ['tail', `${base}/nope`]);
  const r404 = await missing.finish();
  t.is(r404.code, 1);
  t.true(
    missing.errText.some((l) => l.includes('404')),
    missing.errText.join('\n'),
  );

  const notStream = spawnOwnedNode(t, ['tail', `${base}/status`]);
  t.is((await notStream.finish()).code, 1);
  t.true(
    notStream.errText.some((l) => l.includes('text/event-stream')),
    notStream.errText.join('\n'),
  );

  await tail.stop();
  t.is(await node.stop(), 0);
});
