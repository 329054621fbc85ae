// `http_chain` source: the receiving end of an HTTP chain link (DESIGN.md §9). Each
// `POST <path>` carries a batch: NDJSON (chain protocol version 1) or, when the sink says
// `X-Logrelay-Protocol: 2`, version 2 entry frames (§25, core/frame-reader.ts); its entries are
// emitted as one batch and answered with 204 once done, the 204 naming the versions this source
// reads (a sink posts frames only after it saw that), or 503 with Retry-After while the pipeline
// is saturated or too many bodies are being received at once.

import { StringDecoder } from 'node:string_decoder';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { FRAMES, HEADER_ACCEPT_ENCODING, HEADER_ACCEPT_PROTOCOL, HEADER_ACCEPTED, HEADER_NODE, HEADER_PROTOCOL, LineSplitter, PROTOCOL_VERSION, reportPath } from '../chain/protocol.js';
import { PROTOCOL_V2 } from '../core/entry-frame.js';
import { decodeEntryFrame, type Frame, frameIdOf, FrameReader } from '../core/frame-reader.js';
import { decodeEntry, trailingIdOf } from '../core/entry-line.js';
import { reportSourceCounters, takeReport } from '../chain/reports.js';
import { parseJsonText } from '../core/entry.js';
import { CHAIN_SOURCE_BUFFER_SIZE, type ChainSourceConfig, chainSourceConfig, chainSourceFields } from '../net/source-config.js';
import type { PluginSpec } from '../config/spec.js';
import type { Entry } from '../core/entry.js';
import { type BodyFault, INFLATABLE, inflateLimited } from '../net/http-body.js';
import { createHttpIngest, type HttpIngestConfig, type IngestPeer } from '../net/http-ingest.js';
import type { Source, SourceFactory } from './types.js';

type HttpChainSourceConfig = ChainSourceConfig & HttpIngestConfig;

const json = (res: ServerResponse, status: number, body: object, headers: Record<string, string> = {}) => {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
};

/** What this node's http_chain source inflates, as HEADER_ACCEPT_ENCODING says it. */
const ACCEPT_ENCODING = [...INFLATABLE].join(', ');
/** The chain protocol versions this source reads, as HEADER_ACCEPT_PROTOCOL says them. */
const ACCEPT_PROTOCOL = `${PROTOCOL_VERSION}, ${PROTOCOL_V2}`;
/** The answer to a batch, naming what this source reads (the sink switches on it). */
const answerHeaders = (accepted: number) => ({ [HEADER_ACCEPTED]: String(accepted), [HEADER_ACCEPT_ENCODING]: ACCEPT_ENCODING, [HEADER_ACCEPT_PROTOCOL]: ACCEPT_PROTOCOL });

export const HTTP_CHAIN_SOURCE: PluginSpec = {
  doc: 'receives batches from other nodes\' `http_chain` sinks (chain protocol over HTTP: NDJSON, or version 2 frames once the sink saw this source read them)',
  fields: chainSourceFields({
    path: { t: 'string', def: '/ingest', nonEmpty: true, doc: 'request path batches are POSTed to' },
    max_body_bytes: { t: 'number', def: 8388608, int: true, min: 1, doc: 'a larger request body is answered 413' },
    buffer_size: CHAIN_SOURCE_BUFFER_SIZE,
    read_timeout_ms: { t: 'number', def: 30000, int: true, min: 0, doc: 'time allowed to receive a whole request; 0 = none' },
    max_connections: { t: 'number', def: 0, int: true, min: 0, unit: 'connections', doc: 'connections beyond this are refused (`rejected_conns`); 0 = unlimited' },
  }),
};

export const createHttpChainSource: SourceFactory = (plugin, ctx): Source => {
  const cfg = chainSourceConfig<HttpChainSourceConfig>(plugin, HTTP_CHAIN_SOURCE);
  const counters = {
    total_entries: 0,
    dropped_entries: 0,
    total_requests: 0,
    active_connections: 0,
    rejected_conns: 0,
    parse_errors: 0,
    tls_handshake_errors: 0,
    auth_rejected: 0,
    ...reportSourceCounters(),
    /** request body bytes as received (compressed or not) */
    bytes_received: 0,
  };
  const reportsAt = reportPath(cfg.path);
  const reply = (res: ServerResponse, status: number, message: string, headers?: Record<string, string>) => json(res, status, { error: message }, headers);
  const http = createHttpIngest({
    id: plugin.id,
    cfg,
    ctx,
    counters,
    reply,
    messages: { forbidden: 'forbidden', notFound: 'not found', notPost: () => 'method not allowed', busy: () => 'busy' },
    otherPath: (req, res, peer, path) => {
      if (path !== reportsAt || req.method !== 'POST' || headerValue(req.headers[HEADER_PROTOCOL]) !== String(PROTOCOL_VERSION) || http.stopping) return false;
      takeReports(req, res, peer);
      return true;
    },
    onPost: (req, res, peer) => onPost(req, res, peer),
  });

  const ingest = (req: IncomingMessage, res: ServerResponse, peer: IngestPeer | undefined, body: readonly Buffer[], frames: boolean) => {
    const node = peer?.session.auth_identity ?? (headerValue(req.headers[HEADER_NODE]) || undefined);
    const now = Date.now();
    let accepted = 0;
    // the 204 goes out once every batch of the body is done (DESIGN.md §15)
    const hold = http.hold(() => {
      if (res.destroyed) return;
      res.writeHead(204, answerHeaders(accepted));
      res.end();
    });
    let batch: Entry[] = [];
    const { duplicate } = ctx;
    /** a copy the dedup window already has (the other relay's), dropped before its decode */
    const skipped = (id: string | undefined): boolean => {
      if (id === undefined || !duplicate?.(id, now)) return false;
      accepted++;
      counters.total_entries++;
      return true;
    };
    const take = (entry: Entry | undefined) => {
      if (!entry) {
        counters.parse_errors++;
        return;
      }
      batch.push(entry);
      if (batch.length >= cfg.buffer_size) {
        accepted += batch.length;
        counters.total_entries += batch.length;
        hold.emit(batch);
        batch = [];
      }
    };
    if (frames) {
      // version 2: frames, each chunk's strings sliced from one text (core/frame-reader.ts); a
      // frame no longer than the body, else the rest of the body is one parse error
      const reader = new FrameReader(cfg.max_body_bytes);
      const onFrame = (f: Frame) => {
        const id = frameIdOf(f);
        if (!skipped(id)) take(decodeEntryFrame(f, node, now, ctx.pipeline, id));
      };
      let whole = true;
      for (let i = 0; i < body.length && whole; i++) whole = reader.push(body[i]!, onFrame);
      if (!whole || reader.pending) counters.parse_errors++;
    } else {
      const onLine = (line: string) => {
        if (line.length === 0) return;
        if (!duplicate || !skipped(trailingIdOf(line))) take(decodeEntry(line, node, now, ctx.pipeline));
      };
      // each chunk decoded as it arrived (lines split across two are joined): a string per line
      // decoded from the bytes cost a native call each, the body made whole a copy of it
      const decoder = new StringDecoder('utf8');
      const lines = new LineSplitter(Number.POSITIVE_INFINITY);
      for (const chunk of body) lines.push(decoder.write(chunk), onLine);
      lines.push(decoder.end(), onLine);
      lines.end(onLine);
    }
    if (batch.length > 0) {
      accepted += batch.length;
      counters.total_entries += batch.length;
      hold.emit(batch);
    }
    hold.release();
  };

  /** `POST <path>/report`: node reports, one JSON object per line; never entries, answered 204 even while the pipeline is saturated. */
  const takeReports = (req: IncomingMessage, res: ServerResponse, peer: IngestPeer | undefined) => {
    http.readBody(res, req, (chunks) => {
      const identity = peer?.session.auth_identity;
      let accepted = 0;
      let rejected = 0;
      for (const line of Buffer.concat(chunks).toString('utf8').split('\n')) {
        if (line.trim() === '') continue;
        if (takeReport(parseJsonText(line), identity, counters, ctx.report)) accepted++;
        else rejected++;
      }
      // refused (403) only when nothing in it was taken: the sender counts the whole request
      res.writeHead(rejected > 0 && accepted === 0 ? 403 : 204);
      res.end();
    });
  };

  const onPost = (req: IncomingMessage, res: ServerResponse, peer: IngestPeer | undefined) => {
    const version = headerValue(req.headers[HEADER_PROTOCOL]);
    const frames = version === String(PROTOCOL_V2);
    if (version !== String(PROTOCOL_VERSION) && !frames) {
      counters.parse_errors++;
      http.refuse(req, res, 400, version ? `unsupported protocol version ${JSON.stringify(version)}, want 1 or 2` : `missing X-Logrelay-Protocol header`);
      return;
    }
    // version 2 bodies are frames and say so; another type is refused before its body is read
    if (frames && mediaType(req.headers['content-type']) !== FRAMES) {
      http.refuse(req, res, 415, `protocol version 2 takes Content-Type ${FRAMES}`);
      return;
    }
    // a compressed batch (DESIGN.md §25): gzip, deflate, zstd where the runtime has it; others 415
    const encoding = (headerValue(req.headers['content-encoding']) ?? '').trim().toLowerCase();
    if (encoding !== '' && encoding !== 'identity' && !INFLATABLE.has(encoding)) {
      http.refuse(req, res, 415, `unsupported Content-Encoding ${JSON.stringify(encoding)} (this node takes ${[...INFLATABLE].join(', ')})`);
      return;
    }
    http.receive(req, res, (chunks) => {
      for (const chunk of chunks) counters.bytes_received += chunk.length;
      if (encoding === '' || encoding === 'identity') {
        ingest(req, res, peer, chunks, frames);
        return;
      }
      // inflated with a cap: a bomb stops at max_body_bytes, never inflated whole
      inflateLimited(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), encoding, cfg.max_body_bytes).then(
        (body) => ingest(req, res, peer, [body], frames),
        (err: BodyFault) => {
          if (err.tooLarge) http.tooLarge(res);
          else {
            counters.parse_errors++;
            reply(res, 400, `body does not inflate as ${encoding}`);
          }
        },
      );
    });
  };

  return {
    id: plugin.id,
    type: 'http_chain',
    counters,
    pausable: true,
    acksUpstream: true,
    open: () => http.open(),
    start: () => http.start(),
    pause: () => http.pause(),
    resume: () => http.resume(),
    stop: (deadline) => http.stop(deadline),
  };
};

function headerValue(v: string | string[] | undefined): string {
  return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
}

/** A Content-Type without its parameters, lower case. */
function mediaType(v: string | undefined): string {
  const s = v ?? '';
  const semi = s.indexOf(';');
  return (semi < 0 ? s : s.slice(0, semi)).trim().toLowerCase();
}
