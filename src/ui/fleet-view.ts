// Loads the fleet view page (DESIGN.md §26) for the admin endpoint: the static `fleet.html` beside
// this module's source, with the same Content-Security-Policy as the live view.

import { readFileSync } from 'node:fs';
import { type LiveViewPage, pageCsp } from './live-view.js';

// From dist/src/ui/ back to the source tree: the page is static and has no build step.
const PAGE_URL = new URL('../../../src/ui/fleet.html', import.meta.url);

let page: LiveViewPage | undefined;

/** The page and its CSP; the file is read once per process. */
export function fleetViewPage(): LiveViewPage {
  if (!page) {
    const html = readFileSync(PAGE_URL, 'utf8');
    page = { html, csp: pageCsp(html) };
  }
  return page;
}
