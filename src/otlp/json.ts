// The JSON form of OTLP/HTTP (opentelemetry-proto docs/specification.md, "JSON Protobuf
// Encoding"): proto3 JSON with lowerCamelCase keys, trace and span ids as hex (any case on the
// way in), integer enums, 64-bit integers as decimal strings or numbers, unknown keys ignored.

import { type AnyJson, type Attributes, emptyRecord, type OtlpLogRecord, type OtlpRequest, type OtlpResourceLogs, type OtlpScopeLogs, setKey } from './model.js';
import { MAX_ANY_DEPTH } from './decode.js';
import { UID_ATTRIBUTE } from './map-in.js';
import { type Nanos, ProtoError, splitNanos } from './proto.js';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function fail(path: string, what: string): never {
  throw new ProtoError(`${path}: ${what}`);
}

function list(v: unknown, path: string): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) fail(path, 'must be an array');
  return v;
}

function object(v: unknown, path: string): Json | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isObject(v)) fail(path, 'must be an object');
  return v;
}

function str(v: unknown, path: string): string {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') fail(path, 'must be a string');
  return v;
}

/** A 32-bit integer (enum, uint32, fixed32) as a number or a decimal string. */
function int32(v: unknown, path: string): number {
  if (v === undefined || v === null) return 0;
  const n = typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n)) fail(path, 'must be an integer');
  return n;
}

const UINT64 = /^\d{1,20}$/;

/** A fixed64 of epoch nanoseconds, as a decimal string or a number. */
function nanos(v: unknown, path: string, into: Nanos): void {
  if (v === undefined || v === null) {
    into.ms = into.ns = 0;
    return;
  }
  let big: bigint;
  if (typeof v === 'string' && UINT64.test(v)) big = BigInt(v);
  else if (typeof v === 'number' && Number.isInteger(v) && v >= 0) big = BigInt(v);
  else fail(path, 'must be an unsigned 64-bit integer (a decimal string or a number)');
  if (big >= 1n << 64n) fail(path, 'is over 64 bits');
  splitNanos(Number(big & 0xffffffffn), Number(big >> 32n), into);
}

/** An int64 as a number when safe, else a decimal string. */
function int64(v: unknown, path: string): number | string {
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string' && /^-?\d{1,20}$/.test(v)) {
    const n = Number(v);
    if (Number.isSafeInteger(n)) return n;
    const big = BigInt(v);
    if (big >= 1n << 63n || big < -(1n << 63n)) fail(path, 'is over 64 bits');
    return big.toString();
  }
  return fail(path, 'must be a 64-bit integer (a decimal string or a number)');
}

const HEX = /^(?:[0-9a-fA-F]{2})*$/;

function hex(v: unknown, path: string): string {
  const s = str(v, path);
  if (!HEX.test(s)) fail(path, 'must be hex digits (an even number of them)');
  return s.toLowerCase();
}

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

function double(v: unknown, path: string): number {
  if (typeof v === 'number') return v;
  if (v === 'NaN') return Number.NaN;
  if (v === 'Infinity') return Number.POSITIVE_INFINITY;
  if (v === '-Infinity') return Number.NEGATIVE_INFINITY;
  if (typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v))) return Number(v);
  return fail(path, 'must be a number');
}

function anyValue(v: unknown, path: string, depth: number): AnyJson {
  const o = object(v, path);
  if (o === undefined) return undefined;
  // the oneof: the first member present counts (a sender gives one)
  if (o.stringValue !== undefined && o.stringValue !== null) return str(o.stringValue, `${path}.stringValue`);
  if (o.boolValue !== undefined && o.boolValue !== null) {
    if (typeof o.boolValue !== 'boolean') fail(`${path}.boolValue`, 'must be true or false');
    return o.boolValue;
  }
  if (o.intValue !== undefined && o.intValue !== null) return int64(o.intValue, `${path}.intValue`);
  if (o.doubleValue !== undefined && o.doubleValue !== null) return double(o.doubleValue, `${path}.doubleValue`);
  if (o.arrayValue !== undefined && o.arrayValue !== null) {
    if (depth >= MAX_ANY_DEPTH) fail(path, `AnyValue nested deeper than ${MAX_ANY_DEPTH} levels`);
    const values = list(object(o.arrayValue, `${path}.arrayValue`)?.values, `${path}.arrayValue.values`);
    return values.map((item, i) => anyValue(item, `${path}.arrayValue.values[${i}]`, depth + 1) ?? null);
  }
  if (o.kvlistValue !== undefined && o.kvlistValue !== null) {
    if (depth >= MAX_ANY_DEPTH) fail(path, `AnyValue nested deeper than ${MAX_ANY_DEPTH} levels`);
    const out: Attributes = {};
    keyValues(object(o.kvlistValue, `${path}.kvlistValue`)?.values, `${path}.kvlistValue.values`, out, depth + 1);
    return out;
  }
  if (o.bytesValue !== undefined && o.bytesValue !== null) {
    const s = str(o.bytesValue, `${path}.bytesValue`);
    if (!BASE64.test(s)) fail(`${path}.bytesValue`, 'must be base64');
    return Buffer.from(s, 'base64').toString('base64');
  }
  return undefined;
}

function keyValues(v: unknown, path: string, into: Attributes, depth: number): void {
  list(v, path).forEach((kv, i) => {
    const o = object(kv, `${path}[${i}]`);
    if (o === undefined) return;
    setKey(into, str(o.key, `${path}[${i}].key`), anyValue(o.value, `${path}[${i}].value`, depth) ?? null);
  });
}

function attributes(v: unknown, path: string): Attributes | undefined {
  const items = list(v, path);
  if (items.length === 0) return undefined;
  const out: Attributes = {};
  keyValues(items, path, out, 0);
  return out;
}

const t: Nanos = { ms: 0, ns: 0 };

function logRecord(v: unknown, path: string): OtlpLogRecord {
  const rec = emptyRecord();
  const o = object(v, path);
  if (o === undefined) return rec;
  nanos(o.timeUnixNano, `${path}.timeUnixNano`, t);
  rec.timeMs = t.ms;
  rec.timeNs = t.ns;
  nanos(o.observedTimeUnixNano, `${path}.observedTimeUnixNano`, t);
  rec.observedMs = t.ms;
  rec.observedNs = t.ns;
  rec.severityNumber = int32(o.severityNumber, `${path}.severityNumber`);
  rec.severityText = str(o.severityText, `${path}.severityText`);
  rec.body = anyValue(o.body, `${path}.body`, 0);
  if (rec.body !== undefined && isBytesAnyValue(o.body)) rec.bodyBytes = true;
  rec.attributes = attributes(o.attributes, `${path}.attributes`);
  rec.flags = int32(o.flags, `${path}.flags`) >>> 0;
  rec.traceId = hex(o.traceId, `${path}.traceId`);
  rec.spanId = hex(o.spanId, `${path}.spanId`);
  rec.eventName = str(o.eventName, `${path}.eventName`);
  return rec;
}

/** Decodes a request from JSON text; throws ProtoError saying what is wrong. */
export function decodeJsonRequest(text: string): OtlpRequest {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new ProtoError(`malformed JSON: ${(err as Error).message}`);
  }
  const root = object(doc, 'request');
  if (root === undefined) fail('request', 'must be an object');
  return list(root.resourceLogs, 'resourceLogs').map((rlv, i): OtlpResourceLogs => {
    const path = `resourceLogs[${i}]`;
    const rl = object(rlv, path) ?? {};
    const res = object(rl.resource, `${path}.resource`);
    return {
      resource: res === undefined ? undefined : (attributes(res.attributes, `${path}.resource.attributes`) ?? {}),
      size: 0,
      scopeLogs: list(rl.scopeLogs, `${path}.scopeLogs`).map((slv, j): OtlpScopeLogs => {
        const sp = `${path}.scopeLogs[${j}]`;
        const sl = object(slv, sp) ?? {};
        const sc = object(sl.scope, `${sp}.scope`);
        return {
          scope: sc === undefined ? undefined : { name: str(sc.name, `${sp}.scope.name`), version: str(sc.version, `${sp}.scope.version`) },
          records: list(sl.logRecords, `${sp}.logRecords`).map((r, k) => logRecord(r, `${sp}.logRecords[${k}]`)),
        };
      }),
    };
  });
}

/** Nanoseconds as the decimal string OTLP JSON gives 64-bit integers as. */
function nanosText(ms: number, ns: number): string {
  return (BigInt(ms) * 1_000_000n + BigInt(ns)).toString();
}

/** A JSON AnyValue whose value is its bytesValue (no other value key set, which would come first). */
function isBytesAnyValue(v: unknown): boolean {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as Record<string, unknown>;
  return o.bytesValue != null && ['stringValue', 'boolValue', 'intValue', 'doubleValue', 'arrayValue', 'kvlistValue'].every((k) => o[k] == null);
}

function anyJson(v: AnyJson): Json {
  switch (typeof v) {
    case 'string':
      return { stringValue: v };
    case 'boolean':
      return { boolValue: v };
    case 'number':
      if (Number.isSafeInteger(v)) return { intValue: String(v) };
      return { doubleValue: Number.isFinite(v) ? v : String(v) };
    case 'bigint':
      return { intValue: String(v) };
    case 'object':
      if (v === null) return {};
      if (Array.isArray(v)) return { arrayValue: { values: v.map(anyJson) } };
      return { kvlistValue: { values: keyValuesJson(v as Attributes) } };
    default:
      return {};
  }
}

function keyValuesJson(attrs: Attributes): Json[] {
  return Object.keys(attrs).map((key) => ({ key, value: anyJson(attrs[key]) }));
}

function recordJson(rec: OtlpLogRecord): Json {
  const o: Json = {};
  if (rec.timeMs !== 0 || rec.timeNs !== 0) o.timeUnixNano = nanosText(rec.timeMs, rec.timeNs);
  if (rec.observedMs !== 0 || rec.observedNs !== 0) o.observedTimeUnixNano = nanosText(rec.observedMs, rec.observedNs);
  if (rec.severityNumber !== 0) o.severityNumber = rec.severityNumber;
  if (rec.severityText) o.severityText = rec.severityText;
  if (rec.body !== undefined) o.body = rec.bodyBytes && typeof rec.body === 'string' ? { bytesValue: rec.body } : anyJson(rec.body);
  const attrs = rec.attributes === undefined ? [] : keyValuesJson(rec.attributes);
  if (rec.uid !== undefined) attrs.push({ key: UID_ATTRIBUTE, value: { stringValue: rec.uid } });
  if (attrs.length > 0) o.attributes = attrs;
  if (rec.flags !== 0) o.flags = rec.flags;
  if (rec.traceId) o.traceId = rec.traceId;
  if (rec.spanId) o.spanId = rec.spanId;
  if (rec.eventName) o.eventName = rec.eventName;
  return o;
}

/** A request as OTLP JSON text. */
export function encodeJsonRequest(req: OtlpRequest): string {
  return JSON.stringify({
    resourceLogs: req.map((rl) => ({
      ...(rl.resource === undefined ? {} : { resource: { attributes: keyValuesJson(rl.resource) } }),
      scopeLogs: rl.scopeLogs.map((sl) => ({
        ...(sl.scope === undefined ? {} : { scope: sl.scope }),
        logRecords: sl.records.map(recordJson),
      })),
    })),
  });
}
