// The live view page as the http sink serves it: the CSP admits exactly its inline script and
// style, the stream path goes in escaped, and the image ships the file the page is read from.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { liveViewPage } from '../../src/ui/live-view.js';
import { ROOT } from '../helpers/node.js';

const hash = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

test('the CSP is default-src self with one hash for the script and one for the style', (t) => {
  const { html, csp } = liveViewPage('/stream');
  const script = /<script>([\s\S]*?)<\/script>/.exec(html)![1]!;
  const style = /<style>([\s\S]*?)<\/style>/.exec(html)![1]!;
  const directives = csp.split('; ');
  t.is(directives[0], "default-src 'self'");
  t.true(directives.includes(`script-src 'self' ${hash(script)}`), csp);
  t.true(directives.includes(`style-src 'self' ${hash(style)}`), csp);
  t.is(html.match(/<script/g)?.length, 1, 'one script, inline');
  t.false(/\b(src|href)="(https?:)?\/\//.test(html), 'nothing loaded from elsewhere');
  t.false(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/.test(script), 'entries never go in as HTML');
});

test('the stream path is filled in as an escaped attribute', (t) => {
  t.true(liveViewPage('/stream').html.includes('<meta name="logrelay-stream" content="/stream">'));
  t.true(liveViewPage('/a"><b>').html.includes('content="/a&quot;&gt;&lt;b&gt;"'));
});

test('the Docker image copies src/ui, where the page is read from', (t) => {
  t.regex(readFileSync(join(ROOT, 'deploy', 'Dockerfile'), 'utf8'), /^COPY src\/ui \.\/src\/ui$/m);
});
