// The sink registry: every `type` maps to its factory.

import { createFileSink } from './file.js';
import { createNullSink } from './null.js';
import { createStdoutSink } from './stdout.js';
import type { SinkFactory } from './types.js';

export type SinkType = 'stdout' | 'null' | 'file';

export const SINKS = {
  stdout: createStdoutSink,
  null: createNullSink,
  file: createFileSink,
} satisfies Record<SinkType, SinkFactory>;

export function sinkFactory(type: string): SinkFactory | undefined {
  return Object.hasOwn(SINKS, type) ? SINKS[type as SinkType] : undefined;
}
