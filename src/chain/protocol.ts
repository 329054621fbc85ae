// Chain protocol version 1 (DESIGN.md §9) in one place: the hello and its answers, acks, the
// HTTP headers, and the line splitter both link types use. The entry lines themselves are
// core/entry-line.ts (the disk buffer writes and reads the same lines).

import { hostname } from 'node:os';
import { parseJsonText } from '../core/entry.js';
import { isObject } from '../core/entry-line.js';

export const PROTOCOL_VERSION = 1;

/** HTTP header names, lower case as Node presents them. */
export const HEADER_PROTOCOL = 'x-logrelay-protocol';
export const HEADER_NODE = 'x-logrelay-node';
export const HEADER_ACCEPTED = 'x-logrelay-accepted';
/**
 * On a source's 204: the `Content-Encoding`s it reads (DESIGN.md §25). A sink compresses only
 * once a 204 named its codec, so a source that predates compression keeps getting plain bodies.
 */
export const HEADER_ACCEPT_ENCODING = 'x-logrelay-accept-encoding';

/** Whether a 204's HEADER_ACCEPT_ENCODING value names `codec`. */
export function acceptsEncoding(header: string | string[] | undefined, codec: string): boolean {
  const v = Array.isArray(header) ? header.join(',') : (header ?? '');
  return v.split(',').some((c) => c.trim().toLowerCase() === codec);
}
export const NDJSON = 'application/x-ndjson';
/** The body of an http_chain request in chain protocol version 2: entry frames (core/entry-frame.ts) one after another. */
export const FRAMES = 'application/x-logrelay-frames';
/**
 * On an http_chain source's 204: the chain protocol versions it reads (`1, 2`). A sink posts frames
 * only once a 204 named version 2, so a source that predates it keeps getting NDJSON.
 */
export const HEADER_ACCEPT_PROTOCOL = 'x-logrelay-accept-protocol';

/** Seconds a saturated http_chain source asks the sink to wait (`Retry-After`). */
export const RETRY_AFTER_S = 1;

/** The node name a sink announces when its `node` key is unset. */
export const defaultNode = (): string => hostname();

// ── TCP control lines ─────────────────────────────────────────────────────────────────────────

// A hello may carry an `offer` (DESIGN.md §25, §26): what the sink can do beyond version 1, one key
// per feature, each a list of choices in the sink's order of preference, or one value
// (`"report":1`). The source answers with an
// `accept` naming, per key it knows, the first choice it supports; keys it does not know it
// ignores, and a source that knows no `offer` at all answers `{"ok":1}`: the sink then goes on
// with version 1 as it is. Every feature is built and read here, and nowhere else.

/** What a sink offers in its hello: feature → choices, preferred first (`compression: ["zstd","gzip"]`), or one value (`report: 1`); undefined or an empty list offers nothing. */
export type Offer = Readonly<Record<string, readonly (string | number)[] | string | number | undefined>>;
/** What a source supports: feature → the choices it takes. */
export type Supports = Readonly<Record<string, readonly (string | number)[]>>;
/** What a source accepts: feature → the one choice taken. Features absent are declined. */
export type Accept = Readonly<Record<string, string | number>>;

/** The hello line, with the offer when it holds any feature. */
export function helloLine(node: string, offer: Offer = {}): string {
  const features = Object.entries(offer).filter(([, choices]) => choices !== undefined && (!Array.isArray(choices) || choices.length > 0));
  return `${JSON.stringify(features.length > 0 ? { logrelay: PROTOCOL_VERSION, node, offer: Object.fromEntries(features) } : { logrelay: PROTOCOL_VERSION, node })}\n`;
}

/**
 * The source's choice: per feature it `supports`, the first of the offered choices it supports;
 * offered features it does not know, and unreadable offers, are ignored.
 */
export function acceptFor(offer: unknown, supports: Supports): Accept {
  const out: Record<string, string | number> = {};
  if (!isObject(offer)) return out;
  for (const [feature, ours] of Object.entries(supports)) {
    const offered = offer[feature];
    const theirs: unknown[] = Array.isArray(offered) ? offered : offered === undefined ? [] : [offered];
    const chosen = theirs.find((c: unknown) => (typeof c === 'string' || typeof c === 'number') && ours.includes(c));
    if (chosen !== undefined) out[feature] = chosen as string | number;
  }
  return out;
}

/** The source's answer to a good hello, with what it accepts of the offer. */
export function okLine(accept: Accept = {}): string {
  return `${JSON.stringify(Object.keys(accept).length > 0 ? { ok: 1, accept } : { ok: 1 })}\n`;
}

export const OK_LINE = okLine();

export function errorLine(reason: string): string {
  return `${JSON.stringify({ error: reason })}\n`;
}

export function ackLine(n: number): string {
  return `{"ack":${n}}\n`;
}

export type HelloResult = { readonly ok: true; readonly node: string; readonly offer: unknown } | { readonly ok: false; readonly error: string };

/** Checks a hello line: a JSON object with `logrelay: 1` and a string `node`; `offer` read when it is an object. */
export function parseHello(line: string): HelloResult {
  const obj = parseJson(line);
  if (obj === undefined) return { ok: false, error: 'hello is not JSON' };
  if (!isObject(obj) || !('logrelay' in obj)) return { ok: false, error: 'expected hello {"logrelay":1,"node":…}' };
  if (obj.logrelay !== PROTOCOL_VERSION) return { ok: false, error: `unsupported protocol version ${JSON.stringify(obj.logrelay)}, want 1` };
  const node = typeof obj.node === 'string' ? obj.node : '';
  return { ok: true, node, offer: obj.offer };
}

/** What a tcp_chain source says to its sink. */
export type ServerLine =
  | { readonly kind: 'ok'; readonly accept: Accept }
  | { readonly kind: 'error'; readonly error: string }
  | { readonly kind: 'ack'; readonly n: number };

export function parseServerLine(line: string): ServerLine | undefined {
  const obj = parseJson(line);
  if (!isObject(obj)) return undefined;
  if (typeof obj.ack === 'number' && Number.isInteger(obj.ack) && obj.ack >= 0) return { kind: 'ack', n: obj.ack };
  if (obj.ok === 1) return { kind: 'ok', accept: isObject(obj.accept) ? acceptOf(obj.accept) : {} };
  if ('error' in obj) return { kind: 'error', error: String(obj.error) };
  return undefined;
}

// ── Node reports ──────────────────────────────────────────────────────────────────────────────

/** How a report control line starts on a `tcp_chain` link (an entry line starts `{"time":`). */
const REPORT_LINE_START = '{"report":';

/** A node report as a `tcp_chain` control line, `\n` included. */
export function reportLine(report: object): string {
  return `${REPORT_LINE_START}${JSON.stringify(report)}}\n`;
}

/** True when a line of a link that accepted reports is a report control line, not an entry. */
export const isReportLine = (line: string): boolean => line.charCodeAt(2) === 114 /* r */ && line.startsWith(REPORT_LINE_START);

/** The report a control line carries (unchecked: see asNodeReport); undefined when the line is no JSON. */
export function reportOfLine(line: string): unknown {
  const obj = parseJson(line);
  return isObject(obj) ? obj.report : undefined;
}

/** The path under an http_chain source's `path` that node reports are POSTed to. */
export const reportPath = (path: string): string => `${path.replace(/\/+$/, '')}/report`;

/** JSON text as a value; undefined when it is not JSON or nests too deep (see MAX_JSON_DEPTH). */
const parseJson = parseJsonText;

/** An `accept` object's string and number values (anything else is not an answer we know). */
function acceptOf(obj: Record<string, unknown>): Accept {
  const out: Record<string, string | number> = {};
  for (const [k, v] of Object.entries(obj)) if (typeof v === 'string' || typeof v === 'number') out[k] = v;
  return out;
}

// ── Line splitting ────────────────────────────────────────────────────────────────────────────

/**
 * Splits a stream of decoded text into lines with a byte limit per line. Feed chunks; each
 * complete line (without `\n`, a trailing `\r` removed) goes to `onLine`. Returns false as soon
 * as a line, complete or still partial, is over `maxBytes`; the stream must then end.
 */
export class LineSplitter {
  private rest = '';
  constructor(private readonly maxBytes: number) {}

  push(chunk: string, onLine: (line: string) => void): boolean {
    let start = 0;
    if (this.rest.length > 0) {
      // the line begun in an earlier chunk ends in this one: joined alone, not the whole chunk to
      // it (a search in a joined chunk makes V8 copy all of it into one string first)
      const nl = chunk.indexOf('\n');
      if (nl < 0) {
        this.rest += chunk;
        return !this.tooLong(this.rest);
      }
      let line = this.rest + chunk.slice(0, nl);
      this.rest = '';
      if (line.charCodeAt(line.length - 1) === 13) line = line.slice(0, -1);
      if (this.tooLong(line)) return false;
      onLine(line);
      start = nl + 1;
    }
    for (let nl = chunk.indexOf('\n', start); nl >= 0; nl = chunk.indexOf('\n', start)) {
      let end = nl;
      if (end > start && chunk.charCodeAt(end - 1) === 13) end--;
      const line = chunk.slice(start, end);
      if (this.tooLong(line)) return false;
      onLine(line);
      start = nl + 1;
    }
    if (start < chunk.length) {
      const text = chunk.slice(start);
      if (this.tooLong(text)) return false;
      this.rest = text;
    }
    return true;
  }

  /** Longer than maxBytes in UTF-8 (counted only when it may be: a unit takes at most 3 bytes). */
  private tooLong(text: string): boolean {
    return text.length > this.maxBytes / 3 && Buffer.byteLength(text) > this.maxBytes;
  }

  /** The end of the stream: what followed the last `\n`, if anything, is the last line (a trailing `\r` removed). */
  end(onLine: (line: string) => void): void {
    let text = this.rest;
    this.rest = '';
    if (text.charCodeAt(text.length - 1) === 13) text = text.slice(0, -1);
    if (text.length > 0) onLine(text);
  }
}
