// ExportLogsServiceRequest from protobuf bytes, written for this schema (no reflection): field
// numbers from opentelemetry-proto (collector/logs/v1/logs_service.proto, logs/v1/logs.proto,
// common/v1/common.proto, resource/v1/resource.proto). A known field with another wire type than
// the schema's is skipped as unknown, as protobuf's own parsers do.

import { type Attributes, type AnyJson, emptyRecord, type OtlpLogRecord, type OtlpRequest, type OtlpResourceLogs, type OtlpScope, type OtlpScopeLogs, setKey } from './model.js';
import { type Nanos, ProtoError, ProtoReader } from './proto.js';

// tags: field << 3 | wire type
const T_LEN_1 = (1 << 3) | 2;
const T_LEN_2 = (2 << 3) | 2;

/**
 * Deepest nesting of AnyValues (arrays and kvlists) taken; deeper is refused (400) rather than
 * overflowing the stack here or in every JSON encoding after.
 */
export const MAX_ANY_DEPTH = 100;

/** Decodes a request; throws ProtoError saying what is wrong. */
export function decodeRequest(buf: Buffer): OtlpRequest {
  const r = new ProtoReader(buf);
  const out: OtlpRequest = [];
  while (r.more) {
    const tag = r.tag();
    if (tag === T_LEN_1) out.push(resourceLogs(r.sub()));
    else r.skip(tag & 7, tag >>> 3);
  }
  return out;
}

function resourceLogs(r: ProtoReader): OtlpResourceLogs {
  const out: OtlpResourceLogs = { resource: undefined, scopeLogs: [], size: 0 };
  while (r.more) {
    const tag = r.tag();
    if (tag === T_LEN_1) {
      const start = r.pos;
      out.resource = resource(r.sub(), out.resource);
      out.size += r.pos - start;
    } else if (tag === T_LEN_2) out.scopeLogs.push(scopeLogs(r.sub()));
    else r.skip(tag & 7, tag >>> 3);
  }
  return out;
}

/** Resource: attributes = 1 (a message given twice merges, as protobuf merges repeated fields). */
function resource(r: ProtoReader, into: Attributes | undefined): Attributes {
  const attrs: Attributes = into ?? {};
  while (r.more) {
    const tag = r.tag();
    if (tag === T_LEN_1) keyValue(r.sub(), attrs, 0);
    else r.skip(tag & 7, tag >>> 3);
  }
  return attrs;
}

function scopeLogs(r: ProtoReader): OtlpScopeLogs {
  const out: OtlpScopeLogs = { scope: undefined, records: [] };
  while (r.more) {
    const tag = r.tag();
    if (tag === T_LEN_1) out.scope = scope(r.sub(), out.scope);
    else if (tag === T_LEN_2) {
      const start = r.pos;
      const rec = logRecord(r.sub());
      rec.size = r.pos - start;
      out.records.push(rec);
    } else r.skip(tag & 7, tag >>> 3);
  }
  return out;
}

/** InstrumentationScope: name = 1, version = 2 (attributes = 3 and dropped_attributes_count = 4 are not mapped). */
function scope(r: ProtoReader, into: OtlpScope | undefined): OtlpScope {
  const out = into ?? { name: '', version: '' };
  while (r.more) {
    const tag = r.tag();
    if (tag === T_LEN_1) out.name = r.string();
    else if (tag === T_LEN_2) out.version = r.string();
    else r.skip(tag & 7, tag >>> 3);
  }
  return out;
}

const nanos: Nanos = { ms: 0, ns: 0 };

const T_TIME = (1 << 3) | 1;
const T_SEVERITY_NUMBER = 2 << 3;
const T_SEVERITY_TEXT = (3 << 3) | 2;
const T_BODY = (5 << 3) | 2;
const T_ATTRIBUTES = (6 << 3) | 2;
const T_FLAGS = (8 << 3) | 5;
const T_TRACE_ID = (9 << 3) | 2;
const T_SPAN_ID = (10 << 3) | 2;
const T_OBSERVED = (11 << 3) | 1;
const T_EVENT_NAME = (12 << 3) | 2;

function logRecord(r: ProtoReader): OtlpLogRecord {
  const rec = emptyRecord();
  while (r.more) {
    const tag = r.tag();
    switch (tag) {
      case T_TIME:
        r.nanos(nanos);
        rec.timeMs = nanos.ms;
        rec.timeNs = nanos.ns;
        break;
      case T_OBSERVED:
        r.nanos(nanos);
        rec.observedMs = nanos.ms;
        rec.observedNs = nanos.ns;
        break;
      case T_SEVERITY_NUMBER:
        // an enum is an int32; a negative one arrives as a ten-byte varint
        rec.severityNumber = r.uint32() | 0;
        break;
      case T_SEVERITY_TEXT:
        rec.severityText = r.string();
        break;
      case T_BODY:
        rec.body = anyValue(r.sub(), 0);
        rec.bodyBytes = lastWasBytes;
        break;
      case T_ATTRIBUTES:
        keyValue(r.sub(), (rec.attributes ??= {}), 0);
        break;
      case T_FLAGS:
        rec.flags = r.fixed32();
        break;
      case T_TRACE_ID:
        rec.traceId = r.hex();
        break;
      case T_SPAN_ID:
        rec.spanId = r.hex();
        break;
      case T_EVENT_NAME:
        rec.eventName = r.string();
        break;
      default:
        r.skip(tag & 7, tag >>> 3);
    }
  }
  return rec;
}

/** KeyValue: key = 1, value = 2; set on `into` (an empty or missing value as null). */
function keyValue(r: ProtoReader, into: Attributes, depth: number): void {
  let key = '';
  let value: AnyJson = null;
  while (r.more) {
    const tag = r.tag();
    if (tag === T_LEN_1) key = r.string();
    else if (tag === T_LEN_2) value = anyValue(r.sub(), depth) ?? null;
    else r.skip(tag & 7, tag >>> 3);
  }
  setKey(into, key, value);
}

const T_STRING = (1 << 3) | 2;
const T_BOOL = 2 << 3;
const T_INT = 3 << 3;
const T_DOUBLE = (4 << 3) | 1;
const T_ARRAY = (5 << 3) | 2;
const T_KVLIST = (6 << 3) | 2;
const T_BYTES = (7 << 3) | 2;

/** AnyValue in its JSON form; the last member of the oneof given wins, as in protobuf. */
/** The AnyValue anyValue() read last (at any depth: read it right after the call) was a bytesValue. */
let lastWasBytes = false;

function anyValue(r: ProtoReader, depth: number): AnyJson {
  let value: AnyJson;
  let bytes = false;
  while (r.more) {
    const tag = r.tag();
    if (tag === T_STRING || tag === T_BOOL || tag === T_INT || tag === T_DOUBLE || tag === T_ARRAY || tag === T_KVLIST) bytes = false;
    switch (tag) {
      case T_STRING:
        value = r.string();
        break;
      case T_BOOL:
        value = r.bool();
        break;
      case T_INT:
        value = r.int64();
        break;
      case T_DOUBLE:
        value = r.double();
        break;
      case T_ARRAY:
        value = arrayValue(r.sub(), depth + 1);
        break;
      case T_KVLIST:
        value = kvlistValue(r.sub(), depth + 1);
        break;
      case T_BYTES:
        value = r.base64();
        bytes = true;
        break;
      default:
        r.skip(tag & 7, tag >>> 3);
    }
  }
  lastWasBytes = bytes;
  return value;
}

function tooDeep(): never {
  throw new ProtoError(`AnyValue nested deeper than ${MAX_ANY_DEPTH} levels`);
}

/** ArrayValue: values = 1; an empty AnyValue in it is null. */
function arrayValue(r: ProtoReader, depth: number): AnyJson[] {
  if (depth > MAX_ANY_DEPTH) tooDeep();
  const out: AnyJson[] = [];
  while (r.more) {
    const tag = r.tag();
    if (tag === T_LEN_1) out.push(anyValue(r.sub(), depth) ?? null);
    else r.skip(tag & 7, tag >>> 3);
  }
  return out;
}

/** KeyValueList: values = 1. */
function kvlistValue(r: ProtoReader, depth: number): Attributes {
  if (depth > MAX_ANY_DEPTH) tooDeep();
  const out: Attributes = {};
  while (r.more) {
    const tag = r.tag();
    if (tag === T_LEN_1) keyValue(r.sub(), out, depth);
    else r.skip(tag & 7, tag >>> 3);
  }
  return out;
}
