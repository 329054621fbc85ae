// The source registry: every `type` maps to its factory, and to its spec (meaning and `config`
// keys) for the operator's reference.

import type { PluginSpec } from '../config/spec.js';
import { createFileSource, FILE_SOURCE } from './file.js';
import { createHttpChainSource, HTTP_CHAIN_SOURCE } from './http-chain.js';
import { createNatsSource, NATS_SOURCE } from './nats.js';
import { createOtlpSource, OTLP_SOURCE } from './otlp.js';
import { createRandomSource, RANDOM_SOURCE } from './random.js';
import { createStdinSource, STDIN_SOURCE } from './stdin.js';
import { createSyslogSource, SYSLOG_SOURCE } from './syslog.js';
import { createTcpChainSource, TCP_CHAIN_SOURCE } from './tcp-chain.js';
import type { SourceFactory } from './types.js';

export type SourceType = 'random' | 'file' | 'stdin' | 'tcp_chain' | 'http_chain' | 'nats' | 'syslog' | 'otlp';

export const SOURCES = {
  random: createRandomSource,
  file: createFileSource,
  stdin: createStdinSource,
  tcp_chain: createTcpChainSource,
  http_chain: createHttpChainSource,
  nats: createNatsSource,
  syslog: createSyslogSource,
  otlp: createOtlpSource,
} satisfies Record<SourceType, SourceFactory>;

/** What docs/configuration.md and `check --explain` say about each type; the factories validate with these fields. */
export const SOURCE_SPECS = {
  random: RANDOM_SOURCE,
  file: FILE_SOURCE,
  stdin: STDIN_SOURCE,
  tcp_chain: TCP_CHAIN_SOURCE,
  http_chain: HTTP_CHAIN_SOURCE,
  nats: NATS_SOURCE,
  syslog: SYSLOG_SOURCE,
  otlp: OTLP_SOURCE,
} satisfies Record<SourceType, PluginSpec>;

export function sourceFactory(type: string): SourceFactory | undefined {
  return Object.hasOwn(SOURCES, type) ? SOURCES[type as SourceType] : undefined;
}
