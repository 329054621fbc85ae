// The Node lines logrelay supports (issue 30 point 3): `engines` states 20.19+, 22 and 24, the
// running Node is one of them, and the image every compose node is built from runs Node 24 LTS.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { readCompose } from '../helpers/fleet.js';
import { ROOT } from '../helpers/node.js';

type Version = [number, number, number];
const parse = (v: string): Version => {
  const [a = 0, b = 0, c = 0] = v.replace(/^v/, '').split('.').map(Number);
  return [a, b, c];
};
const cmp = (x: Version, y: Version) => x[0] - y[0] || x[1] - y[1] || x[2] - y[2];

/** Whether `version` satisfies `range` (`||` of space-separated `>=`, `<`, `>`, `<=` comparators): all engines needs. */
function satisfies(version: string, range: string): boolean {
  const v = parse(version);
  return range.split('||').some((set) =>
    set
      .trim()
      .split(/\s+/)
      .every((c) => {
        const m = /^(>=|<=|>|<)(\d+(?:\.\d+){0,2})$/.exec(c);
        if (!m) throw new Error(`unsupported comparator ${c} in ${range}`);
        const d = cmp(v, parse(m[2]!));
        return m[1] === '>=' ? d >= 0 : m[1] === '<=' ? d <= 0 : m[1] === '>' ? d > 0 : d < 0;
      }),
  );
}

const engines = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;

test('engines: 20.19+, 22 and 24 are in; older 20, 21 and 23 are out; this Node is in', (t) => {
  for (const v of ['20.19.0', '20.20.2', '22.0.0', '22.21.1', '24.0.0', '24.11.1']) t.true(satisfies(v, engines), `${v} in ${engines}`);
  for (const v of ['18.20.8', '20.18.3', '21.7.3', '23.11.1']) t.false(satisfies(v, engines), `${v} out of ${engines}`);
  t.true(satisfies(process.version, engines), `${process.version} in ${engines}`);
});

test('the image compose builds every node from runs Node 24 LTS (bookworm slim) in both stages', (t) => {
  const compose = readCompose() as unknown as { services: Record<string, { build?: { dockerfile?: string } }> };
  const files = new Set(Object.values(compose.services).flatMap((s) => (s.build?.dockerfile ? [s.build.dockerfile] : [])));
  t.deepEqual([...files], ['deploy/Dockerfile']);
  const froms = readFileSync(join(ROOT, 'deploy', 'Dockerfile'), 'utf8').match(/^FROM .*$/gm) ?? [];
  t.deepEqual(froms, ['FROM node:24-bookworm-slim AS build', 'FROM node:24-bookworm-slim AS run']);
});

test('the README states the same lines', (t) => {
  t.regex(readFileSync(join(ROOT, 'README.md'), 'utf8'), /Requires Node\.js 20\.19\+, 22 or 24/);
});
