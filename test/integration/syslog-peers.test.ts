// The syslog source and sink against real peers (DESIGN.md §17): util-linux `logger` over TCP
// (octet counting, RFC 5424) and UDP (RFC 3164), rsyslog's omfwd into the source, and the sink
// into rsyslog's imtcp writing a file through a template.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { freePort, ownedTempDir, startNodeInDir, waitFor, waitReady } from '../helpers/node.js';
import { peerBinary } from '../helpers/peers.js';
import { accepts, imtcpInput, omfwdAction, startRsyslog } from '../helpers/rsyslog.js';
import { latestStatus } from '../helpers/status.js';
import { localPluginToml, sinkToml } from '../helpers/toml.js';

interface Got {
  time: string;
  source: string;
  level?: string;
  message: string;
  fields?: { hostname?: string; facility?: string; procid?: string; sd?: unknown };
}

const parseOut = (lines: readonly string[]): Got[] => lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Got);

/** A node printing JSON entries from syslog sources on `port`: tcp, and udp when asked. */
const sourceNode = (port: number, udp: boolean): string => `
[[pipelines]]
name = "p"
[pipelines.flow.format]
type = "json"
${localPluginToml('sources', 'in', 'syslog', port)}
${udp ? localPluginToml('sources', 'uin', 'syslog', port, 'mode = "udp"') : ''}
${sinkToml('out', 'stdout')}`;

const SEVERITIES = ['emerg', 'alert', 'crit', 'err', 'warning', 'notice', 'info', 'debug'] as const;
const LEVELS = ['FATAL', 'FATAL', 'FATAL', 'ERROR', 'WARN', 'INFO', 'INFO', 'DEBUG'];
const shortHost = (h: string) => h.split('.')[0];

test.serial('logger over tcp (octet counting, RFC 5424) and udp (RFC 3164): level, source, hostname and message for all 8 severities', async (t) => {
  t.timeout(90_000);
  const logger = peerBinary('logger');
  const dir = ownedTempDir(t, 'logrelay-syslog-logger-');
  const port = await freePort();
  const node = startNodeInDir(t, dir, sourceNode(port, true));
  await waitReady(node, 'node');
  const message = (mode: string, sev: number) => `${mode} sev ${sev}: a  message with  spaces, "quotes" and ünïcode ✓`;
  for (let sev = 0; sev < 8; sev++) {
    const p = `local0.${SEVERITIES[sev]}`;
    const tcp = spawnSync(logger, ['--tcp', '--octet-count', '--rfc5424', '-n', '127.0.0.1', '-P', String(port), '-t', `tcp-tag-${sev}`, '-p', p, message('tcp', sev)], { timeout: 10_000 });
    t.is(tcp.status, 0, tcp.stderr?.toString());
    const udp = spawnSync(logger, ['--udp', '--rfc3164', '-n', '127.0.0.1', '-P', String(port), '-t', `udp-tag-${sev}`, '-p', p, message('udp', sev)], { timeout: 10_000 });
    t.is(udp.status, 0, udp.stderr?.toString());
  }
  const got = await waitFor(() => {
    const g = parseOut(node.out);
    return g.length >= 16 ? g : undefined;
  }, 'all 16 messages printed');
  for (const mode of ['tcp', 'udp']) {
    for (let sev = 0; sev < 8; sev++) {
      const e = got.find((g) => g.source === `${mode}-tag-${sev}`);
      if (!e) {
        t.fail(`${mode} severity ${sev} missing`);
        continue;
      }
      t.is(e.level, LEVELS[sev], `${mode} ${sev}`);
      t.is(e.message, message(mode, sev));
      t.is(e.fields?.facility, 'local0');
      t.is(shortHost(e.fields?.hostname ?? ''), shortHost(hostname()));
      // the time is the sender's (3164: whole seconds), not zero or far off
      t.true(Math.abs(Date.parse(e.time) - Date.now()) < 60_000);
    }
  }
  t.is(got.length, 16);
  const status = await waitFor(() => {
    const s = latestStatus(node, 'p');
    return s && s['sources.in.total_entries'] === 8 && s['sources.uin.total_entries'] === 8 ? s : undefined;
  }, 'counters show 8 entries per source');
  t.is(status['sources.in.parse_errors'], 0);
  t.is(status['sources.uin.parse_errors'], 0);
});

for (const [format, template] of [
  ['traditional forward format (RFC 3164 style)', ''],
  ['RFC 5424 (RSYSLOG_SyslogProtocol23Format)', 'RSYSLOG_SyslogProtocol23Format'],
] as const) {
  test.serial(`rsyslog omfwd (TCP, octet-counted, ${format}) into the source: every message once`, async (t) => {
    t.timeout(90_000);
    const dir = ownedTempDir(t, 'logrelay-syslog-omfwd-');
    const port = await freePort();
    const node = startNodeInDir(t, dir, sourceNode(port, false));
    await waitReady(node, 'node');
    const total = 2000;
    const input = join(dir.path, 'in.log');
    const lines = Array.from({ length: total }, (_, i) => `line ${String(i).padStart(5, '0')} from imfile`);
    writeFileSync(input, `${lines.join('\n')}\n`);
    const rsyslog = startRsyslog(
      dir,
      'fwd',
      `module(load="imfile")
input(type="imfile" file="${input}" tag="ftag:" facility="local3" severity="warning" freshStartTail="off")
${omfwdAction(port, template)}`,
    );
    t.teardown(() => rsyslog.stop());
    const got = await waitFor(
      () => {
        const g = parseOut(node.out);
        return g.length >= total ? g : undefined;
      },
      `all ${total} lines forwarded (rsyslog said: ${rsyslog.output.join('')})`,
      45_000,
    );
    const seen = new Map<string, number>();
    for (const e of got) seen.set(e.message, (seen.get(e.message) ?? 0) + 1);
    for (const l of lines) t.is(seen.get(l), 1, l);
    t.is(got.length, total);
    t.true(got.every((e) => e.source === 'ftag' && e.level === 'WARN' && e.fields?.facility === 'local3'));
    const status = await waitFor(() => {
      const s = latestStatus(node, 'p');
      return s && s['sources.in.total_entries'] === total ? s : undefined;
    }, 'counters show every entry');
    t.is(status['sources.in.parse_errors'], 0);
    t.is(status['sources.in.active_connections'], 1);
  });
}

test.serial('the sink into rsyslog imtcp: every line once, with severity, app-name and hostname right', async (t) => {
  t.timeout(90_000);
  const dir = ownedTempDir(t, 'logrelay-syslog-imtcp-');
  const port = await freePort();
  const out = join(dir.path, 'out.log');
  const rsyslog = startRsyslog(
    dir,
    'recv',
    `${imtcpInput(port)}
template(name="t" type="string" string="%programname%|%syslogseverity%|%syslogfacility-text%|%hostname%|%msg%\\n")
action(type="omfile" file="${out}" template="t")`,
  );
  t.teardown(() => rsyslog.stop());
  await waitFor(() => accepts(port), `rsyslog listens on ${port} (it said: ${rsyslog.output.join('')})`);
  const src = join(dir.path, 'src');
  const node = startNodeInDir(
    t,
    dir,
    `
[[pipelines]]
name = "p"
[[pipelines.plugin_sources]]
id = "f"
type = "file"
[pipelines.plugin_sources.config]
directory = ${JSON.stringify(src)}
from = "start"
check_interval_ms = 50
${localPluginToml('sinks', 'sys', 'syslog', port, 'on_full = "block"')}`,
  );
  // levels in turn: FATAL 2, ERROR 3, WARN 4, INFO 6, DEBUG 7, TRACE 7, none 6
  const words = ['FATAL', 'ERROR', 'WARN', 'INFO', 'DEBUG', 'TRACE', 'plain'];
  const severities = [2, 3, 4, 6, 7, 7, 6];
  const total = 3500;
  const lines = Array.from({ length: total }, (_, i) => `${words[i % words.length]} entry ${String(i).padStart(5, '0')} "q" \\ ü`);
  mkdirSync(src);
  writeFileSync(join(src, 'app.log'), `${lines.join('\n')}\n`);
  await waitReady(node, 'node');
  const got = await waitFor(
    () => {
      if (!existsSync(out)) return undefined;
      const text = readFileSync(out, 'utf8');
      const rows = text.split('\n').filter(Boolean);
      return rows.length >= total ? rows : undefined;
    },
    `rsyslog wrote all ${total} lines`,
    45_000,
  );
  t.is(got.length, total);
  const byMessage = new Map<string, string[]>();
  for (const row of got) {
    const [program, severity, facility, host, ...msg] = row.split('|');
    byMessage.set(msg.join('|'), [program!, severity!, facility!, host!]);
  }
  t.is(byMessage.size, total, 'every line once');
  lines.forEach((l, i) => {
    t.deepEqual(byMessage.get(l), ['app.log', String(severities[i % severities.length]), 'local0', hostname()], l);
  });
  const status = await waitFor(() => {
    const s = latestStatus(node, 'p');
    return s && s['sinks.sys.total_processed'] === total ? s : undefined;
  }, 'the sink counts every entry');
  t.is(status['sinks.sys.connected'], 1);
  t.is(status.total_dropped_by_sink, 0);
});
