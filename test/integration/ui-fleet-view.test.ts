// The fleet view page (admin endpoint /fleet in a browser, the fleet view) in headless Chromium
// against a real collector fed node reports by a raw chain link: a row per node with its state,
// sorting by a click, new nodes without a reload, no script but the page's own (CSP), and a node
// name with markup shown as text.

/// <reference lib="dom" />

import test from 'ava';
import { openBrowser } from '../helpers/browser.js';
import { chainSourceToml } from '../helpers/chain.js';
import { freePort, startOwnedNode, waitFor, waitReady } from '../helpers/node.js';
import { rawLink, sendReports, syntheticReport } from '../helpers/reports.js';

test.serial('the fleet page: a row per node with its state, sorted by a click, updated without a reload, names with markup as text, under the CSP', async (t) => {
  t.timeout(120_000);
  const admin = await freePort();
  const port = await freePort();
  const node = startOwnedNode(
    t,
    `node_name = "coll"\nreport_interval_ms = 500\n[admin]\nport = ${admin}\n[fleet]\nenabled = true\n[[pipelines]]\nname = "recv"\n${chainSourceToml('link', 'tcp_chain', port)}[[pipelines.plugin_sinks]]\ntype = "null"\n`,
  );
  await waitReady(node, 'collector');
  const link = await rawLink(port);
  t.teardown(() => link.close());
  await link.send('{"logrelay":1,"node":"relay-x","offer":{"report":1}}\n');
  await link.waitLine((l) => l.startsWith('{"ok"'), 'hello answered');
  const markup = '<img src=x onerror="window.__pwned = 1"><script>window.__pwned = 2</script>';
  await sendReports(link, [
    syntheticReport('relay-x', [], 60_000),
    syntheticReport('edge-b', ['relay-x'], 60_000),
    syntheticReport('edge-a', ['relay-x'], 60_000),
    syntheticReport(markup, ['relay-x'], 60_000),
    // reported once with a 100 ms interval: silent 300 ms later
    syntheticReport('edge-silent', ['relay-x'], 100),
  ]);

  const context = await openBrowser(t);
  const page = await context.newPage();
  const requests: string[] = [];
  const errors: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.location().url.endsWith('/favicon.ico')) errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(e.message));
  const origin = `http://127.0.0.1:${admin}`;
  const response = await page.goto(`${origin}/fleet`);
  t.is(response?.status(), 200);
  t.regex(response?.headers()['content-type'] ?? '', /^text\/html/);
  const csp = response?.headers()['content-security-policy'] ?? '';
  t.is(csp.split('; ')[0], "default-src 'self'");
  t.regex(csp, /script-src 'self' 'sha256-[^']+'(;|$)/, 'inline script only by its hash');
  t.notRegex(csp, /unsafe-inline|unsafe-eval/);

  const rows = () =>
    page.evaluate(() =>
      Array.from(document.querySelectorAll<HTMLTableRowElement>('#rows tr'), (tr) => ({ node: tr.cells[0]!.textContent ?? '', state: tr.cells[1]!.textContent ?? '' })),
    );
  await page.waitForFunction(() => document.querySelectorAll('#rows tr').length === 6, undefined, { timeout: 20_000 });
  await waitFor(async () => (await rows()).find((r) => r.node === 'edge-silent')?.state === 'silent', 'edge-silent shown silent', 10_000);
  const first = await rows();
  t.deepEqual(
    first.map((r) => r.node),
    ['coll', 'edge-a', 'edge-b', 'edge-silent', 'relay-x', markup].sort((a, b) => a.localeCompare(b)),
    'sorted by node, ascending',
  );
  t.true(first.filter((r) => r.node !== 'edge-silent').every((r) => r.state === 'live'), JSON.stringify(first));
  t.true(first.some((r) => r.node === markup), 'the name with markup is a row, as text');
  t.is(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined, 'nothing ran');
  t.is(await page.evaluate(() => document.querySelectorAll('#rows img, #rows script').length), 0, 'no element made from a name');

  // a click sorts: node again → descending; state → silent last among ascending states
  await page.click('th[data-key="node"]');
  t.deepEqual(
    (await rows()).map((r) => r.node),
    first.map((r) => r.node).reverse(),
    'a second click on node reverses the order',
  );
  t.is(await page.getAttribute('th[data-key="node"]', 'aria-sort'), 'descending');
  await page.click('th[data-key="state"]');
  const byState = (await rows()).map((r) => r.state);
  t.deepEqual(byState, [...byState].sort(), 'sorted by state');
  t.is(byState.at(-1), 'silent');

  // a node reported now appears without a reload
  await page.evaluate(() => ((window as unknown as { __sameDocument?: boolean }).__sameDocument = true));
  await sendReports(link, [syntheticReport('edge-new', ['relay-x'], 60_000)]);
  await page.waitForFunction(() => Array.from(document.querySelectorAll<HTMLTableRowElement>('#rows tr'), (tr) => tr.cells[0]!.textContent).includes('edge-new'), undefined, { timeout: 15_000 });
  t.true(await page.evaluate(() => (window as unknown as { __sameDocument?: boolean }).__sameDocument === true), 'the same document: no reload');

  t.deepEqual(
    requests.filter((u) => new URL(u).origin !== origin),
    [],
    'no request outside the origin',
  );
  t.deepEqual(errors, [], 'no console error (a CSP violation would be one)');
});
