// The source contract lives on the ground floor (core/source.ts), where the worker and the disk
// buffer use it too; the plugins keep importing it from here.

export type { FilePosition, Source, SourceContext, SourceFactory, SourcePositions } from '../core/source.js';
