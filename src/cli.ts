// Command line (DESIGN.md §2): run (default), check, tail, top. The process is the cluster primary itself.

import sade from 'sade';
import { DEFAULT_ADMIN_URL, splitArgs } from './cli-args.js';
import { loadConfig, type Overrides } from './config/load.js';
import type { Config } from './config/schema.js';
import { ConfigError, errorMessage, UsageError } from './core/errors.js';
import { VERSION } from './core/version.js';
import { CLIENT_V8_FLAGS, setOwnFlags } from './primary/own-flags.js';
import { EXIT_CONFIG, runPrimary } from './primary/run.js';

const EXIT_USAGE = 2;
const COMMANDS = ['run', 'check', 'tail', 'top'];


/** What `--help` says after sade's commands and options. */
const HELP_MORE = `  Configuration
    -c, --config FILE     Configuration file (TOML) for run and check; run without one runs the demo pipeline

  Configuration overrides
    --dotted.key=value    Any scalar key outside arrays, e.g. --logging.level=debug (or --dotted.key value)
    DOTTED_KEY=value      The same from the environment: upper case, dots as underscores, no prefix,
                          e.g. LOGGING_LEVEL=debug SHUTDOWN_TIMEOUT_MS=10000
                          Precedence: command line > environment > file > defaults

  Signals
    SIGHUP             reload the configuration (the new pipelines are built before the old ones stop)
    SIGTERM, SIGINT    shut down: stop the sources, drain the queues, close the sinks; a second one exits at once

  Exit codes
    0 ok, 1 runtime failure or drain cut short,
    2 the command line is wrong: unknown command or option, a value a --flag cannot take (type, choice, range),
    69 a resource the configuration names is unavailable at start (a listener's address in use,
       data_dir locked by another node),
    78 the configuration is wrong: a fault in the file or the environment (same values as above: 78, not 2)

  Reference
    $ logrelay check --explain KEY    one key's type, default, unit and meaning, e.g. sinks.http.port or buffer_size
    docs/configuration.md (every key), docs/sources.md, docs/sinks.md, docs/flow.md, docs/transforms.md,
    docs/delivery.md (acks, dedup, disk buffers, fan-out), docs/protocol.md, docs/tls.md,
    docs/operations.md, docs/capacity.md (memory, queues), docs/counters.md, docs/fleet.md,
    docs/syslog.md, docs/otlp.md, docs/nats.md, docs/kubernetes.md, docs/benchmarks.md,
    docs/development.md

`;

/** `check --explain KEY`: prints the key's reference (exit 0), or exits 2 when no key matches. */
async function explain(key: unknown): Promise<never> {
  if (typeof key !== 'string' || key === '') fail(EXIT_USAGE, '--explain needs a KEY, e.g. --explain sinks.http.port');
  // the reference reads every plugin's spec, so every plugin's code: loaded for this command only
  const { explainKey } = await import('./docs/reference.js');
  const text = explainKey(key);
  if (text === undefined) fail(EXIT_USAGE, `no configuration key ${key} (docs/configuration.md lists them all)`);
  process.stdout.write(text);
  process.exit(0);
}

/** Prints each message as its own `logrelay: …` line on stderr and exits with `code`. */
function fail(code: number, ...messages: readonly string[]): never {
  for (const message of messages) process.stderr.write(`logrelay: ${message}\n`);
  process.exit(code);
}

/** A string option's value; sade gives `true` for a flag left without its value. */
const file = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** `check -c FILE`: builds every pipeline without binding, opening or connecting; each fault a line, exit 78. */
async function check(config: Config): Promise<never> {
  // a build loads the code of the plugins it names: the node's own start (`run`) never imports check
  const { checkPipelines } = await import('./check.js');
  const errors = await checkPipelines(config);
  if (errors.length > 0) {
    for (const e of errors) process.stderr.write(`${e}\n`);
    process.exit(EXIT_CONFIG);
  }
  const n = config.pipelines.length;
  process.stdout.write(`configuration ok: ${n} pipeline${n === 1 ? '' : 's'}\n`);
  process.exit(0);
}

function load(file: string | undefined, flags: Overrides): Config {
  return loadConfig({ file, env: process.env, flags });
}

/** Loads the configuration (start and `check`); configuration faults exit 78, one line each with its key path. */
function loadOrExit(file: string | undefined, flags: Overrides): Config {
  try {
    return load(file, flags);
  } catch (err) {
    if (err instanceof ConfigError) fail(EXIT_CONFIG, ...err.messages.map((m) => `configuration error: ${m}`));
    throw err;
  }
}

/**
 * A command that only prints (help, version, check, tail, top) ends quietly with 0 when its
 * reader goes away (`| head`), as `tail` does, instead of an unhandled EPIPE stack trace.
 * `run` keeps its own handling: the node's stdout sink counts what a closed stdout loses.
 */
function exitQuietlyOnClosedStdout(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    fail(1, errorMessage(err));
  });
}

function main(argv: string[]): void {
  let split: ReturnType<typeof splitArgs>;
  try {
    split = splitArgs(argv.slice(2));
  } catch (err) {
    fail(EXIT_USAGE, errorMessage(err));
  }
  const { rest, overrides } = split;
  const first = rest[0];
  if (first !== undefined && !first.startsWith('-') && !COMMANDS.includes(first)) fail(EXIT_USAGE, `unknown command ${first} (try --help)`);
  const printsOnly = rest.some((a) => ['--help', '-h', '--version', '-v'].includes(a)) || (first !== undefined && first !== 'run' && COMMANDS.includes(first));
  if (printsOnly) exitQuietlyOnClosedStdout();

  const prog = sade('logrelay').version(VERSION);
  // -c belongs to run and check only: tail and top read no configuration

  prog
    .command('run', 'Run the node (the default). Without a configuration, runs the demo pipeline.', { default: true })
    .option('-c, --config', 'Configuration file (TOML)')
    .example('-c logrelay.toml --logging.level=debug')
    .action((opts: { config?: string }) => {
      const file = typeof opts.config === 'string' ? opts.config : undefined;
      const config = loadOrExit(file, overrides);
      runPrimary({ config, file, reloadConfig: () => load(file, overrides) }).then(
        (code) => process.exit(code),
        (err: unknown) => fail(1, errorMessage(err)),
      );
    });

  prog
    .command('check', 'Validate the configuration and build every plugin without binding, opening or connecting.')
    .option('-c, --config', 'Configuration file (TOML)')
    .option('--explain', "Print one configuration key's reference (type, default, unit, meaning) and exit")
    .example('check -c logrelay.toml')
    .example('check --explain sinks.http.port')
    .action((opts: { config?: string; explain?: unknown }) => {
      if (opts.explain !== undefined) {
        explain(opts.explain).catch((err: unknown) => fail(1, errorMessage(err)));
        return;
      }
      const file = typeof opts.config === 'string' ? opts.config : undefined;
      if (!file) fail(EXIT_USAGE, 'check needs -c FILE');
      const config = loadOrExit(file, overrides);
      check(config).catch((err: unknown) => fail(1, errorMessage(err)));
    });

  prog
    .command('tail <url>', 'Print the entries of an http sink stream; reconnects after the node closes it.')
    .option('--ca', 'CA certificate (PEM) that verifies the server')
    .option('--cert', 'Client certificate (PEM)')
    .option('--key', 'Client key (PEM)')
    .example('tail http://127.0.0.1:8080/stream')
    .example('tail https://collector:8443/stream --ca ca.crt --cert me.crt --key me.key')
    .action((url: string, opts: { ca?: unknown; cert?: unknown; key?: unknown }) => {
      // tail prints a stream of entries: the optimizing compiler the primary turns off is back on
      setOwnFlags(CLIENT_V8_FLAGS);
      // tail and top are loaded when asked for: the node's own primary never holds their HTTP clients
      import('./tail.js')
        .then(({ parseTailUrl, runTail }) => {
          parseTailUrl(url);
          return runTail({ url, ca: file(opts.ca), cert: file(opts.cert), key: file(opts.key) });
        })
        .then(
          (code) => process.exit(code),
          (err: unknown) => fail(err instanceof UsageError ? EXIT_USAGE : 1, errorMessage(err)),
        );
    });

  prog
    .command('top [url]', `Live view of a node from its admin endpoint (default ${DEFAULT_ADMIN_URL}); q quits.`)
    .option('--once', 'Print one plain snapshot and exit (also when stdout is not a terminal)')
    .option('--ca', 'CA certificate (PEM) that verifies the server')
    .option('--cert', 'Client certificate (PEM)')
    .option('--key', 'Client key (PEM)')
    .option('--fleet', "Show the fleet view of the node at this URL (its admin endpoint's /fleet): one row per node reporting to it")
    .example('top')
    .example('top http://10.0.0.5:9598 --once')
    .example('top --fleet http://collector:9598 --once')
    .action((url: string | undefined, opts: { once?: unknown; ca?: unknown; cert?: unknown; key?: unknown; fleet?: unknown }) => {
      if (opts.fleet === true) throw new UsageError('top: --fleet needs the URL of an admin endpoint');
      const fleetUrl = typeof opts.fleet === 'string' ? opts.fleet : undefined;
      const target = fleetUrl ?? url ?? DEFAULT_ADMIN_URL;
      import('./top.js')
        .then(({ runTop, statusUrl }) => {
          statusUrl(target);
          return runTop({ url: target, once: opts.once === true, ca: file(opts.ca), cert: file(opts.cert), key: file(opts.key), fleet: fleetUrl !== undefined });
        })
        .then(
          (code) => process.exit(code),
          (err: unknown) => fail(err instanceof UsageError ? EXIT_USAGE : 1, errorMessage(err)),
        );
    });

  // sade reports its own usage faults with exit 1; the contract says 2.
  const exit = process.exit.bind(process);
  process.exit = ((code?: number) => exit(code === 1 ? EXIT_USAGE : code)) as typeof process.exit;
  try {
    prog.parse(['node', 'logrelay', ...rest]);
    // sade's own help knows the commands and options; the rest of the manual's first page follows
    const help = rest.some((a) => a === '--help' || a === '-h');
    if (help && (first === undefined || first.startsWith('-') || first === 'run')) process.stdout.write(HELP_MORE);
  } catch (err) {
    fail(err instanceof UsageError ? EXIT_USAGE : 1, errorMessage(err));
  } finally {
    process.exit = exit;
  }
}

main(process.argv);
