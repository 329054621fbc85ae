// The OTLP logs request as both encodings (protobuf, JSON) decode into and encode from: the
// schema's messages with what the entry mapping (DESIGN.md §20) needs. AnyValues are held in
// their JSON form already (string, bool and double as they are; int a number when safe, else a
// decimal string; bytes base64; array an array; kvlist an object), so decoding makes them once.

/** A JSON value as an AnyValue maps to (undefined: an empty AnyValue). */
export type AnyJson = unknown;

/** A KeyValue list as an object; a key given twice keeps its last value. */
export type Attributes = Record<string, AnyJson>;

export interface OtlpLogRecord {
  /** time_unix_nano as whole epoch ms and the nanoseconds past them; both 0: unset */
  timeMs: number;
  timeNs: number;
  /** observed_time_unix_nano, likewise */
  observedMs: number;
  observedNs: number;
  /** 0: unspecified */
  severityNumber: number;
  severityText: string;
  /** undefined: no body */
  body: AnyJson;
  /** the body is a bytesValue (its base64 in `body`), not a string that looks like one */
  bodyBytes?: boolean;
  /** undefined: none */
  attributes: Attributes | undefined;
  /** fixed32 */
  flags: number;
  /** lower-case hex; '' when unset */
  traceId: string;
  spanId: string;
  eventName: string;
  /** the record's size as received in protobuf (0 from JSON): a bound on its mapped size */
  size: number;
  /** encoding only: the entry id, written as one more attribute `log.record.uid` */
  uid?: string;
}

export interface OtlpScope {
  name: string;
  version: string;
}

export interface OtlpScopeLogs {
  /** undefined: no scope message */
  scope: OtlpScope | undefined;
  records: OtlpLogRecord[];
}

export interface OtlpResourceLogs {
  /** the resource's attributes; undefined: no resource message */
  resource: Attributes | undefined;
  scopeLogs: OtlpScopeLogs[];
  /** the resource's size as received in protobuf (0 from JSON) */
  size: number;
}

export type OtlpRequest = OtlpResourceLogs[];

export function emptyRecord(): OtlpLogRecord {
  return {
    timeMs: 0,
    timeNs: 0,
    observedMs: 0,
    observedNs: 0,
    severityNumber: 0,
    severityText: '',
    body: undefined,
    attributes: undefined,
    flags: 0,
    traceId: '',
    spanId: '',
    eventName: '',
    size: 0,
  };
}

/** Sets `key` on `obj` as an own property, `__proto__` included (plain assignment would change the prototype). */
export function setKey(obj: Attributes, key: string, value: AnyJson): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

/** The request's log records, counted. */
export function recordCount(req: OtlpRequest): number {
  let n = 0;
  for (const rl of req) for (const sl of rl.scopeLogs) n += sl.records.length;
  return n;
}
