// A compressed tcp_chain link into a saturated pipeline (§25, "bomb-safe"): the source reads the
// socket no further than its inflating stream can hold and stops inflating while the pipeline is
// full, so a stream of well-compressing entries (a few hundred KiB that inflate to tens of MiB)
// waits compressed in the peer's socket instead of being inflated into the worker.

import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import test from 'ava';
import { chainSourceToml } from '../helpers/chain.js';
import { freePort, type RunningNode, sleep, spawnNode, tempDir, waitFor } from '../helpers/node.js';
import { latestStatus } from '../helpers/status.js';

const tmp = tempDir('logrelay-inflate-bound-');
let node: RunningNode | undefined;
test.after.always(async () => {
  await node?.stop(5000);
  tmp.remove();
});

const ENTRIES = 300_000;

test.serial('a gzip link into a saturated pipeline inflates only what the pipeline can hold', async (t) => {
  const [port, deadPort] = await Promise.all([freePort(), freePort()]);
  // the sink's downstream is a closed port: nothing leaves, the pipeline saturates at once
  const toml = `status_interval_ms = 500
[[pipelines]]
name = "stall"
${chainSourceToml('in', 'tcp_chain', port, 'buffer_size = 100\n')}[[pipelines.plugin_sinks]]
id = "nowhere"
type = "tcp_chain"
[pipelines.plugin_sinks.config]
host = "127.0.0.1"
port = ${deadPort}
buffer_size = 10
on_full = "block"
`;
  node = spawnNode(['-c', tmp.file('stall.toml', toml), '--logging.level=debug']);
  await waitFor(() => node!.records.find((r) => r.msg === 'Starting pipeline'), 'pipeline started');

  const socket = connect({ host: '127.0.0.1', port });
  socket.on('error', () => {});
  let answer = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (answer += chunk));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.write('{"logrelay":1,"node":"peer","offer":{"compression":["gzip"]}}\n');
  await waitFor(() => answer.includes('"gzip"'), `the source accepts gzip (answer so far: ${JSON.stringify(answer)})`);

  const lines: string[] = [];
  for (let i = 0; i < ENTRIES; i++) lines.push(`{"time":"2026-11-27T12:00:00.000Z","source":"bomb","message":"entry ${i} of a stream that compresses well"}\n`);
  const plain = Buffer.from(lines.join(''));
  const wire = gzipSync(plain);
  t.log(`${ENTRIES} entries: ${plain.length} bytes, ${wire.length} compressed`);
  socket.write(wire);

  // Long enough for the worker to inflate all of it if nothing held it back (it takes well under
  // a second), then the status report (a debug line, twice a second).
  await sleep(3000);
  const status = await waitFor(() => latestStatus(node!, 'stall'), 'a status report of the stalled pipeline');
  const taken = Number(status['sources.in.total_entries']);
  t.log(`entries taken from the link while the pipeline was saturated: ${taken}`);
  t.true(taken > 0, 'the link delivered up to the bound');
  // The pipeline holds 100 + 10; one inflated chunk (256 KiB, ~3,000 entries) and the stream's
  // buffers may be in flight past the bound, never the whole stream.
  t.true(taken < 20_000, `only what the pipeline can hold was inflated, not ${taken} of ${ENTRIES}`);
  socket.destroy();
});
