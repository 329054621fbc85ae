// A source behind a disk buffer (DESIGN.md §23) hands every entry to the buffer: the pipeline's offer
// to carry version 2 frames on undecoded (ctx.frames, a relay) must not reach it, or the frames
// would pass the buffer by.

import test from 'ava';
import { withBuffer } from '../../src/buffer/source.js';
import type { FrameCarrier, SourceContext } from '../../src/core/source.js';
import type { Source } from '../../src/sources/types.js';

test('a source behind a disk buffer gets no frame carrier: what it reads goes into the buffer', (t) => {
  const carrier: FrameCarrier = { active: () => true, nextId: undefined, emit: () => t.fail('a frame passed the buffer by') };
  const ctx = { pipeline: 'relay', log: undefined as never, checkOnly: true, emit: () => undefined, idNode: undefined, isSaturated: () => false, frames: carrier } satisfies SourceContext;
  const seen: SourceContext[] = [];
  const factory = (_plugin: unknown, c: SourceContext): Source => {
    seen.push(c);
    return { id: 'in', type: 'tcp_chain', counters: { total_entries: 0 }, pausable: true, start: () => undefined, stop: () => Promise.resolve() };
  };
  withBuffer(factory, { id: 'in', type: 'tcp_chain', config: { port: 1, buffer: { type: 'disk' } } }, ctx, { dataDir: '/nonexistent', node: 'n', window: 1000 });
  t.is(seen.length, 1);
  t.is(seen[0]!.frames, undefined);
  // without a buffer the source gets the pipeline's context as it is
  withBuffer(factory, { id: 'in', type: 'tcp_chain', config: { port: 1 } }, ctx, { dataDir: '/nonexistent', node: 'n', window: 1000 });
  t.is(seen[1]!.frames, carrier);
});
