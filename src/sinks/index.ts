// The sink registry: every `type` maps to its factory, and to its spec (meaning and `config`
// keys) for the operator's reference.

import type { PluginSpec } from '../config/spec.js';
import { createFileSink, FILE_SINK } from './file.js';
import { createHttpSink, HTTP_SINK } from './http.js';
import { createHttpChainSink, HTTP_CHAIN_SINK } from './http-chain.js';
import { createNatsSink, NATS_SINK } from './nats.js';
import { createNullSink, NULL_SINK } from './null.js';
import { createOtlpSink, OTLP_SINK } from './otlp.js';
import { createStdoutSink, STDOUT_SINK } from './stdout.js';
import { createSyslogSink, SYSLOG_SINK } from './syslog.js';
import { createTcpSink, TCP_SINK } from './tcp.js';
import { createTcpChainSink, TCP_CHAIN_SINK } from './tcp-chain.js';
import type { SinkFactory } from './types.js';

export type SinkType = 'stdout' | 'null' | 'file' | 'tcp' | 'http' | 'tcp_chain' | 'http_chain' | 'nats' | 'syslog' | 'otlp';

export const SINKS = {
  stdout: createStdoutSink,
  null: createNullSink,
  file: createFileSink,
  tcp: createTcpSink,
  http: createHttpSink,
  tcp_chain: createTcpChainSink,
  http_chain: createHttpChainSink,
  nats: createNatsSink,
  syslog: createSyslogSink,
  otlp: createOtlpSink,
} satisfies Record<SinkType, SinkFactory>;

/** What docs/configuration.md and `check --explain` say about each type; the factories validate with these fields. */
export const SINK_SPECS = {
  stdout: STDOUT_SINK,
  null: NULL_SINK,
  file: FILE_SINK,
  tcp: TCP_SINK,
  http: HTTP_SINK,
  tcp_chain: TCP_CHAIN_SINK,
  http_chain: HTTP_CHAIN_SINK,
  nats: NATS_SINK,
  syslog: SYSLOG_SINK,
  otlp: OTLP_SINK,
} satisfies Record<SinkType, PluginSpec>;

export function sinkFactory(type: string): SinkFactory | undefined {
  return Object.hasOwn(SINKS, type) ? SINKS[type as SinkType] : undefined;
}
