import { Browser } from 'playwright-core';
import {
  IssuedPerson,
  TestApp,
  createIssuingOrganization,
  createPersonWithCard,
  createTestApp,
  freePort,
  nextTotpCode,
  platformAdminToken,
} from '@app/testing';
import { accessibilityViolations, launchBrowser, watchedPage } from './support/browser';

/**
 * The hosted login page in a real browser (issue 23, "How it is shown"): Debian's headless Chromium
 * signs in with password and one-time code, is told about a wrong code, meets the lockout, and signs
 * out; axe-core finds nothing on any page, and no page raises a console error or a CSP violation.
 */

const ORG = 'browser';
const PASSWORD = 'correct horse battery staple';

describe('The login page in a browser', () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;
  let ada: IssuedPerson;
  let bob: IssuedPerson;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ env: { AUTH_BASE_URL: base, AUTH_FAILURE_LIMIT: '3' } });
    await t.app.listen(port, '127.0.0.1');
    const admin = await platformAdminToken(t.http);
    await createIssuingOrganization(t, admin, ORG, {});
    ada = await createPersonWithCard(t, admin, ORG, 'ada', { password: PASSWORD });
    bob = await createPersonWithCard(t, admin, ORG, 'bob', { password: PASSWORD });
    browser = await launchBrowser();
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const loginUrl = () => `${base}/authentication/customer/${ORG}/login`;

  it('signs in with password and one-time code, shows a wrong code, and signs out; accessible, without console errors or CSP violations', async () => {
    const { context, page, problems } = await watchedPage(browser);
    await page.goto(loginUrl());
    expect(await accessibilityViolations(page)).toEqual([]);
    await page.getByLabel('User name').fill('ada');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByLabel('One-time code').waitFor();
    expect(await accessibilityViolations(page)).toEqual([]);

    await page.getByLabel('One-time code').fill('000000');
    await page.getByRole('button', { name: 'Verify' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain('The sign-in did not succeed');
    expect(await page.getByLabel('One-time code').getAttribute('aria-describedby')).toBe('login-error');
    expect(await accessibilityViolations(page)).toEqual([]);

    await page.getByLabel('One-time code').fill(nextTotpCode(t, ada.totpSecret!));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('heading', { name: 'You are signed in' }).waitFor();
    expect(await page.locator('main').textContent()).toContain('as ada');
    expect(await accessibilityViolations(page)).toEqual([]);
    const cookies = await context.cookies();
    expect(cookies.find((c) => c.name === '__Host-Http-session')).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Strict', path: '/' });

    // The session holds: the page again shows the signed-in person.
    await page.goto(loginUrl());
    await page.getByRole('heading', { name: 'You are signed in' }).waitFor();

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'You are signed out' }).waitFor();
    expect((await context.cookies()).find((c) => c.name === '__Host-Http-session')).toBeUndefined();
    await page.goto(loginUrl());
    await page.getByLabel('Password').waitFor();
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);

  it('locks out after repeated failures and says when to try again', async () => {
    const { context, page, problems } = await watchedPage(browser);
    await page.goto(`${loginUrl()}?login_hint=${bob.userName}`);
    expect(await page.getByLabel('User name').inputValue()).toBe('bob');
    for (let attempt = 0; attempt < 3; attempt++) {
      await page.getByLabel('Password').fill('not the right password');
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByRole('alert').waitFor();
      expect(await page.getByRole('alert').textContent()).toContain('The sign-in did not succeed');
    }
    await page.getByLabel('Password').fill(PASSWORD);
    const answer = page.waitForResponse((response) => response.request().method() === 'POST');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    expect(await (await answer).headerValue('retry-after')).toMatch(/^\d+$/);
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toMatch(/Too many failed sign-ins\. Try again in \d+ (seconds|minutes)\./);
    expect(await accessibilityViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);
});
