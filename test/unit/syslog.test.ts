// RFC 5424 / 3164 parsing and formatting and RFC 6587 framing, without sockets.

import test from 'ava';
import { checkPipelines } from '../../src/check.js';
import { loadConfig } from '../../src/config/load.js';
import type { Entry } from '../../src/core/entry.js';
import { formatSyslog } from '../../src/syslog/format.js';
import { encodeFrame, FrameDecoder, type SourceFraming, trimFrameEnd } from '../../src/syslog/framing.js';
import { dropsIn, procAddress } from '../../src/syslog/kernel-drops.js';
import { parseSyslog } from '../../src/syslog/parse.js';
import { tempDir } from '../helpers/node.js';

const NOW = Date.UTC(2026, 10, 24, 12, 0, 0);

/** Frames `input` (split into chunks of `chunkBytes`) decode into, as text with a cut mark. */
function frames(framing: SourceFraming, input: string | Buffer, max = 1024, chunkBytes = 0, end = false): { out: string[]; ok: boolean; held: number } {
  const d = new FrameDecoder(framing, max);
  const out: string[] = [];
  const buf = typeof input === 'string' ? Buffer.from(input) : input;
  const step = chunkBytes || buf.length || 1;
  let ok = true;
  const onFrame = (f: Buffer, cut: boolean) => out.push(cut ? `${f.toString()}[cut]` : f.toString());
  for (let i = 0; i < buf.length && ok; i += step) ok = d.push(buf.subarray(i, i + step), onFrame);
  if (ok && end) d.finish(onFrame);
  return { out, ok, held: d.held };
}

test('RFC 5424: every header field lands in the entry', (t) => {
  const { entry, ok } = parseSyslog(
    '<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog 42 ID47 [exampleSDID@32473 iut="3" eventSource="App\\"x\\]"][b@1 k="v"] \ufeffAn application event',
    NOW,
    'in',
  );
  t.true(ok);
  t.deepEqual(entry, {
    time: Date.parse('2003-10-11T22:14:15.003Z'),
    source: 'evntslog',
    level: 'INFO',
    message: 'An application event',
    fields: {
      hostname: 'mymachine.example.com',
      procid: '42',
      msgid: 'ID47',
      sd: { 'exampleSDID@32473': { iut: '3', eventSource: 'App"x]' }, 'b@1': { k: 'v' } },
      facility: 'local4',
    },
  });
});

test('RFC 5424: nil fields are left out, a missing MSG is empty, microseconds parse', (t) => {
  const { entry, ok } = parseSyslog('<11>1 2026-11-24T20:46:20.123456+00:00 - - - - -', NOW, 'in');
  t.true(ok);
  t.deepEqual(entry, { time: Date.parse('2026-11-24T20:46:20.123Z'), source: 'in', level: 'ERROR', message: '', fields: { facility: 'user' } });
  t.is(parseSyslog('<14>1 - h app - - - hello\n', NOW, 'in').entry.time, NOW);
  t.is(parseSyslog('<14>1 - h app - - - hello\n', NOW, 'in').entry.message, 'hello');
});

test('severity maps to the level: 0-2 FATAL, 3 ERROR, 4 WARN, 5-6 INFO, 7 DEBUG', (t) => {
  const levels = [0, 1, 2, 3, 4, 5, 6, 7].map((sev) => parseSyslog(`<${128 + sev}>1 - - - - - - m`, NOW, 'in').entry.level);
  t.deepEqual(levels, ['FATAL', 'FATAL', 'FATAL', 'ERROR', 'WARN', 'INFO', 'INFO', 'DEBUG']);
});

test('RFC 3164: timestamp, hostname, tag and pid; a tagless message stays whole', (t) => {
  const { entry, ok } = parseSyslog('<34>Oct 11 22:14:15 mymachine su[123]: \'su root\' failed for lonvick', NOW, 'in');
  t.true(ok);
  t.is(entry.source, 'su');
  t.is(entry.level, 'FATAL');
  t.is(entry.message, "'su root' failed for lonvick");
  t.deepEqual(entry.fields, { hostname: 'mymachine', procid: '123', facility: 'auth' });
  t.is(new Date(entry.time).getMonth(), 9);
  const bare = parseSyslog('<13>Nov  4 01:02:03 host just text here', NOW, 'in').entry;
  t.is(bare.source, 'in');
  t.is(bare.message, 'just text here');
  t.is(new Date(bare.time).getDate(), 4);
  // rsyslog's forward format: an RFC 3339 time where 3164 has its own
  const fwd = parseSyslog('<30>2026-11-24T20:00:00.5+01:00 web nginx: GET /', NOW, 'in').entry;
  t.is(fwd.time, Date.parse('2026-11-24T19:00:00.500Z'));
  t.deepEqual([fwd.source, fwd.message, fwd.fields?.hostname], ['nginx', 'GET /', 'web']);
  // no timestamp: no hostname either, the tag still counts
  const local = parseSyslog('<15>cron: job done', NOW, 'in').entry;
  t.deepEqual([local.time, local.source, local.message, local.level], [NOW, 'cron', 'job done', 'DEBUG']);
});

test('no valid PRI: a plain entry of the text, not ok', (t) => {
  for (const text of ['hello world', '<>x', '<192>x', '<1a>x', '<1234>x', '<13']) {
    const { entry, ok } = parseSyslog(text, NOW, 'in');
    t.false(ok, text);
    t.deepEqual(entry, { time: NOW, source: 'in', message: text });
  }
});

test('a broken RFC 5424 header keeps the PRI and the rest as message, not ok', (t) => {
  const { entry, ok } = parseSyslog('<14>1 - host app - - [broken sd', NOW, 'in');
  t.false(ok);
  t.is(entry.level, 'INFO');
  t.is(entry.message, '[broken sd');
});

test('auto framing: octet counted and newline frames mixed, across any chunk boundary', (t) => {
  const input = '5 <1>ab\nfoo\r\n11 <13>1 - - x\n\n12345not a count\n';
  const want = ['<1>ab', 'foo', '<13>1 - - x', '12345not a count'];
  for (const chunk of [0, 1, 2, 3, 7]) t.deepEqual(frames('auto', input, 1024, chunk).out, want, `chunks of ${chunk}`);
  t.deepEqual(frames('newline', '5 <1>ab\n').out, ['5 <1>ab']);
});

test('NUL ends a frame in auto framing as a newline does (SysLogHandler over TCP), across any chunk boundary', (t) => {
  const input = '<11>python tcp line 0000\0<11>python tcp line 0001\0<14>crlf\r\n<14>nul after newline\n\0<14>and 5 <1>x\x00';
  const want = ['<11>python tcp line 0000', '<11>python tcp line 0001', '<14>crlf', '<14>nul after newline', '<14>and 5 <1>x'];
  for (const chunk of [0, 1, 2, 5, 11]) t.deepEqual(frames('auto', input, 1024, chunk).out, want, `chunks of ${chunk}`);
  // an octet-counted frame keeps a NUL inside it; the next frame may end with one
  t.deepEqual(frames('auto', '5 <1>\0b5 <1>cd\0').out, ['<1>\0b', '<1>cd']);
  // newline framing ends only at LF, and strips a trailing NUL; nul framing ends only at NUL
  t.deepEqual(frames('newline', 'a\0b\0\nc\n').out, ['a\0b', 'c']);
  t.deepEqual(frames('nul', 'line one\nline two\0<1>next\r\n\0').out, ['line one\nline two', '<1>next']);
  t.deepEqual(frames('nul', '5 <1>x\0').out, ['5 <1>x'], 'no octet counting');
  t.deepEqual(frames('auto', 'tail\0\r', 1024, 0, true).out, ['tail']);
});

test('trimFrameEnd strips trailing NUL, CR and LF only', (t) => {
  t.is(trimFrameEnd(Buffer.from('<11>python line 0000\0')).toString(), '<11>python line 0000');
  t.is(trimFrameEnd(Buffer.from('a\0b\r\n\0')).toString(), 'a\0b');
  const same = Buffer.from('x y');
  t.is(trimFrameEnd(same), same);
  t.is(trimFrameEnd(Buffer.from('\0\n')).length, 0);
});

test('kernel drops: the row of /proc/net/udp found by inode or by local address, its drops column read', (t) => {
  const table = `   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
 1234: 0100007F:BE31 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 12045 2 000000004b3064cc 17
 1235: 00000000:0202 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 120450 2 000000004b3064cd 3
`;
  t.is(dropsIn(table, { by: 'inode', inode: '12045' }), 17);
  t.is(dropsIn(table, { by: 'inode', inode: '120450' }), 3);
  t.is(dropsIn(table, { by: 'inode', inode: '999' }), undefined);
  t.is(procAddress('127.0.0.1', 48689, 'IPv4'), '0100007F:BE31');
  t.is(dropsIn(table, { by: 'address', local: procAddress('127.0.0.1', 48689, 'IPv4') }), 17);
  t.is(dropsIn(table, { by: 'address', local: procAddress('0.0.0.0', 514, 'IPv4') }), 3);
  t.is(procAddress('::1', 514, 'IPv6'), '00000000000000000000000001000000:0202');
  t.is(procAddress('::', 514, 'IPv6'), '00000000000000000000000000000000:0202');
});

test('frames over the bound are cut and their tail skipped; held bytes stay bounded', (t) => {
  const big = 'x'.repeat(5000);
  t.deepEqual(frames('auto', `${big}\nnext\n`, 100, 64).out, [`${'x'.repeat(100)}[cut]`, 'next']);
  t.deepEqual(frames('auto', `5000 ${big}6 <1>abc`, 100, 64).out, [`${'x'.repeat(100)}[cut]`, '<1>abc']);
  const garbage = Buffer.alloc(1 << 20, 0x41);
  t.true(frames('auto', garbage, 100, 65536).held <= 100);
});

test('bogus octet counts: too many digits or a leading zero are no count; strict framing refuses them', (t) => {
  t.deepEqual(frames('auto', '99999999999 <1>x\n0 y\n').out, ['99999999999 <1>x', '0 y']);
  t.false(frames('octet_counting', 'hello\n').ok);
  t.deepEqual(frames('octet_counting', '3 abc3 def').out, ['abc', 'def']);
});

test('at the end of the stream a frame without newline is a message; a short octet-counted one counts as cut', (t) => {
  t.deepEqual(frames('auto', 'a\nlast', 1024, 0, true).out, ['a', 'last']);
  t.deepEqual(frames('auto', '10 abc', 1024, 0, true).out, ['abc[cut]']);
  t.deepEqual(frames('auto', '12', 1024, 0, true).out, ['12']);
  t.deepEqual(frames('auto', 'a\n', 1024, 0, true).out, ['a']);
});

test('encodeFrame: octet counts bytes, newline framing escapes line breaks', (t) => {
  t.is(encodeFrame('héllo', 'octet_counting'), '6 héllo');
  t.is(encodeFrame('a\nb\r', 'newline'), 'a#012b#015\n');
});

test('formatSyslog: RFC 5424 and 3164 headers, PRI from facility and level', (t) => {
  const e: Entry = { time: Date.UTC(2026, 0, 2, 3, 4, 5, 6), node: 'edge 1', source: 'app.log', level: 'WARN', message: 'disk low', fields: { procid: 42 } };
  const opts = { facility: 16, hostname: 'me', appName: 'logrelay' };
  t.is(formatSyslog(e, 'rfc5424', opts, NOW), '<132>1 2026-01-02T03:04:05.006Z edge_1 app.log 42 - - disk low');
  t.is(formatSyslog({ time: NaN, source: '', message: 'm' }, 'rfc5424', opts, NOW), `<134>1 ${new Date(NOW).toISOString()} me logrelay - - - m`);
  const bsd = formatSyslog({ ...e, source: 'a:b', level: 'TRACE' }, 'rfc3164', { ...opts, facility: 1 }, NOW);
  t.regex(bsd, /^<15>Jan {2}2 \d\d:04:05 edge_1 a_b\[42\]: disk low$/);
  t.is(formatSyslog({ ...e, source: 'x'.repeat(60) }, 'rfc5424', opts, NOW).split(' ')[3], 'x'.repeat(48));
});

test('what the formatter writes, the parser reads back', (t) => {
  const e: Entry = { time: Date.UTC(2026, 0, 2, 3, 4, 5, 6), source: 'svc', level: 'ERROR', message: ' spaced  text ' };
  const back = parseSyslog(formatSyslog(e, 'rfc5424', { facility: 16, hostname: 'h', appName: 'x' }, NOW), NOW, 'in').entry;
  t.deepEqual(back, { ...e, fields: { hostname: 'h', facility: 'local0' } });
});

test('config: framing "nul" is a choice; receive_buffer_bytes is for udp, at least 4096', async (t) => {
  const check = async (config: string): Promise<string[]> => {
    const dir = tempDir();
    try {
      const toml = `[[pipelines]]\nname = "p"\n[[pipelines.plugin_sources]]\nid = "in"\ntype = "syslog"\n[pipelines.plugin_sources.config]\nport = 5514\n${config}\n[[pipelines.plugin_sinks]]\nid = "out"\ntype = "null"\n`;
      return await checkPipelines(loadConfig({ file: dir.file('c.toml', toml), env: {}, flags: new Map() }));
    } finally {
      dir.remove();
    }
  };
  t.deepEqual(await check('framing = "nul"'), []);
  t.deepEqual(await check('mode = "udp"\nreceive_buffer_bytes = 8388608'), []);
  t.deepEqual(await check('receive_buffer_bytes = 8388608'), ['pipeline=p: failed to create source in: receive_buffer_bytes: applies to mode "udp" only']);
  const low = await check('mode = "udp"\nreceive_buffer_bytes = 100');
  t.is(low.length, 1);
  t.regex(low[0]!, /receive_buffer_bytes/);
});
