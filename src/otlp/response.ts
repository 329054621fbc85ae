// What an OTLP/HTTP server answers: ExportLogsServiceResponse (with partial_success) on success,
// google.rpc.Status on failure, each in the request's encoding; and the reading of a response
// by the sink. Media types per opentelemetry-proto docs/specification.md.

import { ProtoReader, ProtoWriter, WIRE_VARINT } from './proto.js';

export const PROTOBUF = 'application/x-protobuf';
export const JSON_TYPE = 'application/json';

export type OtlpEncoding = 'protobuf' | 'json';

/** The encoding a Content-Type names (parameters allowed), or undefined for any other type. */
export function encodingOf(contentType: string | undefined): OtlpEncoding | undefined {
  if (!contentType) return undefined;
  const semi = contentType.indexOf(';');
  const type = (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  if (type === PROTOBUF) return 'protobuf';
  if (type === JSON_TYPE) return 'json';
  return undefined;
}

export const mediaType = (encoding: OtlpEncoding): string => (encoding === 'json' ? JSON_TYPE : PROTOBUF);

/** gRPC codes for Status.code (the specification does not use it; it helps troubleshooting). */
export const GRPC_CODE: Readonly<Record<number, number>> = {
  400: 3, // INVALID_ARGUMENT
  403: 7, // PERMISSION_DENIED
  404: 5, // NOT_FOUND
  405: 12, // UNIMPLEMENTED
  413: 8, // RESOURCE_EXHAUSTED
  415: 3,
  503: 14, // UNAVAILABLE
};

/** google.rpc.Status { code = 1, message = 2 } in `encoding`. */
export function encodeStatus(httpStatus: number, message: string, encoding: OtlpEncoding): Buffer {
  const code = GRPC_CODE[httpStatus] ?? 2; // UNKNOWN
  if (encoding === 'json') return Buffer.from(JSON.stringify({ code, message }));
  const w = new ProtoWriter(64 + message.length * 3);
  w.tag(1, WIRE_VARINT);
  w.varint(code);
  if (message) w.string(2, message);
  return Buffer.from(w.finish());
}

/**
 * ExportLogsServiceResponse in `encoding`: empty (protobuf) or `{}` (JSON) when everything was
 * taken, else partial_success { rejected_log_records = 1, error_message = 2 }.
 */
export function encodeExportResponse(rejected: number, errorMessage: string, encoding: OtlpEncoding): Buffer {
  if (encoding === 'json') {
    return Buffer.from(rejected > 0 ? JSON.stringify({ partialSuccess: { rejectedLogRecords: String(rejected), errorMessage } }) : '{}');
  }
  if (rejected === 0) return Buffer.alloc(0);
  const w = new ProtoWriter(64 + errorMessage.length * 3);
  const at = w.open(1);
  w.tag(1, WIRE_VARINT);
  w.varint(rejected);
  if (errorMessage) w.string(2, errorMessage);
  w.close(at);
  return Buffer.from(w.finish());
}

export interface PartialSuccess {
  readonly rejected: number;
  readonly errorMessage: string;
}

/** The partial_success of a response body; rejected 0 when there is none or the body does not decode. */
export function decodeExportResponse(body: Buffer, encoding: OtlpEncoding): PartialSuccess {
  const none = { rejected: 0, errorMessage: '' };
  if (body.length === 0) return none;
  try {
    if (encoding === 'json') {
      const doc = JSON.parse(body.toString('utf8')) as { partialSuccess?: { rejectedLogRecords?: unknown; errorMessage?: unknown } };
      const ps = doc?.partialSuccess;
      if (!ps) return none;
      const n = Number(ps.rejectedLogRecords ?? 0);
      return { rejected: Number.isFinite(n) && n > 0 ? n : 0, errorMessage: typeof ps.errorMessage === 'string' ? ps.errorMessage : '' };
    }
    const r = new ProtoReader(body);
    let out = none;
    while (r.more) {
      const tag = r.tag();
      if (tag === ((1 << 3) | 2)) {
        const ps = r.sub();
        let rejected = 0;
        let errorMessage = '';
        while (ps.more) {
          const t = ps.tag();
          if (t === 1 << 3) rejected = Number(ps.int64());
          else if (t === ((2 << 3) | 2)) errorMessage = ps.string();
          else ps.skip(t & 7, t >>> 3);
        }
        out = { rejected: rejected > 0 ? rejected : 0, errorMessage };
      } else r.skip(tag & 7, tag >>> 3);
    }
    return out;
  } catch {
    return none;
  }
}
