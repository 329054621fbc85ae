// The sink registry: every `type` maps to a loader of its factory, so a worker loads the code of
// its own pipeline's sinks only and the primary none. The specs, for the operator's reference,
// are in specs.ts (which loads every sink).

import type { SinkFactory } from './types.js';

export type SinkType = 'stdout' | 'null' | 'file' | 'tcp' | 'http' | 'tcp_chain' | 'http_chain' | 'nats' | 'syslog' | 'otlp';

/** Loads a sink type's factory (its module and the packages it uses) when a pipeline names the type. */
export type SinkLoader = () => Promise<SinkFactory>;

export const SINKS = {
  stdout: async () => (await import('./stdout.js')).createStdoutSink,
  null: async () => (await import('./null.js')).createNullSink,
  file: async () => (await import('./file.js')).createFileSink,
  tcp: async () => (await import('./tcp.js')).createTcpSink,
  http: async () => (await import('./http.js')).createHttpSink,
  tcp_chain: async () => (await import('./tcp-chain.js')).createTcpChainSink,
  http_chain: async () => (await import('./http-chain.js')).createHttpChainSink,
  nats: async () => (await import('./nats.js')).createNatsSink,
  syslog: async () => (await import('./syslog.js')).createSyslogSink,
  otlp: async () => (await import('./otlp.js')).createOtlpSink,
} satisfies Record<SinkType, SinkLoader>;

export function sinkLoader(type: string): SinkLoader | undefined {
  return Object.hasOwn(SINKS, type) ? SINKS[type as SinkType] : undefined;
}
