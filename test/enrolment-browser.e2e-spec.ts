import { mkdtempSync, readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { Browser, Page } from 'playwright-core';
import { TestApp, startServiceForBrowser, totpCode } from '@app/testing';
import { accessibilityViolations, launchBrowser, watchedPage } from './support/browser';

/**
 * The first sign-in in a real browser (issue 33, "How it is shown"), as the README's "First sign-in"
 * section says it: from a fresh data folder, the link read from the bootstrap credentials file opens
 * in Chromium, the person chooses a password, adds an authenticator app (the code computed from the
 * URI the QR code's text alternative holds) and lands in the portal as the platform administrator,
 * creates an organization and its administrator person, signs out and in again with password and
 * code. axe finds nothing on the new pages, in either colour scheme; no console error, no CSP violation.
 */

const PASSWORD = 'correct horse battery staple';

/** The README's "First sign-in" steps, as written there. */
function firstSignInSection(): string {
  const readme = readFileSync(resolve(__dirname, '../README.md'), 'utf8');
  const marker = readme.indexOf('<!-- first-sign-in -->');
  expect(marker).toBeGreaterThan(0);
  return readme.slice(marker, readme.indexOf('\n\n', readme.indexOf('\n3. ', marker)));
}

describe('The first sign-in in a browser', () => {
  let t: TestApp;
  let base: string;
  let dataDir: string;
  let browser: Browser;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(process.env.TEST_RUN_DIR!, 'first-sign-in-'));
    ({ t, base } = await startServiceForBrowser({ PLATFORM_ADMIN_USER: 'admin', DATA_DIR: dataDir }));
    browser = await launchBrowser();
  }, 90_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  async function expectAccessible(page: Page): Promise<void> {
    expect(await accessibilityViolations(page)).toEqual([]);
    await page.emulateMedia({ colorScheme: 'dark' });
    expect(await accessibilityViolations(page)).toEqual([]);
    await page.emulateMedia({ colorScheme: 'light' });
  }

  /** The code an authenticator app holding the URI's secret shows at the service's clock, `ahead` steps on. */
  const codeOf = (uri: string, ahead = 0) => totpCode(new URL(uri).searchParams.get('secret')!, Math.floor(t.clock.now().getTime() / 30_000) + ahead);

  /** README step 2 on the page the link opened; answers the otpauth URI the QR code's text alternative holds. */
  async function enrol(page: Page): Promise<string> {
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByLabel('Type it again').fill(PASSWORD);
    await page.getByRole('button', { name: 'Continue' }).click();
    const qr = page.getByRole('img', { name: /^QR code of otpauth:\/\/totp\// });
    await qr.waitFor();
    await expectAccessible(page);
    const uri = (await qr.getAttribute('aria-label'))!.replace(/^QR code of /, '');
    expect(await page.locator('code.secret').textContent()).toBe(new URL(uri).searchParams.get('secret'));
    await page.getByLabel(/code the app shows now/).fill(codeOf(uri));
    await page.getByRole('button', { name: 'Confirm and sign in' }).click();
    return uri;
  }

  it('follows the README: the link from the credentials file, a password, an authenticator app, the portal; then an organization and its administrator, sign-out, and sign-in with password and code', async () => {
    const steps = firstSignInSection();
    // Step 1: the file and the line the README names.
    const line = /the line\s+`(enrolment_link=)` of `\.\/\.data\/([^`]+)`/.exec(steps)!;
    const credentials = readFileSync(join(dataDir, basename(line[2])), 'utf8');
    const link = new RegExp(`^${line[1]}(.+)$`, 'm').exec(credentials)![1];
    expect(link.startsWith(`${base}/authentication/customer/platform/enrol/`)).toBe(true);

    // Step 2.
    const { context, page, problems } = await watchedPage(browser, { colorScheme: 'light', reducedMotion: 'reduce' });
    page.setDefaultTimeout(15_000);
    await page.goto(link);
    await page.getByRole('heading', { name: 'Welcome, admin' }).waitFor();
    expect(await page.getByLabel('New password').getAttribute('aria-describedby')).toBe('password-rules');
    expect(steps).toContain('at least 12 characters');
    expect(await page.locator('#password-rules').textContent()).toContain('At least 12 characters');
    await expectAccessible(page);
    const uri = await enrol(page);

    // Step 3: the portal, signed in as the platform administrator.
    const [, userName, later] = /signed in as the platform administrator `([^`]+)`\. Later sign-ins:\s+`http:\/\/localhost:8080([^`]+)`/.exec(steps)!;
    await page.waitForURL(`${base}${later}`);
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    const whoami = await page.evaluate(
      async () => (await fetch('/admin/v1/organizations', { headers: { 'Application-ID': 'com.example.first-sign-in', 'Application-Version': '1.0' } })).status,
    );
    expect(whoami).toBe(200);
    expect(userName).toBe('admin');

    // The platform administrator creates an organization and its administrator person, with their own enrolment link.
    const created = await page.evaluate(async () => {
      const headers = { 'Application-ID': 'com.example.first-sign-in', 'Application-Version': '1.0', 'Content-Type': 'application/json' };
      const organization = await fetch('/admin/v1/organizations', { method: 'POST', headers, body: JSON.stringify({ id: 'acme', name: 'Acme' }) });
      const person = await fetch('/admin/v1/organizations/acme/users', {
        method: 'POST',
        headers,
        body: JSON.stringify({ userName: 'acme.admin', role: 'Administration', organizationAdministrator: true }),
      });
      const { id } = (await person.json()) as { id: string };
      const link = await fetch(`/admin/v1/organizations/acme/users/${id}/enrolment-link`, { method: 'POST', headers });
      return { organization: organization.status, person: person.status, link: link.status, url: ((await link.json()) as { url: string }).url };
    });
    expect(created).toMatchObject({ organization: 201, person: 201, link: 201 });

    // Sign out, and in again with the password and a later code (the one that confirmed the enrolment was used).
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/authentication\/customer\/platform\/login/);
    await page.getByLabel('User name').fill(userName);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByLabel('One-time code').fill(codeOf(uri, 1));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.waitForURL(`${base}${later}`);
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    expect(problems).toEqual([]);
    await context.close();

    // The organization's administrator follows their own link, in another browser, to their organization's portal.
    const other = await watchedPage(browser, { colorScheme: 'light', reducedMotion: 'reduce' });
    other.page.setDefaultTimeout(15_000);
    await other.page.goto(created.url);
    await other.page.getByRole('heading', { name: 'Welcome, acme.admin' }).waitFor();
    await enrol(other.page);
    await other.page.waitForURL(`${base}/portal/acme/`);
    await other.page.getByRole('button', { name: 'Sign out' }).waitFor();
    expect(other.problems).toEqual([]);
    await other.context.close();
  }, 120_000);

  it('a link opened twice says, on an accessible page, that it was used', async () => {
    const used = readFileSync(join(dataDir, 'bootstrap-credentials'), 'utf8').match(/^enrolment_link=(.+)$/m)![1];
    const { context, page, problems } = await watchedPage(browser);
    await page.goto(used);
    await page.getByRole('heading', { name: 'This link cannot be used' }).waitFor();
    expect(await page.locator('main').textContent()).toContain('This enrolment link has been used already');
    await expectAccessible(page);
    expect(problems).toEqual([]);
    await context.close();
  });
});
