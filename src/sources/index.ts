// The source registry: every `type` maps to its factory.

import { createRandomSource } from './random.js';
import type { SourceFactory } from './types.js';

export type SourceType = 'random';

export const SOURCES = {
  random: createRandomSource,
} satisfies Record<SourceType, SourceFactory>;

export function sourceFactory(type: string): SourceFactory | undefined {
  return Object.hasOwn(SOURCES, type) ? SOURCES[type as SourceType] : undefined;
}
