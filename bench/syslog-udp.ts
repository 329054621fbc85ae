// UDP syslog bursts (DESIGN.md §17), logrelay and rsyslog side by side in one run, on 127.0.0.1:
// one Python sender fires a burst of 2,000 then one of 20,000 small RFC 3164 datagrams (as fast
// as `sendto` goes) at
//
//   1. logrelay syslog source (mode "udp", receive_buffer_bytes default 4 MiB) → null sink
//   2. the same with receive_buffer_bytes = 212992 (the usual system default)
//   3. rsyslog imudp (its defaults: the system's receive buffer) → omfile
//   4. rsyslog imudp with rcvbufSize="4m" → omfile
//
// Per row: sent, arrived (logrelay: the source's total_entries; rsyslog: lines in its file), and
// kernel_drops (logrelay: its counter; rsyslog: the drops column of /proc/net/udp for its
// socket). A burst is over when arrived + kernel_drops = sent, or after 30 s (then the rest shows
// as uncounted). Linux only (it reads /proc). The figures depend on the CPU the receiver gets.
// BENCH_BURSTS (2000,20000) sets the bursts, BENCH_RECEIVERS (e.g. 1,3) the rows.

import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { dropsIn, procAddress } from '../src/syslog/kernel-drops.js';
import { freePort, type RunningNode, sleep, spawnNode, tempDir, type TempDir, waitFor, waitReady } from '../test/helpers/node.js';
import { peerBinary } from '../test/helpers/peers.js';
import { startRsyslog } from '../test/helpers/rsyslog.js';
import { latestStatus } from '../test/helpers/status.js';
import { localPluginToml, sinkToml } from '../test/helpers/toml.js';
import { markdownTable, runIfMain } from './report.js';

const BURSTS = (process.env.BENCH_BURSTS ?? '2000,20000').split(',').map(Number);
/** Which rows to run (1–4 as numbered above), default all */
const ONLY = process.env.BENCH_RECEIVERS?.split(',').map(Number);
const SETTLE_MS = 30_000;

/** One sender: `n` datagrams of about 70 bytes, each numbered, in a tight sendto loop. */
const SENDER = `
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(n):
    s.sendto(b'<14>Nov 27 17:00:00 benchhost burst[42]: burst message %07d' % i, ('127.0.0.1', port))
`;

interface Row {
  readonly receiver: string;
  readonly sent: number;
  readonly arrived: number;
  readonly kernelDrops: number;
  readonly sendMs: number;
}

/** A receiver under test: its counts so far (cumulative over the bursts it got). */
interface Receiver {
  readonly name: string;
  readonly port: number;
  counts(): { arrived: number; drops: number };
  stop(): Promise<void>;
}

function send(port: number, n: number): number {
  const t0 = Date.now();
  const r = spawnSync(peerBinary('python3'), ['-c', SENDER, String(port), String(n)], { timeout: 60_000, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`sender failed: ${r.stderr}`);
  return Date.now() - t0;
}

/** The drops column of 127.0.0.1:`port`'s row in /proc/net/udp (0 when not found). */
const procDrops = (port: number): number => dropsIn(readFileSync('/proc/net/udp', 'latin1'), { by: 'address', local: procAddress('127.0.0.1', port, 'IPv4') }) ?? 0;

async function logrelayReceiver(dir: TempDir, name: string, config: string): Promise<Receiver> {
  const port = await freePort();
  const toml = `status_interval_ms = 100\n[[pipelines]]\nname = "u"\n${localPluginToml('sources', 'in', 'syslog', port, `mode = "udp"\n${config}`)}${sinkToml('out', 'null')}`;
  const node: RunningNode = spawnNode(['-c', dir.file(`${port}.toml`, toml), '--logging.level=debug']);
  await waitReady(node, name);
  const counter = (key: string) => Number(latestStatus(node, 'u')?.[`sources.in.${key}`] ?? 0);
  return { name, port, counts: () => ({ arrived: counter('total_entries'), drops: counter('kernel_drops') }), stop: async () => {
      await node.stop(5000);
    },
  };
}

async function rsyslogReceiver(dir: TempDir, name: string, inputOptions: string): Promise<Receiver> {
  const port = await freePort();
  const out = join(dir.path, `rsyslog-${port}.out`);
  const r = startRsyslog(
    dir,
    `imudp-${port}`,
    `module(load="imudp")\ninput(type="imudp" address="127.0.0.1" port="${port}"${inputOptions})\ntemplate(name="x" type="string" string="x\\n")\naction(type="omfile" file="${out}" template="x")`,
  );
  await waitFor(() => readFileSync('/proc/net/udp', 'latin1').includes(` ${procAddress('127.0.0.1', port, 'IPv4')} `), `rsyslog imudp bound (it said: ${r.output.join('')})`, 20_000);
  return {
    name,
    port,
    counts: () => ({ arrived: existsSync(out) ? statSync(out).size / 2 : 0, drops: procDrops(port) }),
    stop: () => r.stop(),
  };
}

async function burst(rcv: Receiver, n: number): Promise<Row> {
  const before = rcv.counts();
  const sendMs = send(rcv.port, n);
  const deadline = Date.now() + SETTLE_MS;
  let now = rcv.counts();
  while (now.arrived + now.drops - before.arrived - before.drops < n && Date.now() < deadline) {
    await sleep(50);
    now = rcv.counts();
  }
  // one more drop poll of logrelay's (once a second) and status report: the counts are final
  await sleep(1200);
  now = rcv.counts();
  return { receiver: rcv.name, sent: n, arrived: now.arrived - before.arrived, kernelDrops: now.drops - before.drops, sendMs };
}

export async function main(): Promise<Row[]> {
  const dir = tempDir('logrelay-bench-syslog-udp-');
  const rows: Row[] = [];
  try {
    const receivers: (() => Promise<Receiver>)[] = [
      () => logrelayReceiver(dir, 'logrelay udp source (receive_buffer_bytes 4 MiB) → null', ''),
      () => logrelayReceiver(dir, 'logrelay udp source (receive_buffer_bytes 212992) → null', 'receive_buffer_bytes = 212992\n'),
      () => rsyslogReceiver(dir, 'rsyslog imudp (system buffer) → omfile', ''),
      () => rsyslogReceiver(dir, 'rsyslog imudp rcvbufSize 4m → omfile', ' rcvbufSize="4m"'),
    ];
    for (const [i, make] of receivers.entries()) {
      if (ONLY && !ONLY.includes(i + 1)) continue;
      const rcv = await make();
      process.stderr.write(`running ${rcv.name} …\n`);
      try {
        for (const n of BURSTS) rows.push(await burst(rcv, n));
      } finally {
        await rcv.stop();
      }
    }
    const table = rows.map((r) => [r.receiver, String(r.sent), String(r.arrived), String(r.kernelDrops), String(r.sent - r.arrived - r.kernelDrops), String(r.sendMs)]);
    process.stdout.write(
      `\n${markdownTable(['receiver', 'sent', 'arrived', 'kernel_drops', 'uncounted', 'send ms'], table, true)}\n\nnode ${process.version}, net.core.rmem_max ${readFileSync('/proc/sys/net/core/rmem_max', 'utf8').trim()}, one Python sender per burst\n`,
    );
    return rows;
  } finally {
    dir.remove();
  }
}

runIfMain(import.meta.url, main, { exitWhenDone: true });
