// Test helpers: the real OpenTelemetry JS SDK (sdk-logs with the OTLP protobuf or JSON exporter)
// emitting numbered records with every AnyValue kind, trace context and nanosecond times, and the
// entries DESIGN.md §20 maps each of them to.

import { context, trace, TraceFlags } from '@opentelemetry/api';
import type { AnyValue, AnyValueMap } from '@opentelemetry/api-logs';
import { OTLPLogExporter as HttpJsonExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPLogExporter as ProtoExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { CompressionAlgorithm } from '@opentelemetry/otlp-exporter-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';

export type SdkEncoding = 'protobuf' | 'json';

export interface SdkRun {
  readonly url: string;
  readonly encoding: SdkEncoding;
  readonly gzip: boolean;
  readonly service: string;
  readonly host: string;
  readonly count: number;
  /** first record number (records are numbered from..from+count-1) */
  readonly from?: number;
}

const LEVEL_TEXT = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];

/** Record `n`'s trace id (32 hex digits) and span id (16). */
export const traceIdOf = (n: number): string => `${(n + 1).toString(16).padStart(8, '0')}${'ab'.repeat(12)}`;
export const spanIdOf = (n: number): string => `${(n + 1).toString(16).padStart(8, '0')}cdcdcdcd`;

/** Record `n`: every AnyValue kind among its attributes, a kvlist body every tenth record. */
export function recordOf(n: number): { severityNumber?: number; severityText: string; body: AnyValue; attributes: AnyValueMap; seconds: number; nanos: number; eventName?: string } {
  const plain = n % 25 !== 24;
  const severityNumber = plain ? (n % 24) + 1 : undefined;
  return {
    ...(severityNumber === undefined ? {} : { severityNumber }),
    severityText: plain ? `${LEVEL_TEXT[(n % 24) >> 2]}-${n % 4}` : 'Warning',
    body: n % 10 === 0 ? { n, nested: { list: [1, 'two', false] } } : `record ${n} says "hi"`,
    attributes: {
      n,
      half: n + 0.5,
      s: `s${n}`,
      even: n % 2 === 0,
      raw: new Uint8Array([n & 255, 1, 2]),
      arr: ['a', 1, true],
      kv: { inner: 'x', deep: { d: 1 } },
    },
    seconds: 1_700_000_000 + n,
    nanos: (n * 7919) % 1_000_000_000,
    ...(n % 3 === 0 ? { eventName: 'test.event' } : {}),
  };
}

/** Emits records from..from+count-1 through the SDK and flushes; export errors are not thrown by the SDK (assert on what arrived). */
export async function sdkSend(run: SdkRun): Promise<void> {
  const compression = run.gzip ? CompressionAlgorithm.GZIP : CompressionAlgorithm.NONE;
  const exporter = run.encoding === 'protobuf' ? new ProtoExporter({ url: run.url, compression }) : new HttpJsonExporter({ url: run.url, compression });
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': run.service, 'host.name': run.host }),
    processors: [new BatchLogRecordProcessor({ exporter, maxQueueSize: run.count + 1000, maxExportBatchSize: 512, scheduledDelayMillis: 50 })],
  });
  const logger = provider.getLogger('test-scope', '1.2.3');
  const from = run.from ?? 0;
  for (let n = from; n < from + run.count; n++) {
    const r = recordOf(n);
    const ctx = trace.setSpanContext(context.active(), { traceId: traceIdOf(n), spanId: spanIdOf(n), traceFlags: TraceFlags.SAMPLED });
    logger.emit({
      ...(r.severityNumber === undefined ? {} : { severityNumber: r.severityNumber }),
      severityText: r.severityText,
      body: r.body,
      attributes: r.attributes,
      timestamp: [r.seconds, r.nanos],
      context: ctx,
      ...(r.eventName === undefined ? {} : { eventName: r.eventName }),
    });
  }
  await provider.forceFlush();
  await provider.shutdown();
}

const LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'];

/**
 * What an entry of record `n` must hold (DESIGN.md §20), the resource and observed time aside
 * (the SDK adds its own resource attributes and stamps the observed time).
 */
export function expectedEntry(n: number, service: string, host: string): Record<string, unknown> {
  const r = recordOf(n);
  const ms = r.seconds * 1000 + Math.floor(r.nanos / 1e6);
  const sub = r.nanos % 1e6;
  const fields: Record<string, unknown> = {};
  if (typeof r.body !== 'string') fields.body = r.body;
  fields.attributes = { n, half: n + 0.5, s: `s${n}`, even: n % 2 === 0, raw: Buffer.from([n & 255, 1, 2]).toString('base64'), arr: ['a', 1, true], kv: { inner: 'x', deep: { d: 1 } } };
  fields.scope = { name: 'test-scope', version: '1.2.3' };
  fields.trace_id = traceIdOf(n);
  fields.span_id = spanIdOf(n);
  fields.flags = 1;
  if (r.severityNumber !== undefined) fields.severity_number = r.severityNumber;
  fields.severity_text = r.severityText;
  if (r.eventName !== undefined) fields.event_name = r.eventName;
  if (sub !== 0) {
    const iso = new Date(ms).toISOString();
    fields.time_nanos = `${iso.slice(0, -1)}${String(sub).padStart(6, '0')}Z`;
  }
  return {
    time: new Date(ms).toISOString(),
    node: host,
    source: service,
    level: r.severityNumber === undefined ? 'WARN' : LEVELS[(r.severityNumber - 1) >> 2],
    message: typeof r.body === 'string' ? r.body : JSON.stringify(r.body),
    fields,
  };
}
