// ExportLogsServiceRequest to protobuf bytes (the inverse of decode.ts, same field numbers);
// AnyValues from their JSON form: an integer that is a safe integer as int_value, other numbers
// as double_value, objects as kvlists, null as an empty AnyValue.

import { UID_ATTRIBUTE } from './map-in.js';
import type { AnyJson, Attributes, OtlpLogRecord, OtlpRequest } from './model.js';
import { ProtoWriter, WIRE_FIXED32, WIRE_FIXED64, WIRE_VARINT } from './proto.js';

/** Encodes a request; the Buffer is the writer's own (a fresh one per call). */
export function encodeRequest(req: OtlpRequest): Buffer {
  const w = new ProtoWriter();
  for (const rl of req) {
    const rlAt = w.open(1);
    if (rl.resource !== undefined) {
      const at = w.open(1);
      attributes(w, 1, rl.resource);
      w.close(at);
    }
    for (const sl of rl.scopeLogs) {
      const slAt = w.open(2);
      if (sl.scope !== undefined) {
        const at = w.open(1);
        if (sl.scope.name) w.string(1, sl.scope.name);
        if (sl.scope.version) w.string(2, sl.scope.version);
        w.close(at);
      }
      for (const rec of sl.records) {
        const at = w.open(2);
        logRecord(w, rec);
        w.close(at);
      }
      w.close(slAt);
    }
    w.close(rlAt);
  }
  return w.finish();
}

function logRecord(w: ProtoWriter, rec: OtlpLogRecord): void {
  if (rec.timeMs !== 0 || rec.timeNs !== 0) {
    w.tag(1, WIRE_FIXED64);
    w.nanos(rec.timeMs, rec.timeNs);
  }
  if (rec.severityNumber !== 0) {
    w.tag(2, WIRE_VARINT);
    w.int64(rec.severityNumber);
  }
  if (rec.severityText) w.string(3, rec.severityText);
  if (rec.body !== undefined) {
    const at = w.open(5);
    if (rec.bodyBytes && typeof rec.body === 'string') w.bytes(7, rec.body, 'base64');
    else anyValue(w, rec.body);
    w.close(at);
  }
  if (rec.attributes !== undefined) attributes(w, 6, rec.attributes);
  if (rec.uid !== undefined) {
    const at = w.open(6);
    w.string(1, UID_ATTRIBUTE);
    const v = w.open(2);
    w.string(1, rec.uid);
    w.close(v);
    w.close(at);
  }
  if (rec.flags !== 0) {
    w.tag(8, WIRE_FIXED32);
    w.fixed32(rec.flags);
  }
  if (rec.traceId) w.bytes(9, rec.traceId, 'hex');
  if (rec.spanId) w.bytes(10, rec.spanId, 'hex');
  if (rec.observedMs !== 0 || rec.observedNs !== 0) {
    w.tag(11, WIRE_FIXED64);
    w.nanos(rec.observedMs, rec.observedNs);
  }
  if (rec.eventName) w.string(12, rec.eventName);
}

/** Every key of `attrs` as a KeyValue in field `field`. */
function attributes(w: ProtoWriter, field: number, attrs: Attributes): void {
  for (const key of Object.keys(attrs)) {
    const at = w.open(field);
    if (key) w.string(1, key);
    const value = attrs[key];
    const v = w.open(2);
    anyValue(w, value);
    w.close(v);
    w.close(at);
  }
}

function anyValue(w: ProtoWriter, value: AnyJson): void {
  switch (typeof value) {
    case 'string':
      w.string(1, value);
      return;
    case 'boolean':
      w.tag(2, WIRE_VARINT);
      w.varint(value ? 1 : 0);
      return;
    case 'number':
      if (Number.isSafeInteger(value)) {
        w.tag(3, WIRE_VARINT);
        w.int64(value);
      } else {
        w.tag(4, WIRE_FIXED64);
        w.double(value);
      }
      return;
    case 'bigint':
      w.tag(3, WIRE_VARINT);
      w.int64(String(BigInt.asIntN(64, value)));
      return;
    case 'object': {
      if (value === null) return;
      if (Array.isArray(value)) {
        const at = w.open(5);
        for (const item of value as unknown[]) {
          const v = w.open(1);
          anyValue(w, item);
          w.close(v);
        }
        w.close(at);
        return;
      }
      const at = w.open(6);
      attributes(w, 1, value as Attributes);
      w.close(at);
      return;
    }
    default:
    // undefined, functions, symbols: an empty AnyValue
  }
}
