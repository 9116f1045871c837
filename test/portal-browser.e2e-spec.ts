import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Browser, BrowserContext, Page } from 'playwright-core';
import {
  IssuedPerson,
  TEST_APPLICATION_ID,
  TestApp,
  createCardholder,
  createIssuingOrganization,
  createOrganization,
  createPersonWithCard,
  createSystemAccount,
  giveRole,
  insertCard,
  makeCertificate,
  makeOrganizationAdministrator,
  openssl,
  opensslCsr,
  opensslVerified,
  platformAdminToken,
  signInOnLoginPage,
  startServiceForBrowser,
  tokenBySecret,
  tokenRequest,
  uploadCertificate,
} from '@app/testing';
import { accessibilityViolations, launchBrowser, saveScreenshot, watchedPage, WatchedPage } from './support/browser';

/**
 * The management portal in a real browser (issue 24; DECISIONS 17): Debian's headless Chromium
 * against the service serving the built portal (portal/dist). People sign in on the hosted login
 * page; every page is checked by axe-core (WCAG 2.1 A and AA), and no test may see a console error
 * or a CSP violation on the portal. With UPDATE_SCREENSHOTS=1 the main screens are saved as the README's screenshots.
 */
const ORG = 'portal';

/** What the keyboard test reads of the page's window (the test compiles without the DOM library). */
interface BrowserWindow {
  document: { activeElement: unknown };
  getComputedStyle(element: unknown): { outlineStyle: string };
}
describe('The management portal in a browser', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let platform: string;
  /** The organization's administrator, a person. */
  let ada: IssuedPerson;

  beforeAll(async () => {
    ({ t, base } = await startServiceForBrowser());
    browser = await launchBrowser();
    platform = await platformAdminToken(t.http);
    await createIssuingOrganization(t, platform, ORG, {});
    ada = await createPersonWithCard(t, platform, ORG, 'ada');
    await makeOrganizationAdministrator(t, platform, ORG, ada);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** A browser that opened `path`, was sent to the login page, signed `person` in, and came back to `path`. */
  async function signedIn(person: IssuedPerson, path: string): Promise<WatchedPage> {
    // Reduced motion: dialogs appear at once, so axe never measures a half-faded one.
    const watched = await watchedPage(browser, { colorScheme: 'light', reducedMotion: 'reduce' });
    watched.page.setDefaultTimeout(10_000);
    await watched.page.goto(`${base}${path}`);
    await watched.page.waitForURL(/\/authentication\/customer\/[^/]+\/login\?/);
    expect(new URL(watched.page.url()).searchParams.get('return_to')).toBe(path);
    await signInOnLoginPage(watched.page, t, person);
    await watched.page.waitForURL(`${base}${path}`);
    return watched;
  }

  /** Presses Tab until `target` has focus (at most 40 times), as a keyboard-only person moves through a page. */
  async function tabTo(page: Page, target: ReturnType<Page['getByRole']>): Promise<void> {
    const focused = () => target.evaluate((element) => element === (globalThis as unknown as BrowserWindow).document.activeElement).catch(() => false);
    for (let i = 0; i < 40 && !(await focused()); i += 1) await page.keyboard.press('Tab');
    expect(await focused()).toBe(true);
  }

  /** The position of a term among a definition list's terms (its definition is at the same position). */
  async function termIndex(list: ReturnType<Page['getByRole']>, term: string): Promise<number> {
    const terms = (await list.getByRole('term').allTextContents()).map((text) => text.trim());
    return terms.indexOf(term);
  }

  /** The session cookie of a browser, as a Cookie header for calls made beside it. */
  async function cookieOf(context: BrowserContext): Promise<string> {
    const cookie = (await context.cookies()).find((c) => c.name === '__Host-Http-session');
    return `${cookie!.name}=${cookie!.value}`;
  }

  /**
   * axe finds nothing, and nothing was logged but, where `refusals` names statuses, Chromium's own
   * note of an API answer with that status which the test provokes on purpose (it logs every 4xx of
   * a fetch as "Failed to load resource", though the portal handles it and shows the server's reason).
   */
  async function expectClean(page: Page, problems: string[], ...refusals: number[]): Promise<void> {
    expect(await accessibilityViolations(page)).toEqual([]);
    const expected = (problem: string) =>
      refusals.some((status) => problem.startsWith(`console: Failed to load resource: the server responded with a status of ${status} `));
    expect(problems.filter((problem) => !expected(problem))).toEqual([]);
  }

  it('the start page asks for the organization, accessibly; without a session the organization sends the person to its login page', async () => {
    const { context, page, problems } = await watchedPage(browser);
    await page.goto(`${base}/portal/`);
    await page.getByRole('heading', { name: 'Management portal' }).waitFor();
    await expectClean(page, problems);
    await page.getByLabel('Organization').fill(ORG);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL(/\/authentication\/customer\/portal\/login\?/);
    expect(new URL(page.url()).searchParams.get('return_to')).toBe(`/portal/${ORG}/`);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('signs in through the login page, comes back to the deep link, and signs out from the page (the session ends)', async () => {
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/roles`);
    await page.getByRole('heading', { name: 'Roles', level: 1 }).waitFor();
    expect(await page.getByRole('cell', { name: 'Help Desk' }).isVisible()).toBe(true);
    expect(await page.getByLabel('Signed in as').textContent()).toContain('ada');
    await expectClean(page, problems);
    const cookie = await cookieOf(context);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/authentication\/customer\/portal\/login/);
    // The session is over on the server: the portal's pages send the browser to sign in again.
    const again = await t.bare.get(`/portal/${ORG}/roles`).set('Cookie', cookie);
    expect(again.status).toBe(303);
    await page.goto(`${base}/portal/${ORG}/roles`);
    await page.waitForURL(/\/login\?/);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('creates a system account; its one-time secret, copied from the dialog, gets a token at the token endpoint; it is shown never again', async () => {
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/system-accounts`);
    await page.getByRole('heading', { name: 'System accounts', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Create system account' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create a system account' });
    await dialog.getByLabel('Client ID suffix').fill('billing');
    await dialog.getByLabel('Role').click();
    await page.getByRole('option', { name: 'Issuance' }).click();
    await dialog.getByLabel('Description').fill('Billing robot');
    await expectClean(page, problems);
    await dialog.getByRole('button', { name: 'Create' }).click();
    const shown = page.getByRole('dialog', { name: `System account ${ORG}-billing created` });
    const secret = (await shown.getByLabel('Client secret').textContent())!.trim();
    expect(secret.length).toBeGreaterThanOrEqual(32);
    expect(await shown.getByRole('button', { name: 'Copy secret' }).isVisible()).toBe(true);
    await saveScreenshot(page, 'system-account-created.png');
    await expectClean(page, problems);
    // The secret works at the token endpoint.
    expect(await tokenBySecret(t.http, ORG, `${ORG}-billing`, secret)).toMatch(/^ey/);
    // Escape closes the dialog (focus was trapped in it); the secret is nowhere on the page any more.
    await page.keyboard.press('Escape');
    await shown.waitFor({ state: 'hidden' });
    expect(await page.content()).not.toContain(secret);
    await page.getByRole('link', { name: `${ORG}-billing` }).waitFor();
    await page.getByLabel('Search').fill('billing');
    expect(await page.getByRole('row').count()).toBe(2);
    await page.getByRole('link', { name: `${ORG}-billing` }).click();
    await page.getByRole('heading', { name: `${ORG}-billing`, level: 1 }).waitFor();
    expect(await page.content()).not.toContain(secret);
    await expectClean(page, problems);
    await context.close();
  });

  it("the system accounts list shows each account's nearest credential expiry (the earliest live secret or certificate)", async () => {
    const account = await createSystemAccount(t.http, platform, ORG, { suffix: 'expiring', role: 'Issuance' });
    const soon = await t.http
      .post(`/admin/v1/organizations/${ORG}/system-accounts/${account.clientId}/secrets`)
      .auth(platform, { type: 'bearer' })
      .send({ expiresAt: new Date(t.clock.now().getTime() + 9 * 86_400_000).toISOString() });
    expect(soon.status).toBe(201);
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/system-accounts`);
    const table = page.getByRole('table', { name: 'System accounts' });
    await table.getByRole('columnheader', { name: 'Nearest credential expiry' }).waitFor();
    const row = table.getByRole('row', { name: new RegExp(account.clientId) });
    expect(await row.locator('time').getAttribute('datetime')).toBe(soon.body.expiresAt);
    expect((await row.locator('time').textContent())!.trim()).toBe(
      new Date(soon.body.expiresAt as string).toLocaleDateString('en-US', { year: 'numeric', month: 'short', day: 'numeric' }),
    );
    await expectClean(page, problems);
    await context.close();
  });

  it("a certificate is refused with the server's reason at the field, and an accepted one is listed with thumbprint, subject and expiry", async () => {
    const account = await createSystemAccount(t.http, platform, ORG, { suffix: 'signer', role: 'Issuance' });
    const weak = await makeCertificate({ keyType: 'RSA-1024', subject: 'CN=weak' });
    const good = await makeCertificate({ keyType: 'EC-P256', subject: 'CN=signer.example' });
    // What the server says about the weak one, asked beside the browser.
    const probe = await createSystemAccount(t.http, platform, ORG, { suffix: 'probe', role: 'Issuance' });
    const reason = (await uploadCertificate(t.http, platform, ORG, probe.clientId, weak.pem)).body.detail as string;
    expect(reason).toMatch(/2048/);

    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/system-accounts/${account.clientId}`);
    const field = page.getByLabel('Certificate (PEM)');
    await field.fill(weak.pem);
    await page.getByRole('button', { name: 'Upload certificate' }).click();
    await page.getByText(reason).waitFor();
    expect(await field.getAttribute('aria-invalid')).toBe('true');
    expect(await field.getAttribute('aria-describedby')).toContain(await page.getByText(reason).getAttribute('id'));
    await expectClean(page, problems, 400);
    await field.fill(good.pem);
    await page.getByRole('button', { name: 'Upload certificate' }).click();
    await page.getByRole('cell', { name: good.thumbprint, exact: true }).waitFor();
    expect(await page.getByRole('cell', { name: /signer\.example/ }).isVisible()).toBe(true);
    // Its validity is the certificate's notAfter; the registration's expiry is its own column (they differ).
    const listed = await t.http.get(`/admin/v1/organizations/${ORG}/system-accounts/${account.clientId}/certificates`).auth(platform, { type: 'bearer' });
    const stored = listed.body.Resources[0] as { notAfter: string; expiresAt: string };
    expect(stored.notAfter).not.toBe(stored.expiresAt);
    const certificates = page.getByRole('table', { name: 'Certificates' });
    const headers = await certificates.getByRole('columnheader').allTextContents();
    const row = certificates.getByRole('row', { name: new RegExp(good.thumbprint) });
    const cellTime = async (header: string) => row.getByRole('cell').nth(headers.indexOf(header)).locator('time').getAttribute('datetime');
    expect(await cellTime('Valid until')).toBe(stored.notAfter);
    expect(await cellTime('Registration expires')).toBe(stored.expiresAt);
    await saveScreenshot(page, 'system-account.png', { fullPage: true });
    await expectClean(page, problems, 400);
    await context.close();
  });

  it("edits a system account's redirect URIs: the server's reason at the field, then saved; an account not set up is set up by saving", async () => {
    const account = await createSystemAccount(t.http, platform, ORG, { suffix: 'webapp', role: 'Issuance' });
    const settingsPath = `/admin/v1/organizations/${ORG}/system-accounts/${account.clientId}/oidc-client`;
    const setUp = await t.http
      .put(settingsPath)
      .auth(platform, { type: 'bearer' })
      .send({ redirectUris: ['https://app.example.com/callback'] });
    expect(setUp.status).toBe(200);
    // What the server says about a plain-http redirect URI, asked beside the browser.
    const reason = (
      await t.http
        .put(settingsPath)
        .auth(platform, { type: 'bearer' })
        .send({ redirectUris: ['http://app.example.com/cb'] })
    ).body.detail as string;
    expect(reason).toMatch(/must use https/);

    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/system-accounts/${account.clientId}`);
    await page.getByRole('button', { name: 'Edit redirect URIs' }).click();
    const dialog = page.getByRole('dialog', { name: 'Sign-in settings' });
    const field = dialog.getByLabel('Redirect URIs', { exact: true });
    await field.waitFor();
    expect(await field.inputValue()).toBe('https://app.example.com/callback');
    await expectClean(page, problems);
    await field.fill('http://app.example.com/cb');
    await dialog.getByRole('button', { name: 'Save sign-in settings' }).click();
    await dialog.getByText(reason).waitFor();
    expect(await field.getAttribute('aria-invalid')).toBe('true');
    expect(await field.getAttribute('aria-describedby')).toContain(await dialog.getByText(reason).getAttribute('id'));
    await expectClean(page, problems, 400);
    await field.fill('https://app.example.com/callback\nhttps://app.example.com/other');
    await dialog.getByLabel('Post-logout redirect URIs').fill('https://app.example.com/');
    await dialog.getByLabel('Refresh tokens').check();
    await dialog.getByRole('button', { name: 'Save sign-in settings' }).click();
    await dialog.getByRole('status').getByText('Saved.').waitFor();
    const stored = await t.http.get(settingsPath).auth(platform, { type: 'bearer' });
    expect(stored.body).toMatchObject({
      redirectUris: ['https://app.example.com/callback', 'https://app.example.com/other'],
      postLogoutRedirectUris: ['https://app.example.com/'],
      publicClient: false,
      firstParty: false,
      refreshTokens: true,
    });
    await expectClean(page, problems, 400);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    await context.close();

    // An account not set up: the dialog (and only the dialog: the API answers its settings 404) says so, and saving sets it up.
    const fresh = await createSystemAccount(t.http, platform, ORG, { suffix: 'newapp', role: 'Issuance' });
    const second = await signedIn(ada, `/portal/${ORG}/system-accounts/${fresh.clientId}`);
    await second.page.getByRole('heading', { name: 'Sign-in (OpenID Connect client)' }).waitFor();
    expect(second.problems).toEqual([]);
    await second.page.getByRole('button', { name: 'Edit redirect URIs' }).click();
    const empty = second.page.getByRole('dialog', { name: 'Sign-in settings' });
    await empty.getByText('This account is not set up for sign-in yet: saving sets it up.').waitFor();
    await empty.getByLabel('Redirect URIs', { exact: true }).fill('https://new.example.com/callback');
    await empty.getByRole('button', { name: 'Save sign-in settings' }).click();
    await empty.getByRole('status').getByText('Saved.').waitFor();
    const created = await t.http.get(`/admin/v1/organizations/${ORG}/system-accounts/${fresh.clientId}/oidc-client`).auth(platform, { type: 'bearer' });
    expect(created.body.redirectUris).toEqual(['https://new.example.com/callback']);
    // The account said it was not set up (oidcClient): the portal never asked its settings, so the browser logged no 404.
    await expectClean(second.page, second.problems);
    await second.context.close();
  });

  it('adds a secret with an expiry (shown once, and it works) and revokes the first one (which stops working)', async () => {
    const account = await createSystemAccount(t.http, platform, ORG, { suffix: 'rotated', role: 'Issuance' });
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/system-accounts/${account.clientId}`);
    const secrets = page.getByRole('table', { name: 'Secrets' });
    await secrets
      .getByRole('button', { name: /^Revoke secret / })
      .first()
      .waitFor();
    const firstId = (await secrets
      .getByRole('button', { name: /^Revoke secret / })
      .first()
      .getAttribute('aria-label'))!.replace('Revoke secret ', '');
    await page.getByRole('button', { name: 'Add secret' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add a secret' });
    await dialog.getByLabel('Expires').fill('2031-01-31T12:00');
    await dialog.getByRole('button', { name: 'Add secret' }).click();
    const value = (await dialog.getByLabel('New client secret').textContent())!.trim();
    await expectClean(page, problems);
    await dialog.getByRole('button', { name: 'Done' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect(await tokenBySecret(t.http, ORG, account.clientId, value)).toMatch(/^ey/);
    expect(await secrets.getByRole('button', { name: /^Revoke secret / }).count()).toBe(2);
    await secrets.getByRole('button', { name: `Revoke secret ${firstId}` }).click();
    await secrets.getByRole('button', { name: `Revoke secret ${firstId}` }).waitFor({ state: 'detached' });
    const refused = await tokenRequest(t.http, ORG, { grant_type: 'client_credentials', client_id: account.clientId, client_secret: account.secret });
    expect(refused.status).toBe(401);
    expect(await tokenBySecret(t.http, ORG, account.clientId, value)).toMatch(/^ey/);
    await expectClean(page, problems);
    await context.close();
  });

  it('disabling an account from its page makes the token endpoint refuse it; deleting it needs its name typed', async () => {
    const account = await createSystemAccount(t.http, platform, ORG, { suffix: 'retired', role: 'Issuance' });
    await tokenBySecret(t.http, ORG, account.clientId, account.secret);
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/system-accounts/${account.clientId}`);
    await page.getByRole('button', { name: 'Disable account' }).click();
    await page.getByRole('button', { name: 'Enable account' }).waitFor();
    const refused = await tokenRequest(t.http, ORG, { grant_type: 'client_credentials', client_id: account.clientId, client_secret: account.secret });
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe('invalid_client');
    await page.getByRole('button', { name: 'Delete account' }).click();
    const confirm = page.getByRole('dialog', { name: `Delete ${account.clientId}` });
    const remove = confirm.getByRole('button', { name: 'Delete account' });
    expect(await remove.isDisabled()).toBe(true);
    await confirm.getByLabel(`Type ${account.clientId} to confirm`).fill(account.clientId);
    await expectClean(page, problems);
    await remove.click();
    await page.waitForURL(`${base}/portal/${ORG}/system-accounts`);
    expect((await t.http.get(`/admin/v1/organizations/${ORG}/system-accounts/${account.clientId}`).auth(platform, { type: 'bearer' })).status).toBe(404);
    expect(problems).toEqual([]);
    await context.close();
  });

  it("an administrator opening another organization's URL sees the not-found page", async () => {
    await createOrganization(t.http, platform, 'elsewhere');
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/roles`);
    await page.goto(`${base}/portal/elsewhere/system-accounts`);
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    await expectClean(page, problems);
    await context.close();
  });

  it('a Help Desk operator has no system-accounts menu, and the direct URL is refused (by the portal and by the server)', async () => {
    const hana = await createPersonWithCard(t, platform, ORG, 'hana');
    await giveRole(t, platform, ORG, hana, 'Help Desk');
    const { context, page, problems } = await signedIn(hana, `/portal/${ORG}/desk`);
    await page.getByRole('heading', { name: "Operators' desk", level: 1 }).waitFor();
    const menu = page.getByRole('navigation', { name: 'Main' });
    expect(await menu.getByRole('link', { name: "Operators' desk" }).isVisible()).toBe(true);
    expect(await menu.getByRole('link', { name: 'System accounts' }).count()).toBe(0);
    await expectClean(page, problems);
    await page.goto(`${base}/portal/${ORG}/system-accounts`);
    await page.getByRole('heading', { name: 'Not allowed' }).waitFor();
    await expectClean(page, problems);
    const direct = await t.bare
      .get(`/admin/v1/organizations/${ORG}/system-accounts`)
      .set({ Cookie: await cookieOf(context), 'Application-ID': TEST_APPLICATION_ID, 'Application-Version': '1.0', 'Sec-Fetch-Site': 'same-origin' });
    expect(direct.status).toBe(403);
    await context.close();
  });

  it('the desk finds users as one types', async () => {
    await createCardholder(t, platform, ORG, 'zoe.search');
    await createCardholder(t, platform, ORG, 'zack.search');
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/desk`);
    await page.getByLabel('Find a user').fill('zo');
    // The server answers the search: one user begins with "zo".
    await page.getByRole('status').getByText('1 user', { exact: true }).waitFor();
    expect(await page.getByRole('button', { name: 'zack.search' }).count()).toBe(0);
    await page.getByRole('button', { name: 'zoe.search' }).click();
    await page.getByRole('heading', { name: 'Wallet of zoe.search' }).waitFor();
    await saveScreenshot(page, 'desk.png', { fullPage: true });
    await expectClean(page, problems);
    await context.close();
  });

  it("the desk shows a person's card and suspends and resumes it, as the role allows", async () => {
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/desk`);
    // ada's own card, issued through the real flow (SyncSession) when the suite began.
    await page.getByLabel('Find a user').fill('ada');
    await page.getByRole('button', { name: 'ada', exact: true }).click();
    await page.getByRole('heading', { name: 'Wallet of ada' }).waitFor();
    const devices = page.getByRole('table', { name: 'Devices' });
    await devices.getByRole('cell', { name: 'ISSUED', exact: true }).waitFor();
    await devices.getByRole('button', { name: 'Suspend' }).click();
    // Suspending needs a reason (the device lifecycle's); the dialog names the card by its CUID.
    const suspend = page.getByRole('dialog', { name: /^Suspend card \d+$/ });
    await suspend.getByLabel('Reason').click();
    await page.getByRole('option', { name: 'LOST' }).click();
    await expectClean(page, problems);
    await suspend.getByRole('button', { name: 'Suspend device' }).click();
    await devices.getByRole('cell', { name: 'ON_HOLD', exact: true }).waitFor();
    await expectClean(page, problems);
    // Resuming asks once too.
    await devices.getByRole('button', { name: 'Resume' }).click();
    await page
      .getByRole('dialog', { name: /^Resume card \d+$/ })
      .getByRole('button', { name: 'Resume device' })
      .click();
    await devices.getByRole('cell', { name: 'ISSUED', exact: true }).waitFor();
    await devices.getByRole('button', { name: 'Revoke' }).click();
    const confirm = page.getByRole('dialog', { name: /^Revoke card \d+$/ });
    await expectClean(page, problems);
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await confirm.waitFor({ state: 'hidden' });
    expect(await devices.getByRole('cell', { name: 'ISSUED', exact: true }).isVisible()).toBe(true);
    await context.close();
  });

  it("the desk's device search answers as one types, and a device found offers its lifecycle moves", async () => {
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/devices`);
    await page.getByRole('heading', { name: 'Devices', level: 1 }).waitFor();
    expect(await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Devices' }).isVisible()).toBe(true);
    const found = page.getByRole('table', { name: 'Devices found' });
    // Nothing matches: the server says so.
    await page.getByLabel('Find a device').fill('nobody-has-this');
    await page.getByRole('status').getByText('0 devices', { exact: true }).waitFor();
    // ada's own card, by the beginning of its owner's user name.
    await page.getByLabel('Find a device').fill('ad');
    await page.getByRole('status').getByText('1 device', { exact: true }).waitFor();
    const row = found.getByRole('row', { name: /ada/ });
    expect(await row.getByRole('cell', { name: 'ada', exact: true }).isVisible()).toBe(true);
    // The row leads with the card's CUID, a link to the device's page (its id in the address, never shown as the row's name).
    const link = row.getByRole('link');
    const cuid = (await link.textContent())!.trim();
    expect(cuid).toMatch(/^\d+$/);
    const id = (await link.getAttribute('href'))!.split('/').pop()!;
    // The same device by the beginning of its id, and by its CUID.
    await page.getByLabel('Find a device').fill(id.slice(0, 8));
    await found.getByRole('link', { name: cuid, exact: true }).waitFor();
    await page.getByLabel('Find a device').fill(cuid);
    await page.getByRole('status').getByText('1 device', { exact: true }).waitFor();
    await found.getByRole('link', { name: cuid, exact: true }).waitFor();
    await saveScreenshot(page, 'devices.png', { fullPage: true });
    await expectClean(page, problems);
    await row.getByRole('button', { name: 'Suspend' }).click();
    const suspend = page.getByRole('dialog', { name: `Suspend card ${cuid}` });
    await suspend.getByLabel('Reason').click();
    await page.getByRole('option', { name: 'FORGOTTEN' }).click();
    await expectClean(page, problems);
    await suspend.getByRole('button', { name: 'Suspend device' }).click();
    await row.getByRole('cell', { name: 'ON_HOLD', exact: true }).waitFor();
    const stored = await t.db.query('SELECT status FROM devices WHERE id = $1', [id]);
    expect(stored.rows[0].status).toBe('ON_HOLD');
    await row.getByRole('button', { name: 'Resume' }).click();
    await page
      .getByRole('dialog', { name: `Resume card ${cuid}` })
      .getByRole('button', { name: 'Resume device' })
      .click();
    await row.getByRole('cell', { name: 'ISSUED', exact: true }).waitFor();
    await expectClean(page, problems);
    await context.close();
  }, 90_000);

  it('the devices screen revokes several selected devices with one reason, each row showing its result', async () => {
    await createPersonWithCard(t, platform, ORG, 'bulk.rex');
    await createPersonWithCard(t, platform, ORG, 'bulk.rita');
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/devices`);
    await page.getByRole('heading', { name: 'Devices', level: 1 }).waitFor();
    await page.getByLabel('Find a device').fill('bulk.');
    await page.getByRole('status').getByText('2 devices', { exact: true }).waitFor();
    const found = page.getByRole('table', { name: 'Devices found' });
    const ids: string[] = [];
    const cuids: string[] = [];
    for (const owner of ['bulk.rex', 'bulk.rita']) {
      const row = found.getByRole('row', { name: new RegExp(owner.replace('.', '\\.')) });
      const link = row.getByRole('link');
      const cuid = (await link.textContent())!.trim();
      ids.push((await link.getAttribute('href'))!.split('/').pop()!);
      cuids.push(cuid);
      await page.getByRole('checkbox', { name: `Select card ${cuid}` }).check();
    }
    await page.getByRole('button', { name: 'Revoke selected (2)' }).click();
    const confirm = page.getByRole('dialog', { name: 'Revoke the selected devices' });
    await confirm.getByLabel('Reason').click();
    await page.getByRole('option', { name: 'STOLEN' }).click();
    await expectClean(page, problems);
    await confirm.getByRole('button', { name: 'Revoke 2 devices' }).click();
    await confirm.waitFor({ state: 'hidden' });
    const results = page.getByRole('status', { name: 'Results' });
    for (const cuid of cuids) {
      await results.getByText(`card ${cuid}: revoked`, { exact: true }).waitFor();
      await found
        .getByRole('row', { name: new RegExp(cuid) })
        .getByRole('cell', { name: 'REVOKED', exact: true })
        .waitFor();
    }
    await expectClean(page, problems);
    const cookie = await cookieOf(context);
    for (const id of ids) {
      const device = await t.bare
        .get(`/aims/rs/scim/v2/Device/${id}`)
        .set({ Cookie: cookie, 'Application-ID': TEST_APPLICATION_ID, 'Application-Version': '1.0', 'Sec-Fetch-Site': 'same-origin' });
      expect(device.status).toBe(200);
      expect(device.body.status.status).toBe('REVOKED');
    }
    await context.close();
  }, 90_000);

  it("a device's page: CUID, ATR, status, owner, policy, history and each credential with its certificate (download as DER); revoked from the page, the certificate is on the CRL and OCSP answers revoked", async () => {
    const pia = await createPersonWithCard(t, platform, ORG, 'pia.page', { smartCard: true });
    const [stored] = (await t.db.query('SELECT id FROM devices WHERE owner_user_id = $1', [pia.id])).rows as Array<{ id: string }>;
    const { CUID: cuid, ATR: atr } = (await t.db.query('SELECT cuid AS "CUID", atr AS "ATR" FROM device_external_ids WHERE device_id = $1', [stored.id]))
      .rows[0];
    const dir = join(process.env.TEST_RUN_DIR!, `portal-device-${stored.id.slice(0, 8)}`);
    mkdirSync(dir, { recursive: true });
    const leaf = join(dir, 'leaf.pem');
    writeFileSync(leaf, pia.certificatePem!);
    const serial = openssl('x509', '-in', leaf, '-noout', '-serial').trim().replace('serial=', '').toUpperCase();

    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/devices/${stored.id}`);
    await page.getByRole('heading', { name: `Card ${cuid}`, level: 1 }).waitFor();
    const facts = page.getByRole('region', { name: 'Device' });
    for (const [term, value] of [
      ['CUID', cuid],
      ['ATR', atr],
      ['Status', /^ISSUED/],
      ['Owner', 'pia.page'],
    ] as const) {
      const definition = (await facts
        .getByRole('definition')
        .nth(await termIndex(facts, term))
        .textContent())!.trim();
      expect([term, definition]).toEqual([term, typeof value === 'string' ? value : expect.stringMatching(value)]);
    }
    expect(await facts.getByText(/^Card of pia\.page/).isVisible()).toBe(true);
    const credentials = page.getByRole('table', { name: `Credentials of card ${cuid}` });
    const certificateRow = credentials.getByRole('row', { name: /Certificate/ });
    await certificateRow.getByText(serial, { exact: false }).waitFor();
    expect(await certificateRow.getByText(/CN=pia\.page/).isVisible()).toBe(true);
    expect(await certificateRow.getByText(/Issuer/).isVisible()).toBe(true);
    expect(await certificateRow.getByText('Not revoked').isVisible()).toBe(true);
    expect(
      await credentials
        .getByRole('row', { name: /OTP \(TOTP\)/ })
        .getByRole('cell', { name: 'ISSUED', exact: true })
        .isVisible(),
    ).toBe(true);
    await page.getByRole('table', { name: 'History' }).getByRole('cell', { name: 'device.issue', exact: true }).waitFor();
    // The DER download is the certificate the card holds.
    const downloading = page.waitForEvent('download');
    await certificateRow.getByRole('button', { name: /\(DER\)$/ }).click();
    const saved = join(dir, 'downloaded.cer');
    await (await downloading).saveAs(saved);
    expect(openssl('x509', '-inform', 'DER', '-in', saved, '-noout', '-serial').trim().toUpperCase()).toBe(`SERIAL=${serial}`);
    await saveScreenshot(page, 'device.png', { fullPage: true });
    await expectClean(page, problems);
    await page.getByRole('button', { name: 'Switch to the dark theme' }).click();
    expect(await accessibilityViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Switch to the light theme' }).click();

    // Revoked from the page, in a dialog that names the card.
    await page.getByRole('button', { name: `Revoke card ${cuid}` }).click();
    const confirm = page.getByRole('dialog', { name: `Revoke card ${cuid}` });
    await confirm.getByLabel('Reason').click();
    await page.getByRole('option', { name: 'STOLEN' }).click();
    await expectClean(page, problems);
    await confirm.getByRole('button', { name: 'Revoke device' }).click();
    await certificateRow.getByText(/Revoked/).waitFor();
    expect(await certificateRow.getByRole('cell', { name: 'REVOKED', exact: true }).isVisible()).toBe(true);
    const caFile = join(dir, 'ca.pem');
    writeFileSync(caFile, pia.chainPem!.join(''));
    const crlFile = join(dir, 'crl.der');
    // The CRL is re-signed within a second of the change (CREDENTIAL-MANAGEMENT.md "PKI"): read it until it lists the certificate, for up to 10 s.
    let crl = '';
    for (let tries = 0; tries < 20 && !crl.includes(`Serial Number: ${serial}`); tries += 1) {
      if (tries > 0) await new Promise((resolve) => setTimeout(resolve, 500));
      writeFileSync(crlFile, (await t.bare.get(`/pki/${ORG}/crl`).responseType('blob')).body as Buffer);
      crl = opensslVerified('crl', '-inform', 'DER', '-in', crlFile, '-CAfile', caFile, '-noout', '-text');
    }
    expect(crl).toContain(`Serial Number: ${serial}`);
    const request = join(dir, 'ocsp.req');
    openssl('ocsp', '-issuer', caFile, '-cert', leaf, '-no_nonce', '-reqout', request);
    const answered = await t.bare.post(`/pki/${ORG}/ocsp`).set('Content-Type', 'application/ocsp-request').send(readFileSync(request)).responseType('blob');
    const response = join(dir, 'ocsp.der');
    writeFileSync(response, answered.body as Buffer);
    // The service answers by the test's clock, which the sign-ins' one-time codes have moved ahead of this
    // machine's (a step of 30 s each time the helper has used both steps around now): openssl checks the
    // answer's times against its own clock, so it allows that difference on top of its usual 5 minutes.
    const skewS = Math.ceil(Math.abs(t.clock.now().getTime() - Date.now()) / 1000);
    expect(
      opensslVerified('ocsp', '-respin', response, '-issuer', caFile, '-cert', leaf, '-CAfile', caFile, '-no_nonce', '-validity_period', String(300 + skewS)),
    ).toContain(`${leaf}: revoked`);
    await expectClean(page, problems);

    // Terminated, then recycled: a recycle request (no approval) that awaits the card client.
    await page.getByRole('button', { name: `Terminate card ${cuid}` }).click();
    await page
      .getByRole('dialog', { name: `Terminate card ${cuid}` })
      .getByRole('button', { name: 'Terminate device' })
      .click();
    await page.getByRole('button', { name: `Recycle card ${cuid}` }).click();
    const recycle = page.getByRole('dialog', { name: `Recycle card ${cuid}?` });
    await expectClean(page, problems);
    await recycle.getByRole('button', { name: 'Recycle', exact: true }).click();
    await page.getByRole('heading', { name: /^Recycle/, level: 1 }).waitFor();
    await page.getByRole('region', { name: 'Request' }).getByRole('status').getByText('Awaiting encoding').waitFor();
    const recycling = page.url().split('/').pop()!;
    expect((await t.db.query('SELECT type, status, device_id FROM content_requests WHERE id = $1', [recycling])).rows[0]).toEqual({
      type: 'recycle',
      status: 'approved',
      device_id: stored.id,
    });
    await expectClean(page, problems);

    // A device that does not exist: the not-found page, and nothing logged (the page looks it up with a search).
    await page.goto(`${base}/portal/${ORG}/devices/00000000-0000-4000-8000-000000000000`);
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    await expectClean(page, problems);
    await context.close();
  }, 90_000);

  it("four eyes: the request's creator sees approve disabled with the reason (and the server refuses them); another operator approves", async () => {
    const olga = await createPersonWithCard(t, platform, ORG, 'olga');
    const otto = await createPersonWithCard(t, platform, ORG, 'otto');
    await giveRole(t, platform, ORG, olga, 'Issuance');
    await giveRole(t, platform, ORG, otto, 'Issuance');
    const holder = await createCardholder(t, platform, ORG, 'carl');
    const policy = await t.http
      .post(`/admin/v1/organizations/${ORG}/device-policies`)
      .auth(platform, { type: 'bearer' })
      .send({ name: 'Four eyes card', credentialTypes: ['OATH_TOTP'] });
    expect(policy.status).toBe(201);
    const card = await insertCard(t, ORG);

    const olgaBrowser = await signedIn(olga, `/portal/${ORG}/requests`);
    // olga files the request from her session, beside the browser (the portal has no issuance form yet).
    const filed = await t.bare
      .post('/aims/rs/scim/v2/ContentRequest')
      .set({
        Cookie: await cookieOf(olgaBrowser.context),
        'Application-ID': TEST_APPLICATION_ID,
        'Application-Version': '1.0',
        Origin: base,
        'Content-Type': 'application/scim+json',
      })
      .send(
        JSON.stringify({
          schemas: ['urn:vendor:scim:api:cms:1.0:ContentRequest'],
          type: 'issuance',
          target: { device: { value: card.id }, devicePolicy: { value: policy.body.id } },
          wallet: { value: holder.wallet },
        }),
      );
    expect(filed.status).toBe(201);
    expect(filed.body.requestedBy).toBe('olga');
    await olgaBrowser.page.reload();
    const approveOwn = olgaBrowser.page.getByRole('button', { name: 'Approve issuance for carl' });
    await approveOwn.waitFor();
    expect(await approveOwn.isDisabled()).toBe(true);
    expect(await olgaBrowser.page.getByText('You created this request: another operator approves it (four eyes).').isVisible()).toBe(true);
    await expectClean(olgaBrowser.page, olgaBrowser.problems);
    const refused = await t.bare
      .post(`/aims/rs/scim/v2/ContentRequest/${filed.body.id}/approve`)
      .set({ Cookie: await cookieOf(olgaBrowser.context), 'Application-ID': TEST_APPLICATION_ID, 'Application-Version': '1.0', Origin: base })
      .send({});
    expect([403, 409]).toContain(refused.status);

    const ottoBrowser = await signedIn(otto, `/portal/${ORG}/requests`);
    const approve = ottoBrowser.page.getByRole('button', { name: 'Approve issuance for carl' });
    expect(await approve.isDisabled()).toBe(false);
    await saveScreenshot(ottoBrowser.page, 'requests.png', { fullPage: true });
    await approve.click();
    // Asked once, in a dialog that names the request.
    const confirm = ottoBrowser.page.getByRole('dialog', { name: 'Approve issuance for carl?' });
    await expectClean(ottoBrowser.page, ottoBrowser.problems);
    await confirm.getByRole('button', { name: 'Approve', exact: true }).click();
    await ottoBrowser.page.getByText('issuance for carl: approved', { exact: true }).waitFor();
    const auditor = await createSystemAccount(t.http, platform, ORG, { role: 'Administration' });
    const stored = await t.http
      .get(`/aims/rs/scim/v2/ContentRequest/${filed.body.id}`)
      .auth(await tokenBySecret(t.http, ORG, auditor.clientId, auditor.secret), { type: 'bearer' });
    expect(stored.body).toMatchObject({ status: 'approved', approvedBy: 'otto' });
    await expectClean(ottoBrowser.page, ottoBrowser.problems);
    await olgaBrowser.context.close();
    await ottoBrowser.context.close();
  }, 90_000);

  it('issuance from the desk: an Issuance operator issues a card with a certificate and an OTP token, a second one approves on the request page, the card client encodes it and the desk shows the credentials', async () => {
    const ines = await createPersonWithCard(t, platform, ORG, 'ines');
    const ivan = await createPersonWithCard(t, platform, ORG, 'ivan');
    await giveRole(t, platform, ORG, ines, 'Issuance');
    await giveRole(t, platform, ORG, ivan, 'Issuance');
    await createCardholder(t, platform, ORG, 'dora.new', { displayName: 'Dora New' });
    const policy = await t.http
      .post(`/admin/v1/organizations/${ORG}/device-policies`)
      .auth(platform, { type: 'bearer' })
      .send({ name: 'Desk card', credentialTypes: ['PKI_CERTIFICATE', 'OATH_TOTP'] });
    expect(policy.status).toBe(201);
    const card = await insertCard(t, ORG);

    // The whole issuance from the keyboard alone.
    const first = await signedIn(ines, `/portal/${ORG}/desk`);
    const { page } = first;
    await page.getByLabel('Find a user').focus();
    await page.keyboard.type('dora.n');
    await tabTo(page, page.getByRole('button', { name: 'dora.new' }));
    await page.keyboard.press('Enter');
    await tabTo(page, page.getByRole('button', { name: 'Issue a device' }));
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Issue a device to dora.new' });
    await dialog.waitFor();
    // Focus starts in the CUID field.
    await page.keyboard.type(card.CUID);
    const radio = dialog.getByRole('radio', { name: `Card ${card.CUID}` });
    // The search answers after its debounce: on a loaded host, later than 40 presses of Tab.
    await radio.waitFor();
    await tabTo(page, radio);
    await page.keyboard.press('Space');
    expect(await radio.isChecked()).toBe(true);
    await tabTo(page, dialog.getByRole('combobox', { name: 'Device policy' }));
    await page.keyboard.type('Desk card');
    await page.getByRole('option', { name: 'Desk card' }).waitFor();
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter');
    await dialog.getByText('Credentials: PKI_CERTIFICATE, OATH_TOTP; another operator approves it').waitFor();
    await saveScreenshot(page, 'issue.png');
    await expectClean(page, first.problems);
    await tabTo(page, dialog.getByRole('button', { name: `Issue card ${card.CUID}` }));
    await page.keyboard.press('Enter');
    // The request's page: the person, the card, the policy, who asked; ines may not approve her own request.
    await page.getByRole('heading', { name: 'Issuance for dora.new', level: 1 }).waitFor();
    const id = page.url().split('/').pop()!;
    const facts = page.getByRole('region', { name: 'Request' });
    await facts.getByRole('status').getByText('Awaiting approval').waitFor();
    expect(await facts.getByRole('link', { name: `Card ${card.CUID}` }).isVisible()).toBe(true);
    expect(await facts.getByText('Desk card').isVisible()).toBe(true);
    expect(await page.getByRole('button', { name: 'Approve issuance for dora.new' }).isDisabled()).toBe(true);
    await expectClean(page, first.problems);

    const second = await signedIn(ivan, `/portal/${ORG}/requests`);
    await second.page.getByRole('link', { name: 'issuance' }).first().waitFor();
    await second.page.goto(`${base}/portal/${ORG}/requests/${id}`);
    await second.page.getByRole('button', { name: 'Approve issuance for dora.new' }).click();
    const confirm = second.page.getByRole('dialog', { name: 'Approve issuance for dora.new?' });
    await expectClean(second.page, second.problems);
    await confirm.getByRole('button', { name: 'Approve', exact: true }).click();
    // Approved: the card client's turn, and ines's page follows without a reload.
    await second.page.getByRole('region', { name: 'Request' }).getByRole('status').getByText('Awaiting encoding').waitFor();
    await facts.getByRole('status').getByText('Awaiting encoding').waitFor();
    expect(await facts.getByText('ivan', { exact: true }).isVisible()).toBe(true);
    await saveScreenshot(second.page, 'request.png', { fullPage: true });
    await second.page.getByRole('button', { name: 'Switch to the dark theme' }).click();
    expect(await accessibilityViolations(second.page)).toEqual([]);
    await second.page.getByRole('button', { name: 'Switch to the light theme' }).click();

    // The encoding client's SyncSession, through the API as a card client does it.
    const encoder = await createSystemAccount(t.http, platform, ORG, { role: 'Issuance' });
    const encoderToken = await tokenBySecret(t.http, ORG, encoder.clientId, encoder.secret);
    const dir = join(process.env.TEST_RUN_DIR!, `portal-issue-${id.slice(0, 8)}`);
    mkdirSync(dir, { recursive: true });
    const session = await t.http
      .post('/aims/rs/scim/v2/SyncSession')
      .auth(encoderToken, { type: 'bearer' })
      .set('Content-Type', 'application/scim+json')
      .send(
        JSON.stringify({
          schemas: ['urn:vendor:scim:api:cms:1.0:SyncSession'],
          contentRequest: { value: id },
          device: { ATR: card.ATR, CUID: card.CUID },
          results: [
            { operation: 'GENERATE_KEY', status: 'SUCCESS', credentialType: 'PKI_CERTIFICATE', csr: opensslCsr(dir) },
            { operation: 'WRITE_OTP', status: 'SUCCESS', credentialType: 'OATH_TOTP' },
          ],
        }),
      );
    expect(session.status).toBe(201);
    const serial = (session.body.credentials as Array<{ type: string; certificate?: { value: string } }>).find((c) => c.type === 'PKI_CERTIFICATE')!;
    writeFileSync(join(dir, 'leaf.cer'), Buffer.from(serial.certificate!.value, 'base64'));
    const serialHex = openssl('x509', '-inform', 'DER', '-in', join(dir, 'leaf.cer'), '-noout', '-serial').trim().replace('serial=', '');
    await facts.getByRole('status').getByText('Completed').waitFor();
    await expectClean(page, first.problems);

    // The desk shows the card and its credentials with the certificate's details.
    await page.goto(`${base}/portal/${ORG}/desk`);
    await page.getByLabel('Find a user').fill('dora.n');
    await page.getByRole('button', { name: 'dora.new' }).click();
    const credentials = page.getByRole('table', { name: 'Credentials' });
    const certificate = credentials.getByRole('row', { name: /Certificate/ });
    await certificate.getByText(serialHex, { exact: false }).waitFor();
    expect(await certificate.getByText(/CN=Dora New/).isVisible()).toBe(true);
    expect(
      await credentials
        .getByRole('row', { name: /OTP \(TOTP\)/ })
        .getByRole('cell', { name: 'ISSUED', exact: true })
        .isVisible(),
    ).toBe(true);
    expect(await page.getByRole('table', { name: 'Devices' }).getByRole('link', { name: card.CUID }).isVisible()).toBe(true);
    await expectClean(page, first.problems);
    await first.context.close();
    await second.context.close();
  }, 120_000);

  it("a request's page cancels a request and retries a failed one, each asked once; an unknown request is the not-found page", async () => {
    const holder = await createCardholder(t, platform, ORG, 'cara.cancel');
    const policy = await t.http
      .post(`/admin/v1/organizations/${ORG}/device-policies`)
      .auth(platform, { type: 'bearer' })
      .send({ name: 'Retry card', credentialTypes: ['OATH_TOTP'] });
    const [filer, approver] = [
      await createSystemAccount(t.http, platform, ORG, { role: 'Issuance' }),
      await createSystemAccount(t.http, platform, ORG, { role: 'Issuance' }),
    ];
    const filerToken = await tokenBySecret(t.http, ORG, filer.clientId, filer.secret);
    const approverToken = await tokenBySecret(t.http, ORG, approver.clientId, approver.secret);
    const scim = (token: string, path: string, body: unknown) =>
      t.http.post(path).auth(token, { type: 'bearer' }).set('Content-Type', 'application/scim+json').send(JSON.stringify(body));
    const file = async (card: { id: string }) =>
      (
        await scim(filerToken, '/aims/rs/scim/v2/ContentRequest', {
          schemas: ['urn:vendor:scim:api:cms:1.0:ContentRequest'],
          type: 'issuance',
          target: { device: { value: card.id }, devicePolicy: { value: policy.body.id } },
          wallet: { value: holder.wallet },
        })
      ).body.id as string;
    const first = await insertCard(t, ORG);
    const cancelled = await file(first);

    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/requests/${cancelled}`);
    const facts = page.getByRole('region', { name: 'Request' });
    await facts.getByRole('status').getByText('Awaiting approval').waitFor();
    await page.getByRole('button', { name: 'Cancel issuance for cara.cancel' }).click();
    const confirm = page.getByRole('dialog', { name: 'Cancel issuance for cara.cancel?' });
    await expectClean(page, problems);
    await confirm.getByRole('button', { name: 'Cancel', exact: true }).click();
    await facts.getByRole('status').getByText('Cancelled').waitFor();
    expect((await t.db.query('SELECT status FROM content_requests WHERE id = $1', [cancelled])).rows[0].status).toBe('cancelled');
    expect((await t.db.query('SELECT status FROM devices WHERE id = $1', [first.id])).rows[0].status).toBe('AVAILABLE');

    // A request whose encoding failed: the failure's detail, then Retry makes it await encoding again.
    const second = await insertCard(t, ORG);
    const failing = await file(second);
    expect((await scim(approverToken, `/aims/rs/scim/v2/ContentRequest/${failing}/approve`, {})).status).toBe(200);
    const session = await scim(filerToken, '/aims/rs/scim/v2/SyncSession', {
      schemas: ['urn:vendor:scim:api:cms:1.0:SyncSession'],
      contentRequest: { value: failing },
      device: { ATR: second.ATR, CUID: second.CUID },
      results: [{ operation: 'WRITE_OTP', status: 'FAILURE', credentialType: 'OATH_TOTP', detail: 'card removed from the reader' }],
    });
    expect(session.status).toBeLessThan(500);
    await page.goto(`${base}/portal/${ORG}/requests/${failing}`);
    await facts.getByRole('status').getByText('Failed').waitFor();
    expect(await facts.getByText(/card removed from the reader/).isVisible()).toBe(true);
    await page.getByRole('button', { name: 'Retry issuance for cara.cancel' }).click();
    await page.getByRole('dialog', { name: 'Retry issuance for cara.cancel?' }).getByRole('button', { name: 'Retry', exact: true }).click();
    await facts.getByRole('status').getByText('Awaiting encoding').waitFor();
    expect((await t.db.query('SELECT status FROM content_requests WHERE id = $1', [failing])).rows[0].status).toBe('approved');
    await expectClean(page, problems);

    // An unknown request: the not-found page, and nothing logged (the page looks it up with a search).
    await page.goto(`${base}/portal/${ORG}/requests/00000000-0000-4000-8000-000000000000`);
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    await expectClean(page, problems);
    await context.close();
  }, 90_000);

  it('a Help Desk operator is offered no issuance (the permission table gives it to Issuance)', async () => {
    const hugo = await createPersonWithCard(t, platform, ORG, 'hugo');
    await giveRole(t, platform, ORG, hugo, 'Help Desk');
    const { context, page, problems } = await signedIn(hugo, `/portal/${ORG}/desk`);
    await page.getByLabel('Find a user').fill('ada');
    await page.getByRole('button', { name: 'ada', exact: true }).click();
    await page.getByRole('heading', { name: 'Wallet of ada' }).waitFor();
    await page.getByRole('table', { name: 'Devices' }).waitFor();
    expect(await page.getByRole('button', { name: 'Issue a device' }).count()).toBe(0);
    await expectClean(page, problems);
    await context.close();
  }, 90_000);

  it('the audit page shows what the administrator did with the person as actor, filters it, and opens an event', async () => {
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/audit`);
    // The audit page, not what was on screen before it (the login page's "One-time code" matched a bare getByLabel('Code') once).
    await page.getByRole('table', { name: 'Audit events' }).waitFor();
    // No code to know: actions are picked by name from the catalogue, grouped.
    expect(await page.getByLabel('Code', { exact: true }).count()).toBe(0);
    await page.getByLabel('Actor').fill('ada');
    await page.getByRole('combobox', { name: 'Action' }).click();
    await page.getByRole('combobox', { name: 'Action' }).fill('system account');
    await page.getByRole('option', { name: 'Any system account action' }).click();
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const created = page.getByRole('row', { name: /system_account\.create/ }).first();
    await created.waitFor();
    expect(await created.getByRole('cell', { name: 'ada', exact: true }).isVisible()).toBe(true);
    expect(
      await page
        .getByRole('row', { name: /system_account\.update/ })
        .first()
        .isVisible(),
    ).toBe(true);
    expect(
      await page
        .getByRole('row', { name: /system_account\.delete/ })
        .first()
        .isVisible(),
    ).toBe(true);
    await saveScreenshot(page, 'audit.png', { fullPage: true });
    await expectClean(page, problems);
    // One action: only its events.
    await page.getByRole('combobox', { name: 'Action' }).click();
    await page.getByRole('combobox', { name: 'Action' }).fill('System account created');
    await page.getByRole('option', { name: /^System account created/ }).click();
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page
      .getByRole('row', { name: /system_account\.update/ })
      .first()
      .waitFor({ state: 'detached' });
    expect(await page.getByRole('row', { name: /system_account\.create/ }).count()).toBeGreaterThan(0);
    await created.getByRole('button', { name: /Detail of system_account\.create/ }).click();
    const detail = page.getByRole('dialog', { name: 'Audit event' });
    await detail.waitFor();
    await expectClean(page, problems);
    await page.keyboard.press('Escape');
    await detail.waitFor({ state: 'hidden' });
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it('every screen is accessible in the dark theme too, and the switch is remembered', async () => {
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/system-accounts`);
    await page.getByRole('heading', { name: 'System accounts', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Switch to the dark theme' }).click();
    expect(await page.locator('html').getAttribute('data-mantine-color-scheme')).toBe('dark');
    await saveScreenshot(page, 'system-accounts-dark.png');
    for (const screen of ['system-accounts', 'users', 'desk', 'devices', 'requests', 'stats', 'audit', 'roles', 'organization']) {
      await page.goto(`${base}/portal/${ORG}/${screen}`);
      await page.getByRole('heading', { level: 1 }).waitFor();
      await page.waitForLoadState('networkidle');
      expect(await page.locator('html').getAttribute('data-mantine-color-scheme')).toBe('dark');
      expect([screen, await accessibilityViolations(page)]).toEqual([screen, []]);
    }
    await page.getByRole('button', { name: 'Switch to the light theme' }).click();
    for (const screen of ['users', 'requests', 'organization']) {
      await page.goto(`${base}/portal/${ORG}/${screen}`);
      await page.getByRole('heading', { level: 1 }).waitFor();
      await page.waitForLoadState('networkidle');
      expect([screen, await accessibilityViolations(page)]).toEqual([screen, []]);
    }
    // Stats as charts: each bar's count written beside it (the suite issued cards, so devices are ISSUED).
    await page.goto(`${base}/portal/${ORG}/stats`);
    const issued = page.getByRole('region', { name: 'Devices' }).getByRole('listitem').filter({ hasText: 'ISSUED' });
    await issued.waitFor();
    expect(Number((await issued.textContent())!.replace(/\D/g, ''))).toBeGreaterThan(0);
    await saveScreenshot(page, 'stats.png');
    // The organization page read its CA and its push gateways (the defaults every organization gets).
    await page.goto(`${base}/portal/${ORG}/organization`);
    await page.getByRole('region', { name: 'Push gateways' }).getByRole('cell', { name: 'Default WNS gateway', exact: true }).waitFor();
    expect(await page.getByRole('link', { name: 'Download the CA certificate', exact: true }).getAttribute('href')).toBe(`/pki/${ORG}/ca.crt`);
    await page.goto(`${base}/portal/${ORG}/system-accounts`);
    await page.getByRole('heading', { name: 'System accounts', level: 1 }).waitFor();
    await saveScreenshot(page, 'system-accounts.png');
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it("disables several accounts at once, each row's result shown, and the token endpoint refuses each", async () => {
    const first = await createSystemAccount(t.http, platform, ORG, { suffix: 'bulkone', role: 'Issuance' });
    const second = await createSystemAccount(t.http, platform, ORG, { suffix: 'bulktwo', role: 'Issuance' });
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/system-accounts`);
    await page.getByRole('checkbox', { name: `Select ${first.clientId}` }).check();
    await page.getByRole('checkbox', { name: `Select ${second.clientId}` }).check();
    await page.getByRole('button', { name: 'Disable selected (2)' }).click();
    const results = page.getByRole('status', { name: 'Results' });
    await results.getByText(`${first.clientId}: disabled`).waitFor();
    expect(await results.getByText(`${second.clientId}: disabled`).isVisible()).toBe(true);
    for (const account of [first, second]) {
      const refused = await tokenRequest(t.http, ORG, { grant_type: 'client_credentials', client_id: account.clientId, client_secret: account.secret });
      expect(refused.status).toBe(401);
    }
    await expectClean(page, problems);
    await context.close();
  });

  it('works from the keyboard: the menu, a dialog that traps focus and closes with Escape, focus visible', async () => {
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/roles`);
    await page.getByRole('heading', { name: 'Roles', level: 1 }).waitFor();
    // Tab until the menu's "System accounts" link has focus, then follow it with Enter.
    for (
      let i = 0;
      i < 20 &&
      !(await page.getByRole('link', { name: 'System accounts' }).evaluate((link) => link === (globalThis as unknown as BrowserWindow).document.activeElement));
      i += 1
    ) {
      await page.keyboard.press('Tab');
    }
    const link = page.getByRole('link', { name: 'System accounts' });
    expect(await link.evaluate((element) => element === (globalThis as unknown as BrowserWindow).document.activeElement)).toBe(true);
    // The focused control shows it (Mantine's focus ring: an outline).
    expect(await link.evaluate((element) => (globalThis as unknown as BrowserWindow).getComputedStyle(element).outlineStyle)).not.toBe('none');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'System accounts', level: 1 }).waitFor();
    const create = page.getByRole('button', { name: 'Create system account' });
    await create.focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Create a system account' });
    await dialog.waitFor();
    // Focus stays inside the dialog however far one tabs.
    for (let i = 0; i < 12; i += 1) {
      await page.keyboard.press('Tab');
      expect(await dialog.evaluate((element) => element.contains((globalThis as unknown as BrowserWindow).document.activeElement as never))).toBe(true);
    }
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(problems).toEqual([]);
    await context.close();
  });

  it('creates an operator, changes their role and administrator flag, ends their sessions and disables them, each shown in the row', async () => {
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/users`);
    await page.getByRole('button', { name: 'Create user' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create a user' });
    await dialog.getByLabel('User name').fill('uma.operator');
    await dialog.getByLabel('Type').click();
    await page.getByRole('option', { name: /^Operator/ }).click();
    await dialog.getByLabel('Role').click();
    await page.getByRole('option', { name: 'Help Desk' }).click();
    await dialog.getByRole('button', { name: 'Create' }).click();
    await dialog.waitFor({ state: 'hidden' });
    // Users are listed by userName, 50 a page: find uma's row.
    const row = page.getByRole('row', { name: /uma\.operator/ });
    await row.waitFor();
    expect(await row.getByRole('cell', { name: 'Help Desk' }).isVisible()).toBe(true);
    await row.getByRole('button', { name: 'Edit uma.operator' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit uma.operator' });
    await edit.getByLabel('Role').click();
    await page.getByRole('option', { name: 'Issuance' }).click();
    await edit.getByLabel('Organization administrator').check();
    await edit.getByRole('button', { name: 'Save' }).click();
    await edit.getByText('Saved; their live tokens and sessions follow the change at once.').waitFor();
    await expectClean(page, problems);
    await page.keyboard.press('Escape');
    await row.getByRole('cell', { name: 'Issuance' }).waitFor();
    await row.getByRole('button', { name: 'End the sessions of uma.operator' }).click();
    await row.getByText('Sessions ended').waitFor();
    await row.getByRole('button', { name: 'Disable uma.operator' }).click();
    await row.getByText('Disabled', { exact: true }).first().waitFor();
    const stored = await t.db.query("SELECT role, disabled, organization_administrator FROM users WHERE org_id = $1 AND user_name = 'uma.operator'", [ORG]);
    expect(stored.rows[0]).toEqual({ role: 'Issuance', disabled: true, organization_administrator: true });
    await saveScreenshot(page, 'users.png', { fullPage: true });
    await expectClean(page, problems);
    await context.close();
  }, 90_000);

  it('the create-user dialog keeps each choice, has no hidden default, and asks only what the chosen type takes', async () => {
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/users`);
    await page.getByRole('button', { name: 'Create user' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create a user' });
    const type = dialog.getByLabel('Type');
    // No type until one is chosen, and nothing is created without one.
    expect(await type.inputValue()).toBe('');
    await dialog.getByLabel('User name').fill('vic.operator');
    await dialog.getByLabel('Role').click();
    await page.getByRole('option', { name: 'Help Desk' }).click();
    expect(await dialog.getByRole('button', { name: 'Create' }).isDisabled()).toBe(true);
    // An operator is asked no password; choosing the same option again keeps it.
    await type.click();
    await page.getByRole('option', { name: /^Operator/ }).click();
    expect(await dialog.getByRole('textbox', { name: 'Password' }).count()).toBe(0);
    await type.click();
    await page.getByRole('option', { name: /^Operator/ }).click();
    expect(await type.inputValue()).toMatch(/^Operator/);
    // A cardholder is.
    await type.click();
    await page.getByRole('option', { name: 'Cardholder' }).click();
    await dialog.getByRole('textbox', { name: 'Password' }).fill('a long enough password');
    await type.click();
    await page.getByRole('option', { name: /^Operator/ }).click();
    expect(await dialog.getByRole('textbox', { name: 'Password' }).count()).toBe(0);
    await expectClean(page, problems);
    await dialog.getByRole('button', { name: 'Create' }).click();
    await dialog.waitFor({ state: 'hidden' });
    const operator = await t.db.query(
      "SELECT user_type, password_hash IS NOT NULL AS has_password FROM users WHERE org_id = $1 AND user_name = 'vic.operator'",
      [ORG],
    );
    expect(operator.rows).toEqual([{ user_type: 'operator', has_password: false }]);

    // The next dialog starts empty: nothing of the previous one is kept.
    await page.getByRole('button', { name: 'Create user' }).click();
    expect(await type.inputValue()).toBe('');
    expect(await dialog.getByLabel('User name').inputValue()).toBe('');
    await dialog.getByLabel('User name').fill('wes.holder');
    await dialog.getByLabel('Display name').fill('Wes Holder');
    await type.click();
    await page.getByRole('option', { name: 'Cardholder' }).click();
    await dialog.getByLabel('Role').click();
    await page.getByRole('option', { name: 'Cardholder' }).click();
    await dialog.getByRole('textbox', { name: 'Password' }).fill('a long enough password');
    await dialog.getByRole('button', { name: 'Create' }).click();
    await dialog.waitFor({ state: 'hidden' });
    const holder = await t.db.query(
      "SELECT user_type, display_name, password_hash IS NOT NULL AS has_password FROM users WHERE org_id = $1 AND user_name = 'wes.holder'",
      [ORG],
    );
    expect(holder.rows).toEqual([{ user_type: 'cardholder', display_name: 'Wes Holder', has_password: true }]);
    await page
      .getByRole('row', { name: /wes\.holder/ })
      .getByRole('cell', { name: 'Wes Holder' })
      .waitFor();
    await expectClean(page, problems);
    await context.close();
  }, 90_000);

  it('an organization without a CA: the page asks nothing the API refuses, says so, and creates the CA', async () => {
    const org = 'portal_noca';
    await createOrganization(t.http, platform, org);
    const nina = await createPersonWithCard(t, platform, org, 'nina');
    await makeOrganizationAdministrator(t, platform, org, nina);
    const { context, page, problems } = await signedIn(nina, `/portal/${org}/organization`);
    const region = page.getByRole('region', { name: 'Issuing CA' });
    await region.getByText(/has no issuing CA yet/).waitFor();
    await page.waitForLoadState('networkidle');
    await expectClean(page, problems);
    await region.getByRole('button', { name: 'Create the CA' }).click();
    // Creating a CA is confirmed in a dialog that names the organization.
    await page
      .getByRole('dialog', { name: `Create the CA of ${org}` })
      .getByRole('button', { name: 'Create' })
      .click();
    await region.getByRole('link', { name: 'Download the CA certificate', exact: true }).waitFor();
    expect(await region.getByText(`CN=${org} Issuing CA`, { exact: false }).isVisible()).toBe(true);
    expect((await t.http.get(`/admin/v1/organizations/${org}/ca`).auth(platform, { type: 'bearer' })).body.status).toBe('active');
    await expectClean(page, problems);
    await context.close();
  }, 90_000);

  it('a skip link is the first stop of the keyboard on every page and moves focus to the main content', async () => {
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/users`);
    for (const path of [`/portal/${ORG}/users`, `/portal/${ORG}/desk`, `/portal/${ORG}/audit`, `/portal/${ORG}/no-such-screen`, '/portal/']) {
      await page.goto(`${base}${path}`);
      await page.getByRole('heading', { level: 1 }).first().waitFor();
      await page.keyboard.press('Tab');
      const skip = page.getByRole('link', { name: 'Skip to main content' });
      expect([path, await skip.evaluate((link) => link === (globalThis as unknown as BrowserWindow).document.activeElement)]).toEqual([path, true]);
      await page.keyboard.press('Enter');
      expect([path, await page.locator('#main').evaluate((main) => main === (globalThis as unknown as BrowserWindow).document.activeElement)]).toEqual([
        path,
        true,
      ]);
    }
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it('an object that does not exist answers as the not-found page, with nothing thrown in the console', async () => {
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/system-accounts/${ORG}-nothere`);
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    expect(await page.getByRole('navigation', { name: 'Main' }).isVisible()).toBe(true);
    // The one thing logged is Chromium's note of the API's 404 for the object asked for.
    await expectClean(page, problems, 404);
    expect(problems.length).toBeLessThanOrEqual(1);
    await context.close();
  }, 90_000);

  it('Escape closes every dialog, and the current menu item keeps its contrast when hovered', async () => {
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/users`);
    const dialogs: Array<[string, string, string]> = [
      ['users', 'Create user', 'Create a user'],
      ['system-accounts', 'Create system account', 'Create a system account'],
    ];
    for (const [screen, button, title] of dialogs) {
      await page.goto(`${base}/portal/${ORG}/${screen}`);
      await page.getByRole('button', { name: button }).click();
      const dialog = page.getByRole('dialog', { name: title });
      await dialog.waitFor();
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
    }
    // The current item, hovered, in both themes.
    for (const theme of ['dark', 'light']) {
      await page.goto(`${base}/portal/${ORG}/users`);
      await page.getByRole('button', { name: `Switch to the ${theme} theme` }).click();
      const current = page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Users and operators' });
      expect(await current.getAttribute('aria-current')).toBe('page');
      await current.hover();
      expect([theme, await accessibilityViolations(page)]).toEqual([theme, []]);
    }
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it('a CSRF attempt from another origin changes nothing', async () => {
    const target = await createSystemAccount(t.http, platform, ORG, { suffix: 'csrftarget', role: 'Issuance' });
    const { context, page } = await signedIn(ada, `/portal/${ORG}/roles`);
    // A page of another origin (another port of the same host: the same site, so the SameSite
    // cookie goes along) tries a form POST and a fetch with the API's header.
    const evil: Server = createServer((_request, response) => {
      response.writeHead(200, { 'Content-Type': 'text/html' });
      response.end(`<!doctype html><html lang="en"><title>x</title><body>
<form id="f" method="post" enctype="text/plain" action="${base}/admin/v1/organizations/${ORG}/system-accounts/${target.clientId}/secrets"><input name='{"a":"' value='"}'></form>
<script>
fetch('${base}/admin/v1/organizations/${ORG}/system-accounts/${target.clientId}', { method: 'PATCH', credentials: 'include', headers: { 'Application-ID': 'x', 'Application-Version': '1.0', 'Content-Type': 'application/json' }, body: '{"disabled":true}' })
  .catch(() => undefined)
  .finally(() => document.getElementById('f').submit());
</script></body></html>`);
    });
    await new Promise<void>((done) => evil.listen(0, '127.0.0.1', done));
    try {
      const attacker = await context.newPage();
      const answered = attacker.waitForResponse((response) => response.url().endsWith('/secrets'));
      await attacker.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
      expect((await answered).status()).toBe(403);
      const account = await t.http.get(`/admin/v1/organizations/${ORG}/system-accounts/${target.clientId}`).auth(platform, { type: 'bearer' });
      expect(account.body.disabled).toBe(false);
      const secrets = await t.http.get(`/admin/v1/organizations/${ORG}/system-accounts/${target.clientId}/secrets`).auth(platform, { type: 'bearer' });
      expect(secrets.body.totalResults).toBe(1);
      // The person's own page still works.
      await page.reload();
      await page.getByRole('heading', { name: 'Roles', level: 1 }).waitFor();
    } finally {
      await new Promise((done) => evil.close(done));
      await context.close();
    }
  });

  it('shows the idle timeout before it ends, keeps the session on request, and goes to sign-in when it has passed', async () => {
    const { context, page, problems } = await watchedPage(browser, { colorScheme: 'light', reducedMotion: 'reduce' });
    page.setDefaultTimeout(10_000);
    // The browser's clock, under the test's hand from the first page on.
    await page.clock.install();
    await page.goto(`${base}/portal/${ORG}/roles`);
    await page.waitForURL(/\/login\?/);
    await signInOnLoginPage(page, t, ada);
    await page.getByRole('heading', { name: 'Roles', level: 1 }).waitFor();
    const idle = t.config.sessionIdleTimeoutS;
    await page.clock.fastForward((idle - 90) * 1000);
    const warning = page.getByRole('status').filter({ hasText: 'Are you still there?' });
    await warning.waitFor();
    expect(await warning.textContent()).toMatch(/Your session ends in 1 min \d+ s unless you use the portal/);
    await expectClean(page, problems);
    await page.getByRole('button', { name: 'Stay signed in' }).click();
    await warning.waitFor({ state: 'hidden' });
    // Away past the idle timeout: the service has ended the session, and the portal goes to sign-in.
    t.clock.advance(idle + 60);
    await page.clock.fastForward((idle + 60) * 1000);
    await page.waitForURL(/\/authentication\/customer\/portal\/login\?/);
    expect(new URL(page.url()).searchParams.get('return_to')).toBe(`/portal/${ORG}/roles`);
    await page.getByLabel('User name').waitFor();
    expect(problems).toEqual([]);
    await context.close();
  });

  it('an expired session lands on the sign-in page, to come back to the page', async () => {
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/roles`);
    await page.getByRole('heading', { name: 'Roles', level: 1 }).waitFor();
    // Away for longer than the idle timeout, the person comes back and reloads.
    t.clock.advance(t.config.sessionIdleTimeoutS + 60);
    await page.reload();
    await page.waitForURL(/\/authentication\/customer\/portal\/login\?/);
    expect(new URL(page.url()).searchParams.get('return_to')).toBe(`/portal/${ORG}/roles`);
    expect(problems).toEqual([]);
    await context.close();
  });
});
