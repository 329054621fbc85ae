// `logrelay tail URL`: follows an http sink's stream with the `eventsource` package, printing each
// entry's data on stdout and reconnecting whenever the node closes the stream (a reload, a restart).
// A non-200 answer or a wrong content type ends it with exit 1. TLS through node:https with
// `--ca` (roots to trust) and `--cert`/`--key` (the client certificate).

import { readFile } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage, STATUS_CODES } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';
import { EventSource, type FetchLike } from 'eventsource';
import { errorMessage, UsageError } from './core/errors.js';

export interface TailOptions {
  readonly url: string;
  /** PEM file of the roots that verify the server */
  readonly ca?: string;
  /** PEM files of the client certificate and key, for servers that require one */
  readonly cert?: string;
  readonly key?: string;
}

interface TlsFiles {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
}

/** Checks the URL now (a usage error, exit 2); everything else happens in runTail. */
export function parseTailUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`tail: not a URL: ${url}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError(`tail: URL must be http or https, got ${url}`);
  return parsed;
}

function say(message: string): void {
  process.stderr.write(`logrelay tail: ${message}\n`);
}

/** A fetch for eventsource on node:http(s), so TLS files can be given; remembers the last answer. */
function createFetch(tls: TlsFiles, last: { res?: IncomingMessage }): FetchLike {
  return (url, init) =>
    new Promise((resolve, reject) => {
      const target = new URL(url);
      const request = target.protocol === 'https:' ? httpsRequest : httpRequest;
      const req = request(target, { method: 'GET', headers: init.headers, signal: init.signal as AbortSignal, ...tls }, (res) => {
        last.res = res;
        resolve({
          body: Readable.toWeb(res) as unknown as ReadableStream<Uint8Array>,
          url: target.href,
          status: res.statusCode ?? 0,
          redirected: false,
          headers: {
            get: (name: string) => {
              const v = res.headers[name.toLowerCase()];
              return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
            },
          },
        });
      });
      req.on('error', reject);
      req.end();
    });
}

/** Runs until the stream is refused for good; resolves with the exit code (1). */
export async function runTail(opts: TailOptions): Promise<number> {
  const url = parseTailUrl(opts.url);
  const tls: TlsFiles = {};
  try {
    if (opts.ca) tls.ca = await readFile(opts.ca);
    if (opts.cert) tls.cert = await readFile(opts.cert);
    if (opts.key) tls.key = await readFile(opts.key);
  } catch (err) {
    say(errorMessage(err));
    return 1;
  }
  if ((tls.cert === undefined) !== (tls.key === undefined)) {
    say('--cert and --key go together');
    return 1;
  }
  const last: { res?: IncomingMessage } = {};
  const es = new EventSource(url, { fetch: createFetch(tls, last) });
  let connected = false;
  return new Promise<number>((resolve) => {
    // A reader that went away (`| head`) ends the tail quietly.
    process.stdout.on('error', (err: NodeJS.ErrnoException) => {
      es.close();
      resolve(err.code === 'EPIPE' ? 0 : 1);
    });
    es.addEventListener('connected', (ev) => {
      connected = true;
      say(`connected to ${url.href} ${ev.data}`);
    });
    es.addEventListener('disconnect', () => say('the node closed the stream; reconnecting'));
    es.onmessage = (ev) => {
      process.stdout.write(`${ev.data}\n`);
    };
    es.onerror = (ev) => {
      if (es.readyState === es.CLOSED) {
        const res = last.res;
        const status = res?.statusCode ?? ev.code;
        const type = res?.headers['content-type'];
        const reason =
          status !== undefined && status !== 200
            ? `${url.href} answered ${status} ${STATUS_CODES[status] ?? ''}`.trimEnd()
            : `${url.href} answered Content-Type ${type ?? '(none)'}, expected text/event-stream`;
        say(reason);
        es.close();
        resolve(1);
        return;
      }
      if (connected) say(`connection lost${ev.message ? ` (${ev.message})` : ''}; reconnecting`);
      else if (ev.message) say(`cannot connect (${ev.message}); retrying`);
      connected = false;
    };
  });
}
