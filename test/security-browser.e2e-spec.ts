import { Browser, Page } from 'playwright-core';
import { IssuedPerson, TestApp, createOrganization, createTestApp, freePort, platformAdminToken, signIn, signInOnLoginPage, totpCode } from '@app/testing';
import { expectAccessibleInBothSchemes, launchBrowser, saveScreenshot, watchedPage } from './support/browser';

/**
 * The portal's Security page in a real browser (issue 33 item 2; DECISIONS 14.6): a person who
 * enrolled through their link lands on it, renames their authenticator app, finds the last one's
 * Remove disabled with the reason, adds a second authenticator through the hosted factor step (the
 * code computed from the otpauth URI in the QR code's text alternative) and comes back, removes the
 * first, and ends their session in another browser; then adds a passkey the same way (Chromium's
 * virtual authenticator; the service at http://localhost, since an IP address is no relying-party id),
 * renames it and sees it listed. Selected by role and name; axe finds nothing in either theme; no
 * console error, no CSP violation.
 */

const ORG = 'secure';
const PASSWORD = 'correct horse battery staple';

describe('The Security page in a browser', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let link: string;
  /** The authenticator app Ada keeps after the first test. */
  let keptSecret: string;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://localhost:${port}`;
    t = await createTestApp({ env: { PUBLIC_BASE_URL: base, AUTH_BASE_URL: base } });
    await t.app.listen(port, '127.0.0.1');
    browser = await launchBrowser();
    const admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, ORG);
    const person = await t.http.post(`/admin/v1/organizations/${ORG}/users`).auth(admin, { type: 'bearer' }).send({ userName: 'ada', role: 'Cardholder' });
    expect(person.status).toBe(201);
    const made = await t.http.post(`/admin/v1/organizations/${ORG}/users/${person.body.id}/enrolment-link`).auth(admin, { type: 'bearer' });
    expect(made.status).toBe(201);
    link = made.body.url;
  }, 90_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** The code an authenticator app holding the URI's secret shows at the service's clock. */
  const codeOf = (uri: string) => totpCode(new URL(uri).searchParams.get('secret')!, Math.floor(t.clock.now().getTime() / 30_000));

  /** The otpauth URI the factor step's QR code names in its text alternative. */
  async function offeredUri(page: Page): Promise<string> {
    const qr = page.getByRole('img', { name: /^QR code of otpauth:\/\/totp\// });
    await qr.waitFor();
    return (await qr.getAttribute('aria-label'))!.replace(/^QR code of /, '');
  }

  it('rename, the last factor kept, add a second through the factor step, remove the first, end another session', async () => {
    const { context, page, problems } = await watchedPage(browser, { colorScheme: 'light', reducedMotion: 'reduce' });
    page.setDefaultTimeout(15_000);

    // Enrolment through the link: password, the first authenticator app; the portal opens on Security (a cardholder's only screen).
    await page.goto(link);
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByLabel('Type it again').fill(PASSWORD);
    await page.getByRole('button', { name: 'Continue' }).click();
    const firstUri = await offeredUri(page);
    await page.getByLabel(/code the app shows now/).fill(codeOf(firstUri));
    await page.getByRole('button', { name: 'Confirm and sign in' }).click();
    await page.waitForURL(`${base}/portal/${ORG}/security`);
    await page.getByRole('heading', { name: 'Security', level: 1 }).waitFor();
    await page.getByRole('link', { name: 'Security' }).waitFor();

    // Another browser of Ada's: a second session (the code of the next time step: the enrolment's was used).
    t.clock.advance(30);
    await signIn(t, { org: ORG, userName: 'ada', password: PASSWORD, totpSecret: new URL(firstUri).searchParams.get('secret')!, userAgent: 'Other browser' });
    await page.reload();

    const factors = page.getByRole('table', { name: 'Second factors' });
    await factors.getByRole('cell', { name: 'Authenticator app', exact: true }).waitFor();
    await expectAccessibleInBothSchemes(page);

    // The last factor: Remove disabled, with the reason said beside it.
    const removeOnly = page.getByRole('button', { name: 'Remove Authenticator app' });
    expect(await removeOnly.isDisabled()).toBe(true);
    const reason = await removeOnly.getAttribute('aria-describedby');
    expect(await page.locator(`#${reason}`).textContent()).toMatch(/last second factor.*Add another factor first/);

    // Rename it.
    await page.getByRole('button', { name: 'Rename Authenticator app' }).click();
    const renameDialog = page.getByRole('dialog', { name: 'Rename Authenticator app' });
    await renameDialog.getByLabel('Name').fill('My phone');
    await expectAccessibleInBothSchemes(page);
    await renameDialog.getByRole('button', { name: 'Save' }).click();
    await factors.getByRole('cell', { name: 'My phone', exact: true }).waitFor();
    await renameDialog.waitFor({ state: 'detached' });

    // Add a second authenticator: the hosted factor step (no password asked), then back here.
    await page.getByRole('button', { name: 'Add a second factor' }).click();
    const secondUri = await offeredUri(page);
    expect(await page.getByLabel('New password').count()).toBe(0);
    await expectAccessibleInBothSchemes(page);
    await page.getByLabel(/code the app shows now/).fill(codeOf(secondUri));
    await page.getByRole('button', { name: 'Confirm and add' }).click();
    await page.waitForURL(`${base}/portal/${ORG}/security`);
    await factors.getByRole('cell', { name: 'Authenticator app', exact: true }).waitFor();
    await factors.getByRole('cell', { name: 'My phone', exact: true }).waitFor();

    // Remove the first, asked once in a dialog naming it.
    await page.getByRole('button', { name: 'Remove My phone' }).click();
    const removeDialog = page.getByRole('dialog', { name: 'Remove My phone?' });
    await expectAccessibleInBothSchemes(page);
    await removeDialog.getByRole('button', { name: 'Remove' }).click();
    await removeDialog.waitFor({ state: 'detached' });
    await factors.getByRole('cell', { name: 'My phone', exact: true }).waitFor({ state: 'detached' });
    expect(await page.getByRole('button', { name: 'Remove Authenticator app' }).isDisabled()).toBe(true);

    // The sessions: this one marked, the other browser's ended.
    const sessions = page.getByRole('table', { name: 'Where you are signed in' });
    await sessions.getByRole('cell', { name: 'This session' }).waitFor();
    const other = sessions.getByRole('row').filter({ hasText: 'Other browser' });
    await other.getByRole('button', { name: 'End session' }).click();
    await other.waitFor({ state: 'detached' });
    await page.getByText('You are signed in nowhere else.').waitFor();
    expect(await page.getByRole('button', { name: 'Sign out everywhere else' }).isDisabled()).toBe(true);
    await expectAccessibleInBothSchemes(page);

    const rows = await t.db.query(
      `SELECT c.name, c.status FROM credentials c JOIN wallets w ON w.id = c.wallet_id JOIN users u ON u.id = w.owner_user_id
        WHERE u.user_name = 'ada' ORDER BY c.created_at`,
    );
    expect(rows.rows).toEqual([
      { name: 'My phone', status: 'REVOKED' },
      { name: null, status: 'ISSUED' },
    ]);
    keptSecret = new URL(secondUri).searchParams.get('secret')!;
    expect(problems).toEqual([]);
    await context.close();
  }, 120_000);

  it('a sign-in older than 5 minutes signs in again (prompt=login) before adding a factor, then comes back to Security', async () => {
    const ada = { userName: 'ada', password: PASSWORD, totpSecret: keptSecret } as IssuedPerson;
    const { context, page, problems } = await watchedPage(browser, { colorScheme: 'light', reducedMotion: 'reduce' });
    page.setDefaultTimeout(15_000);
    // The code of the first test's step was used: move on a step.
    t.clock.advance(31);
    await page.goto(`${base}/portal/${ORG}/security`);
    await page.waitForURL(/\/authentication\/customer\/secure\/login/);
    await signInOnLoginPage(page, t, ada);
    await page.waitForURL(`${base}/portal/${ORG}/security`);
    await page.getByRole('heading', { name: 'Security', level: 1 }).waitFor();
    expect(await page.getByText('asks you to sign in again').count()).toBe(0);

    t.clock.advance(301);
    await page.reload();
    const add = page.getByRole('button', { name: 'Add a second factor' });
    await page.getByText('Adding or removing a factor asks you to sign in again first.').waitFor();
    expect(await page.locator(`#${await add.getAttribute('aria-describedby')}`).textContent()).toContain('asks you to sign in again');
    await add.click();
    await page.waitForURL(/\/authentication\/customer\/secure\/login\?.*prompt=login/);
    await signInOnLoginPage(page, t, ada);
    await page.waitForURL(`${base}/portal/${ORG}/security`);
    await page.getByRole('button', { name: 'Add a second factor' }).click();
    await offeredUri(page);
    await page.getByRole('link', { name: 'Cancel and go back to Security' }).click();
    await page.waitForURL(`${base}/portal/${ORG}/security`);
    await page.getByRole('table', { name: 'Second factors' }).waitFor();
    expect(problems).toEqual([]);
    await context.close();
  }, 120_000);

  it('adds a passkey from the Security page (the same ticket, the same factor step), renames it, and lists it beside the app', async () => {
    const ada = { userName: 'ada', password: PASSWORD, totpSecret: keptSecret } as IssuedPerson;
    const { context, page, problems } = await watchedPage(browser, { colorScheme: 'light', reducedMotion: 'reduce' });
    page.setDefaultTimeout(15_000);
    const cdp = await context.newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true },
    });
    t.clock.advance(31);
    await page.goto(`${base}/portal/${ORG}/security`);
    await page.waitForURL(/\/authentication\/customer\/secure\/login/);
    await signInOnLoginPage(page, t, ada);
    await page.waitForURL(`${base}/portal/${ORG}/security`);

    await page.getByRole('button', { name: 'Add a second factor' }).click();
    await page.getByRole('heading', { name: 'Add a second factor' }).waitFor();
    await page.getByLabel('Name of this passkey').fill('Work laptop');
    await page.getByRole('button', { name: 'Create a passkey' }).click();
    await page.waitForURL(`${base}/portal/${ORG}/security`);
    const factors = page.getByRole('table', { name: 'Second factors' });
    const row = factors.getByRole('row').filter({ hasText: 'Work laptop' });
    await row.getByRole('cell', { name: 'Passkey', exact: true }).waitFor();
    expect((await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials).toEqual([
      expect.objectContaining({ isResidentCredential: true, rpId: 'localhost' }),
    ]);

    await page.getByRole('button', { name: 'Rename Work laptop' }).click();
    const dialog = page.getByRole('dialog', { name: 'Rename Work laptop' });
    await dialog.getByLabel('Name').fill('Laptop key');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await dialog.waitFor({ state: 'detached' });
    await factors.getByRole('cell', { name: 'Laptop key', exact: true }).waitFor();
    await factors.getByRole('cell', { name: 'Authenticator app', exact: true }).waitFor();
    expect(await page.getByRole('button', { name: 'Remove Laptop key' }).isDisabled()).toBe(false);
    await saveScreenshot(page, 'security.png', { fullPage: true });
    await expectAccessibleInBothSchemes(page);

    const rows = await t.db.query(
      `SELECT c.type, c.name, c.status FROM credentials c JOIN wallets w ON w.id = c.wallet_id JOIN users u ON u.id = w.owner_user_id
        WHERE u.user_name = 'ada' AND c.status = 'ISSUED' ORDER BY c.created_at`,
    );
    expect(rows.rows).toEqual([
      { type: 'OATH_TOTP', name: null, status: 'ISSUED' },
      { type: 'FIDO2', name: 'Laptop key', status: 'ISSUED' },
    ]);
    const added = await t.db.query(`SELECT details FROM audit_events WHERE action = 'user.factor.add' AND details->>'type' = 'FIDO2'`);
    expect(added.rows).toEqual([{ details: expect.objectContaining({ name: 'Work laptop' }) }]);
    expect(problems).toEqual([]);
    await context.close();
  }, 120_000);
});
