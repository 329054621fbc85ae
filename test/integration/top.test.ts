// `logrelay top` (DESIGN.md §2, issue 15 acceptance 5): in a real terminal (tmux: send-keys,
// capture-pane) it shows a row per pipeline with rates that change and quits on `q`; `--once`
// prints a plain snapshot and exits 0.

import { execFileSync, spawnSync } from 'node:child_process';
import test from 'ava';
import { adminRequest } from '../helpers/admin.js';
import { BIN, freePort, startOwnedNode, waitFor } from '../helpers/node.js';
import { peerBinary } from '../helpers/peers.js';
import { chainSourceToml } from '../helpers/chain.js';
import { rawLink, sendReports, syntheticReport } from '../helpers/reports.js';
import { randomSourceToml, sinkToml } from '../helpers/toml.js';

/** A node with two pipelines: `steady` (about 100 entries/s) and `burst` (3,000 entries, then nothing). */
async function startNode(t: Parameters<typeof startOwnedNode>[0]): Promise<number> {
  const port = await freePort();
  startOwnedNode(
    t,
    `[admin]\nport = ${port}\n` +
      `[[pipelines]]\nname = "steady"\n${randomSourceToml('interval_ms = 10')}${sinkToml('out', 'null')}` +
      `[[pipelines]]\nname = "burst"\n${randomSourceToml('interval_ms = 10\nentries_per_tick = 5\ncount = 3000')}${sinkToml('out', 'null')}`,
  );
  await waitFor(async () => (await adminRequest(port, '/readyz').catch(() => ({ status: 0 }))).status === 200, 'node ready', 30_000);
  return port;
}

/** The RATE/s column of the pipeline row named `name` on a captured screen; undefined when absent. */
function pipelineRate(screen: string, name: string): number | undefined {
  const row = screen.split('\n').find((l) => l.startsWith(`${name} `) && l.includes('pipeline'));
  if (!row) return undefined;
  // PIPELINE KIND STATE TOTAL RATE/s …: the pipeline row has no component or type cell
  const cells = row.trim().split(/\s+/);
  const rate = Number(cells[4]);
  return Number.isFinite(rate) ? rate : undefined;
}

test.serial('top in a real terminal: a row per pipeline, rates that change, q quits', async (t) => {
  const tmux = peerBinary('tmux');
  const port = await startNode(t);
  const socket = `logrelay-top-${process.pid}`;
  const tm = (...args: string[]) => execFileSync(tmux, ['-L', socket, ...args], { encoding: 'utf8' });
  t.teardown(() => {
    spawnSync(tmux, ['-L', socket, 'kill-server']);
  });
  tm('new-session', '-d', '-s', 'top', '-x', '150', '-y', '30', `${process.execPath} ${BIN} top http://127.0.0.1:${port}`);
  const capture = () => tm('capture-pane', '-p', '-t', 'top');

  const rates = { steady: new Set<number>(), burst: new Set<number>() };
  await waitFor(
    () => {
      const screen = capture();
      for (const name of ['steady', 'burst'] as const) {
        const r = pipelineRate(screen, name);
        if (r !== undefined) rates[name].add(r);
      }
      // burst: entries flowing (> 0), then none (0) once its 3,000 are read
      return [...rates.burst].some((r) => r > 0) && rates.burst.has(0) && [...rates.steady].some((r) => r > 0);
    },
    'top shows both pipelines, burst rate rising then falling to 0',
    30_000,
  );
  const screen = capture();
  t.regex(screen, /PIPELINE\s+COMPONENT\s+KIND/);
  t.regex(screen, /^steady\s+pipeline\s+running/m);
  t.regex(screen, /^burst\s+pipeline\s+running/m);
  t.regex(screen, /q quits/);

  tm('send-keys', '-t', 'top', 'q');
  await waitFor(() => spawnSync(tmux, ['-L', socket, 'has-session', '-t', 'top']).status !== 0, 'top quits on q', 10_000);
  t.pass();
});

test.serial('top --once prints one plain snapshot and exits 0', async (t) => {
  const port = await startNode(t);
  const r = spawnSync(process.execPath, [BIN, 'top', `http://127.0.0.1:${port}`, '--once'], { encoding: 'utf8', timeout: 20_000 });
  t.is(r.status, 0, r.stderr);
  t.notRegex(r.stdout, /\x1b/, 'no terminal escapes');
  t.regex(r.stdout, /^logrelay .* generation 1 .* ready$/m);
  t.regex(r.stdout, /^steady\s+pipeline\s+running\s+\d+\s+\d+/m);
  t.regex(r.stdout, /^\s+random\s+source\s+random\s+\d+\s+\d+/m);
  t.regex(r.stdout, /^burst\s+pipeline/m);
  // An admin endpoint that is not there: exit 1 with a message.
  const gone = spawnSync(process.execPath, [BIN, 'top', `http://127.0.0.1:${await freePort()}`, '--once'], { encoding: 'utf8', timeout: 20_000 });
  t.is(gone.status, 1);
  t.regex(gone.stderr, /^logrelay: /);
});

test.serial('top --fleet URL --once prints the fleet table of a collector: a row per node, silent first, and exits 0', async (t) => {
  const admin = await freePort();
  const port = await freePort();
  startOwnedNode(
    t,
    `node_name = "coll"\nreport_interval_ms = 500\n[admin]\nport = ${admin}\n[fleet]\nenabled = true\n[[pipelines]]\nname = "recv"\n${chainSourceToml('link', 'tcp_chain', port)}${sinkToml('out', 'null')}`,
  );
  await waitFor(async () => (await adminRequest(admin, '/readyz').catch(() => ({ status: 0 }))).status === 200, 'collector ready', 30_000);
  const link = await rawLink(port);
  t.teardown(() => link.close());
  await link.send('{"logrelay":1,"node":"relay-x","offer":{"report":1}}\n');
  await link.waitLine((l) => l.startsWith('{"ok"'), 'hello answered');
  await sendReports(link, [syntheticReport('relay-x', [], 60_000), syntheticReport('edge-1', ['relay-x'], 60_000), syntheticReport('edge-quiet', ['relay-x'], 100)]);
  await waitFor(async () => (await adminRequest(admin, '/fleet')).body.includes('"silent"'), 'edge-quiet silent', 10_000);
  const r = spawnSync(process.execPath, [BIN, 'top', '--fleet', `http://127.0.0.1:${admin}`, '--once'], { encoding: 'utf8', timeout: 20_000 });
  t.is(r.status, 0, r.stderr);
  t.notRegex(r.stdout, /\x1b/, 'no terminal escapes');
  t.regex(r.stdout, /^logrelay fleet .* 4 nodes: 3 live, 1 silent, 0 gone$/m);
  const rows = r.stdout.split('\n').slice(2).filter((l) => l.trim() !== '');
  t.regex(rows[0]!, /^NODE\s+STATE\s+LAST SEEN\s+VIA/);
  t.regex(rows[1]!, /^edge-quiet\s+silent\s+\d+s ago\s+relay-x\s/, 'silent first');
  t.regex(r.stdout, /^edge-1\s+live\s+\d+s ago\s+relay-x\s+test\s+1\s+1\s+1\s+0\s+7\s+0$/m);
  t.regex(r.stdout, /^coll\s+live\s+\d+s ago\s+-\s/m);
  t.regex(r.stdout, /^relay-x\s+live\s+\d+s ago\s+-\s/m);
  // a node without the view: /fleet is 404, top says so and exits 1
  const plain = await freePort();
  startOwnedNode(t, `[admin]\nport = ${plain}\n[[pipelines]]\nname = "p"\n${randomSourceToml('interval_ms = 1000')}${sinkToml('out', 'null')}`);
  await waitFor(async () => (await adminRequest(plain, '/readyz').catch(() => ({ status: 0 }))).status === 200, 'plain node ready', 30_000);
  const off = spawnSync(process.execPath, [BIN, 'top', '--fleet', `http://127.0.0.1:${plain}`, '--once'], { encoding: 'utf8', timeout: 20_000 });
  t.is(off.status, 1);
  t.regex(off.stderr, /HTTP 404/);
});
