// Test helpers for OTLP: the logs schema typed here and loaded into protobufjs (the oracle our
// codec is checked against; no code generation), its decoded messages in our model's form (the
// same mapping then applies), and a plain HTTP poster.

import { request } from 'node:http';
import protobuf from 'protobufjs';
import type { AnyJson, Attributes, OtlpLogRecord, OtlpRequest } from '../../src/otlp/model.js';
import { type Nanos, splitNanos } from '../../src/otlp/proto.js';

/** opentelemetry-proto: collector/logs/v1/logs_service.proto, logs/v1/logs.proto, common/v1/common.proto, resource/v1/resource.proto; google/rpc/status.proto. */
export const OTLP_PROTO = `
syntax = "proto3";
package otlp;
message AnyValue {
  oneof value {
    string string_value = 1;
    bool bool_value = 2;
    int64 int_value = 3;
    double double_value = 4;
    ArrayValue array_value = 5;
    KeyValueList kvlist_value = 6;
    bytes bytes_value = 7;
    int32 string_value_strindex = 8;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
message KeyValue { string key = 1; AnyValue value = 2; int32 key_strindex = 3; }
message InstrumentationScope { string name = 1; string version = 2; repeated KeyValue attributes = 3; uint32 dropped_attributes_count = 4; }
message EntityRef { string schema_url = 1; string type = 2; repeated string id_keys = 3; repeated string description_keys = 4; }
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; repeated EntityRef entity_refs = 3; }
message LogRecord {
  fixed64 time_unix_nano = 1;
  fixed64 observed_time_unix_nano = 11;
  int32 severity_number = 2;
  string severity_text = 3;
  AnyValue body = 5;
  repeated KeyValue attributes = 6;
  uint32 dropped_attributes_count = 7;
  fixed32 flags = 8;
  bytes trace_id = 9;
  bytes span_id = 10;
  string event_name = 12;
}
message ScopeLogs { InstrumentationScope scope = 1; repeated LogRecord log_records = 2; string schema_url = 3; }
message ResourceLogs { Resource resource = 1; repeated ScopeLogs scope_logs = 2; string schema_url = 3; }
message ExportLogsServiceRequest { repeated ResourceLogs resource_logs = 1; }
message ExportLogsPartialSuccess { int64 rejected_log_records = 1; string error_message = 2; }
message ExportLogsServiceResponse { ExportLogsPartialSuccess partial_success = 1; }
message Any { string type_url = 1; bytes value = 2; }
message Status { int32 code = 1; string message = 2; repeated Any details = 3; }
`;

const root = protobuf.parse(OTLP_PROTO).root;
export const ExportLogsServiceRequest = root.lookupType('otlp.ExportLogsServiceRequest');
export const ExportLogsServiceResponse = root.lookupType('otlp.ExportLogsServiceResponse');
export const Status = root.lookupType('otlp.Status');

interface LongLike {
  low: number;
  high: number;
  unsigned?: boolean;
  toString(): string;
}

type Msg = Record<string, unknown>;

const isLong = (v: unknown): v is LongLike => typeof v === 'object' && v !== null && 'low' in v && 'high' in v;

/** An int64 from protobufjs (Long or number) as our model holds it: a number when safe, else a decimal string. */
function int64Of(v: unknown): number | string {
  if (typeof v === 'number') return v;
  if (isLong(v)) {
    const big = BigInt.asIntN(64, (BigInt(v.high >>> 0) << 32n) | BigInt(v.low >>> 0));
    return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big.toString();
  }
  return Number(v);
}

function nanosOf(v: unknown, into: Nanos): void {
  if (isLong(v)) splitNanos(v.low >>> 0, v.high >>> 0, into);
  else {
    const big = BigInt((v as number | undefined) ?? 0);
    splitNanos(Number(big & 0xffffffffn), Number(big >> 32n), into);
  }
}

/** A decoded AnyValue in its JSON form, as §20 maps it. */
export function oracleAny(v: Msg | null | undefined): AnyJson {
  if (!v) return undefined;
  switch (v.value as string | undefined) {
    case 'stringValue':
      return v.stringValue;
    case 'boolValue':
      return v.boolValue;
    case 'intValue':
      return int64Of(v.intValue);
    case 'doubleValue':
      return v.doubleValue;
    case 'arrayValue':
      return ((v.arrayValue as Msg).values as Msg[]).map((x) => oracleAny(x) ?? null);
    case 'kvlistValue':
      return oracleAttributes((v.kvlistValue as Msg).values as Msg[]) ?? {};
    case 'bytesValue':
      return Buffer.from(v.bytesValue as Uint8Array).toString('base64');
    default:
      return undefined;
  }
}

function oracleAttributes(list: Msg[] | undefined): Attributes | undefined {
  if (!list || list.length === 0) return undefined;
  const out: Attributes = {};
  for (const kv of list) {
    const value = oracleAny(kv.value as Msg | null) ?? null;
    Object.defineProperty(out, kv.key as string, { value, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** A message protobufjs decoded, in our model's form: what our mapping takes. */
export function oracleToModel(msg: Msg): OtlpRequest {
  const t: Nanos = { ms: 0, ns: 0 };
  return ((msg.resourceLogs as Msg[]) ?? []).map((rl) => ({
    resource: rl.resource ? (oracleAttributes((rl.resource as Msg).attributes as Msg[]) ?? {}) : undefined,
    size: 0,
    scopeLogs: ((rl.scopeLogs as Msg[]) ?? []).map((sl) => ({
      scope: sl.scope ? { name: (sl.scope as Msg).name as string, version: (sl.scope as Msg).version as string } : undefined,
      records: ((sl.logRecords as Msg[]) ?? []).map((r): OtlpLogRecord => {
        nanosOf(r.timeUnixNano, t);
        const timeMs = t.ms;
        const timeNs = t.ns;
        nanosOf(r.observedTimeUnixNano, t);
        return {
          timeMs,
          timeNs,
          observedMs: t.ms,
          observedNs: t.ns,
          severityNumber: r.severityNumber as number,
          severityText: r.severityText as string,
          body: oracleAny(r.body as Msg | null),
          ...((r.body as Msg | null)?.value === 'bytesValue' ? { bodyBytes: true } : {}),
          attributes: oracleAttributes(r.attributes as Msg[]),
          flags: (r.flags as number) >>> 0,
          traceId: Buffer.from(r.traceId as Uint8Array).toString('hex'),
          spanId: Buffer.from(r.spanId as Uint8Array).toString('hex'),
          eventName: r.eventName as string,
          size: 0,
        };
      }),
    })),
  }));
}

export interface Posted {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Buffer;
}

/** POSTs (or `method`s) `body` to 127.0.0.1:`port` `path` with `headers`; resolves with the answer. */
export function post(port: number, body: Buffer | string, headers: Record<string, string>, path = '/v1/logs', method = 'POST'): Promise<Posted> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A pipeline `recv`: an otlp source on 127.0.0.1:`port` (`config` lines added) → stdout as JSON; `sink`: the stdout sink's config lines. */
export const otlpReceiverToml = (port: number, config = '', sink = 'buffer_size = 5000'): string => `
status_interval_ms = 500
[[pipelines]]
name = "recv"
[pipelines.flow.format]
type = "json"
[[pipelines.plugin_sources]]
id = "in"
type = "otlp"
[pipelines.plugin_sources.config]
host = "127.0.0.1"
port = ${port}
${config}
[[pipelines.plugin_sinks]]
id = "out"
type = "stdout"
[pipelines.plugin_sinks.config]
${sink}
`;

/** A request an OTLP receiver in the test got, decoded by the oracle. */
export interface ReceivedRequest {
  readonly n: number;
  /** when its headers arrived (epoch ms) */
  readonly at: number;
  readonly headers: Record<string, string | string[] | undefined>;
  /** the body as sent (before inflating) */
  readonly raw: Buffer;
  /** the body inflated */
  readonly body: Buffer;
  /** the records' bodies (strings), in order */
  readonly messages: string[];
  /** the decoded request (protobufjs object form, or the parsed JSON) */
  readonly decoded: Record<string, unknown>;
}

export interface Answer {
  readonly status: number;
  readonly headers?: Record<string, string>;
  readonly body?: Buffer | string;
}

export interface OtlpReceiver {
  readonly port: number;
  readonly url: string;
  readonly requests: ReceivedRequest[];
  /** when each answer was sent (epoch ms), by request number */
  readonly answeredAt: number[];
  /** export requests with no records (a sink's first contact at start), not in `requests` */
  probes(): number;
  close(): Promise<void>;
}

/** A node:http OTLP receiver decoding with the oracle; `answer` scripts each response (default 200). */
export async function otlpReceiver(answer: (req: ReceivedRequest) => Answer = () => ({ status: 200 })): Promise<OtlpReceiver> {
  const { createServer } = await import('node:http');
  const { gunzipSync } = await import('node:zlib');
  const requests: ReceivedRequest[] = [];
  const answeredAt: number[] = [];
  let probes = 0;
  const srv = createServer((req, res) => {
    const at = Date.now();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const body = req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
      const json = String(req.headers['content-type']).startsWith('application/json');
      const decoded = json
        ? (JSON.parse(body.toString()) as Record<string, unknown>)
        : (ExportLogsServiceRequest.toObject(ExportLogsServiceRequest.decode(body), { longs: String, bytes: String }) as Record<string, unknown>);
      const messages: string[] = [];
      for (const rl of (decoded.resourceLogs as Msg[] | undefined) ?? []) {
        for (const sl of (rl.scopeLogs as Msg[] | undefined) ?? []) {
          for (const r of (sl.logRecords as Msg[] | undefined) ?? []) messages.push(String((r.body as Msg | undefined)?.stringValue));
        }
      }
      if (((decoded.resourceLogs as unknown[] | undefined) ?? []).length === 0) {
        // an export request with no records: a sink's first contact at start (its link check),
        // answered 200 and not numbered, so a script's request numbers count batches
        probes++;
        res.writeHead(200);
        res.end();
        return;
      }
      const got: ReceivedRequest = { n: requests.length, at, headers: req.headers, raw, body, messages, decoded };
      requests.push(got);
      const a = answer(got);
      answeredAt[got.n] = Date.now();
      res.writeHead(a.status, a.headers ?? {});
      res.end(a.body ?? '');
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as { port: number }).port;
  return {
    port,
    url: `http://127.0.0.1:${port}/v1/logs`,
    requests,
    answeredAt,
    probes: () => probes,
    close: () =>
      new Promise<void>((resolve) => {
        srv.closeAllConnections();
        srv.close(() => resolve());
      }),
  };
}

/** A pipeline `send`: stdin → otlp sink `out` exporting to `url`; `config` lines added to the sink's config. */
export const otlpSenderToml = (url: string, config = ''): string => `
status_interval_ms = 500
[[pipelines]]
name = "send"
[[pipelines.plugin_sources]]
type = "stdin"
[[pipelines.plugin_sinks]]
id = "out"
type = "otlp"
[pipelines.plugin_sinks.config]
endpoint = "${url}"
${config}
`;
