// The `buffer` table (DESIGN.md §23): a disk buffer needs data_dir (the error names both keys),
// at least two segments fit in max_size_mb, and other source types do not know the key.

import test from 'ava';
import { checkPipelines } from '../../src/check.js';
import { loadConfig } from '../../src/config/load.js';
import { tempDir } from '../helpers/node.js';

const pipeline = (type: string, config: string, buffer: string) => `
[[pipelines]]
name = "app"
[[pipelines.plugin_sources]]
id = "in"
type = "${type}"
[pipelines.plugin_sources.config]
${config}
[pipelines.plugin_sources.config.buffer]
${buffer}
[[pipelines.plugin_sinks]]
id = "out"
type = "null"
`;

async function check(text: string): Promise<string[]> {
  const dir = tempDir();
  try {
    return await checkPipelines(loadConfig({ file: dir.file('c.toml', text), env: {}, flags: new Map() }));
  } finally {
    dir.remove();
  }
}

test('a disk buffer without data_dir is a configuration error naming data_dir and the buffer key', async (t) => {
  const err = await t.throwsAsync(() => check(pipeline('syslog', 'port = 5514', 'type = "disk"')));
  t.regex(err!.message, /pipelines\[0\]\.plugin_sources\[0\]\.config\.buffer\.type/);
  t.regex(err!.message, /data_dir/);
});

test('with data_dir, every source type that cannot replay takes a disk buffer', async (t) => {
  for (const [type, config] of [
    ['syslog', 'port = 5514'],
    ['syslog', 'port = 5514\nmode = "udp"'],
    ['tcp_chain', 'port = 5515'],
    ['http_chain', 'port = 5516'],
    ['otlp', 'port = 5517'],
    ['stdin', ''],
  ] as const) {
    t.deepEqual(await check(`data_dir = "/tmp/x"\n${pipeline(type, config, 'type = "disk"\nmax_size_mb = 64\nsegment_size_mb = 8\nwhen_full = "drop_newest"')}`), [], type);
  }
});

test('max_size_mb below two segments, and bad values, name their key', async (t) => {
  t.deepEqual(await check(`data_dir = "/tmp/x"\n${pipeline('tcp_chain', 'port = 5515', 'type = "disk"\nmax_size_mb = 20\nsegment_size_mb = 16')}`), [
    'pipeline=app: failed to create source in: buffer.max_size_mb: must be at least two segments (2 × segment_size_mb = 32), got 20',
  ]);
  t.deepEqual(await check(`data_dir = "/tmp/x"\n${pipeline('tcp_chain', 'port = 5515', 'type = "disk"\nwhen_full = "drop_oldest"')}`), [
    'pipeline=app: failed to create source in: buffer.when_full: must be one of "block", "drop_newest", got "drop_oldest"',
  ]);
});

test('on any other source `buffer` is an unknown key', async (t) => {
  t.deepEqual(await check(`data_dir = "/tmp/x"\n${pipeline('random', 'count = 1', 'type = "disk"')}`), ['pipeline=app: failed to create source in: buffer: unknown key']);
  t.deepEqual(await check(`data_dir = "/tmp/x"\n${pipeline('file', 'directory = "/tmp"', 'type = "memory"')}`), ['pipeline=app: failed to create source in: buffer: unknown key']);
});
