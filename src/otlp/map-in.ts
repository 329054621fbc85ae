// LogRecord → entry (DESIGN.md §20 "Mapping in"): message, time, level, source and node from the
// record and its resource, everything else kept in `fields` so the way out can rebuild it.

import { type Entry, type Level, normaliseLevel } from '../core/entry.js';
import type { Attributes, OtlpLogRecord, OtlpRequest } from './model.js';

/** The attribute that carries an entry's id (DESIGN.md §14) through OTLP hops. */
export const UID_ATTRIBUTE = 'log.record.uid';

const SEVERITY_LEVELS: readonly Level[] = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'];

/** severity_number 1–24 in steps of four, else severity_text as §4 names levels, else none. */
export function levelOf(severityNumber: number, severityText: string): Level | undefined {
  if (severityNumber >= 1 && severityNumber <= 24) return SEVERITY_LEVELS[(severityNumber - 1) >> 2];
  return severityText ? normaliseLevel(severityText) : undefined;
}

let lastSecond = Number.NaN;
let lastPrefix = '';

/** RFC 3339 with nine fraction digits; records of a request share their second, so its text is made once. */
export function nanoTime(ms: number, ns: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== lastSecond) {
    lastPrefix = new Date(second * 1000).toISOString().slice(0, -5); // without ".000Z"
    lastSecond = second;
  }
  return `${lastPrefix}.${String((ms - second * 1000) * 1_000_000 + ns).padStart(9, '0')}Z`;
}

export interface MapInResult {
  readonly entries: Entry[];
  /** records whose entry would be over `max_line_bytes` as JSON: not taken */
  readonly rejected: number;
}

/**
 * Maps every record of a request. `now`: the receive time (records without either time get it);
 * `maxLineBytes`: the most one entry may take as JSON; `wholeBytes`: the request's size as
 * received when its records carry no size of their own (JSON), so small requests skip the check.
 */
export function mapRequest(req: OtlpRequest, now: number, maxLineBytes: number, wholeBytes = 0): MapInResult {
  const entries: Entry[] = [];
  let rejected = 0;
  const fits = (bytes: number) => bytes * 8 + 1024 <= maxLineBytes;
  const wholeFits = fits(wholeBytes);
  for (const rl of req) {
    const resource: Attributes = rl.resource ?? {};
    const serviceName = resource['service.name'];
    const hostName = resource['host.name'];
    const node = typeof hostName === 'string' && hostName !== '' ? hostName : undefined;
    for (const sl of rl.scopeLogs) {
      const scope = sl.scope;
      const source = typeof serviceName === 'string' && serviceName !== '' ? serviceName : scope?.name ? scope.name : 'otlp';
      const scopeField = scope ? { name: scope.name, version: scope.version } : undefined;
      const scopeBytes = scope ? scope.name.length * 3 + scope.version.length * 3 : 0;
      for (const rec of sl.records) {
        const entry = mapRecord(rec, now, source, node, resource, scopeField);
        // a record's JSON is at most about 8 × its protobuf size (control characters escaped
        // take 6, empty values 4 or 5): only records near the cap are measured
        if (!(rec.size > 0 ? fits(rec.size + rl.size + scopeBytes) : wholeFits) && Buffer.byteLength(JSON.stringify(entry)) > maxLineBytes) {
          rejected++;
          continue;
        }
        entries.push(entry);
      }
    }
  }
  return { entries, rejected };
}

function mapRecord(rec: OtlpLogRecord, now: number, source: string, node: string | undefined, resource: Attributes, scope: { name: string; version: string } | undefined): Entry {
  const hasTime = rec.timeMs !== 0 || rec.timeNs !== 0;
  const hasObserved = rec.observedMs !== 0 || rec.observedNs !== 0;
  const time = hasTime ? rec.timeMs : hasObserved ? rec.observedMs : now;
  const body = rec.body;
  const fields: Record<string, unknown> = {};
  let message: string;
  if (rec.bodyBytes && typeof body === 'string') {
    // bytes keep their kind: a string body that reads as base64 stays a string
    message = JSON.stringify(body);
    fields.body = { bytesValue: body };
  } else if (typeof body === 'string') message = body;
  else if (body === undefined) message = '';
  else {
    message = JSON.stringify(body);
    fields.body = body;
  }
  let id: string | undefined;
  let attributes = rec.attributes;
  if (attributes !== undefined) {
    const uid = attributes[UID_ATTRIBUTE];
    if (typeof uid === 'string' && uid !== '') {
      id = uid;
      delete attributes[UID_ATTRIBUTE];
      let any = false;
      for (const _ in attributes) {
        any = true;
        break;
      }
      if (!any) attributes = undefined;
    }
    if (attributes !== undefined) fields.attributes = attributes;
  }
  fields.resource = resource;
  if (scope !== undefined) fields.scope = scope;
  if (rec.traceId) fields.trace_id = rec.traceId;
  if (rec.spanId) fields.span_id = rec.spanId;
  if (rec.flags !== 0) fields.flags = rec.flags;
  if (rec.severityNumber !== 0) fields.severity_number = rec.severityNumber;
  if (rec.severityText) fields.severity_text = rec.severityText;
  if (rec.eventName) fields.event_name = rec.eventName;
  if (hasObserved) fields.observed_time = nanoTime(rec.observedMs, rec.observedNs);
  if (hasTime && rec.timeNs !== 0) fields.time_nanos = nanoTime(rec.timeMs, rec.timeNs);
  const entry: Entry = { time, source, message, fields };
  if (node !== undefined) entry.node = node;
  const level = levelOf(rec.severityNumber, rec.severityText);
  if (level !== undefined) entry.level = level;
  if (id !== undefined) entry.id = id;
  return entry;
}
