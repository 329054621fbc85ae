// What docs/configuration.md and `check --explain` say about each sink type: its meaning and
// `config` keys (the factories validate with these fields). Importing this loads every sink, so
// only the reference writers do; a running node goes through the registry (index.ts).

import type { PluginSpec } from '../config/spec.js';
import { FILE_SINK } from './file.js';
import { HTTP_SINK } from './http.js';
import { HTTP_CHAIN_SINK } from './http-chain.js';
import type { SinkType } from './index.js';
import { NATS_SINK } from './nats.js';
import { NULL_SINK } from './null.js';
import { OTLP_SINK } from './otlp.js';
import { STDOUT_SINK } from './stdout.js';
import { SYSLOG_SINK } from './syslog.js';
import { TCP_SINK } from './tcp.js';
import { TCP_CHAIN_SINK } from './tcp-chain.js';

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
