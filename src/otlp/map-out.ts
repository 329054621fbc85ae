// Entry → LogRecord (DESIGN.md §20 "Mapping out"), the inverse of map-in: records grouped by
// resource and scope; entries that came from OTLP give back what they carried in `fields`,
// others get a resource of their source and node and their fields as attributes.

import type { Entry, Level } from '../core/entry.js';
import { readRfc3339, type TimeParts } from '../core/time.js';
import { type Attributes, emptyRecord, type OtlpLogRecord, type OtlpRequest, type OtlpResourceLogs, type OtlpScope, type OtlpScopeLogs, setKey } from './model.js';
import type { Nanos } from './proto.js';

const LEVEL_SEVERITY: Readonly<Record<Level, number>> = { TRACE: 1, DEBUG: 5, INFO: 9, WARN: 13, ERROR: 17, FATAL: 21 };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const HEX = /^(?:[0-9a-f]{2})*$/;

const parts: TimeParts = { ns: 0, digits: 0 };

/**
 * RFC 3339 text as ms and ns; false when it is not one. Nine fraction digits at most (no more are
 * kept) and `T` or `t` between date and time, as OTLP has always read them.
 */
export function parseNanoTime(text: unknown, into: Nanos): boolean {
  if (typeof text !== 'string' || text.charCodeAt(10) === 32 /* space */) return false;
  const ms = readRfc3339(text, parts);
  if (Number.isNaN(ms) || parts.digits > 9) return false;
  into.ms = ms;
  into.ns = parts.ns;
  return true;
}

/** A record with the resource and scope it goes under (and their keys, to group by). */
export interface Placed {
  readonly rkey: string;
  readonly resource: Attributes;
  readonly skey: string;
  readonly scope: OtlpScope | undefined;
  readonly record: OtlpLogRecord;
}

let lastResource: unknown;
let lastKey = '';
const t: Nanos = { ms: 0, ns: 0 };

/**
 * `fields.k8s` as the OpenTelemetry semantic conventions name its parts (DESIGN.md §24), with
 * `k8s.node.name` the entry's node: so container entries arrive with the keys backends query.
 */
function k8sResource(k8s: Record<string, unknown>, source: string, node: string): Attributes {
  const r: Attributes = { 'service.name': source, 'host.name': node };
  if (typeof k8s.namespace === 'string') r['k8s.namespace.name'] = k8s.namespace;
  if (typeof k8s.pod === 'string') r['k8s.pod.name'] = k8s.pod;
  if (typeof k8s.pod_uid === 'string') r['k8s.pod.uid'] = k8s.pod_uid;
  if (typeof k8s.container === 'string') r['k8s.container.name'] = k8s.container;
  if (typeof k8s.restart_count === 'number') r['k8s.container.restart_count'] = k8s.restart_count;
  r['k8s.node.name'] = node;
  return r;
}

// the lines of one container file share their metadata object: their resource is made once
let lastK8s: unknown;
let lastK8sSource = '';
let lastK8sNode = '';
let lastK8sResource: Attributes = {};

/** Trace and span ids of entries that did not come from OTLP: 32 and 16 hex digits. */
const TRACE_ID = /^[0-9a-fA-F]{32}$/;
const SPAN_ID = /^[0-9a-fA-F]{16}$/;

/**
 * An entry's record and where it goes. `node`: this node's name, for entries without one; `now`:
 * the observed time of entries that carry none (the time the sink took them).
 */
export function placeEntry(entry: Entry, node: string, now: number): Placed {
  const fields = entry.fields;
  const fromOtlp = fields !== undefined && isObject(fields.resource);
  let resource: Attributes;
  if (fromOtlp) resource = fields.resource as Attributes;
  else if (fields !== undefined && isObject(fields.k8s)) {
    const host = entry.node ?? node;
    if (fields.k8s !== lastK8s || entry.source !== lastK8sSource || host !== lastK8sNode) {
      lastK8s = fields.k8s;
      lastK8sSource = entry.source;
      lastK8sNode = host;
      lastK8sResource = k8sResource(fields.k8s, entry.source, host);
    }
    resource = lastK8sResource;
  } else resource = { 'service.name': entry.source, 'host.name': entry.node ?? node };
  // entries of one request share their resource object
  if (resource !== lastResource) {
    lastKey = JSON.stringify(resource);
    lastResource = resource;
  }
  let scope: OtlpScope | undefined;
  if (fromOtlp && isObject(fields.scope)) {
    const { name, version } = fields.scope;
    scope = { name: typeof name === 'string' ? name : '', version: typeof version === 'string' ? version : '' };
  }
  const skey = scope === undefined ? '' : `${scope.name}\0${scope.version}\0`;
  return { rkey: lastKey, resource, skey, scope, record: recordOf(entry, fromOtlp, now, t) };
}

/** The request of `placed[from..to)`, grouped by resource, then scope, in order of first appearance. */
export function groupPlaced(placed: readonly Placed[], from = 0, to = placed.length): OtlpRequest {
  const resources = new Map<string, { rl: OtlpResourceLogs; scopes: Map<string, OtlpScopeLogs> }>();
  for (let i = from; i < to; i++) {
    const p = placed[i]!;
    let group = resources.get(p.rkey);
    if (group === undefined) {
      group = { rl: { resource: p.resource, scopeLogs: [], size: 0 }, scopes: new Map() };
      resources.set(p.rkey, group);
    }
    let sl = group.scopes.get(p.skey);
    if (sl === undefined) {
      sl = { scope: p.scope, records: [] };
      group.scopes.set(p.skey, sl);
      group.rl.scopeLogs.push(sl);
    }
    sl.records.push(p.record);
  }
  return [...resources.values()].map((g) => g.rl);
}

function recordOf(entry: Entry, fromOtlp: boolean, now: number, t: Nanos): OtlpLogRecord {
  const rec = emptyRecord();
  const f = entry.fields ?? {};
  rec.body = f.body !== undefined ? f.body : entry.message;
  // a bytes body, as the way in keeps it: `{ bytesValue: <base64> }`
  if (isObject(f.body) && typeof f.body.bytesValue === 'string' && Object.keys(f.body).length === 1) {
    rec.body = f.body.bytesValue;
    rec.bodyBytes = true;
  }
  if (parseNanoTime(f.time_nanos, t)) {
    rec.timeMs = t.ms;
    rec.timeNs = t.ns;
  } else {
    rec.timeMs = entry.time;
  }
  if (parseNanoTime(f.observed_time, t)) {
    rec.observedMs = t.ms;
    rec.observedNs = t.ns;
  } else {
    rec.observedMs = now;
  }
  const sn = f.severity_number;
  rec.severityNumber = typeof sn === 'number' && Number.isInteger(sn) ? sn : entry.level ? LEVEL_SEVERITY[entry.level] : 0;
  rec.severityText = typeof f.severity_text === 'string' ? f.severity_text : (entry.level ?? '');
  if (fromOtlp) {
    if (isObject(f.attributes)) rec.attributes = f.attributes;
    if (typeof f.trace_id === 'string' && HEX.test(f.trace_id)) rec.traceId = f.trace_id;
    if (typeof f.span_id === 'string' && HEX.test(f.span_id)) rec.spanId = f.span_id;
    if (typeof f.flags === 'number') rec.flags = f.flags >>> 0;
    if (typeof f.event_name === 'string') rec.eventName = f.event_name;
  } else if (entry.fields !== undefined) {
    let attrs: Attributes | undefined;
    for (const key of Object.keys(entry.fields)) {
      const v = entry.fields[key];
      if (key === 'body') continue;
      // the resource carries them (see placeEntry)
      if (key === 'k8s' && isObject(v)) continue;
      if (key === 'trace_id' && typeof v === 'string' && TRACE_ID.test(v)) {
        rec.traceId = v.toLowerCase();
        continue;
      }
      if (key === 'span_id' && typeof v === 'string' && SPAN_ID.test(v)) {
        rec.spanId = v.toLowerCase();
        continue;
      }
      setKey((attrs ??= {}), key, v);
    }
    rec.attributes = attrs;
  }
  if (entry.id !== undefined) rec.uid = entry.id;
  return rec;
}

/** About how many bytes a value takes encoded (protobuf or JSON alike, roughly): for batch sizes, without encoding. */
export function approxSize(value: unknown, depth = 0): number {
  switch (typeof value) {
    case 'string':
      return value.length + 4;
    case 'object': {
      if (value === null || depth > 32) return 4;
      let n = 4;
      if (Array.isArray(value)) for (const v of value as unknown[]) n += approxSize(v, depth + 1) + 2;
      else for (const k in value) n += k.length + 6 + approxSize((value as Record<string, unknown>)[k], depth + 1);
      return n;
    }
    default:
      return 10;
  }
}
