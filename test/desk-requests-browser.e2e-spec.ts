import { createCipheriv, createHash } from 'node:crypto';
import { KeyStore } from '@app/hsm';
import { Browser, Page } from 'playwright-core';
import {
  IssuedPerson,
  TestApp,
  createCardholder,
  createIssuingOrganization,
  createPersonWithCard,
  createSystemAccount,
  giveRole,
  insertCard,
  makeOrganizationAdministrator,
  platformAdminToken,
  startServiceForBrowser,
  tokenBySecret,
} from './support';
import { accessibilityViolations, launchBrowser, saveScreenshot, signedInPortal, WatchedPage } from './support/browser';

/**
 * The desk's other request types and the readable audit (issue 37 items 1 and 4), in Debian's headless
 * Chromium against the built portal, as test/portal-browser.e2e-spec.ts sets it up: a card not on file
 * added at the desk by its CUID and issued, an OTP token issued, a PIN unlock filed and completed by the
 * card client, an update validated then filed, a request's history, the audit searched by free text and
 * an event read as labelled fields with its actor by name. axe finds nothing in both themes; nothing is
 * logged in the console and no CSP violation happens.
 */
const ORG = 'deskreq';

describe("The desk's requests and the readable audit in a browser", () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let platform: string;
  let ada: IssuedPerson;
  let ines: IssuedPerson;
  let encoderToken: string;

  beforeAll(async () => {
    ({ t, base } = await startServiceForBrowser());
    browser = await launchBrowser();
    platform = await platformAdminToken(t.http);
    await createIssuingOrganization(t, platform, ORG, {});
    ada = await createPersonWithCard(t, platform, ORG, 'ada');
    await makeOrganizationAdministrator(t, platform, ORG, ada);
    ines = await createPersonWithCard(t, platform, ORG, 'ines');
    await giveRole(t, platform, ORG, ines, 'Issuance');
    // Operators may add a card not on file at the desk (POST /Device) only where the organization allows it.
    const settings = await t.http
      .patch(`/admin/v1/organizations/${ORG}`)
      .auth(platform, { type: 'bearer' })
      .send({ settings: { automaticDeviceCreation: true } });
    expect(settings.status).toBe(200);
    const encoder = await createSystemAccount(t.http, platform, ORG, { role: 'Issuance' });
    encoderToken = await tokenBySecret(t.http, ORG, encoder.clientId, encoder.secret);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const signedIn = (person: IssuedPerson, path: string): Promise<WatchedPage> => signedInPortal(browser, { t, base }, person, path);

  /**
   * axe finds nothing in the light theme and in the dark one, and nothing was logged. The theme follows
   * the system until the person chooses (DECISIONS 17), so the system's scheme switches it, also while
   * a dialog covers the header's switch.
   */
  async function expectCleanInBothThemes(page: Page, problems: string[]): Promise<void> {
    expect(await accessibilityViolations(page)).toEqual([]);
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.waitForFunction(
      () =>
        (globalThis as unknown as { document: { documentElement: { getAttribute(n: string): string } } }).document.documentElement.getAttribute(
          'data-mantine-color-scheme',
        ) === 'dark',
    );
    expect(await accessibilityViolations(page)).toEqual([]);
    await page.emulateMedia({ colorScheme: 'light' });
    await page.waitForFunction(
      () =>
        (globalThis as unknown as { document: { documentElement: { getAttribute(n: string): string } } }).document.documentElement.getAttribute(
          'data-mantine-color-scheme',
        ) === 'light',
    );
    expect(problems).toEqual([]);
  }

  /** The card client's sync session for a request, through the API as a card client sends it. */
  async function encode(request: string, { ATR, CUID }: { ATR: string; CUID: string }, results: unknown[]) {
    return t.http
      .post('/aims/rs/scim/v2/SyncSession')
      .auth(encoderToken, { type: 'bearer' })
      .set('Content-Type', 'application/scim+json')
      .send(JSON.stringify({ schemas: ['urn:vendor:scim:api:cms:1.0:SyncSession'], contentRequest: { value: request }, device: { ATR, CUID }, results }));
  }

  it('adds a card not on file at the desk by its CUID and ATR, and issues it to the person', async () => {
    await createCardholder(t, platform, ORG, 'dana.import', { displayName: 'Dana Import' });
    const policy = await t.http
      .post(`/admin/v1/organizations/${ORG}/device-policies`)
      .auth(platform, { type: 'bearer' })
      .send({ name: 'Imported card', credentialTypes: ['OATH_TOTP'] });
    expect(policy.status).toBe(201);
    const cuid = `77${process.pid}01`;

    const { context, page, problems } = await signedIn(ines, `/portal/${ORG}/desk`);
    await page.getByLabel('Find a user').fill('dana.i');
    await page.getByRole('button', { name: 'dana.import' }).click();
    await page.getByRole('button', { name: 'Issue a device' }).click();
    const dialog = page.getByRole('dialog', { name: 'Issue a device to dana.import' });
    await dialog.getByLabel('Card in stock').fill(cuid);
    const adding = dialog.getByRole('region', { name: `Add card ${cuid}` });
    await adding.waitFor();
    await adding.getByLabel('ATR').fill('3B 8F 80 01');
    await expectCleanInBothThemes(page, problems);
    await adding.getByRole('button', { name: `Add card ${cuid} to stock` }).click();
    // Added and chosen: the card is in stock, on file, and the issue button names it.
    const radio = dialog.getByRole('radio', { name: `Card ${cuid}` });
    await radio.waitFor();
    expect(await radio.isChecked()).toBe(true);
    const [stored] = (
      await t.db.query('SELECT d.id, d.status, e.atr FROM devices d JOIN device_external_ids e ON e.device_id = d.id WHERE e.cuid = $1', [cuid])
    ).rows as Array<{ id: string; status: string; atr: string }>;
    expect(stored).toEqual({ id: expect.any(String), status: 'AVAILABLE', atr: '3B8F8001' });
    await dialog.getByRole('combobox', { name: 'Device policy' }).click();
    await page.getByRole('option', { name: 'Imported card' }).click();
    await dialog.getByRole('button', { name: `Issue card ${cuid}` }).click();
    await page.getByRole('heading', { name: 'Issuance for dana.import', level: 1 }).waitFor();
    const facts = page.getByRole('region', { name: 'Request' });
    await facts.getByRole('status').getByText('Awaiting approval').waitFor();
    expect(await facts.getByRole('link', { name: `Card ${cuid}` }).isVisible()).toBe(true);
    expect((await t.db.query('SELECT status, owner_user_id IS NOT NULL AS owned FROM devices WHERE id = $1', [stored.id])).rows[0]).toEqual({
      status: 'ASSIGNED',
      owned: true,
    });
    // Not an administrator: the history is the request's own, in words.
    expect(
      await page
        .getByRole('region', { name: 'History' })
        .getByText(/Filed by ines/)
        .isVisible(),
    ).toBe(true);
    await expectCleanInBothThemes(page, problems);
    await context.close();
  }, 90_000);

  it('issues an OTP token: only policies carrying OTP credentials alone are offered, and the card client completes it', async () => {
    await createCardholder(t, platform, ORG, 'otto.token');
    for (const [name, credentialTypes] of [
      ['OTP token', ['OATH_TOTP']],
      ['Card with certificate', ['PKI_CERTIFICATE', 'OATH_TOTP']],
    ] as const) {
      const created = await t.http
        .post(`/admin/v1/organizations/${ORG}/device-policies`)
        .auth(platform, { type: 'bearer' })
        .send({ name, credentialTypes, requiresApproval: false });
      expect(created.status).toBe(201);
    }
    const token = await insertCard(t, ORG, { atr: '3B0201' });

    const { context, page, problems } = await signedIn(ines, `/portal/${ORG}/desk`);
    await page.getByLabel('Find a user').fill('otto.t');
    await page.getByRole('button', { name: 'otto.token' }).click();
    await page.getByRole('button', { name: 'Issue an OTP token' }).click();
    const dialog = page.getByRole('dialog', { name: 'Issue an OTP token to otto.token' });
    await dialog.getByLabel('Token in stock').fill(token.CUID);
    await dialog.getByRole('radio', { name: `Token ${token.CUID}` }).check();
    await dialog.getByRole('combobox', { name: 'Device policy' }).click();
    await page.getByRole('option', { name: 'OTP token' }).waitFor();
    expect(await page.getByRole('option', { name: 'Card with certificate' }).count()).toBe(0);
    await page.getByRole('option', { name: 'OTP token' }).click();
    await dialog.getByText('Credentials: OATH_TOTP; no approval needed').waitFor();
    await expectCleanInBothThemes(page, problems);
    await dialog.getByRole('button', { name: `Issue token ${token.CUID}` }).click();
    await page.getByRole('heading', { name: 'Issuance for otto.token', level: 1 }).waitFor();
    const facts = page.getByRole('region', { name: 'Request' });
    await facts.getByRole('status').getByText('Awaiting encoding').waitFor();
    const request = page.url().split('/').pop()!;
    const session = await encode(request, token, [{ operation: 'WRITE_OTP', status: 'SUCCESS', credentialType: 'OATH_TOTP' }]);
    expect(session.status).toBe(201);
    expect(session.body.credentials[0]).toMatchObject({ type: 'OATH_TOTP', status: 'ISSUED' });
    // The page follows the card client without a reload.
    await facts.getByRole('status').getByText('Completed').waitFor();
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it("unlocks a card's PIN (confirmed; the card client completes it) and validates an update before filing it; an administrator reads the request's history", async () => {
    const pam = await createPersonWithCard(t, platform, ORG, 'pam.pin');
    const [card] = (
      await t.db.query(
        'SELECT d.id, e.atr AS "ATR", e.cuid AS "CUID" FROM devices d JOIN device_external_ids e ON e.device_id = d.id WHERE d.owner_user_id = $1',
        [pam.id],
      )
    ).rows as Array<{ id: string; ATR: string; CUID: string }>;
    const policy = await t.http
      .post(`/admin/v1/organizations/${ORG}/device-policies`)
      .auth(platform, { type: 'bearer' })
      .send({ name: 'Two tokens', credentialTypes: ['OATH_TOTP', 'OATH_HOTP'] });
    expect(policy.status).toBe(201);

    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/devices/${card.id}`);
    await page.getByRole('heading', { name: `Card ${card.CUID}`, level: 1 }).waitFor();
    await page.getByRole('button', { name: `Unlock the PIN of card ${card.CUID}` }).click();
    const confirm = page.getByRole('dialog', { name: `Unlock the PIN of card ${card.CUID}?` });
    await confirm.getByText(/within 10 minutes/).waitFor();
    await expectCleanInBothThemes(page, problems);
    await confirm.getByRole('button', { name: 'Unlock PIN' }).click();
    await page.getByRole('heading', { name: 'Unlock pin for pam.pin', level: 1 }).waitFor();
    const facts = page.getByRole('region', { name: 'Request' });
    await facts.getByRole('status').getByText('Awaiting encoding').waitFor();
    const unlock = page.url().split('/').pop()!;
    const session = await encode(unlock, card, [{ operation: 'UNLOCK_PIN', status: 'SUCCESS' }]);
    expect(session.status).toBe(201);
    await facts.getByRole('status').getByText('Completed').waitFor();
    // The request's history, from the audit log, with its actor by name.
    await page.reload();
    const history = page.getByRole('table', { name: 'History' });
    // The actor's name comes from a search made after the rows are drawn (useAuditNames): wait for its link.
    await history
      .getByRole('row', { name: /content_request\.create/ })
      .getByRole('link', { name: 'ada', exact: true })
      .waitFor();
    await history.getByRole('row', { name: /content_request\.complete/ }).waitFor();
    await saveScreenshot(page, 'request-history.png', { fullPage: true });
    expect(
      (await t.db.query("SELECT count(*)::int AS n FROM audit_events WHERE action = 'content_request.unlock_pin' AND target = $1", [unlock])).rows[0].n,
    ).toBe(1);
    await expectCleanInBothThemes(page, problems);

    // Update: validated first (what the card will carry, nothing stored), then filed.
    await page.goto(`${base}/portal/${ORG}/devices/${card.id}`);
    await page.getByRole('button', { name: `Update card ${card.CUID}` }).click();
    const dialog = page.getByRole('dialog', { name: `Update card ${card.CUID}` });
    await dialog.getByRole('combobox', { name: 'New device policy' }).click();
    await page.getByRole('option', { name: 'Two tokens' }).click();
    await dialog.getByRole('button', { name: 'Validate' }).click();
    const prediction = dialog.getByRole('status', { name: 'What the update does' });
    await prediction.getByText('OATH_HOTP, ISSUED').waitFor();
    expect(await prediction.getByText(/the card stays ISSUED/).isVisible()).toBe(true);
    expect((await t.db.query("SELECT count(*)::int AS n FROM content_requests WHERE type = 'update' AND device_id = $1", [card.id])).rows[0].n).toBe(0);
    await expectCleanInBothThemes(page, problems);
    await dialog.getByRole('button', { name: 'File the update' }).click();
    await page.getByRole('heading', { name: 'Update for pam.pin', level: 1 }).waitFor();
    await page.getByRole('region', { name: 'Request' }).getByRole('status').getByText('Awaiting encoding').waitFor();
    expect(problems).toEqual([]);
    await context.close();
  }, 120_000);

  it('unlocks the PIN of a person at their PC: the challenge checked at the field, the response shown once', async () => {
    const pia = await createPersonWithCard(t, platform, ORG, 'pia.pc');
    const [card] = (
      await t.db.query('SELECT d.id, e.cuid AS "CUID" FROM devices d JOIN device_external_ids e ON e.device_id = d.id WHERE d.owner_user_id = $1', [pia.id])
    ).rows as Array<{ id: string; CUID: string }>;
    const { context, page, problems } = await signedIn(ines, `/portal/${ORG}/devices/${card.id}`);
    await page.getByRole('button', { name: `Unlock the PIN of card ${card.CUID}` }).click();
    const dialog = page.getByRole('dialog', { name: `Unlock the PIN of card ${card.CUID}?` });
    await dialog.getByRole('radio', { name: 'The person is at their PC (challenge and response)' }).check();
    const challenge = dialog.getByRole('textbox', { name: /Challenge shown on the person's screen/ });
    await challenge.fill('0123 not hex');
    await dialog.getByRole('button', { name: 'Get the response' }).click();
    await dialog.getByText('Type the 16 hexadecimal digits (0-9, A-F) the person reads from their screen.').waitFor();
    expect((await t.db.query("SELECT count(*)::int AS n FROM content_requests WHERE device_id = $1 AND type = 'unlock pin'", [card.id])).rows[0].n).toBe(0);
    await challenge.fill('0123456789ABCDEF');
    await dialog.getByRole('button', { name: 'Get the response' }).click();
    const shown = dialog.getByLabel('Response to type at the PC');
    await shown.waitFor();
    const data = createHash('sha256').update(`card admin key\0${card.CUID}`).digest().subarray(0, 24);
    const cardKey = await t.app.get(KeyStore).encryptDes3('CARD_ADMIN_MASTER_KEY', data);
    const cipher = createCipheriv('des-ede3-ecb', cardKey, null).setAutoPadding(false);
    const response = Buffer.concat([cipher.update(Buffer.from('0123456789ABCDEF', 'hex')), cipher.final()])
      .toString('hex')
      .toUpperCase();
    expect((await shown.textContent())?.replace(/\s/g, '')).toBe(response);
    expect(await dialog.getByRole('button', { name: 'Copy response' }).isVisible()).toBe(true);
    await expectCleanInBothThemes(page, problems);
    await dialog.getByRole('button', { name: 'Done' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect(await page.getByText(response).count()).toBe(0);
    expect((await t.db.query("SELECT status FROM content_requests WHERE device_id = $1 AND type = 'unlock pin'", [card.id])).rows).toEqual([
      { status: 'completed' },
    ]);
    expect(problems).toEqual([]);
    await context.close();
  }, 120_000);

  it('searches the audit by free text and opens an event as labelled fields, its actor and target by name with links', async () => {
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/audit`);
    await page.getByLabel('Search').fill('dana.import');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const created = page.getByRole('row', { name: /user\.create/ }).first();
    await created.waitFor();
    // Every row found names dana.import somewhere (the search is the server's, over actor, target and details).
    await created.getByRole('link', { name: 'dana.import' }).waitFor();
    await page.getByLabel('Search').fill('ines');
    await page.getByRole('combobox', { name: 'Action' }).click();
    await page.getByRole('combobox', { name: 'Action' }).fill('Device created');
    await page.getByRole('option', { name: /^Device created/ }).click();
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const added = page.getByRole('row', { name: /device\.create/ }).first();
    await added.getByRole('link', { name: `Card 77${process.pid}01` }).waitFor();
    await added.getByRole('link', { name: 'ines', exact: true }).waitFor();
    // The list with its names and links, in both themes.
    await expectCleanInBothThemes(page, problems);
    await added.getByRole('button', { name: /Detail of device\.create/ }).click();
    const detail = page.getByRole('dialog', { name: 'Audit event: Device created' });
    await detail.waitFor();
    const terms = (await detail.getByRole('term').allTextContents()).map((text) => text.trim());
    expect(terms.slice(0, 8)).toEqual(['Time', 'Action', 'Outcome', 'Actor', 'Target', 'Source address', 'Correlation id', 'Event id']);
    await saveScreenshot(page, 'audit-event.png');
    expect(await detail.getByRole('link', { name: 'ines', exact: true }).isVisible()).toBe(true);
    expect(await detail.getByRole('link', { name: `Card 77${process.pid}01` }).getAttribute('href')).toMatch(
      new RegExp(`/portal/${ORG}/devices/[0-9a-f-]{36}$`),
    );
    expect(await detail.locator('pre, code').filter({ hasText: '{' }).count()).toBe(0);
    expect(await detail.locator('time').first().getAttribute('title')).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    await expectCleanInBothThemes(page, problems);
    await page.keyboard.press('Escape');
    await detail.waitFor({ state: 'hidden' });
    // A one-character search is refused at the field, before any call.
    await page.getByLabel('Search').fill('x');
    expect(await page.getByRole('button', { name: 'Apply filters' }).isDisabled()).toBe(true);
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);
});
