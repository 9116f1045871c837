import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { Browser, BrowserContext, BrowserContextOptions, ConsoleMessage, Locator, Page, chromium } from 'playwright-core';

/**
 * Debian's headless Chromium (`npm test` installs the package when it is missing; no browser
 * download is reachable here). CHROMIUM_PATH overrides it.
 */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium-headless-shell';

export function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`No Chromium at ${CHROMIUM_PATH}: install Debian's chromium-headless-shell (npm test does) or set CHROMIUM_PATH.`);
  }
  return chromium.launch({ executablePath: CHROMIUM_PATH });
}

/**
 * A page whose console errors and CSP violations are collected, so that a flow can end with
 * `expect(watched.problems).toEqual([])`: what a person sees must raise neither.
 */
export interface WatchedPage {
  context: BrowserContext;
  page: Page;
  /** Console errors, uncaught page errors and CSP violation reports, in order. */
  problems: string[];
}

export async function watchedPage(browser: Browser, options: BrowserContextOptions = {}): Promise<WatchedPage> {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (message: ConsoleMessage) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  // CSP violations surface as console errors too, but the event names the directive; listen in
  // every document the page loads.
  await context.addInitScript({
    content: `document.addEventListener('securitypolicyviolation', (event) => console.error('CSP violation: ' + event.violatedDirective + ' blocked ' + event.blockedURI));`,
  });
  return { context, page, problems };
}

/** axe-core's WCAG 2.1 A and AA rules on the page as it stands: the violations' ids and targets. */
export async function accessibilityViolations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  return results.violations.map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
}

/** Where the README's screenshots of the portal live. */
const SCREENSHOTS = resolve(__dirname, '..', '..', 'docs', 'portal');

/**
 * A README screenshot of a page or a section of it, taken by the browser tests' own flows but
 * written only when asked (UPDATE_SCREENSHOTS=1): a test run must leave the working tree as it found it.
 */
export async function saveScreenshot(target: Page | Locator, name: string, options: { fullPage?: boolean } = {}): Promise<void> {
  if (process.env.UPDATE_SCREENSHOTS !== '1') return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  await target.screenshot({ path: join(SCREENSHOTS, name), ...options });
}
