// The OTLP codec against protobufjs as the oracle (the schema typed in test/helpers/otlp.ts):
// random ExportLogsServiceRequests with every field, unknown fields, every AnyValue kind, empty and
// 1 MiB values and deep kvlists decode to the same entries through our decoder (protobuf and JSON)
// as through the oracle's; and what our sink encodes decodes in the oracle to the same records.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import test, { type ExecutionContext } from 'ava';
import fc from 'fast-check';
import type { Entry } from '../../src/core/entry.js';
import { decodeRequest, MAX_ANY_DEPTH } from '../../src/otlp/decode.js';
import { encodeRequest } from '../../src/otlp/encode.js';
import { decodeJsonRequest, encodeJsonRequest } from '../../src/otlp/json.js';
import { levelOf, mapRequest, nanoTime } from '../../src/otlp/map-in.js';
import { emptyRecord } from '../../src/otlp/model.js';
import { groupPlaced, parseNanoTime, placeEntry } from '../../src/otlp/map-out.js';
import { ProtoError, ProtoReader, ProtoWriter, splitNanos } from '../../src/otlp/proto.js';
import { decodeExportResponse, encodeExportResponse, encodeStatus } from '../../src/otlp/response.js';
import { ROOT } from '../helpers/node.js';
import { ExportLogsServiceRequest, ExportLogsServiceResponse, oracleToModel, Status } from '../helpers/otlp.js';

const NOW = Date.UTC(2026, 10, 25, 12, 0, 0);
const HUGE = 1 << 30;
const MIB = 'x'.repeat(1 << 20);

type Obj = Record<string, unknown>;

const uint64 = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }).map(String);
const int64 = fc.oneof(fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n }), fc.bigInt({ min: -1000n, max: 1000n })).map(String);
const text = fc.oneof({ weight: 60, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) }, { weight: 1, arbitrary: fc.constant(MIB) }, { weight: 2, arbitrary: fc.constant('') });
const bytes = (max: number) => fc.uint8Array({ maxLength: max });

interface AnyOpts {
  readonly bytes: boolean;
}

/** AnyValue objects (protobufjs fromObject form), one oneof member or none, nested arrays and kvlists. */
function anyValues(opts: AnyOpts) {
  return fc.letrec<{ any: Obj; kv: Obj }>((tie) => ({
    any: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.record({ stringValue: text }),
      fc.record({ boolValue: fc.boolean() }),
      fc.record({ intValue: int64 }),
      fc.record({ doubleValue: fc.double().filter((d) => !Object.is(d, -0)) }),
      ...(opts.bytes ? [fc.record({ bytesValue: bytes(20) })] : []),
      fc.record({ stringValueStrindex: fc.integer() }),
      fc.constant({}),
      fc.record({ arrayValue: fc.record({ values: fc.array(tie('any'), { maxLength: 4 }) }) }),
      fc.record({ kvlistValue: fc.record({ values: fc.array(tie('kv'), { maxLength: 4 }) }) }),
    ),
    kv: fc.record(
      {
        key: fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('service.name', 'host.name', 'log.record.uid', '__proto__', 'toString', '')),
        value: tie('any'),
        keyStrindex: fc.integer(),
      },
      { requiredKeys: ['key'] },
    ),
  }));
}

interface ReqOpts extends AnyOpts {
  /** records always carry both times, a severity number and a severity text (what survives a round trip) */
  readonly roundTrip: boolean;
}

function requests(opts: ReqOpts) {
  const { any, kv } = anyValues(opts);
  const attrs = fc.array(kv, { maxLength: 5 });
  const uid = fc.record({ key: fc.constant('log.record.uid'), value: fc.record({ stringValue: fc.string({ minLength: 1, maxLength: 40 }) }) });
  const nonZero64 = fc.bigInt({ min: 1n, max: (1n << 64n) - 1n }).map(String);
  const record = fc.record(
    {
      timeUnixNano: opts.roundTrip ? nonZero64 : uint64,
      observedTimeUnixNano: opts.roundTrip ? nonZero64 : uint64,
      severityNumber: opts.roundTrip ? fc.integer({ min: 1, max: 30 }) : fc.oneof(fc.integer({ min: 0, max: 30 }), fc.integer()),
      severityText: opts.roundTrip ? fc.oneof(fc.string({ minLength: 1, maxLength: 8 }), fc.constantFrom('warn', 'Error', 'INFO')) : fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('warn', 'Error', 'INFO', 'fatal')),
      body: opts.roundTrip ? any.filter((v) => !('bytesValue' in v)) : any,
      attributes: fc.oneof(attrs, attrs.chain((a) => uid.map((u) => [...a, u]))),
      droppedAttributesCount: fc.nat(),
      flags: fc.nat({ max: 0xffffffff }),
      traceId: bytes(16),
      spanId: bytes(8),
      eventName: fc.string({ maxLength: 8 }),
    },
    { requiredKeys: opts.roundTrip ? ['timeUnixNano', 'observedTimeUnixNano', 'severityNumber', 'severityText'] : [] },
  );
  const scope = fc.record({ name: fc.string({ maxLength: 8 }), version: fc.string({ maxLength: 4 }), attributes: attrs, droppedAttributesCount: fc.nat() }, { requiredKeys: [] });
  const entityRef = fc.record({ schemaUrl: fc.string(), type: fc.string(), idKeys: fc.array(fc.string(), { maxLength: 2 }) }, { requiredKeys: [] });
  const resource = fc.record({ attributes: attrs, droppedAttributesCount: fc.nat(), entityRefs: fc.array(entityRef, { maxLength: 2 }) }, { requiredKeys: [] });
  const scopeLogs = fc.record({ scope, logRecords: fc.array(record, { maxLength: 4 }), schemaUrl: fc.string({ maxLength: 6 }) }, { requiredKeys: [] });
  const resourceLogs = fc.record({ resource, scopeLogs: fc.array(scopeLogs, { maxLength: 3 }), schemaUrl: fc.string({ maxLength: 6 }) }, { requiredKeys: [] });
  return fc.record({ resourceLogs: fc.array(resourceLogs, { maxLength: 3 }) });
}

/** Unknown fields (numbers the schema leaves free) appended to a message: every reader must skip them. */
function withUnknownFields(buf: Uint8Array): Buffer {
  const w = new ProtoWriter();
  w.tag(99, 0);
  w.varint(12345);
  w.tag(100, 1);
  w.double(1.5);
  w.string(101, 'unknown');
  w.tag(102, 5);
  w.fixed32(7);
  return Buffer.concat([buf, w.finish()]);
}

/** deepEqual through node:util (ava's own comparison is slow on thousands of large values), ava's diff when they differ. */
function same(t: ExecutionContext, actual: unknown, expected: unknown): void {
  if (isDeepStrictEqual(actual, expected)) t.pass();
  else t.deepEqual(actual, expected);
}

const oracleEntries = (buf: Uint8Array): Entry[] => mapRequest(oracleToModel(ExportLogsServiceRequest.decode(buf) as unknown as Obj), NOW, HUGE).entries;

/** The request as OTLP JSON: protobufjs's proto3 JSON with hex ids (in random case). */
function otlpJson(obj: Obj, upper: boolean): string {
  const json = ExportLogsServiceRequest.toObject(ExportLogsServiceRequest.fromObject(obj), { longs: String, bytes: String, json: true }) as Obj;
  for (const rl of (json.resourceLogs as Obj[] | undefined) ?? []) {
    for (const sl of (rl.scopeLogs as Obj[] | undefined) ?? []) {
      for (const r of (sl.logRecords as Obj[] | undefined) ?? []) {
        for (const k of ['traceId', 'spanId']) {
          if (typeof r[k] === 'string') {
            const hex = Buffer.from(r[k], 'base64').toString('hex');
            r[k] = upper ? hex.toUpperCase() : hex;
          }
        }
      }
    }
  }
  return JSON.stringify(json);
}

test('random requests encoded by the oracle decode to the same entries through our protobuf and JSON decoders', (t) => {
  t.timeout(120_000);
  let records = 0;
  fc.assert(
    fc.property(requests({ bytes: true, roundTrip: false }), fc.boolean(), (obj, upper) => {
      const buf = ExportLogsServiceRequest.encode(ExportLogsServiceRequest.fromObject(obj)).finish();
      const expected = oracleEntries(buf);
      records += expected.length;
      same(t, mapRequest(decodeRequest(Buffer.from(buf)), NOW, HUGE).entries, expected);
      same(t, mapRequest(decodeRequest(withUnknownFields(buf)), NOW, HUGE).entries, expected);
      same(t, mapRequest(decodeJsonRequest(otlpJson(obj, upper)), NOW, HUGE).entries, expected);
    }),
    { numRuns: 2000, seed: 2811 },
  );
  t.true(records > 2000, `only ${records} records were checked`);
});

/** Entries in a stable order (the way out regroups records by resource and scope). */
const sorted = (entries: Entry[]) => entries.map((e) => JSON.stringify(e)).sort();

test('what our sink encodes (protobuf and JSON) decodes in the oracle to the same records, mapped to the same entries', (t) => {
  t.timeout(120_000);
  let records = 0;
  fc.assert(
    fc.property(requests({ bytes: false, roundTrip: true }), (obj) => {
      const entries = oracleEntries(ExportLogsServiceRequest.encode(ExportLogsServiceRequest.fromObject(obj)).finish());
      records += entries.length;
      const out = groupPlaced(entries.map((e) => placeEntry(e, 'this-node', NOW)));
      const proto = encodeRequest(out);
      same(t, sorted(oracleEntries(proto)), sorted(entries));
      same(t, sorted(mapRequest(decodeJsonRequest(encodeJsonRequest(out)), NOW, HUGE).entries), sorted(entries));
    }),
    { numRuns: 2000, seed: 2812 },
  );
  t.true(records > 2000, `only ${records} records were checked`);
});

test('mapping in follows DESIGN.md §20: message, level, source, node, id and fields', (t) => {
  const obj = {
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'checkout' } }, { key: 'host.name', value: { stringValue: 'web-1' } }] },
        scopeLogs: [
          {
            scope: { name: 'lib', version: '1.2' },
            logRecords: [
              {
                timeUnixNano: '1700000000123456789',
                observedTimeUnixNano: '1700000001000000000',
                severityNumber: 14,
                severityText: 'Warning',
                body: { kvlistValue: { values: [{ key: 'a', value: { intValue: '9007199254740993' } }] } },
                attributes: [
                  { key: 'log.record.uid', value: { stringValue: 'abc.1' } },
                  { key: 'bytes', value: { bytesValue: Buffer.from([1, 2, 3]) } },
                ],
                flags: 1,
                traceId: Buffer.from('0102030405060708090a0b0c0d0e0f10', 'hex'),
                spanId: Buffer.from('1112131415161718', 'hex'),
                eventName: 'ev',
              },
              { severityText: 'err', body: { stringValue: 'plain' } },
            ],
          },
        ],
      },
      { scopeLogs: [{ logRecords: [{ body: { doubleValue: 1.5 } }] }, { scope: { name: 'only-scope' }, logRecords: [{}] }] },
    ],
  };
  const buf = Buffer.from(ExportLogsServiceRequest.encode(ExportLogsServiceRequest.fromObject(obj)).finish());
  const { entries } = mapRequest(decodeRequest(buf), NOW, HUGE);
  const resource = { 'service.name': 'checkout', 'host.name': 'web-1' };
  t.deepEqual(entries, [
    {
      time: 1700000000123,
      source: 'checkout',
      node: 'web-1',
      level: 'WARN',
      id: 'abc.1',
      message: '{"a":"9007199254740993"}',
      fields: {
        body: { a: '9007199254740993' },
        attributes: { bytes: 'AQID' },
        resource,
        scope: { name: 'lib', version: '1.2' },
        trace_id: '0102030405060708090a0b0c0d0e0f10',
        span_id: '1112131415161718',
        flags: 1,
        severity_number: 14,
        severity_text: 'Warning',
        event_name: 'ev',
        observed_time: '2023-11-14T22:13:21.000000000Z',
        time_nanos: '2023-11-14T22:13:20.123456789Z',
      },
    },
    { time: NOW, source: 'checkout', node: 'web-1', level: 'ERROR', message: 'plain', fields: { resource, scope: { name: 'lib', version: '1.2' }, severity_text: 'err' } },
    { time: NOW, source: 'otlp', message: '1.5', fields: { body: 1.5, resource: {} } },
    { time: NOW, source: 'only-scope', message: '', fields: { resource: {}, scope: { name: 'only-scope', version: '' } } },
  ]);
});

test('severity numbers map by fours, else the text as §4 names levels', (t) => {
  t.deepEqual(
    [1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24].map((n) => levelOf(n, '')),
    ['TRACE', 'TRACE', 'DEBUG', 'DEBUG', 'INFO', 'INFO', 'WARN', 'WARN', 'ERROR', 'ERROR', 'FATAL', 'FATAL'],
  );
  t.is(levelOf(0, 'warning'), 'WARN');
  t.is(levelOf(25, 'CRITICAL'), 'FATAL');
  t.is(levelOf(0, 'verbose'), undefined);
});

test('nanosecond times split and join exactly across the 64-bit range', (t) => {
  fc.assert(
    fc.property(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), (v) => {
      const into = { ms: 0, ns: 0 };
      splitNanos(Number(v & 0xffffffffn), Number(v >> 32n), into);
      t.is(BigInt(into.ms) * 1_000_000n + BigInt(into.ns), v);
      const w = new ProtoWriter(16);
      w.nanos(into.ms, into.ns);
      t.is(w.finish().readBigUInt64LE(0), v);
      const back = { ms: 0, ns: 0 };
      if (into.ms <= 8.64e15) {
        t.true(parseNanoTime(nanoTime(into.ms, into.ns), back));
        t.deepEqual(back, into);
      }
    }),
    { numRuns: 3000, seed: 2813 },
  );
});

test('entries that did not come from OTLP: resource of source and node, fields as attributes, level as severity, id as log.record.uid', (t) => {
  const entry: Entry = { time: 1700000000123, source: 'app.log', level: 'ERROR', message: 'boom', fields: { user: 'ann', n: 3, nested: { ok: true } }, id: 'x.1' };
  const msg = ExportLogsServiceRequest.toObject(ExportLogsServiceRequest.decode(encodeRequest(groupPlaced([placeEntry(entry, 'edge-1', NOW)]))), { longs: String, bytes: String }) as Obj;
  const rec = (((msg.resourceLogs as Obj[])[0]!.scopeLogs as Obj[])[0]!.logRecords as Obj[])[0]!;
  t.deepEqual((msg.resourceLogs as Obj[])[0]!.resource, {
    attributes: [
      { key: 'service.name', value: { stringValue: 'app.log' } },
      { key: 'host.name', value: { stringValue: 'edge-1' } },
    ],
  });
  t.is(rec.timeUnixNano, '1700000000123000000');
  t.is(rec.observedTimeUnixNano, String(BigInt(NOW) * 1_000_000n));
  t.is(rec.severityNumber, 17);
  t.is(rec.severityText, 'ERROR');
  t.deepEqual(rec.body, { stringValue: 'boom' });
  t.deepEqual(rec.attributes, [
    { key: 'user', value: { stringValue: 'ann' } },
    { key: 'n', value: { intValue: '3' } },
    { key: 'nested', value: { kvlistValue: { values: [{ key: 'ok', value: { boolValue: true } }] } } },
    { key: 'log.record.uid', value: { stringValue: 'x.1' } },
  ]);
});

test('JSON requests: 64-bit integers as strings and numbers, upper-case hex, unknown keys ignored', (t) => {
  const json = JSON.stringify({
    resourceLogs: [
      {
        unknownKey: { deep: [1, 2] },
        scopeLogs: [
          {
            logRecords: [
              { timeUnixNano: '1700000000000000001', severityNumber: 9, traceId: 'ABCDEF0123456789ABCDEF0123456789', spanId: 'AbCdEf0123456789', attributes: [{ key: 'i', value: { intValue: 42 } }, { key: 's', value: { intValue: '-42' } }], other: 1 },
              { timeUnixNano: 1700000000000000000 },
            ],
          },
        ],
      },
    ],
    extra: true,
  });
  const { entries } = mapRequest(decodeJsonRequest(json), NOW, HUGE);
  t.is(entries.length, 2);
  t.is(entries[0]!.time, 1700000000000);
  t.is(entries[0]!.fields!.time_nanos, '2023-11-14T22:13:20.000000001Z');
  t.is(entries[0]!.fields!.trace_id, 'abcdef0123456789abcdef0123456789');
  t.is(entries[0]!.fields!.span_id, 'abcdef0123456789');
  t.deepEqual(entries[0]!.fields!.attributes, { i: 42, s: -42 });
  t.is(entries[1]!.time, 1700000000000);
});

test('bad input is refused with a message saying what is wrong', (t) => {
  t.throws(() => decodeRequest(Buffer.from([0x0a, 0x05, 0x01])), { instanceOf: ProtoError, message: /runs past the end/ });
  t.throws(() => decodeRequest(Buffer.from([0x0f])), { instanceOf: ProtoError, message: /wire type/ });
  t.throws(() => decodeJsonRequest('{"resourceLogs": ['), { instanceOf: ProtoError, message: /malformed JSON/ });
  t.throws(() => decodeJsonRequest('{"resourceLogs": {}}'), { message: /resourceLogs: must be an array/ });
  t.throws(() => decodeJsonRequest('{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"traceId":"xyz"}]}]}]}'), { message: /traceId: must be hex/ });
  // AnyValues nested to the limit decode; one level more is refused
  // (protobufjs stops at its own depth limit, so our writer makes these)
  const nest = (depth: number): unknown => (depth === 0 ? 'leaf' : [nest(depth - 1)]);
  const deep = (depth: number) => encodeRequest([{ resource: undefined, size: 0, scopeLogs: [{ scope: undefined, records: [{ ...emptyRecord(), body: nest(depth) }] }] }]);
  t.is(mapRequest(decodeRequest(Buffer.from(deep(MAX_ANY_DEPTH))), NOW, HUGE).entries.length, 1);
  t.throws(() => decodeRequest(Buffer.from(deep(MAX_ANY_DEPTH + 1))), { message: /nested deeper/ });
});

test('responses: partial success and Status in both encodings, read by the oracle', (t) => {
  const ps = ExportLogsServiceResponse.toObject(ExportLogsServiceResponse.decode(encodeExportResponse(3, 'too big', 'protobuf')), { longs: String });
  t.deepEqual(ps, { partialSuccess: { rejectedLogRecords: '3', errorMessage: 'too big' } });
  t.is(encodeExportResponse(0, '', 'protobuf').length, 0);
  t.is(encodeExportResponse(0, '', 'json').toString(), '{}');
  t.deepEqual(decodeExportResponse(encodeExportResponse(3, 'too big', 'json'), 'json'), { rejected: 3, errorMessage: 'too big' });
  t.deepEqual(decodeExportResponse(encodeExportResponse(3, 'too big', 'protobuf'), 'protobuf'), { rejected: 3, errorMessage: 'too big' });
  t.deepEqual(Status.toObject(Status.decode(encodeStatus(400, 'bad body', 'protobuf'))), { code: 3, message: 'bad body' });
  t.deepEqual(JSON.parse(encodeStatus(400, 'bad body', 'json').toString()), { code: 3, message: 'bad body' });
});

test('the reader takes varints as protobuf writes them, negative ones too', (t) => {
  for (const v of [0, 1, 127, 128, 300, 2 ** 31, 2 ** 53 - 1, -1, -(2 ** 53) + 1, '9223372036854775807', '-9223372036854775808']) {
    const w = new ProtoWriter(16);
    w.int64(v);
    t.deepEqual(new ProtoReader(Buffer.from(w.finish())).int64(), v);
  }
});

test('a bytesValue body keeps its kind through an entry (fields.body.bytesValue) and back, in protobuf and JSON; a string that reads as base64 stays a string', (t) => {
  const bytes = Buffer.from([0, 1, 2, 250, 255]);
  const asB64 = bytes.toString('base64');
  const proto = Buffer.from(
    ExportLogsServiceRequest.encode(
      ExportLogsServiceRequest.fromObject({
        resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'svc' } }] }, scopeLogs: [{ logRecords: [{ body: { bytesValue: bytes } }, { body: { stringValue: asB64 } }] }] }],
      }),
    ).finish(),
  );
  const json = JSON.stringify({
    resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'svc' } }] }, scopeLogs: [{ logRecords: [{ body: { bytesValue: asB64 } }, { body: { stringValue: asB64 } }] }] }],
  });
  for (const [name, req] of [
    ['protobuf', decodeRequest(proto)],
    ['json', decodeJsonRequest(json)],
  ] as const) {
    const { entries } = mapRequest(req, 1_700_000_000_000, 1 << 20);
    t.deepEqual(entries[0]!.fields?.body, { bytesValue: asB64 }, `${name}: the bytes body's kind is kept`);
    t.is(entries[1]!.message, asB64, `${name}: a string body is the message`);
    t.is(entries[1]!.fields?.body, undefined, `${name}: and has no fields.body`);
    const placed = entries.map((e) => placeEntry(e, 'n', 1_700_000_000_000));
    const back = ExportLogsServiceRequest.toObject(ExportLogsServiceRequest.decode(encodeRequest(groupPlaced(placed))), { bytes: String }) as {
      resourceLogs: { scopeLogs: { logRecords: { body: { bytesValue?: string; stringValue?: string } }[] }[] }[];
    };
    const bodies = back.resourceLogs[0]!.scopeLogs[0]!.logRecords.map((r) => r.body);
    t.deepEqual(bodies, [{ bytesValue: asB64 }, { stringValue: asB64 }], `${name} in, protobuf out`);
    const backJson = JSON.parse(encodeJsonRequest(groupPlaced(placed))) as typeof back;
    t.deepEqual(
      backJson.resourceLogs[0]!.scopeLogs[0]!.logRecords.map((r) => r.body),
      [{ bytesValue: asB64 }, { stringValue: asB64 }],
      `${name} in, JSON out`,
    );
  }
});

test('a record without a resource keeps fields.resource = {} (docs/otlp.md says why): its fields go back to their places on the way out', (t) => {
  const req = decodeJsonRequest(JSON.stringify({ resourceLogs: [{ scopeLogs: [{ scope: { name: 'lib' }, logRecords: [{ body: { stringValue: 'm' }, attributes: [{ key: 'k', value: { stringValue: 'v' } }], traceId: '0102030405060708090a0b0c0d0e0f10' }] }] }] }));
  const [entry] = mapRequest(req, 1_700_000_000_000, 1 << 20).entries;
  t.deepEqual(entry!.fields?.resource, {});
  const out = JSON.parse(encodeJsonRequest(groupPlaced([placeEntry(entry!, 'n', 1_700_000_000_000)]))) as {
    resourceLogs: { resource?: { attributes?: unknown[] }; scopeLogs: { scope?: { name?: string }; logRecords: { attributes?: { key: string }[]; traceId?: string }[] }[] }[];
  };
  const rl = out.resourceLogs[0]!;
  t.deepEqual(rl.resource?.attributes ?? [], [], 'no resource made up from source and node');
  t.is(rl.scopeLogs[0]!.scope?.name, 'lib');
  const rec = rl.scopeLogs[0]!.logRecords[0]!;
  t.deepEqual(rec.attributes?.map((a) => a.key), ['k'], 'attributes as they were, not the fields as attributes');
  t.is(rec.traceId, '0102030405060708090a0b0c0d0e0f10');
  const page = readFileSync(join(ROOT, 'docs', 'otlp.md'), 'utf8');
  t.regex(page, /`resource` is there even when the record had none, as `\{\}`/);
});
