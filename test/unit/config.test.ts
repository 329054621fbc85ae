import test from 'ava';
import { envOverrides, interpolate, loadConfig } from '../../src/config/load.js';
import { splitArgs } from '../../src/cli-args.js';
import { BUFFER_FIELDS } from '../../src/buffer/config.js';
import { ConfigError, ConfigErrors, UsageError } from '../../src/core/errors.js';
import { checkFields } from '../../src/core/spec.js';
import { TLS_FIELDS } from '../../src/core/tls-config.js';
import { FILE_SINK } from '../../src/sinks/file.js';
import { tempDir } from '../helpers/node.js';

const MIN = `
[[pipelines]]
name = "app"
[[pipelines.plugin_sources]]
type = "random"
[[pipelines.plugin_sinks]]
type = "null"
`;

function load(text: string, env: NodeJS.ProcessEnv = {}, flags = new Map<string, string | number | boolean>()) {
  const dir = tempDir();
  try {
    return loadConfig({ file: dir.file('c.toml', text), env, flags });
  } finally {
    dir.remove();
  }
}

test('defaults of the contract are applied and the result is frozen', (t) => {
  const c = load(MIN);
  t.is(c.shutdown_timeout_ms, 5000);
  t.is(c.status_interval_ms, 30000);
  t.is(c.logging.level, 'info');
  t.is(c.logging.file.max_size_bytes, 100 * 1024 * 1024);
  t.is(c.logging.file.retention_ms, 168 * 3_600_000);
  t.is(c.pipelines[0]!.plugin_sources[0]!.id, 'random', 'id defaults to the type');
  t.is(c.pipelines[0]!.flow.format.type, 'raw');
  t.true(Object.isFrozen(c) && Object.isFrozen(c.pipelines[0]) && Object.isFrozen(c.logging.file));
});

/** Every key path of a validated value (arrays by index), to show no key in an operator's unit is left. */
function keyPaths(value: unknown, at = ''): string[] {
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([k, v]) => [`${at}.${k}`, ...keyPaths(v, `${at}.${k}`)]);
}

test('keys in operator units are converted once, at validation: the checked config carries bytes and ms', (t) => {
  const c = load(`checkpoint_ttl_hours = 0.5
[logging.file]
max_size_mb = 0.02
max_total_size_mb = 3
retention_hours = 2
[admin.tls]
expiry_warning_days = 3
${MIN}`);
  t.is(c.checkpoint_ttl_ms, 1_800_000);
  t.is(c.logging.file.max_size_bytes, 0.02 * 1024 * 1024);
  t.is(c.logging.file.max_total_size_bytes, 3 * 1024 * 1024);
  t.is(c.logging.file.retention_ms, 7_200_000);
  t.is(c.admin.tls.expiry_warning_ms, 3 * 86_400_000);
  t.deepEqual(
    keyPaths(c).filter((p) => /_(mb|hours|days)$/.test(p)),
    [],
    'no key in MiB, hours or days after validation',
  );
});

test('plugin tables convert at validation too: the file sink, the disk buffer, tls', (t) => {
  const file = checkFields(FILE_SINK.fields, { directory: '/tmp/x', name: 'out', max_size_mb: 2, retention_hours: 0.25 }, '');
  t.like(file, { max_size_bytes: 2 * 1024 * 1024, max_total_size_bytes: 1000 * 1024 * 1024, retention_ms: 900_000 });
  const buffer = checkFields(BUFFER_FIELDS, { buffer: { type: 'disk', max_size_mb: 64, segment_size_mb: 0.05 } }, '').buffer;
  t.like(buffer, { max_size_bytes: 64 * 1024 * 1024, segment_size_bytes: 0.05 * 1024 * 1024 });
  t.like(checkFields(TLS_FIELDS, {}, '').tls, { expiry_warning_ms: 14 * 86_400_000 });
  for (const v of [file, buffer]) t.false(Object.keys(v as object).some((k) => /_(mb|hours)$/.test(k)), JSON.stringify(v));
});

test('a table that would carry two keys under one converted name is refused by the checker, not merged', (t) => {
  const err = t.throws(() => checkFields({ cache_mb: { t: 'number', def: 1 }, cache_bytes: { t: 'number', def: 2 } }, {}, 'x'));
  t.is(err?.message, 'x.cache_mb and cache_bytes would both be carried as cache_bytes');
});

test('a key in operator units keeps its name in faults and in overrides', (t) => {
  const err = t.throws(() => load(`[logging.file]\nmax_size_mb = 0\n${MIN}`), { instanceOf: ConfigError });
  t.is(err?.message, 'logging.file.max_size_mb: must be >= 0.001, got 0');
  t.is(load(MIN, { LOGGING_FILE_RETENTION_HOURS: '3' }).logging.file.retention_ms, 3 * 3_600_000);
});

const unknownKeys: [string, string][] = [
  [`colour = 1\n${MIN}`, 'colour: unknown key'],
  [`${MIN}\n[pipelines.flow.format]\ntype = "raw"\nextra = 2`, 'pipelines[0].flow.format.extra: unknown key'],
  [`[logging.file]\nsize = 3\n${MIN}`, 'logging.file.size: unknown key'],
  [`${MIN}\n[[pipelines.flow.filters]]\npatterns = ["a"]\nmode = "x"`, 'pipelines[0].flow.filters[0].mode: unknown key'],
];
for (const [text, message] of unknownKeys) {
  test(`unknown key is refused with its full path: ${message}`, (t) => {
    const err = t.throws(() => load(text), { instanceOf: ConfigError });
    t.is(err?.message, message);
  });
}

test('wrong types and values name the key path', (t) => {
  t.throws(() => load(`quiet = "yes"\n${MIN}`), { message: 'quiet: must be a boolean, got string' });
  t.throws(() => load(`[logging]\nlevel = "loud"\n${MIN}`), { message: /^logging\.level: must be one of/ });
  t.throws(() => load('quiet = true'), { message: 'pipelines: needs at least 1 entry' });
});

test('every schema fault is reported at once, in file order, each with its full path', (t) => {
  const text = `status_interval_ms = 50
quiet = true
${MIN}
[pipelines.flow.format]
type = "raw"
extra = 2
[[pipelines]]
name = "b"
[pipelines.flow.rate_limit]
rate = "fast"
[[pipelines.plugin_sources]]
type = "random"
[[pipelines.plugin_sinks]]
type = "null"
colour = "red"
`;
  const expected = [
    'status_interval_ms: must be >= 100, got 50',
    'pipelines[0].flow.format.extra: unknown key',
    'pipelines[1].flow.rate_limit.rate: must be a number, got string',
    'pipelines[1].plugin_sinks[0].colour: unknown key',
  ];
  const err = t.throws(() => load(text), { instanceOf: ConfigErrors });
  t.deepEqual(err?.messages, expected);
  t.is(err?.path, 'status_interval_ms', 'path is the first fault');
  t.is(err?.message, expected.join('; '), 'a reload logs them all in one message');
});

test('the fleet view keys: report_interval_ms is 0 (off) or at least 100, fleet.* are checked with their path, defaults hold', (t) => {
  const defaults = load(MIN);
  t.is(defaults.report_interval_ms, 10000);
  t.deepEqual(defaults.fleet, { enabled: false, max_nodes: 10000, forget_after_ms: 86400000 });
  t.is(load(`report_interval_ms = 0\n${MIN}`).report_interval_ms, 0);
  t.is(load(`report_interval_ms = 100\n${MIN}`).report_interval_ms, 100);
  t.throws(() => load(`report_interval_ms = 5\n${MIN}`), { instanceOf: ConfigError, message: 'report_interval_ms: must be 0 (off) or at least 100, got 5' });
  t.throws(() => load(`report_interval_ms = -1\n${MIN}`), { message: /^report_interval_ms: must be >= 0/ });
  t.throws(() => load(`[fleet]\nmax_nodes = 0\n${MIN}`), { message: /^fleet\.max_nodes: must be >= 1/ });
  t.throws(() => load(`[fleet]\nenabled = "yes"\n${MIN}`), { message: 'fleet.enabled: must be a boolean, got string' });
  t.throws(() => load(`[fleet]\nsize = 3\n${MIN}`), { message: 'fleet.size: unknown key' });
});

test('a single fault is still one plain ConfigError', (t) => {
  const err = t.throws(() => load(`quiet = "yes"\n${MIN}`), { instanceOf: ConfigError });
  t.false(err instanceof ConfigErrors);
  t.deepEqual(err?.messages, ['quiet: must be a boolean, got string']);
});

test('every cross-check fault is reported at once, in file order', (t) => {
  const sinks = (port: number) => `[[pipelines.plugin_sinks]]\ntype = "tcp"\nconfig = { host = "127.0.0.1", port = ${port} }\n`;
  const text = `${MIN}${sinks(9000)}${MIN}[[pipelines.plugin_sinks]]\ntype = "null"\n${sinks(9000)}`;
  const err = t.throws(() => load(text), { instanceOf: ConfigErrors });
  t.deepEqual(err?.messages, [
    'pipelines[1].name: duplicate pipeline name "app"',
    'pipelines[1].plugin_sinks[1].id: duplicate id "null"',
    'pipelines[1].plugin_sinks[2].config.port: 127.0.0.1:9000 is already used by pipelines[0].plugin_sinks[1].config',
  ]);
});

test('cross-checks wait for a clean schema check', (t) => {
  const err = t.throws(() => load(`quiet = 1\n${MIN}${MIN}`), { instanceOf: ConfigError });
  t.deepEqual(err?.messages, ['quiet: must be a boolean, got number'], 'no duplicate-name fault next to the schema fault');
});

test('every bad environment override is reported at once', (t) => {
  const err = t.throws(() => envOverrides({ QUIET: 'maybe', SHUTDOWN_TIMEOUT_MS: 'soon' }), { instanceOf: ConfigErrors });
  t.is(err?.messages.length, 2);
  t.true(err?.messages.every((m) => /^(quiet|shutdown_timeout_ms): environment variable/.test(m)));
});

test('two listeners on one port and two file sinks on one file are refused', (t) => {
  const two = (a: string, b: string) => `
[[pipelines]]
name = "a"
[[pipelines.plugin_sources]]
type = "random"
[[pipelines.plugin_sinks]]
${a}
[[pipelines]]
name = "b"
[[pipelines.plugin_sources]]
type = "random"
[[pipelines.plugin_sinks]]
${b}
`;
  t.throws(() => load(two('type = "tcp"\nconfig = { port = 9000 }', 'type = "http"\nconfig = { host = "127.0.0.1", port = 9000 }')), {
    message: /pipelines\[1\]\.plugin_sinks\[0\]\.config\.port: 127\.0\.0\.1:9000 is already used/,
  });
  t.notThrows(() => load(two('type = "tcp"\nconfig = { host = "127.0.0.1", port = 9000 }', 'type = "tcp"\nconfig = { host = "127.0.0.2", port = 9000 }')));
  t.throws(() => load(two('type = "file"\nconfig = { directory = "/tmp/x", name = "n" }', 'type = "file"\nconfig = { directory = "/tmp/x/", name = "n" }')), {
    message: /already written/,
  });
});

test('interpolation: defaults, required, literal $ and comment lines', (t) => {
  const env = { HOST: 'relay', EMPTY: '' };
  t.is(interpolate('a = "${HOST}"', env), 'a = "relay"');
  t.is(interpolate('a = "${NOPE:-127.0.0.1}"', env), 'a = "127.0.0.1"');
  t.is(interpolate('a = "${EMPTY:-x}"', env), 'a = "x"');
  t.is(interpolate('a = "${EMPTY-x}"', env), 'a = ""');
  t.is(interpolate('a = "${NOPE-x}"', env), 'a = "x"');
  t.is(interpolate('a = "$$HOME"', env), 'a = "$HOME"');
  t.is(interpolate('# uses ${NOPE}', env), '# uses ${NOPE}');
  t.throws(() => interpolate('x = 1\na = "${NOPE}"', env), { message: /line 2: \$\{NOPE\}: variable NOPE is not set/ });
  t.throws(() => interpolate('a = "${NOPE:?set the relay host}"', env), { message: /set the relay host/ });
  t.throws(() => interpolate('a = "${Q}"', { Q: 'a"b' }), { message: /double quote/ });
  t.throws(() => interpolate('a = "${Q}"', { Q: 'a\nb' }), { message: /newline/ });
});

test('interpolated numbers and strings are typed by TOML', (t) => {
  const c = load(`shutdown_timeout_ms = \${T:-1234}\n[logging.file]\nname = "\${N:-007}"\n${MIN}`);
  t.is(c.shutdown_timeout_ms, 1234);
  t.is(c.logging.file.name, '007');
});

test('environment overrides are derived from the schema, unprefixed', (t) => {
  const env = { LOGGING_LEVEL: 'debug', LOGGING_FILE_MAX_SIZE_MB: '5', QUIET: 'true', LOGRELAY_SHUTDOWN_TIMEOUT_MS: '1', PIPELINES_0_NAME: 'x' };
  const o = envOverrides(env);
  t.deepEqual(Object.fromEntries(o), { 'logging.level': 'debug', 'logging.file.max_size_mb': 5, quiet: true });
  const c = load(MIN, env);
  t.is(c.logging.level, 'debug');
  t.is(c.shutdown_timeout_ms, 5000);
  t.is(c.pipelines[0]!.name, 'app');
});

test('precedence: command line > environment > file', (t) => {
  const text = `[logging]\nlevel = "warn"\n${MIN}`;
  t.is(load(text).logging.level, 'warn');
  t.is(load(text, { LOGGING_LEVEL: 'error' }).logging.level, 'error');
  t.is(load(text, { LOGGING_LEVEL: 'error' }, new Map([['logging.level', 'debug']])).logging.level, 'debug');
});

test('command-line overrides are typed by the schema', (t) => {
  const { rest, overrides } = splitArgs(['-c', 'f.toml', '--logging.level=debug', '--logging.file.name', '007', '--shutdown_timeout_ms=10', '--quiet']);
  t.deepEqual(rest, ['-c', 'f.toml']);
  t.deepEqual(Object.fromEntries(overrides), { 'logging.level': 'debug', 'logging.file.name': '007', shutdown_timeout_ms: 10, quiet: true });
  t.throws(() => splitArgs(['--pipelines.0.name=x']), { instanceOf: UsageError, message: /inside arrays/ });
  t.throws(() => splitArgs(['--nope=1']), { instanceOf: UsageError, message: 'unknown option --nope' });
  t.throws(() => splitArgs(['--shutdown_timeout_ms=soon']), { instanceOf: UsageError, message: /--shutdown_timeout_ms: expected a number/ });
});

test('an environment value of the wrong kind names its variable, not only the key', (t) => {
  t.throws(() => load(MIN, { LOGGING_LEVEL: 'verbose' }), {
    instanceOf: ConfigError,
    message: 'logging.level: environment variable LOGGING_LEVEL: must be one of "debug", "info", "warn", "error", got "verbose"',
  });
  t.throws(() => load(MIN, { SHUTDOWN_TIMEOUT_MS: '1.5' }), {
    message: 'shutdown_timeout_ms: environment variable SHUTDOWN_TIMEOUT_MS: must be an integer, got 1.5',
  });
  t.throws(() => load(MIN, { LOGGING_FILE_MAX_SIZE_MB: 'big' }), {
    message: 'logging.file.max_size_mb: environment variable LOGGING_FILE_MAX_SIZE_MB: expected a number, got "big"',
  });
});

test('a command-line value the schema refuses is a usage error naming the option', (t) => {
  t.throws(() => splitArgs(['--logging.level=verbose']), {
    instanceOf: UsageError,
    message: '--logging.level: must be one of "debug", "info", "warn", "error", got "verbose"',
  });
  t.throws(() => splitArgs(['--status_interval_ms', '5']), { instanceOf: UsageError, message: '--status_interval_ms: must be >= 100, got 5' });
});

test('at most one stdin source in the whole configuration', (t) => {
  const stdinPipeline = (name: string) => `[[pipelines]]\nname = "${name}"\n[[pipelines.plugin_sources]]\ntype = "stdin"\n[[pipelines.plugin_sinks]]\ntype = "null"\n`;
  t.notThrows(() => load(stdinPipeline('a')));
  t.throws(() => load(stdinPipeline('a') + stdinPipeline('b')), { message: /pipelines\[1\]\.plugin_sources\[0\]\.type: only one stdin source/ });
});

test('duplicate pipeline names and plugin ids are refused', (t) => {
  t.throws(() => load(MIN + MIN), { message: 'pipelines[1].name: duplicate pipeline name "app"' });
  t.throws(() => load(`${MIN}[[pipelines.plugin_sinks]]\ntype = "null"\n`), { message: 'pipelines[0].plugin_sinks[1].id: duplicate id "null"' });
});
