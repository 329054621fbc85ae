// The sink registry: every `type` maps to its factory.

import { createNullSink } from './null.js';
import { createStdoutSink } from './stdout.js';
import type { SinkFactory } from './types.js';

export type SinkType = 'stdout' | 'null';

export const SINKS = {
  stdout: createStdoutSink,
  null: createNullSink,
} satisfies Record<SinkType, SinkFactory>;

export function sinkFactory(type: string): SinkFactory | undefined {
  return Object.hasOwn(SINKS, type) ? SINKS[type as SinkType] : undefined;
}
