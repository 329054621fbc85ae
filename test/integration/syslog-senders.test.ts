// The syslog source against senders people actually run (DESIGN.md §17): Python's standard
// `logging.handlers.SysLogHandler` over TCP (each message ends with a NUL, no newline) and UDP,
// and syslog-ng (unpacked beside rsyslog by test/install-peers.sh): its `syslog()` driver over
// TCP (RFC 5424, octet counted) and `network()` over UDP (RFC 3164), where every datagram either
// arrives or is counted in `kernel_drops`.

import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { freePort, ownedTempDir, startNodeInDir, waitFor, waitReady, workerOf } from '../helpers/node.js';
import { peerBinary } from '../helpers/peers.js';
import { latestStatus, statusReports } from '../helpers/status.js';
import { startSyslogNg } from '../helpers/syslog-ng.js';
import { localPluginToml, sinkToml } from '../helpers/toml.js';

interface Got {
  time: string;
  source: string;
  level?: string;
  message: string;
  fields?: { hostname?: string; facility?: string; procid?: string };
}

const parseOut = (lines: readonly string[]): Got[] => lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Got);

/** A node printing JSON entries from one syslog source `in` on `port`. */
/**
 * A node: syslog source `in` (its `config` lines) → stdout sink `out`. Over TCP the sink blocks
 * when full (the source pauses the connection) instead of its default drop: a burst of 2,000 that
 * the test reads from the pipe more slowly than it comes (a loaded machine) must not lose lines
 * these tests count. UDP cannot pause, so a UDP node keeps the default.
 */
const sourceNode = (port: number, config: string): string => `
[[pipelines]]
name = "p"
[pipelines.flow.format]
type = "json"
${localPluginToml('sources', 'in', 'syslog', port, config)}
${sinkToml('out', 'stdout', config.includes('mode = "udp"') ? '' : 'on_full = "block"')}`;

/** Python's SysLogHandler (facility local4, ident "pyapp: "), `n` messages at levels DEBUG … CRITICAL in turn. */
const PYTHON_SENDER = `
import logging, logging.handlers, socket, sys
port, mode, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
h = logging.handlers.SysLogHandler(address=('127.0.0.1', port), facility=logging.handlers.SysLogHandler.LOG_LOCAL4,
                                   socktype=socket.SOCK_STREAM if mode == 'tcp' else socket.SOCK_DGRAM)
h.ident = 'pyapp: '
log = logging.getLogger('sender')
log.propagate = False
log.addHandler(h)
log.setLevel(logging.DEBUG)
levels = [logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL]
for i in range(n):
    log.log(levels[i % 5], 'python %s line %04d ü', mode, i)
h.close()
`;
const PYTHON_LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'];

for (const mode of ['tcp', 'udp'] as const) {
  test.serial(`Python SysLogHandler over ${mode}: 200 messages arrive as 200 entries with their levels, no NUL in any`, async (t) => {
    t.timeout(60_000);
    const python = peerBinary('python3');
    const dir = ownedTempDir(t, `logrelay-syslog-python-${mode}-`);
    const port = await freePort();
    const node = startNodeInDir(t, dir, sourceNode(port, mode === 'udp' ? 'mode = "udp"\n' : ''));
    await waitReady(node, 'node');
    const total = 200;
    const sent = spawnSync(python, ['-c', PYTHON_SENDER, String(port), mode, String(total)], { timeout: 20_000, encoding: 'utf8' });
    t.is(sent.status, 0, sent.stderr);
    const got = await waitFor(() => {
      const g = parseOut(node.out);
      return g.length >= total ? g : undefined;
    }, `all ${total} messages printed (got ${parseOut(node.out).length})`);
    const status = await waitFor(() => {
      const s = latestStatus(node, 'p');
      return s && s['sources.in.total_entries'] === total ? s : undefined;
    }, 'the source counts every entry');
    t.is(got.length, total);
    t.is(status['sources.in.parse_errors'], 0);
    for (let i = 0; i < total; i++) {
      const e = got[i]!;
      t.is(e.message, `python ${mode} line ${String(i).padStart(4, '0')} ü`);
      t.false(e.message.includes('\0'), `no NUL in message ${i}`);
      t.is(e.level, PYTHON_LEVELS[i % 5], `level of ${i}`);
      t.is(e.source, 'pyapp');
      t.is(e.fields?.facility, 'local4');
    }
  });
}

/** Facilities the syslog-ng input cycles through: code and the name the source gives. */
const FACILITIES: readonly (readonly [number, string])[] = [
  [16, 'local0'],
  [19, 'local3'],
  [1, 'user'],
  [3, 'daemon'],
  [23, 'local7'],
];
const SEVERITY_LEVELS = ['FATAL', 'FATAL', 'FATAL', 'ERROR', 'WARN', 'INFO', 'INFO', 'DEBUG'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

interface NgMessage {
  readonly facility: string;
  readonly level: string;
  readonly host: string;
  readonly app: string;
  readonly pid: string;
  readonly message: string;
}

/**
 * `total` RFC 3164 lines for syslog-ng's file() source to parse (keep-hostname), each with its own
 * facility, severity, host, program and pid, and non-ASCII text; and what each must become.
 */
function ngInput(total: number, tag: string): { text: string; want: Map<string, NgMessage> } {
  const d = new Date();
  const stamp = `${MONTHS[d.getMonth()]} ${String(d.getDate()).padStart(2, ' ')} ${[d.getHours(), d.getMinutes(), d.getSeconds()].map((x) => String(x).padStart(2, '0')).join(':')}`;
  const want = new Map<string, NgMessage>();
  const lines: string[] = [];
  for (let i = 0; i < total; i++) {
    const [code, facility] = FACILITIES[i % FACILITIES.length]!;
    const severity = i % 8;
    const m: NgMessage = {
      facility,
      level: SEVERITY_LEVELS[severity]!,
      host: `host-${i % 3}`,
      app: `ngapp${i % 4}`,
      pid: String(1000 + (i % 7)),
      message: `${tag} message ${String(i).padStart(5, '0')} ünïcode ✓ 日本語`,
    };
    want.set(m.message, m);
    lines.push(`<${code * 8 + severity}>${stamp} ${m.host} ${m.app}[${m.pid}]: ${m.message}`);
  }
  return { text: `${lines.join('\n')}\n`, want };
}

/** Checks every received entry against what it was sent as: each once, every field as §17 maps it. */
function checkFields(t: import('ava').ExecutionContext, got: readonly Got[], want: ReadonlyMap<string, NgMessage>): void {
  const seen = new Set<string>();
  for (const e of got) {
    const m = want.get(e.message);
    if (!m) {
      t.fail(`unexpected message ${JSON.stringify(e.message)}`);
      continue;
    }
    t.false(seen.has(e.message), `${e.message} once`);
    seen.add(e.message);
    t.deepEqual(
      [e.level, e.source, e.fields?.hostname, e.fields?.facility, e.fields?.procid],
      [m.level, m.app, m.host, m.facility, m.pid],
      e.message,
    );
    t.true(Math.abs(Date.parse(e.time) - Date.now()) < 10 * 60_000, `time of ${e.message}: ${e.time}`);
  }
}

/** syslog-ng reading `input` whole (RFC 3164 lines, hostnames kept) into `destination`. */
const ngConfig = (input: string, destination: string): string => `options { keep-hostname(yes); use-dns(no); stats-freq(0); };
source s_in { file("${input}" follow-freq(1) log-iw-size(10000) log-fetch-limit(1000)); };
destination d_out { ${destination} };
log { source(s_in); destination(d_out); };`;

test.serial('syslog-ng syslog() over TCP (RFC 5424, octet counted) into framing auto: 2,000 of 2,000, hostname, facility, app name, level and non-ASCII intact', async (t) => {
  t.timeout(90_000);
  const dir = ownedTempDir(t, 'logrelay-syslog-ng-tcp-');
  const port = await freePort();
  const node = startNodeInDir(t, dir, sourceNode(port, ''));
  await waitReady(node, 'node');
  const total = 2000;
  const { text, want } = ngInput(total, 'ng tcp');
  const input = join(dir.path, 'in.log');
  writeFileSync(input, text);
  const ng = startSyslogNg(dir, 'ng', ngConfig(input, `syslog("127.0.0.1" transport("tcp") port(${port}));`));
  t.teardown(() => ng.stop());
  const got = await telling(
    waitFor(
      () => {
        const g = parseOut(node.out);
        return g.length >= total ? g : undefined;
      },
      `all ${total} messages`,
      45_000,
    ),
    () => `got ${parseOut(node.out).length}; the node counted ${JSON.stringify(latestStatus(node, 'p'))}; syslog-ng said: ${ng.output.join('')}`,
  );
  t.is(got.length, total);
  checkFields(t, got, want);
  const status = await waitFor(() => {
    const s = latestStatus(node, 'p');
    return s && s['sources.in.total_entries'] === total ? s : undefined;
  }, 'the source counts every entry');
  t.is(status['sources.in.parse_errors'], 0);
  t.is(status['sources.in.truncated_messages'], 0);
});

/** `p`, its failure told with what `said` returns then (a peer's output). */
const telling = <T>(p: Promise<T>, said: () => string): Promise<T> =>
  p.catch((err: Error) => {
    throw new Error(`${err.message}; ${said()}`);
  });

test.serial('syslog-ng network() over UDP (RFC 3164) into a stalled worker: arrived + kernel_drops = sent, exactly; every arrival field by field', async (t) => {
  t.timeout(120_000);
  const dir = ownedTempDir(t, 'logrelay-syslog-ng-udp-');
  const port = await freePort();
  // a small receive buffer, and a worker stopped while syslog-ng sends: the kernel must drop
  const node = startNodeInDir(t, dir, sourceNode(port, 'mode = "udp"\nreceive_buffer_bytes = 65536\n'));
  await waitReady(node, 'node');
  const worker = await workerOf(node);
  const total = 2000;
  const { text, want } = ngInput(total, 'ng udp');
  const input = join(dir.path, 'in.log');
  writeFileSync(input, text);
  process.kill(worker, 'SIGSTOP');
  let stopped = true;
  t.teardown(() => {
    if (stopped) process.kill(worker, 'SIGCONT');
  });
  const ng = startSyslogNg(dir, 'ng', ngConfig(input, `network("127.0.0.1" transport("udp") port(${port}));`));
  t.teardown(() => ng.stop());
  await telling(
    waitFor(async () => (await ng.stats()).get('d_out#0;written') === total, `syslog-ng sent all ${total} datagrams`, 45_000),
    () => `syslog-ng said: ${ng.output.join('')}`,
  );
  process.kill(worker, 'SIGCONT');
  stopped = false;
  const counted = (s: Record<string, unknown>) => Number(s['sources.in.total_entries'] ?? 0) + Number(s['sources.in.kernel_drops'] ?? 0);
  const reached = await telling(
    waitFor(
      () => {
        const s = latestStatus(node, 'p');
        return s && counted(s) >= total ? s : undefined;
      },
      `arrived + kernel_drops reach ${total}`,
      30_000,
    ),
    () => `last report: ${JSON.stringify(latestStatus(node, 'p'))}`,
  );
  // a report at least two drop polls later: nothing more arrives or is counted
  const from = node.records.indexOf(reached);
  const settledAt = Date.parse(String(reached.time)) + 2500;
  const settled = await waitFor(
    () => statusReports(node, 'p', from).find((r) => Date.parse(String(r.time)) >= settledAt),
    'a status report 2.5 s after the total was reached',
  );
  const arrived = Number(settled['sources.in.total_entries']);
  const drops = Number(settled['sources.in.kernel_drops']);
  t.log(`sent ${total}, arrived ${arrived}, kernel_drops ${drops}`);
  t.is(arrived + drops, total, 'every datagram arrived or was counted');
  t.true(drops > 0, 'the stalled worker made the kernel drop');
  t.true(arrived > 0);
  const got = await waitFor(() => {
    const g = parseOut(node.out);
    return g.length >= arrived ? g : undefined;
  }, `all ${arrived} arrivals printed`);
  t.is(got.length, arrived);
  checkFields(t, got, want);
  t.is(settled['sources.in.parse_errors'], 0);
  // the loss is told as every loss is: WARN `Entries dropped` with reason kernel
  const warn = await waitFor(
    () => node.records.find((r) => r.msg === 'Entries dropped' && r.reason === 'kernel' && r.plugin === 'in'),
    'WARN Entries dropped, reason kernel',
  );
  t.is(warn.level, 'warn');
  t.true(Number(warn.count) > 0);
});

test.serial('receive_buffer_bytes over what the kernel grants (net.core.rmem_max): INFO with the size granted', async (t) => {
  t.timeout(60_000);
  const rmemMax = Number(readFileSync('/proc/sys/net/core/rmem_max', 'utf8').trim());
  const asked = 1024 * 1024 * 1024;
  t.true(rmemMax < asked, 'this machine caps below 1 GiB');
  const dir = ownedTempDir(t, 'logrelay-syslog-rcvbuf-');
  const port = await freePort();
  const node = startNodeInDir(t, dir, sourceNode(port, `mode = "udp"\nreceive_buffer_bytes = ${asked}\n`));
  const line = await waitFor(() => node.records.find((r) => r.msg === 'UDP receive buffer capped'), 'INFO UDP receive buffer capped');
  t.is(line.level, 'info');
  t.is(line.plugin, 'in');
  t.is(line.receive_buffer_bytes, asked);
  // root may be granted more than rmem_max only with SO_RCVBUFFORCE, which Node does not use
  t.is(line.granted_bytes, rmemMax);
});
