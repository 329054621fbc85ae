// What docs/configuration.md and `check --explain` say about each source type: its meaning and
// `config` keys (the factories validate with these fields). Importing this loads every source,
// so only the reference writers do; a running node goes through the registry (index.ts).

import type { PluginSpec } from '../config/spec.js';
import { FILE_SOURCE } from './file.js';
import { HTTP_CHAIN_SOURCE } from './http-chain.js';
import type { SourceType } from './index.js';
import { NATS_SOURCE } from './nats.js';
import { OTLP_SOURCE } from './otlp.js';
import { RANDOM_SOURCE } from './random.js';
import { STDIN_SOURCE } from './stdin.js';
import { SYSLOG_SOURCE } from './syslog.js';
import { TCP_CHAIN_SOURCE } from './tcp-chain.js';

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
