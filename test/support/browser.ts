import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { Browser, BrowserContext, BrowserContextOptions, ConsoleMessage, Locator, Page, chromium } from 'playwright-core';
import { signInOnLoginPage } from './portal';
import { IssuedPerson } from './sign-in';
import { TestApp } from './test-app';

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

/** axe finds nothing in the light colour scheme and in the dark one; the page is left in light. */
export async function expectAccessibleInBothSchemes(page: Page): Promise<void> {
  expect(await accessibilityViolations(page)).toEqual([]);
  await page.emulateMedia({ colorScheme: 'dark' });
  expect(await accessibilityViolations(page)).toEqual([]);
  await page.emulateMedia({ colorScheme: 'light' });
}

/**
 * axe finds nothing, and nothing was logged but, where `refusals` names statuses, Chromium's own
 * note of an API answer with that status which the test provokes on purpose (it logs every 4xx of
 * a fetch as "Failed to load resource", though the portal handles it and shows the server's reason).
 */
export async function expectClean(page: Page, problems: string[], ...refusals: number[]): Promise<void> {
  expect(await accessibilityViolations(page)).toEqual([]);
  const expected = (problem: string) =>
    refusals.some((status) => problem.startsWith(`console: Failed to load resource: the server responded with a status of ${status} `));
  expect(problems.filter((problem) => !expected(problem))).toEqual([]);
}

/**
 * A watched page that opened the portal's `path`, was sent to the login page, signed `person` in,
 * and came back to `path`. Light theme and reduced motion unless `options` say otherwise (dialogs
 * appear at once, so axe never measures a half-faded one).
 */
export async function signedInPortal(
  browser: Browser,
  { t, base }: { t: TestApp; base: string },
  person: IssuedPerson,
  path: string,
  options: BrowserContextOptions = {},
): Promise<WatchedPage> {
  const watched = await watchedPage(browser, { colorScheme: 'light', reducedMotion: 'reduce', ...options });
  watched.page.setDefaultTimeout(10_000);
  await watched.page.goto(`${base}${path}`);
  await watched.page.waitForURL(/\/authentication\/customer\/[^/]+\/login\?/);
  await signInOnLoginPage(watched.page, t, person);
  await watched.page.waitForURL(`${base}${path}`);
  return watched;
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
