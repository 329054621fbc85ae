// Bad input into the syslog source (DESIGN.md §17): no PRI, a frame over max_message_bytes, bogus
// octet counts, and a connection sending random bytes at about 10 MB/s while another sends
// good messages: the node stays up, the good connection is unaffected, the worker's RSS bounded.

import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import test from 'ava';
import { childPids, freePort, isAlive, ownedTempDir, type RunningNode, sleep, startNodeInDir, waitFor, waitReady } from '../helpers/node.js';
import { latestStatus } from '../helpers/status.js';
import { localPluginToml, sinkToml } from '../helpers/toml.js';

interface Got {
  source: string;
  level?: string;
  message: string;
  fields?: Record<string, unknown>;
}

const MAX = 1024;

/** Only entries with "MARK " reach stdout: garbage is parsed and counted, not printed (5 random bytes match 1 in 2^40). */
const nodeToml = (port: number): string => `
[[pipelines]]
name = "p"
[pipelines.flow.format]
type = "json"
[[pipelines.flow.filters]]
type = "include"
patterns = ["MARK "]
${localPluginToml('sources', 'in', 'syslog', port, `max_message_bytes = ${MAX}`)}
${sinkToml('out', 'stdout')}`;

const printed = (node: RunningNode): Got[] => node.out.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Got);

function dial(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port }, () => resolve(s));
    s.once('error', reject);
  });
}

/** Sends `data` on a fresh connection and closes it. */
async function sendOnce(port: number, data: string | Buffer): Promise<void> {
  const s = await dial(port);
  await new Promise<void>((resolve) => s.end(data, () => resolve()));
  s.destroy();
}

const vmRss = (pid: number): number => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;

test.serial('no PRI, an oversize frame and bogus octet counts: plain or cut entries, counted; the node stays up', async (t) => {
  t.timeout(60_000);
  const dir = ownedTempDir(t, 'logrelay-syslog-bad-');
  const port = await freePort();
  const node = startNodeInDir(t, dir, nodeToml(port));
  await waitReady(node, 'node');
  await sendOnce(port, 'MARK no pri here\n');
  const big = `<14>1 - h big - - - MARK ${'x'.repeat(5000)}`;
  await sendOnce(port, `${big}\n${Buffer.byteLength(big)} ${big}<14>1 - h after - - - MARK after big\n`);
  // eleven digits are no count: the line is a plain entry; a plausible count longer than what
  // follows swallows the rest of the connection, delivered cut when the peer closes
  await sendOnce(port, '99999999999 MARK too many digits\n900 <14>1 - h short - - - MARK short frame\n');
  await sendOnce(port, '<999>MARK pri out of range\n');
  const got = await waitFor(() => {
    const g = printed(node);
    return g.length >= 7 ? g : undefined;
  }, 'seven entries printed');
  t.is(got.length, 7);
  // source, level and fields, without the time
  const by = (m: string) => got.filter((g) => g.message.startsWith(m)).map(({ source, level, message, fields }) => ({ source, level, message, fields }));
  const plain = (message: string) => [{ source: 'in', level: undefined, message, fields: undefined }];
  t.deepEqual(by('MARK no pri'), plain('MARK no pri here'));
  const cut = got.filter((g) => g.source === 'big');
  t.is(cut.length, 2, 'newline and octet-counted oversize frames');
  for (const e of cut) {
    t.is(e.level, 'INFO');
    t.true(e.message.startsWith('MARK xxx'));
    t.is(Buffer.byteLength(e.message), MAX - '<14>1 - h big - - - '.length);
  }
  t.is(by('MARK after big')[0]?.source, 'after');
  t.deepEqual(by('99999999999'), plain('99999999999 MARK too many digits'));
  t.deepEqual(
    got.filter((g) => g.source === 'short').map((g) => g.message),
    ['MARK short frame'],
  );
  t.deepEqual(by('<999>'), plain('<999>MARK pri out of range'));
  const status = await waitFor(() => {
    const s = latestStatus(node, 'p');
    return s && s['sources.in.total_entries'] === 7 ? s : undefined;
  }, 'counters show seven entries');
  t.is(status['sources.in.parse_errors'], 3, 'no PRI, eleven digits, PRI 999');
  t.is(status['sources.in.truncated_messages'], 3, 'two oversize frames and the short octet-counted one');
  t.true(isAlive(node.child.pid!));
});

test.serial('garbage at about 10 MB/s on one connection: good messages on another all arrive, RSS stays bounded', async (t) => {
  t.timeout(90_000);
  const dir = ownedTempDir(t, 'logrelay-syslog-garbage-');
  const port = await freePort();
  const node = startNodeInDir(t, dir, nodeToml(port));
  await waitReady(node, 'node');
  const [worker] = await waitFor(() => childPids(node.child.pid!).then((p) => (p.length === 1 ? p : undefined)), 'one worker');
  const before = vmRss(worker!);
  const garbage = await dial(port);
  garbage.on('error', () => {});
  const good = await dial(port);
  const chunk = randomBytes(1 << 20);
  const seconds = 4;
  let sent = 0;
  let peak = before;
  let goodSent = 0;
  const t0 = Date.now();
  // 1 MiB every 100 ms, waiting for drain: at most 10 MB/s, less when the node reads slower
  while (Date.now() - t0 < seconds * 1000) {
    const ok = garbage.write(chunk);
    sent += chunk.length;
    good.write(`<13>1 - h good - - - MARK good ${goodSent++}\n`);
    if (!ok) await new Promise((r) => garbage.once('drain', r));
    peak = Math.max(peak, vmRss(worker!));
    await sleep(100);
  }
  garbage.destroy();
  good.end();
  const got = await waitFor(() => {
    const g = printed(node).filter((e) => e.source === 'good');
    return g.length >= goodSent ? g : undefined;
  }, `all ${goodSent} good messages arrive`);
  t.deepEqual(
    got.map((e) => e.message),
    Array.from({ length: goodSent }, (_, i) => `MARK good ${i}`),
  );
  peak = Math.max(peak, vmRss(worker!));
  t.log(`garbage sent ${(sent / 1e6).toFixed(0)} MB in ${seconds} s; worker RSS ${(before / 2 ** 20).toFixed(0)} → peak ${(peak / 2 ** 20).toFixed(0)} MiB`);
  t.true(sent >= 10e6, 'the node took garbage at speed');
  t.true(peak - before < 100 * 2 ** 20, 'RSS grew by less than 100 MiB');
  const status = await waitFor(() => {
    const s = latestStatus(node, 'p');
    return s && Number(s['sources.in.parse_errors']) > 0 ? s : undefined;
  }, 'garbage counted as parse errors');
  t.log(`parse_errors ${status['sources.in.parse_errors']}, truncated ${status['sources.in.truncated_messages']}, entries ${status['sources.in.total_entries']}`);
  t.true(isAlive(worker!), 'the worker was not restarted');
  t.false(node.records.some((r) => r.msg === 'Pipeline process exited unexpectedly'));
});

test.serial('max_connections refuses the connection beyond it; read_timeout_ms closes a silent one', async (t) => {
  t.timeout(60_000);
  const dir = ownedTempDir(t, 'logrelay-syslog-limits-');
  const port = await freePort();
  const node = startNodeInDir(t, dir, nodeToml(port).replace(`max_message_bytes = ${MAX}`, 'max_connections = 2\nread_timeout_ms = 1500'));
  await waitReady(node, 'node');
  const closed = (s: Socket) => new Promise<void>((resolve) => s.once('close', () => resolve()));
  const [a, b] = await Promise.all([dial(port), dial(port)]);
  const aClosed = closed(a);
  // b talks every 300 ms from the start, a stays silent: a is cut after read_timeout_ms, b is not
  let sentOnB = 0;
  const talk = setInterval(() => b.write(`<14>1 - h keep - - - MARK alive ${sentOnB++}\n`), 300);
  t.teardown(() => clearInterval(talk));
  await waitFor(() => latestStatus(node, 'p')?.['sources.in.active_connections'] === 2, 'two connections active');
  const c = await dial(port);
  await closed(c);
  await waitFor(() => latestStatus(node, 'p')?.['sources.in.rejected_conns'] === 1, 'the third is counted in rejected_conns');
  await aClosed;
  clearInterval(talk);
  t.false(b.destroyed, 'the talking connection stays');
  const n = sentOnB;
  await waitFor(() => printed(node).filter((e) => e.source === 'keep').length === n, `the talking connection delivered all ${n}`);
  b.destroy();
});
