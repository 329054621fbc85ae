// Headless Chromium (Debian's `chromium`, driven by playwright-core) for the live view tests: a
// fresh profile per context, closed and removed in the test's teardown.

import { type BrowserContext, chromium, type LaunchOptions } from 'playwright-core';
import { ownedTempDir, type Teardown } from './node.js';
import { peerBinary } from './peers.js';

/** Flags for a quiet headless run: nothing reaches the network but the pages the test opens. */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

type ContextOptions = Omit<Parameters<typeof chromium.launchPersistentContext>[1], keyof LaunchOptions>;

/** A Chromium context on a temp user-data-dir; `options` as playwright's (client certificates, ignoreHTTPSErrors, …). */
export async function openBrowser(t: Teardown, options: ContextOptions = {}): Promise<BrowserContext> {
  const profile = ownedTempDir(t, 'logrelay-chromium-');
  const context = await chromium.launchPersistentContext(profile.path, {
    executablePath: peerBinary('chromium'),
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 720 },
    timeout: 60_000,
    ...options,
  });
  t.teardown(() => context.close());
  return context;
}
