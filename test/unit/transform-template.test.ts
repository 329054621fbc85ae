// A template remembers its last values and text (entries in a row mostly give the same): a
// property test that a template used over a run of entries renders each as a template compiled
// for that entry alone does, objects changed in place between entries included.

import test from 'ava';
import fc from 'fast-check';
import type { Entry } from '../../src/core/entry.js';
import { compileTemplate } from '../../src/transform/template.js';

const TEXTS = ['{{ fields.a }}', 'x{{ fields.a }}y', '{{ source }}/{{ fields.a }}', '{{ fields.a }}-{{ fields.b }}-{{ level }}', '{{ fields }}', '{{ fields.o }}|{{ fields.a }}', '{{ fields.o.k }}', '{{ fields.o }}'];

const value = fc.oneof(fc.constantFrom('GET', 'POST', '', 'é"', 0, -0, 1, Number.NaN, true, false, null), fc.integer({ min: 0, max: 3 }));
const entry = fc.record({
  source: fc.constantFrom('app', 'web'),
  level: fc.constantFrom(undefined, 'INFO' as const, 'ERROR' as const),
  a: fc.option(value),
  b: fc.option(value),
  /** change the shared object `o` in place before this entry (its key k) */
  poke: fc.option(value),
});

test('a template used over a run of entries renders each as a fresh template does, objects changed in place included', (t) => {
  fc.assert(
    fc.property(fc.constantFrom(...TEXTS), fc.array(entry, { minLength: 1, maxLength: 12 }), (text, rows) => {
      const reused = compileTemplate(text);
      const shared: Record<string, unknown> = { k: 'first' };
      for (const r of rows) {
        if (r.poke !== null) shared.k = r.poke;
        const fields: Record<string, unknown> = { o: shared };
        if (r.a !== null) fields.a = r.a;
        if (r.b !== null) fields.b = r.b;
        const e: Entry = { time: 0, source: r.source, message: 'm', fields };
        if (r.level !== undefined) e.level = r.level;
        t.is(reused(e), compileTemplate(text)(e), `${text} on ${JSON.stringify(fields)}`);
      }
    }),
    { numRuns: 2_000 },
  );
});
