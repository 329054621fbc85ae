// The command line as an operator meets it: boolean flags never swallow the next argument, a
// closed stdout ends a printing command quietly, and one exit-code rule for bad values: the
// command line's own faults exit 2, the file's and the environment's exit 78.

import { spawn, spawnSync } from 'node:child_process';
import test from 'ava';
import { adminRequest } from '../helpers/admin.js';
import { BIN, freePort, ownedTempDir, startOwnedNode, waitFor } from '../helpers/node.js';
import { randomSourceToml, sinkToml } from '../helpers/toml.js';

const run = (args: readonly string[], env: NodeJS.ProcessEnv = {}) =>
  spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, ...env } });

test.serial('top: --once never takes the URL as its value (--once URL, URL --once, --once=true URL)', async (t) => {
  const port = await freePort();
  startOwnedNode(t, `[admin]\nport = ${port}\n[[pipelines]]\nname = "flags"\n${randomSourceToml('interval_ms = 50')}${sinkToml('out', 'null')}`);
  await waitFor(async () => (await adminRequest(port, '/readyz').catch(() => ({ status: 0 }))).status === 200, 'node ready', 30_000);
  const url = `http://127.0.0.1:${port}`;
  for (const args of [['top', '--once', url], ['top', url, '--once'], ['top', '--once=true', url], ['top', url, '--once=true'], ['--once', 'top', url]]) {
    const r = run(args);
    t.is(r.status, 0, `${args.join(' ')}: ${r.stderr}`);
    t.regex(r.stdout, /^flags\s+pipeline\s+running/m, args.join(' '));
  }
  // a value a flag cannot take is a usage error naming it
  const bad = run(['top', '--once=maybe', url]);
  t.is(bad.status, 2);
  t.regex(bad.stderr, /--once takes no value/);
});

test.serial('tail and top do not offer -c/--config, which they ignore; run and check do', (t) => {
  for (const command of ['tail', 'top']) t.notRegex(run([command, '--help']).stdout, /--config/, command);
  for (const command of ['run', 'check']) t.regex(run([command, '--help']).stdout, /-c, --config/, command);
  t.regex(run(['--help']).stdout, /-c, --config FILE/);
});

test.serial('a printing command whose reader went away (| head) exits 0 without a stack trace', async (t) => {
  for (const args of [['--help'], ['check', '--help'], ['top', '--help'], ['tail', '--help'], ['--version'], ['check', '--explain', 'buffer_size']]) {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    // the reader takes the first chunk and goes away, as `| head -3` does: later writes are EPIPE
    child.stdout.once('data', () => child.stdout.destroy());
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
    t.is(code, 0, `${args.join(' ')}: ${stderr}`);
    t.notRegex(stderr, /EPIPE|at .*\(/, args.join(' '));
  }
});

// One rule, three origins: a bad enum, range or type value on the command line is a usage error
// (2, the option named); the same value in the environment or the file is a configuration error
// (78, the variable or key named).
const BAD_VALUES: ReadonlyArray<readonly [string, string, string]> = [
  ['logging.level', 'verbose', 'must be one of'],
  ['admin.port', '70000', 'must be 0 to 65535'],
  ['shutdown_timeout_ms', 'soon', 'expected a number'],
];

test.serial('bad values: exit 2 from the command line, 78 from the environment and from the file', (t) => {
  const dir = ownedTempDir(t);
  const base = `[[pipelines]]\nname = "p"\n${randomSourceToml("interval_ms = 1000")}${sinkToml('out', 'null')}`;
  const good = dir.file('good.toml', base);
  for (const [key, value, reason] of BAD_VALUES) {
    const flag = run(['check', '-c', good, `--${key}`, value]);
    t.is(flag.status, 2, `--${key} ${value}: ${flag.stderr}`);
    t.regex(flag.stderr, new RegExp(`--${key.replace('.', '\\.')}: ${reason}`));
    const name = key.toUpperCase().replaceAll('.', '_');
    const env = run(['check', '-c', good], { [name]: value });
    t.is(env.status, 78, `${name}=${value}: ${env.stderr}`);
    t.regex(env.stderr, new RegExp(`configuration error: ${key.replace('.', '\\.')}: environment variable ${name}: `));
    const [table, leaf] = key.includes('.') ? key.split('.') : [undefined, key];
    const literal = /^\d+$/.test(value) ? value : JSON.stringify(value);
    const text = table ? `[${table}]\n${leaf} = ${literal}\n${base}` : `${leaf} = ${literal}\n${base}`;
    const file = run(['check', '-c', dir.file(`bad-${name}.toml`, text)]);
    t.is(file.status, 78, `file ${key} = ${literal}: ${file.stderr}`);
    t.regex(file.stderr, new RegExp(`configuration error: ${key.replace('.', '\\.')}: `));
  }
});
