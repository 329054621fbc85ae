// The source registry: every `type` maps to a loader of its factory, so a worker loads the code
// of its own pipeline's sources only and the primary none. The specs, for the operator's
// reference, are in specs.ts (which loads every source).

import type { SourceFactory } from './types.js';

export type SourceType = 'random' | 'file' | 'stdin' | 'tcp_chain' | 'http_chain' | 'nats' | 'syslog' | 'otlp';

/** Loads a source type's factory (its module and the packages it uses) when a pipeline names the type. */
export type SourceLoader = () => Promise<SourceFactory>;

export const SOURCES = {
  random: async () => (await import('./random.js')).createRandomSource,
  file: async () => (await import('./file.js')).createFileSource,
  stdin: async () => (await import('./stdin.js')).createStdinSource,
  tcp_chain: async () => (await import('./tcp-chain.js')).createTcpChainSource,
  http_chain: async () => (await import('./http-chain.js')).createHttpChainSource,
  nats: async () => (await import('./nats.js')).createNatsSource,
  syslog: async () => (await import('./syslog.js')).createSyslogSource,
  otlp: async () => (await import('./otlp.js')).createOtlpSource,
} satisfies Record<SourceType, SourceLoader>;

export function sourceLoader(type: string): SourceLoader | undefined {
  return Object.hasOwn(SOURCES, type) ? SOURCES[type as SourceType] : undefined;
}
