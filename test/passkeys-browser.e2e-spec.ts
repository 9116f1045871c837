import { Browser, CDPSession, Page } from 'playwright-core';
import { TestApp, createAdminAndPlainAccounts, createOrganization, createTestApp, freePort, platformAdminToken, tokenBySecret } from '@app/testing';
import { expectAccessibleInBothSchemes, launchBrowser, watchedPage } from './support/browser';

/**
 * Passkeys in a real browser (issue 33, "How it is shown"; DECISIONS 14.5), with Chromium's virtual
 * authenticator (DevTools WebAuthn domain; the service at http://localhost, since an IP address is
 * no relying-party id): a person registers a passkey at their enrolment link's factor step, signs in
 * with password and passkey, then with the passkey alone; a signature counter that went backwards
 * and a passkey the desk revoked are refused with their sentences on the page. axe finds nothing on
 * the new pages in either colour scheme; no console error, no CSP violation.
 */

const ORG = 'keys';
const PASSWORD = 'correct horse battery staple';

describe('Passkeys in a browser', () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;
  let admin: string;
  let dana: string;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://localhost:${port}`;
    t = await createTestApp({ env: { PUBLIC_BASE_URL: base, AUTH_BASE_URL: base } });
    await t.app.listen(port, '127.0.0.1');
    admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, ORG, { automaticDeviceCreation: false, applicationIdPolicy: 'any', passwordlessSignIn: true });
    dana = (await t.http.post(`/admin/v1/organizations/${ORG}/users`).auth(admin, { type: 'bearer' }).send({ userName: 'dana', role: 'Cardholder' })).body.id;
    browser = await launchBrowser();
  }, 90_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** A virtual platform authenticator with user verification, on this page's DevTools session. */
  async function virtualAuthenticator(page: Page): Promise<{ cdp: CDPSession; authenticatorId: string }> {
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true },
    });
    return { cdp, authenticatorId };
  }
  const lastAmr = async () =>
    (await t.db.query(`SELECT details->'amr' AS amr FROM audit_events WHERE action = 'sign_in.success' AND target = $1 ORDER BY id DESC LIMIT 1`, [dana]))
      .rows[0]?.amr;

  it('registers a passkey at enrolment, signs in with password and passkey, then with the passkey alone; a lower counter and a revoked passkey are refused', async () => {
    const link = (await t.http.post(`/admin/v1/organizations/${ORG}/users/${dana}/enrolment-link`).auth(admin, { type: 'bearer' })).body.url as string;
    expect(link.startsWith(`${base}/`)).toBe(true);
    const { context, page, problems } = await watchedPage(browser, { colorScheme: 'light', reducedMotion: 'reduce' });
    page.setDefaultTimeout(15_000);
    const { cdp, authenticatorId } = await virtualAuthenticator(page);

    // The link: a password, then the factor step, where Dana chooses a passkey and names it.
    await page.goto(link);
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByLabel('Type it again').fill(PASSWORD);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Add a second factor' }).waitFor();
    await expectAccessibleInBothSchemes(page);
    await page.getByLabel('Name of this passkey').fill('Virtual key');
    await page.getByRole('button', { name: 'Create a passkey' }).click();
    await page.getByText('Your passkey "Virtual key" was added. Add another one, or continue.').waitFor();
    await expectAccessibleInBothSchemes(page);
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    expect(credentials).toEqual([expect.objectContaining({ isResidentCredential: true, rpId: 'localhost' })]);
    expect(await lastAmr()).toEqual(['pwd', 'hwk']);
    // Where "Continue" goes: the organization's portal (not opened here: its own tests drive it).
    expect(await page.getByRole('link', { name: 'Continue' }).getAttribute('href')).toBe(`/portal/${ORG}/`);

    // Password, then the passkey.
    await context.clearCookies();
    await page.goto(`${base}/authentication/customer/${ORG}/login`);
    await expectAccessibleInBothSchemes(page);
    await page.getByLabel('User name').fill('dana');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Use your passkey' }).waitFor();
    await expectAccessibleInBothSchemes(page);
    await page.getByRole('button', { name: 'Use a passkey' }).click();
    await page.getByRole('heading', { name: 'You are signed in' }).waitFor();
    expect(await lastAmr()).toEqual(['pwd', 'hwk']);

    // The passkey alone, from the first page.
    await context.clearCookies();
    await page.goto(`${base}/authentication/customer/${ORG}/login`);
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByRole('heading', { name: 'You are signed in' }).waitFor();
    expect(await page.locator('main').textContent()).toContain('as dana');
    expect(await lastAmr()).toEqual(['hwk', 'user']);

    // A copy of the authenticator whose counter is behind: refused, with the sentence on the page.
    const [credential] = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials;
    expect(credential.signCount).toBeGreaterThan(1);
    await cdp.send('WebAuthn.removeCredential', { authenticatorId, credentialId: credential.credentialId });
    await cdp.send('WebAuthn.addCredential', { authenticatorId, credential: { ...credential, signCount: 0 } });
    await context.clearCookies();
    await page.goto(`${base}/authentication/customer/${ORG}/login`);
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByText('This passkey answered with a signature counter lower than before').waitFor();
    await expectAccessibleInBothSchemes(page);
    await cdp.send('WebAuthn.removeCredential', { authenticatorId, credentialId: credential.credentialId });
    await cdp.send('WebAuthn.addCredential', { authenticatorId, credential: { ...credential, signCount: credential.signCount + 10 } });

    // The desk revokes it (through its device): refused.
    const accounts = await createAdminAndPlainAccounts(t.http, admin, ORG);
    const [device] = (await t.db.query(`SELECT c.device_id FROM passkeys p JOIN credentials c ON c.id = p.credential_id WHERE c.name = 'Virtual key'`)).rows;
    const revoked = await t.http
      .post(`/aims/rs/scim/v2/Device/${device.device_id}/revoke`)
      .auth(await tokenBySecret(t.http, ORG, accounts.orgAdmin.clientId, accounts.orgAdmin.secret), { type: 'bearer' })
      .set('Content-Type', 'application/scim+json')
      .send(JSON.stringify({ reason: 'LOST' }));
    expect(revoked.status).toBe(200);
    await page.goto(`${base}/authentication/customer/${ORG}/login`);
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByText('This passkey has been suspended or revoked. Sign in another way, or ask an administrator.').waitFor();
    expect(problems).toEqual([]);
    await context.close();
  }, 120_000);
});
