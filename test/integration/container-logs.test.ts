// Container logs on a synthetic Kubernetes node (DESIGN.md §21, issue 27): a /var/log/pods tree
// under a temp dir read through `include` globs with `container_format = "auto"` and
// `kubernetes_metadata`; CRI partials (a 3 MiB line in many parts, the two streams interleaved),
// docker json-file pieces, garbage lines; kubelet-style rotation (rename, new file, gzip, delete)
// while writing.

import { appendFileSync, closeSync, mkdirSync, openSync, readFileSync, renameSync, symlinkSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import test from 'ava';
import { ownedTempDir, sleep, startNodeInDir, waitFor, type TempDir } from '../helpers/node.js';
import { latestCounter } from '../helpers/status.js';

interface Out {
  time: string;
  source: string;
  level?: string;
  message: string;
  fields?: { stream?: string; time_nanos?: string; k8s?: Record<string, unknown> };
}

/** The JSON entries a node printed so far. */
const entries = (out: readonly string[]): Out[] => out.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Out);

/** Pipeline `p`: file source `pods` on `include` with container options → stdout as JSON. */
const podsPipeline = (include: string, extra = '') => `
[[pipelines]]
name = "p"
[pipelines.flow.format]
type = "json"
[[pipelines.plugin_sources]]
id = "pods"
type = "file"
[pipelines.plugin_sources.config]
include = [${JSON.stringify(include)}]
container_format = "auto"
kubernetes_metadata = true
from = "start"
${extra}
[[pipelines.plugin_sinks]]
id = "out"
type = "stdout"
[pipelines.plugin_sinks.config]
buffer_size = 10000
on_full = "block"
`;

const cri = (time: string, stream: string, tag: 'P' | 'F', content: string) => `${time} ${stream} ${tag} ${content}\n`;
const docker = (log: string, stream: string, time: string) => `${JSON.stringify({ log, stream, time })}\n`;

/** Makes `<root>/pods/<ns>_<pod>_<uid>/<container>/` and returns the path of `<n>.log` in it. */
function podLog(root: TempDir, ns: string, pod: string, uid: string, container: string, n = 0): string {
  const dir = join(root.path, 'pods', `${ns}_${pod}_${uid}`, container);
  mkdirSync(dir, { recursive: true });
  return join(dir, `${n}.log`);
}

test.serial('a synthetic /var/log/pods tree: every logical line once, with its stream, k8s metadata, source and runtime time', async (t) => {
  const root = ownedTempDir(t);
  const T1 = '2026-11-25T10:45:00.123456789Z';
  const T2 = '2026-11-25T10:45:01.5Z';
  const T3 = '2026-11-25T10:45:02.000000001Z';
  // pod shop/cart-1, container app (CRI): a 3 MiB line in 16 KiB P parts, stderr partials in between
  const app = podLog(root, 'shop', 'cart-1', 'uid-a', 'app');
  const big = 'B'.repeat(3 * 1024 * 1024);
  let text = cri(T1, 'stdout', 'F', 'hello from app');
  for (let i = 0; i < big.length; i += 16384) {
    text += cri(T2, 'stdout', i + 16384 >= big.length ? 'F' : 'P', big.slice(i, i + 16384));
    if (i === 16384 * 10) text += cri(T3, 'stderr', 'P', 'stderr first half, ');
    if (i === 16384 * 50) text += cri(T3, 'stderr', 'F', 'stderr second half');
  }
  text += 'this line is not CRI at all\n';
  text += cri('2026-13-45T99:00:00Z', 'stdout', 'F', 'invalid time');
  text += cri(T1, 'stderr', 'F', 'ERROR after the big one');
  writeFileSync(app, text);
  // same pod, container sidecar (CRI), restart count 2
  writeFileSync(podLog(root, 'shop', 'cart-1', 'uid-a', 'sidecar', 2), cri(T1, 'stdout', 'F', 'sidecar up') + cri(T2, 'stdout', 'F', 'sidecar ready'));
  // pod web/front-2, container nginx (docker json-file): a log without its \n joins the next
  writeFileSync(
    podLog(root, 'web', 'front-2', 'uid-b', 'nginx'),
    docker('GET / 200\n', 'stdout', T1) + docker('upstream partial, ', 'stderr', T2) + docker('then joined\n', 'stderr', T3) + docker('{"msg":"structured","level":"warn"}\n', 'stdout', T3),
  );
  // discovery only on events (check_interval_ms is long): the third pod appears after the start
  const node = startNodeInDir(t, root, podsPipeline(join(root.path, 'pods', '*', '*', '*.log'), 'max_line_bytes = 4194304\ncheck_interval_ms = 600000'));
  await waitFor(() => entries(node.out).some((e) => e.message === 'sidecar ready'), 'the first pods read');
  writeFileSync(podLog(root, 'ops', 'batch-3', 'uid-c', 'job'), cri(T1, 'stdout', 'F', 'job started') + cri(T2, 'stderr', 'F', 'job failed'));

  const k8s = (namespace: string, pod: string, pod_uid: string, container: string, restart_count = 0) => ({ namespace, pod, pod_uid, container, restart_count });
  const iso = (time: string) => new Date(Date.parse(time)).toISOString();
  const want: [string, string | undefined, ReturnType<typeof k8s>, string | undefined][] = [
    ['hello from app', 'stdout', k8s('shop', 'cart-1', 'uid-a', 'app'), T1],
    [big, 'stdout', k8s('shop', 'cart-1', 'uid-a', 'app'), T2],
    ['stderr first half, stderr second half', 'stderr', k8s('shop', 'cart-1', 'uid-a', 'app'), T3],
    ['this line is not CRI at all', undefined, k8s('shop', 'cart-1', 'uid-a', 'app'), undefined],
    ['2026-13-45T99:00:00Z stdout F invalid time', undefined, k8s('shop', 'cart-1', 'uid-a', 'app'), undefined],
    ['ERROR after the big one', 'stderr', k8s('shop', 'cart-1', 'uid-a', 'app'), T1],
    ['sidecar up', 'stdout', k8s('shop', 'cart-1', 'uid-a', 'sidecar', 2), T1],
    ['sidecar ready', 'stdout', k8s('shop', 'cart-1', 'uid-a', 'sidecar', 2), T2],
    ['GET / 200', 'stdout', k8s('web', 'front-2', 'uid-b', 'nginx'), T1],
    ['upstream partial, then joined', 'stderr', k8s('web', 'front-2', 'uid-b', 'nginx'), T2],
    ['structured', 'stdout', k8s('web', 'front-2', 'uid-b', 'nginx'), T3],
    ['job started', 'stdout', k8s('ops', 'batch-3', 'uid-c', 'job'), T1],
    ['job failed', 'stderr', k8s('ops', 'batch-3', 'uid-c', 'job'), T2],
  ];
  await waitFor(() => entries(node.out).length >= want.length, `${want.length} entries`, 60_000);
  await waitFor(() => latestCounter(node, 'p', 'sources.pods.parse_errors') === 2, 'parse_errors counted for the two lines not in the format');
  const got = entries(node.out);
  t.is(got.length, want.length, 'nothing more, nothing twice');
  for (const [message, stream, meta, time] of want) {
    const found = got.filter((e) => e.message === message);
    t.is(found.length, 1, `once: ${message.slice(0, 40)}`);
    const e = found[0]!;
    t.is(e.source, meta.container, `source of ${message.slice(0, 40)}`);
    t.deepEqual(e.fields?.k8s, meta);
    t.is(e.fields?.stream, stream);
    if (time !== undefined) t.is(e.time, iso(time), `the runtime's time of ${message.slice(0, 40)}`);
  }
  t.is(got.find((e) => e.message === 'hello from app')?.fields?.time_nanos, T1, 'nanoseconds kept');
  t.is(got.find((e) => e.message === 'structured')?.level, 'WARN', 'joined content is an ordinary line');
  t.is(got.find((e) => e.message === 'ERROR after the big one')?.level, 'ERROR');
});

test.serial('kubelet-style rotation while writing: every line once, nothing read from .gz, the renamed file drained first', async (t) => {
  const root = ownedTempDir(t);
  const log = podLog(root, 'shop', 'cart-1', 'uid-a', 'app');
  const T = '2026-11-25T10:45:00.000000001Z';
  const node = startNodeInDir(t, root, podsPipeline(join(root.path, 'pods', '*', '*', '*.log*'), 'check_interval_ms = 200'));
  await waitFor(() => node.records.some((r) => r.msg === 'Starting pipeline'), 'started');
  const TOTAL = 1200;
  let fd = openSync(log, 'a');
  let n = 0;
  /** writes the next `count` lines to `fd`, every fifth in two CRI parts, every seventh on stderr */
  const write = (count: number) => {
    let s = '';
    for (let end = n + count; n < end; n++) {
      const stream = n % 7 === 0 ? 'stderr' : 'stdout';
      const content = `line ${String(n).padStart(6, '0')}`;
      s += n % 5 === 0 ? cri(T, stream, 'P', content.slice(0, 7)) + cri(T, stream, 'F', content.slice(7)) : cri(T, stream, 'F', content);
    }
    writeSync(fd, s);
  };
  const gzips: Promise<void>[] = [];
  for (let rotation = 0; rotation < 3; rotation++) {
    for (let i = 0; i < 20; i++) {
      write(15);
      await sleep(5);
    }
    const renamed = `${log}.2026112510450${rotation}`;
    renameSync(log, renamed);
    // the runtime writes a last few lines to its old descriptor before it reopens
    write(10);
    closeSync(fd);
    fd = openSync(log, 'a');
    // kubelet compresses the rotated file a little later, then deletes it
    gzips.push(
      sleep(300).then(() => {
        writeFileSync(`${renamed}.gz`, gzipSync(readFileSync(renamed)));
        unlinkSync(renamed);
      }),
    );
  }
  while (n < TOTAL) {
    write(Math.min(20, TOTAL - n));
    await sleep(5);
  }
  closeSync(fd);
  await Promise.all(gzips);
  const seen = () => {
    const counts = new Map<string, number>();
    for (const e of entries(node.out)) counts.set(e.message, (counts.get(e.message) ?? 0) + 1);
    return counts;
  };
  await waitFor(() => seen().size >= n, `${n} distinct lines`, 60_000);
  // nothing more arrives later (a .gz read, a second copy)
  appendFileSync(log, cri(T, 'stdout', 'F', 'last'));
  await waitFor(() => seen().has('last'), 'the marker line');
  const counts = seen();
  const missing: number[] = [];
  const twice: string[] = [];
  for (let i = 0; i < n; i++) if (!counts.has(`line ${String(i).padStart(6, '0')}`)) missing.push(i);
  for (const [m, c] of counts) if (c > 1) twice.push(m);
  t.deepEqual(missing, [], 'no line lost');
  t.deepEqual(twice, [], 'no line twice');
  t.is(counts.size, n + 1, 'nothing else (no line out of a .gz)');
  t.is(entries(node.out).filter((e) => e.fields?.stream === 'stderr').length, Math.ceil(n / 7), 'streams kept');
  await waitFor(() => (latestCounter(node, 'p', 'sources.pods.rotations') ?? 0) >= 3, 'three rotations counted');
  t.is(latestCounter(node, 'p', 'sources.pods.parse_errors'), 0);
});

test.serial('a /var/log/containers link: source and fields.k8s from the pod log it leads to', async (t) => {
  const root = ownedTempDir(t);
  const T = '2026-11-25T10:45:00.000000001Z';
  const target = podLog(root, 'shop', 'cart-1', 'uid-a', 'app', 4);
  writeFileSync(target, cri(T, 'stdout', 'F', 'through the link'));
  const links = join(root.path, 'containers');
  mkdirSync(links);
  symlinkSync(target, join(links, `cart-1_shop_app-${'c'.repeat(64)}.log`));
  const node = startNodeInDir(t, root, podsPipeline(join(links, '*.log')));
  await waitFor(() => entries(node.out).length === 1, 'the line');
  const [e] = entries(node.out);
  t.is(e!.source, 'app');
  t.deepEqual(e!.fields?.k8s, { namespace: 'shop', pod: 'cart-1', pod_uid: 'uid-a', container: 'app', restart_count: 4 });
});

test.serial('kubernetes_metadata: node is this node\'s name on every container entry at the source, with no chain hop', async (t) => {
  const root = ownedTempDir(t);
  const T1 = '2026-11-25T10:45:00.123456789Z';
  writeFileSync(
    podLog(root, 'shop', 'cart-1', 'uid-a', 'app'),
    cri(T1, 'stdout', 'F', 'text line') + cri(T1, 'stderr', 'F', '{"msg":"json line","level":"info"}') + 'not in the format\n',
  );
  // straight to a local sink: no chain source to stamp `node` on the way
  const node = startNodeInDir(t, root, `node_name = "node-7"\n${podsPipeline(join(root.path, 'pods', '*', '*', '*.log'))}`);
  await waitFor(() => entries(node.out).length >= 3, 'three entries', 30_000);
  const got = entries(node.out) as (Out & { node?: string })[];
  t.deepEqual(
    got.map((e) => [e.message, e.node]),
    [
      ['text line', 'node-7'],
      ['json line', 'node-7'],
      ['not in the format', 'node-7'],
    ],
  );
});
