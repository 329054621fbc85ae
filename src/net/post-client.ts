// The HTTP/1.1 client the batch poster sends batches with: POSTs on kept-alive connections (TCP or
// TLS), one request at a time on each, up to `maxSockets` at once. Node's http client builds a
// request object, an agent lookup, a response stream and a dozen events for every request, which
// costs a sender far more per batch than the batch's bytes do; the requests here are the same on
// the wire (request line, headers, Content-Length, the body), built as one string and written with
// the body's pieces in one corked write, and the answer (status, headers, body: Content-Length,
// chunked, or to the close) is read by a small parser with bounds on the head and the body kept.

import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import type { IncomingHttpHeaders } from 'node:http';

/** The answer to a POST: its status, its headers (names lower case; repeated ones joined by ", "), and its body up to `maxBody` bytes. */
export interface PostAnswer {
  readonly statusCode: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

export interface PostClientOptions {
  readonly host: string;
  readonly port: number;
  /** TLS options (a TLS connection); undefined = plain TCP */
  readonly tls: ConnectionOptions | undefined;
  /** connections at once (each carries one request at a time) */
  readonly maxSockets: number;
  /** an idle kept-alive connection is closed after this long, ms */
  readonly idleMs: number;
  /** headers of every request */
  readonly headers: Readonly<Record<string, string | number>>;
  /** most body bytes of an answer kept (the rest is read and let go) */
  readonly maxBody: number;
}

/** Called once per post: an error (no connection, a cut or malformed answer, the timeout), or the answer. */
export type PostDone = (err: Error | undefined, answer: PostAnswer | undefined) => void;

/** Most bytes of an answer's status line and headers. */
const MAX_HEAD_BYTES = 64 * 1024;

/** A header name or value, or a path, that would break the request (CR, LF, NUL; a path's spaces). */
const BAD_VALUE = /[\r\n\0]/;
const BAD_PATH = /[^\x21-\x7e]/;

const CRLFCRLF = Buffer.from('\r\n\r\n');

/** Why an answer cannot be read (the connection is closed, the request fails and is retried). */
const malformed = (what: string) => Object.assign(new Error(`malformed HTTP answer: ${what}`), { code: 'HPE_INVALID' });

/** What a connection is reading. */
type Reading = 'head' | 'length' | 'chunk-size' | 'chunk-data' | 'chunk-end' | 'trailers' | 'close';

interface Pending {
  readonly done: PostDone;
  readonly timeoutMs: number;
}

/** One kept-alive connection and the parser of its answers. */
class Connection {
  readonly socket: Socket;
  /** the request under way, or none (idle) */
  pending: Pending | undefined;
  private reading: Reading = 'head';
  /** bytes read and not yet parsed (a head or a chunk size line in pieces) */
  private rest: Buffer | undefined;
  private status = 0;
  private headers: IncomingHttpHeaders = {};
  private keepAlive = true;
  /** body bytes still to come (Content-Length, or the current chunk) */
  private left = 0;
  private body: Buffer[] = [];
  private bodyBytes = 0;
  /** the answer was read whole (finish) */
  private whole = false;
  closed = false;

  constructor(
    private readonly client: PostClient,
    socket: Socket,
  ) {
    this.socket = socket;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('timeout', () => {
      if (this.pending) this.fail(new Error(`no answer within request_timeout_ms (${this.pending.timeoutMs} ms)`));
      else this.socket.destroy();
    });
    socket.on('error', (err) => this.fail(err));
    socket.on('end', () => {
      // an answer read to the close ends here
      if (this.pending && this.reading === 'close') {
        this.keepAlive = false;
        this.deliver();
      }
      this.socket.destroy();
    });
    socket.on('close', () => {
      this.closed = true;
      this.client.forget(this);
      this.fail(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
    });
  }

  /** Writes a request: the head and the body's pieces in one corked write. */
  send(head: string, chunks: readonly Buffer[], p: Pending): void {
    this.pending = p;
    this.reading = 'head';
    this.status = 0;
    this.socket.setTimeout(p.timeoutMs);
    this.socket.cork();
    this.socket.write(head, 'latin1');
    for (const chunk of chunks) if (chunk.length > 0) this.socket.write(chunk);
    this.socket.uncork();
  }

  /** The request fails (at most once); the connection is closed. */
  private fail(err: Error): void {
    const p = this.pending;
    this.pending = undefined;
    this.socket.destroy();
    if (p) p.done(err, undefined);
  }

  /** The answer is whole (deliver() hands it over once the bytes read are parsed). */
  private finish(): void {
    this.whole = true;
  }

  /** Hands the whole answer over: the connection kept alive (idle) or closed, then the post told. */
  private deliver(): void {
    const p = this.pending;
    this.whole = false;
    if (!p) return;
    const answer: PostAnswer = { statusCode: this.status, headers: this.headers, body: this.body.length === 1 ? this.body[0]! : Buffer.concat(this.body) };
    this.pending = undefined;
    this.body = [];
    this.bodyBytes = 0;
    this.rest = undefined;
    if (this.keepAlive && !this.closed) {
      this.socket.setTimeout(this.client.idleMs);
      this.client.release(this);
    } else {
      this.socket.destroy();
    }
    p.done(undefined, answer);
  }

  private keep(bytes: Buffer): void {
    if (this.bodyBytes < this.client.maxBody) this.body.push(bytes.length + this.bodyBytes > this.client.maxBody ? bytes.subarray(0, this.client.maxBody - this.bodyBytes) : bytes);
    this.bodyBytes += bytes.length;
  }

  private onData(chunk: Buffer): void {
    if (!this.pending) {
      // bytes nobody asked for: the connection cannot be trusted with the next request
      this.socket.destroy();
      return;
    }
    const buf = this.rest ? Buffer.concat([this.rest, chunk]) : chunk;
    this.rest = undefined;
    let at = 0;
    try {
      while (at < buf.length && !this.whole) {
        switch (this.reading) {
          case 'head': {
            const end = buf.indexOf(CRLFCRLF, at);
            if (end < 0) {
              if (buf.length - at > MAX_HEAD_BYTES) throw malformed('head over 64 KiB');
              this.rest = buf.subarray(at);
              return;
            }
            this.head(buf.toString('latin1', at, end));
            at = end + 4;
            break;
          }
          case 'length':
          case 'chunk-data': {
            const n = Math.min(this.left, buf.length - at);
            this.keep(buf.subarray(at, at + n));
            at += n;
            this.left -= n;
            if (this.left === 0) {
              if (this.reading === 'length') this.finish();
              else this.reading = 'chunk-end';
            }
            break;
          }
          case 'chunk-size':
          case 'chunk-end':
          case 'trailers': {
            const eol = buf.indexOf(10, at);
            if (eol < 0) {
              if (buf.length - at > MAX_HEAD_BYTES) throw malformed('chunk line over 64 KiB');
              this.rest = buf.subarray(at);
              return;
            }
            const line = buf.toString('latin1', at, eol).replace(/\r$/, '');
            at = eol + 1;
            this.line(line);
            break;
          }
          case 'close':
            this.keep(buf.subarray(at));
            at = buf.length;
            break;
        }
      }
    } catch (err) {
      this.whole = false;
      this.fail(err as Error);
      return;
    }
    if (!this.whole) return;
    // bytes after the answer (nothing was asked for them): the connection is not kept
    if (at < buf.length) this.keepAlive = false;
    this.deliver();
  }

  /** A chunked body's size line, the CRLF after a chunk, or a trailer line. */
  private line(line: string): void {
    if (this.reading === 'chunk-end') {
      if (line !== '') throw malformed('no CRLF after a chunk');
      this.reading = 'chunk-size';
    } else if (this.reading === 'trailers') {
      if (line === '') this.finish();
    } else {
      const semi = line.indexOf(';');
      const hex = (semi < 0 ? line : line.slice(0, semi)).trim();
      if (!/^[0-9a-fA-F]{1,8}$/.test(hex)) throw malformed('chunk size');
      this.left = parseInt(hex, 16);
      this.reading = this.left === 0 ? 'trailers' : 'chunk-data';
    }
  }

  /** The status line and headers of an answer; sets what its body is. */
  private head(text: string): void {
    const lines = text.split('\r\n');
    const m = /^HTTP\/1\.([01]) (\d{3})(?: |$)/.exec(lines[0] ?? '');
    if (!m) throw malformed('status line');
    const status = Number(m[2]);
    const headers: IncomingHttpHeaders = {};
    const into = headers as Record<string, string>;
    for (let i = 1; i < lines.length; i++) {
      const l = lines[i]!;
      const colon = l.indexOf(':');
      if (colon <= 0) throw malformed('header line');
      const name = l.slice(0, colon).trim().toLowerCase();
      const value = l.slice(colon + 1).trim();
      into[name] = into[name] === undefined ? value : `${into[name]}, ${value}`;
    }
    // an interim answer (100 Continue, 103): the real one follows
    if (status >= 100 && status < 200) return;
    this.status = status;
    this.headers = headers;
    const connection = (headers.connection ?? '').toLowerCase();
    this.keepAlive = m[1] === '1' ? !connection.includes('close') : connection.includes('keep-alive');
    const te = headers['transfer-encoding'];
    const length = headers['content-length'];
    if (status === 204 || status === 304) this.finish();
    else if (te !== undefined && te.toLowerCase().includes('chunked')) this.reading = 'chunk-size';
    else if (length !== undefined) {
      if (!/^\d{1,15}$/.test(length)) throw malformed('Content-Length');
      this.left = Number(length);
      this.reading = 'length';
      if (this.left === 0) this.finish();
    } else {
      // no length: the body ends with the connection
      this.keepAlive = false;
      this.reading = 'close';
    }
  }
}

/** Kept-alive connections to one peer, each carrying one POST at a time. */
export class PostClient {
  private readonly idle: Connection[] = [];
  private readonly open = new Set<Connection>();
  /** posts waiting for a connection (none while the poster keeps to maxSockets) */
  private readonly waiting: { path: string; headers: string; chunks: readonly Buffer[]; bytes: number; p: Pending }[] = [];
  /** the Host and Connection lines */
  private readonly fixed: string;
  /** the lines of every request's headers alone, and of the ones a request's own replace in part (by their object) */
  private plain: string | undefined;
  private readonly made = new WeakMap<object, string>();
  private destroyed = false;
  readonly idleMs: number;
  readonly maxBody: number;

  constructor(private readonly o: PostClientOptions) {
    this.idleMs = o.idleMs;
    this.maxBody = o.maxBody;
    const v6 = isIP(o.host) === 6;
    const defaultPort = o.tls ? 443 : 80;
    const host = `${v6 ? `[${o.host}]` : o.host}${o.port === defaultPort ? '' : `:${o.port}`}`;
    this.fixed = `Host: ${host}\r\nConnection: keep-alive\r\n`;
  }

  /** The header lines of a request: every request's, those named in `own` replaced by its. */
  private linesOf(own: Readonly<Record<string, string | number>> | undefined): string {
    if (own === undefined) return (this.plain ??= headerLines(this.o.headers));
    let lines = this.made.get(own);
    if (lines === undefined) {
      const names = new Set(Object.keys(own).map((n) => n.toLowerCase()));
      const merged: Record<string, string | number> = {};
      for (const name in this.o.headers) if (!names.has(name.toLowerCase())) merged[name] = this.o.headers[name]!;
      lines = headerLines({ ...merged, ...own });
      this.made.set(own, lines);
    }
    return lines;
  }

  /**
   * POSTs `chunks` (`bytes` in all) to `path` with the headers of every request and `headers`;
   * `done` is called once. The request is refused at once (done with an error) when a header or
   * the path would break it.
   */
  post(path: string, headers: Readonly<Record<string, string | number>> | undefined, chunks: readonly Buffer[], bytes: number, timeoutMs: number, done: PostDone): void {
    let own: string;
    try {
      if (BAD_PATH.test(path)) throw new Error(`request path ${JSON.stringify(path)} has a character that needs escaping`);
      own = this.linesOf(headers);
    } catch (err) {
      queueMicrotask(() => done(err as Error, undefined));
      return;
    }
    const p: Pending = { done, timeoutMs };
    const conn = this.take();
    if (conn) conn.send(this.head(path, own, bytes), chunks, p);
    else this.waiting.push({ path, headers: own, chunks, bytes, p });
  }

  /** A request's head: its line, the headers (`lines`, the Host and Connection lines before them), its length. */
  private head(path: string, lines: string, bytes: number): string {
    return `POST ${path} HTTP/1.1\r\n${this.fixed}${lines}Content-Length: ${bytes}\r\n\r\n`;
  }

  /** An idle connection, or a new one while under maxSockets; undefined when all are busy. */
  private take(): Connection | undefined {
    while (this.idle.length > 0) {
      const conn = this.idle.pop()!;
      if (!conn.closed && !conn.socket.destroyed) return conn;
    }
    if (this.destroyed || this.open.size >= this.o.maxSockets) return undefined;
    const { host, port, tls } = this.o;
    // SNI names the host where the options do not (never an IP address, RFC 6066), as Node's agent does
    const socket = tls ? tlsConnect({ servername: isIP(host) === 0 ? host : undefined, ...tls, host, port }) : netConnect({ host, port });
    const conn = new Connection(this, socket);
    this.open.add(conn);
    return conn;
  }

  /** A connection is idle again: the next waiting post goes on it, or it waits for one. */
  release(conn: Connection): void {
    const next = this.waiting.shift();
    if (next) {
      conn.send(this.head(next.path, next.headers, next.bytes), next.chunks, next.p);
      return;
    }
    this.idle.push(conn);
  }

  /** A connection closed: a waiting post gets a new one. */
  forget(conn: Connection): void {
    this.open.delete(conn);
    const i = this.idle.indexOf(conn);
    if (i >= 0) this.idle.splice(i, 1);
    if (this.waiting.length === 0) return;
    const next = this.waiting.shift()!;
    const fresh = this.take();
    if (fresh) fresh.send(this.head(next.path, next.headers, next.bytes), next.chunks, next.p);
    else this.waiting.unshift(next);
  }

  /** Closes every connection; the posts under way fail (socket hang up), the waiting ones too. */
  destroy(): void {
    this.destroyed = true;
    for (const w of this.waiting.splice(0)) queueMicrotask(() => w.p.done(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), undefined));
    for (const conn of [...this.open]) conn.socket.destroy();
    this.idle.length = 0;
  }
}

/** `Name: value\r\n` for each header; throws on a value that would break the request. */
function headerLines(headers: Readonly<Record<string, string | number>>): string {
  let s = '';
  for (const name in headers) {
    const value = String(headers[name]);
    if (BAD_VALUE.test(name) || BAD_VALUE.test(value) || name.includes(':')) throw new Error(`header ${JSON.stringify(name)} has a character that breaks a request`);
    s += `${name}: ${value}\r\n`;
  }
  return s;
}
