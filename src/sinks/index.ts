// The sink registry: every `type` maps to its factory.

import { createFileSink } from './file.js';
import { createHttpSink } from './http.js';
import { createHttpChainSink } from './http-chain.js';
import { createNullSink } from './null.js';
import { createStdoutSink } from './stdout.js';
import { createSyslogSink } from './syslog.js';
import { createTcpSink } from './tcp.js';
import { createTcpChainSink } from './tcp-chain.js';
import type { SinkFactory } from './types.js';

export type SinkType = 'stdout' | 'null' | 'file' | 'tcp' | 'http' | 'tcp_chain' | 'http_chain' | 'syslog';

export const SINKS = {
  stdout: createStdoutSink,
  null: createNullSink,
  file: createFileSink,
  tcp: createTcpSink,
  http: createHttpSink,
  tcp_chain: createTcpChainSink,
  http_chain: createHttpChainSink,
  syslog: createSyslogSink,
} satisfies Record<SinkType, SinkFactory>;

export function sinkFactory(type: string): SinkFactory | undefined {
  return Object.hasOwn(SINKS, type) ? SINKS[type as SinkType] : undefined;
}
