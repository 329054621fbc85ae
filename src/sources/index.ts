// The source registry: every `type` maps to its factory.

import { createFileSource } from './file.js';
import { createRandomSource } from './random.js';
import { createStdinSource } from './stdin.js';
import type { SourceFactory } from './types.js';

export type SourceType = 'random' | 'file' | 'stdin';

export const SOURCES = {
  random: createRandomSource,
  file: createFileSource,
  stdin: createStdinSource,
} satisfies Record<SourceType, SourceFactory>;

export function sourceFactory(type: string): SourceFactory | undefined {
  return Object.hasOwn(SOURCES, type) ? SOURCES[type as SourceType] : undefined;
}
