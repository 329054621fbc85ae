// `otlp` source: an OTLP/HTTP logs receiver (DESIGN.md §20). `POST <path>` with protobuf or JSON,
// gzip or deflate; the request's records become entries, emitted in batches of buffer_size and
// answered 200 once every one of them is done (§15), so an exporter's retry never loses what it
// was told was taken. Errors carry a google.rpc.Status in the request's encoding.

import type { ServerResponse } from 'node:http';
import { CHAIN_SOURCE_BUFFER_SIZE, type ChainSourceConfig, chainSourceConfig, chainSourceFields } from '../net/source-config.js';
import type { PluginSpec } from '../config/spec.js';
import type { Entry } from '../core/entry.js';
import { errorMessage } from '../core/errors.js';
import { type BodyFault, inflateLimited } from '../net/http-body.js';
import { createHttpIngest, type HttpIngestConfig } from '../net/http-ingest.js';
import { decodeRequest } from '../otlp/decode.js';
import { decodeJsonRequest } from '../otlp/json.js';
import { mapRequest } from '../otlp/map-in.js';
import type { OtlpRequest } from '../otlp/model.js';
import { encodeExportResponse, encodeStatus, encodingOf, mediaType, type OtlpEncoding } from '../otlp/response.js';
import type { Source, SourceFactory } from './types.js';

interface OtlpSourceConfig extends ChainSourceConfig, HttpIngestConfig {
  readonly max_line_bytes: number;
}

export const OTLP_SOURCE: PluginSpec = {
  doc: 'receives OpenTelemetry logs over OTLP/HTTP (protobuf or JSON, gzip or deflate) from SDKs and Collectors; answers once the entries are delivered',
  fields: chainSourceFields({
    path: { t: 'string', def: '/v1/logs', nonEmpty: true, doc: 'request path exporters POST to' },
    max_body_bytes: {
      t: 'number',
      def: 20971520,
      int: true,
      min: 1,
      doc: 'a larger request body, as received or once decompressed, is answered 413',
    },
    max_line_bytes: {
      t: 'number',
      def: 1048576,
      int: true,
      min: 64,
      doc: 'the most one mapped entry may take as JSON; larger records are counted in `parse_errors` and reported in partial_success',
    },
    max_connections: { t: 'number', def: 0, int: true, min: 0, unit: 'connections', doc: 'connections beyond this are refused (`rejected_conns`); 0 = unlimited' },
    read_timeout_ms: { t: 'number', def: 30000, int: true, min: 0, doc: 'time allowed to receive a whole request (headers within 10 s at most); 0 = none' },
    buffer_size: CHAIN_SOURCE_BUFFER_SIZE,
  }),
};

export const createOtlpSource: SourceFactory = (plugin, ctx): Source => {
  const cfg = chainSourceConfig<OtlpSourceConfig>(plugin, OTLP_SOURCE);
  const counters = {
    total_entries: 0,
    dropped_entries: 0,
    total_requests: 0,
    rejected_requests: 0,
    parse_errors: 0,
    active_connections: 0,
    rejected_conns: 0,
    tls_handshake_errors: 0,
    auth_rejected: 0,
  };
  const answer = (res: ServerResponse, status: number, body: Buffer, encoding: OtlpEncoding, headers: Record<string, string> = {}) => {
    if (status >= 400) counters.rejected_requests++;
    if (res.headersSent || res.destroyed) return;
    res.writeHead(status, { 'Content-Type': mediaType(encoding), 'Content-Length': body.length, ...headers });
    res.end(body);
  };
  const fault = (res: ServerResponse, status: number, message: string, encoding: OtlpEncoding, headers: Record<string, string> = {}) =>
    answer(res, status, encodeStatus(status, message, encoding), encoding, headers);
  const http = createHttpIngest({
    id: plugin.id,
    cfg,
    ctx,
    counters,
    // a refusal is written in the request's encoding, JSON when it has none
    reply: (res, status, message, headers) => fault(res, status, message, encodingOf(res.req.headers['content-type']) ?? 'json', headers),
    messages: {
      forbidden: 'client identity not allowed',
      notFound: `not found: logs are POSTed to ${cfg.path}`,
      notPost: (method) => `method ${method} not allowed: use POST`,
      busy: () => `${ctx.saturationReason?.() ?? 'pipeline saturated'}, retry later`,
    },
    onPost: (req, res) => {
      const encoding = encodingOf(req.headers['content-type']);
      if (encoding === undefined) {
        http.refuse(req, res, 415, `unsupported Content-Type ${JSON.stringify(req.headers['content-type'] ?? '')}: use application/x-protobuf or application/json`);
        return;
      }
      const contentEncoding = (req.headers['content-encoding'] ?? '').trim().toLowerCase();
      if (contentEncoding !== '' && contentEncoding !== 'identity' && contentEncoding !== 'gzip' && contentEncoding !== 'deflate') {
        http.refuse(req, res, 400, `unsupported Content-Encoding ${JSON.stringify(contentEncoding)}: use gzip, deflate or none`);
        return;
      }
      http.receive(req, res, (chunks) => {
        const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
        received(res, raw, encoding, contentEncoding === 'identity' ? '' : contentEncoding).catch((err: unknown) => {
          // not expected: the request is refused rather than the worker lost
          ctx.log.error({ error: errorMessage(err) }, 'OTLP request failed');
          fault(res, 500, `internal error: ${errorMessage(err)}`, encoding);
        });
      });
    },
  });

  /** Emits the entries in batches of buffer_size; answers 200 once all are done. */
  const ingest = (res: ServerResponse, entries: Entry[], rejected: number, encoding: OtlpEncoding) => {
    const ok = () => answer(res, 200, encodeExportResponse(rejected, rejected > 0 ? `${rejected} log records over max_line_bytes (${cfg.max_line_bytes}) once mapped` : '', encoding), encoding);
    counters.total_entries += entries.length;
    if (entries.length === 0) {
      ok();
      return;
    }
    const hold = http.hold(ok);
    for (let at = 0; at < entries.length; at += cfg.buffer_size) {
      hold.emit(at === 0 && entries.length <= cfg.buffer_size ? entries : entries.slice(at, at + cfg.buffer_size));
    }
    hold.release();
  };

  const received = async (res: ServerResponse, raw: Buffer, encoding: OtlpEncoding, contentEncoding: string) => {
    let body: Buffer;
    try {
      body = contentEncoding === '' ? raw : await inflateLimited(raw, contentEncoding, cfg.max_body_bytes);
    } catch (err) {
      const f = err as BodyFault;
      counters.parse_errors++;
      if (f.tooLarge) http.tooLarge(res, `body over max_body_bytes (${cfg.max_body_bytes}) once decompressed`);
      else fault(res, 400, `body does not decompress as ${contentEncoding}: ${errorMessage(err)}`, encoding);
      return;
    }
    let request: OtlpRequest;
    try {
      request = encoding === 'json' ? decodeJsonRequest(body.toString('utf8')) : decodeRequest(body);
    } catch (err) {
      counters.parse_errors++;
      fault(res, 400, `${encoding === 'json' ? 'JSON' : 'protobuf'} body does not decode as an ExportLogsServiceRequest: ${errorMessage(err)}`, encoding);
      return;
    }
    // the body took time to arrive: the pipeline may have filled meanwhile
    if (http.saturated()) {
      http.busy(res);
      return;
    }
    const { entries, rejected } = mapRequest(request, Date.now(), cfg.max_line_bytes, encoding === 'json' ? body.length : 0);
    counters.parse_errors += rejected;
    ingest(res, entries, rejected, encoding);
  };

  return {
    id: plugin.id,
    type: 'otlp',
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
