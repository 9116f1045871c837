import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Browser } from 'playwright-core';
import {
  IssuedPerson,
  TestApp,
  createIssuingOrganization,
  createPersonWithCard,
  createTestApp,
  freePort,
  nextTotpCode,
  openssl,
  platformAdminToken,
} from '@app/testing';
import { accessibilityViolations, launchBrowser, watchedPage } from './support/browser';

/**
 * The hosted login page in a real browser (issue 23, "How it is shown"): Debian's headless Chromium
 * signs in with password and one-time code, is told about a wrong code, meets the lockout, signs
 * out, and signs in with a smart card (Playwright's client certificates against the service's own
 * TLS listener); axe-core finds nothing on any page, and no page raises a console error or a CSP violation.
 */

const ORG = 'browser';
const PASSWORD = 'correct horse battery staple';

describe('The login page in a browser', () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;
  let ada: IssuedPerson;
  let bob: IssuedPerson;
  let carla: IssuedPerson;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ env: { AUTH_BASE_URL: base, AUTH_FAILURE_LIMIT: '3' } });
    await t.app.listen(port, '127.0.0.1');
    const admin = await platformAdminToken(t.http);
    await createIssuingOrganization(t, admin, ORG, {});
    ada = await createPersonWithCard(t, admin, ORG, 'ada', { password: PASSWORD });
    bob = await createPersonWithCard(t, admin, ORG, 'bob', { password: PASSWORD });
    carla = await createPersonWithCard(t, admin, ORG, 'carla', { password: PASSWORD, smartCard: true, totp: false });
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

  it('RP-initiated logout: the person confirms on the end-session page, whose form passes the CSRF rule in a real browser (its Origin is sent), and the cookie is gone', async () => {
    const { context, page, problems } = await watchedPage(browser);
    await page.goto(loginUrl());
    await page.getByLabel('User name').fill('ada');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByLabel('One-time code').fill(nextTotpCode(t, ada.totpSecret!));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('heading', { name: 'You are signed in' }).waitFor();

    await page.goto(`${base}/authentication/customer/${ORG}/end-session?state=s1`);
    await page.getByRole('heading', { name: 'Sign out?' }).waitFor();
    expect(await accessibilityViolations(page)).toEqual([]);
    const posted = page.waitForRequest((request) => request.method() === 'POST');
    await page.getByRole('button', { name: 'Sign out' }).click();
    expect((await posted).headers().origin).toBe(base);
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
    expect(await page.getByRole('alert').textContent()).toMatch(/Too many failed sign-ins\. Try again in \d+ (seconds?|minutes)\./);
    expect(await accessibilityViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);

  it("signs in with a smart card: the client certificate the organization's CA issued, in the service's own TLS handshake", async () => {
    // A second instance on the same database, serving HTTPS itself (TLS_CERT_FILE), as a deployment without a proxy does.
    const dir = mkdtempSync(join(tmpdir(), 'login-tls-'));
    openssl(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
    );
    const port = await freePort();
    const tlsBase = `https://127.0.0.1:${port}`;
    const tls = await createTestApp({
      databaseUrl: t.databaseUrl,
      shareHsmWith: t,
      clock: t.clock,
      env: { AUTH_BASE_URL: tlsBase, TLS_CERT_FILE: join(dir, 'cert.pem'), TLS_KEY_FILE: join(dir, 'key.pem') },
    });
    try {
      await tls.app.listen(port, '127.0.0.1');
      const { context, page, problems } = await watchedPage(browser, {
        ignoreHTTPSErrors: true,
        clientCertificates: [{ origin: tlsBase, certPath: pemFile(dir, carla.certificatePem!), keyPath: carla.keyFile! }],
      });
      await page.goto(`${tlsBase}/authentication/customer/${ORG}/login`);
      expect(await accessibilityViolations(page)).toEqual([]);
      await page.getByRole('button', { name: 'Sign in with a smart card' }).click();
      await page.getByRole('heading', { name: 'You are signed in' }).waitFor();
      expect(await page.locator('main').textContent()).toContain('as carla');
      expect(await page.locator('ul.sessions').textContent()).toContain('(sc, hwk)');
      expect(await accessibilityViolations(page)).toEqual([]);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('heading', { name: 'You are signed out' }).waitFor();
      expect(problems).toEqual([]);
      await context.close();

      // Without a card the same listener still serves the password form, and the smart-card button says what is missing.
      const plain = await watchedPage(browser, { ignoreHTTPSErrors: true });
      await plain.page.goto(`${tlsBase}/authentication/customer/${ORG}/login`);
      await plain.page.getByRole('button', { name: 'Sign in with a smart card' }).click();
      await plain.page.getByRole('alert').waitFor();
      expect(await plain.page.getByRole('alert').textContent()).toContain('presented no smart card certificate');
      expect(await plain.page.getByLabel('Password').isVisible()).toBe(true);
      expect(plain.problems).toEqual([]);
      await plain.context.close();
    } finally {
      await tls.close();
    }
  }, 90_000);
});

function pemFile(dir: string, pem: string): string {
  const path = join(dir, 'card.pem');
  writeFileSync(path, pem);
  return path;
}
