// The source registry: every `type` maps to its factory.

import { createFileSource } from './file.js';
import { createHttpChainSource } from './http-chain.js';
import { createRandomSource } from './random.js';
import { createStdinSource } from './stdin.js';
import { createSyslogSource } from './syslog.js';
import { createTcpChainSource } from './tcp-chain.js';
import type { SourceFactory } from './types.js';

export type SourceType = 'random' | 'file' | 'stdin' | 'tcp_chain' | 'http_chain' | 'syslog';

export const SOURCES = {
  random: createRandomSource,
  file: createFileSource,
  stdin: createStdinSource,
  tcp_chain: createTcpChainSource,
  http_chain: createHttpChainSource,
  syslog: createSyslogSource,
} satisfies Record<SourceType, SourceFactory>;

export function sourceFactory(type: string): SourceFactory | undefined {
  return Object.hasOwn(SOURCES, type) ? SOURCES[type as SourceType] : undefined;
}
