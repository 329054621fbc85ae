// Loads the live view page (DESIGN.md §18) for the http sink: the static `index.html` beside this
// module's source, with the sink's stream path filled in, and the Content-Security-Policy that
// allows exactly its inline script and style by hash.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** The page as served: its HTML and the CSP header that goes with it. */
export interface LiveViewPage {
  readonly html: string;
  readonly csp: string;
}

// From dist/src/ui/ back to the source tree: the page is static and has no build step.
const PAGE_URL = new URL('../../../src/ui/index.html', import.meta.url);
const STREAM_PATH_MARK = '{{stream_path}}';

let template: string | undefined;

function sha256(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

function hashesOf(html: string, tag: 'script' | 'style'): string {
  const out: string[] = [];
  for (const m of html.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))) out.push(sha256(m[1]!));
  return out.join(' ');
}

function escapeAttribute(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The page for a sink whose stream is at `streamPath`; the file is read once per process. */
export function liveViewPage(streamPath: string): LiveViewPage {
  template ??= readFileSync(PAGE_URL, 'utf8');
  const html = template.replace(STREAM_PATH_MARK, escapeAttribute(streamPath));
  return { html, csp: pageCsp(html) };
}

/**
 * The Content-Security-Policy of a static page of ours (the live view, the fleet view): anything
 * from its own origin, its inline scripts and styles by hash, nothing else.
 */
export function pageCsp(html: string): string {
  return [
    "default-src 'self'",
    `script-src 'self' ${hashesOf(html, 'script')}`,
    `style-src 'self' ${hashesOf(html, 'style')}`,
    "img-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}
