import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Browser, Page } from 'playwright-core';
import { PushNotifications } from '@app/delivery-gateway';
import { Database } from '@app/persistence';
import { CertificateAuthority } from '@app/pki';
import {
  FakeNotificationHub,
  IssuedPerson,
  TestApp,
  configureHubGateway,
  createCardholder,
  createOrganization,
  createPersonWithCard,
  createSystemAccount,
  tokenBySecret,
  eventually,
  insertAuthenticator,
  makeOrganizationAdministrator,
  opensslCsr,
  platformAdminToken,
  startServiceForBrowser,
} from '@app/testing';
import { expectClean, launchBrowser, saveScreenshot, signedInPortal, WatchedPage } from './support/browser';

/**
 * The portal's administration that edits (issue 37 item 3; DECISIONS 17) in a real browser: the
 * organization's settings as a form (the server's 400 at its field, If-Match), the CA created and
 * renewed from the page (a new leaf verified under the new generation with openssl), and a push
 * gateway created, test-sent to a fake hub, edited and deleted, with a dead letter and its reason.
 * Every screen is walked by role and name; axe finds nothing in both themes; no console error and
 * no CSP violation beyond the refusals a test provokes on purpose.
 */
const ORG = 'padmin';

describe('The portal administration screens in a browser', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let platform: string;
  let ada: IssuedPerson;
  const hubs: FakeNotificationHub[] = [];
  let dir: string;

  beforeAll(async () => {
    // One attempt: a hub's failure dead-letters the notification at once (no clock to move).
    ({ t, base } = await startServiceForBrowser({ PUSH_MAX_ATTEMPTS: '1' }));
    browser = await launchBrowser();
    platform = await platformAdminToken(t.http);
    await createOrganization(t.http, platform, ORG);
    ada = await createPersonWithCard(t, platform, ORG, 'ada');
    await makeOrganizationAdministrator(t, platform, ORG, ada);
    dir = join(process.env.TEST_RUN_DIR!, `portal-admin-${randomBytes(4).toString('hex')}`);
    mkdirSync(dir, { recursive: true });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await Promise.all(hubs.map((hub) => hub.close()));
  });

  const signedIn = (person: IssuedPerson, path: string): Promise<WatchedPage> => signedInPortal(browser, { t, base }, person, path, { acceptDownloads: true });

  /** The same in the dark theme, then back to light. */
  async function expectCleanInBothThemes(page: Page, problems: string[], ...refusals: number[]): Promise<void> {
    await expectClean(page, problems, ...refusals);
    await page.getByRole('button', { name: 'Switch to the dark theme' }).click();
    expect(await page.locator('html').getAttribute('data-mantine-color-scheme')).toBe('dark');
    await expectClean(page, problems, ...refusals);
    await page.getByRole('button', { name: 'Switch to the light theme' }).click();
  }

  const organization = () => t.http.get(`/admin/v1/organizations/${ORG}`).auth(platform, { type: 'bearer' });

  it("edits the settings as a form: the server's 400 at its field, saved with If-Match, and a change made meanwhile is not overwritten", async () => {
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/organization`);
    const settings = page.getByRole('region', { name: 'Settings' });
    const lifetime = settings.getByRole('textbox', { name: 'Access token lifetime (seconds)' });
    await lifetime.waitFor();
    await page.waitForLoadState('networkidle');
    // Each setting says what it means.
    expect(await settings.getByText('Cardholders may get a token with their user name and password').isVisible()).toBe(true);
    await expectCleanInBothThemes(page, problems);

    await settings.getByRole('switch', { name: 'Automatic device creation' }).check();
    await lifetime.fill('5');
    await settings.getByRole('button', { name: 'Save settings' }).click();
    // The server's reason, at the field it names.
    await settings.getByText(/Too small|>=300/).waitFor();
    expect(await lifetime.getAttribute('aria-invalid')).toBe('true');
    await saveScreenshot(settings, 'organization-settings.png');
    const described = (await lifetime.getAttribute('aria-describedby'))!.split(' ').filter(Boolean);
    const texts = await Promise.all(described.map((id) => page.locator(`[id="${id}"]`).textContent()));
    expect(texts.join(' ')).toMatch(/Too small|>=300/);
    expect((await organization()).body.settings).toMatchObject({ automaticDeviceCreation: false, accessTokenLifetime: null });
    await expectClean(page, problems, 400);

    await lifetime.fill('900');
    await settings.getByRole('button', { name: 'Save settings' }).click();
    await settings.getByRole('status').filter({ hasText: 'Settings saved.' }).waitFor();
    const saved = await organization();
    expect(saved.body.settings).toMatchObject({ automaticDeviceCreation: true, accessTokenLifetime: 900 });
    expect(await lifetime.getAttribute('aria-invalid')).not.toBe('true');

    // Someone else changes the settings meanwhile: the page's save is refused (412), nothing overwritten.
    await page.waitForLoadState('networkidle');
    const other = await t.http
      .put(`/admin/v1/organizations/${ORG}/settings`)
      .auth(platform, { type: 'bearer' })
      .send({ automaticDeviceCreation: true, applicationIdPolicy: 'any', accessTokenLifetime: 1200 });
    expect(other.status).toBe(200);
    await lifetime.fill('600');
    await settings.getByRole('button', { name: 'Save settings' }).click();
    await settings.getByRole('alert').filter({ hasText: 'Someone changed these settings' }).waitFor();
    expect((await organization()).body.settings.accessTokenLifetime).toBe(1200);
    await settings.getByRole('button', { name: 'Reload settings' }).click();
    await eventually(async () => (await lifetime.inputValue()) === '1200', 'the current lifetime shown again');
    expect(await lifetime.inputValue()).toBe('1200');
    await expectClean(page, problems, 400, 412);
    await context.close();
  }, 90_000);

  it('an organization without a CA: an empty state saying how, then created and renewed from the page; a new leaf verifies under the new generation (openssl)', async () => {
    const org = 'padmin_ca';
    await createOrganization(t.http, platform, org);
    const nina = await createPersonWithCard(t, platform, org, 'nina');
    await makeOrganizationAdministrator(t, platform, org, nina);
    const { context, page, problems } = await signedIn(nina, `/portal/${org}/organization`);
    const region = page.getByRole('region', { name: 'Issuing CA' });
    await region.getByText(/has no issuing CA yet/).waitFor();
    await page.waitForLoadState('networkidle');
    // No 404 was provoked: the page asked the generations (an empty list), not the CA.
    await expectCleanInBothThemes(page, problems);

    await region.getByRole('button', { name: 'Create the CA' }).click();
    const create = page.getByRole('dialog', { name: `Create the CA of ${org}` });
    // The dialog opens with a transition: wait until its text shows rather than asking at once.
    await create.getByText(`CN=${org} Issuing CA`, { exact: false }).waitFor();
    await expectClean(page, problems);
    await create.getByRole('button', { name: 'Create' }).click();
    await region.getByRole('link', { name: 'Download the CA certificate', exact: true }).waitFor();
    const generations = region.getByRole('table', { name: 'Generations' });
    await generations.getByRole('cell', { name: 'Active' }).waitFor();
    expect((await t.http.get(`/admin/v1/organizations/${org}/ca`).auth(platform, { type: 'bearer' })).body).toMatchObject({ status: 'active', generation: 1 });

    // Renew, confirmed in a dialog that says what happens.
    await region.getByRole('button', { name: 'Renew the CA' }).click();
    const renew = page.getByRole('dialog', { name: `Renew the CA of ${org}` });
    await renew.getByText(/generation 2\) is made in the HSM with a self-signed certificate/).waitFor();
    await renew.getByLabel('Key algorithm of the new generation').click();
    await page.getByRole('option', { name: 'EC-P384' }).click();
    await expectClean(page, problems);
    await renew.getByRole('button', { name: 'Renew' }).click();
    await renew.waitFor({ state: 'hidden' });
    await region.getByText(/generation 2 · EC-P384/).waitFor();
    // The table refreshes after the summary line: wait for its third row (header and two generations) before counting.
    await generations.getByRole('row').nth(2).waitFor();
    expect(await generations.getByRole('row').count()).toBe(3);
    await generations.getByRole('cell', { name: 'Retired' }).waitFor();
    const ca = (await t.http.get(`/admin/v1/organizations/${org}/ca`).auth(platform, { type: 'bearer' })).body;
    expect(ca).toMatchObject({ generation: 2, keyAlgorithm: 'EC-P384' });

    // The cross-certificates of generations 1 and 2, downloaded from the page (PEM), are the API's.
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      generations.getByRole('button', { name: 'Cross-certificates of generations 1 and 2 (PEM)' }).click(),
    ]);
    const crossPem = readFileSync((await download.path())!, 'utf8');
    expect(crossPem).toBe(ca.previousGenerations[0].crossCertificates.newWithOld + ca.previousGenerations[0].crossCertificates.oldWithNew);

    // A leaf issued now is signed by generation 2's key: openssl verifies it under the certificate the page links.
    const leaf = await t.app
      .get(CertificateAuthority)
      .issue(
        org,
        { userId: nina.id, userName: 'nina', displayName: 'Nina', email: null, userPrincipalName: null, objectSid: null },
        opensslCsr(dir),
        'Portal Corp',
        { name: 'portal-admin-suite' },
      );
    const leafFile = join(dir, 'leaf.pem');
    writeFileSync(leafFile, `-----BEGIN CERTIFICATE-----\n${leaf.der.toString('base64')}\n-----END CERTIFICATE-----\n`);
    const caHref = await region.getByRole('link', { name: 'Download the CA certificate', exact: true }).getAttribute('href');
    const caDer = (await t.bare.get(caHref!).responseType('blob')).body as Buffer;
    const caFile = join(dir, 'ca2.der');
    writeFileSync(caFile, caDer);
    const caPem = join(dir, 'ca2.pem');
    spawnSync('openssl', ['x509', '-inform', 'DER', '-in', caFile, '-out', caPem]);
    const verified = spawnSync('openssl', ['verify', '-CAfile', caPem, leafFile], { encoding: 'utf8' });
    expect(verified.stdout.trim()).toBe(`${leafFile}: OK`);
    const generation1 = join(dir, 'ca1.pem');
    writeFileSync(generation1, ca.previousGenerations[0].certificate);
    expect(spawnSync('openssl', ['verify', '-CAfile', generation1, leafFile], { encoding: 'utf8' }).status).not.toBe(0);

    // The last CRL of generation 2 and its next update, once a relying party fetched it.
    expect((await t.bare.get(`/pki/${org}/crl/2`)).status).toBe(200);
    await page.reload();
    await region.getByText(/Last CRL \(number \d+\) signed/).waitFor();
    await page.waitForLoadState('networkidle');
    await saveScreenshot(region, 'certificate-authority.png');
    await expectCleanInBothThemes(page, problems);
    await context.close();
  }, 120_000);

  it('creates a push gateway, test-sends it to a fake hub, edits and deletes it (the name typed), and shows a dead letter with its reason', async () => {
    const hub = await FakeNotificationHub.start();
    hubs.push(hub);
    // The gateway API takes its own tenant's tokens only: a configuration operator of the organization, for the checks beside the page.
    const account = await createSystemAccount(t.http, platform, ORG, { suffix: 'gwcheck', role: 'Administration' });
    const orgToken = await tokenBySecret(t.http, ORG, account.clientId, account.secret);
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/organization`);
    const region = page.getByRole('region', { name: 'Push gateways' });
    await region.getByRole('cell', { name: 'Default WNS gateway', exact: true }).waitFor();
    await page.waitForLoadState('networkidle');

    await region.getByRole('button', { name: 'Create push gateway' }).click();
    const create = page.getByRole('dialog', { name: 'Create a push gateway' });
    await create.getByLabel(/^Type/).click();
    await page.getByRole('option', { name: 'Android (FCM)' }).click();
    await create.getByRole('textbox', { name: /^Name/ }).fill('Portal hub');
    await create.getByRole('textbox', { name: 'Hub', exact: true }).fill('wallet-hub');
    await create.getByLabel('Connection string').fill(hub.connectionString());
    await create.getByRole('textbox', { name: 'Notification lifetime (seconds)' }).fill('3600');
    await create.getByRole('checkbox', { name: 'Android' }).check();
    await expectClean(page, problems);
    await create.getByRole('button', { name: 'Create' }).click();
    await create.waitFor({ state: 'hidden' });
    const row = region.getByRole('row', { name: /Portal hub/ });
    await row.getByRole('cell', { name: 'wallet-hub' }).waitFor();
    expect(await page.content()).not.toContain(hub.key);
    const listed = await t.http.get(`/configuration/${ORG}/v2/DeliveryGateway/Push?api-version=3`).auth(orgToken, { type: 'bearer' });
    const created = listed.body.resources.find((gateway: { name: string }) => gateway.name === 'Portal hub');
    expect(created).toMatchObject({ type: 'CLOUD_GCM_PUSH', hub: 'wallet-hub', notificationTimeToLive: '3600', supportedOperatingSystems: ['Android'] });

    // Test send: one signed notification to the handle typed, and what the hub said.
    await region.getByRole('button', { name: 'Test Portal hub' }).click();
    const test = page.getByRole('dialog', { name: 'Test push gateway Portal hub' });
    await test.getByRole('textbox', { name: 'Device push handle' }).fill('fcm-token-of-adas-phone');
    await test.getByRole('button', { name: 'Send test notification' }).click();
    await test.getByRole('status').filter({ hasText: 'Sent (sent): The hub accepted the test notification (201).' }).waitFor();
    expect(hub.sends).toHaveLength(1);
    expect(hub.sends[0]).toMatchObject({ hub: 'wallet-hub', handle: 'fcm-token-of-adas-phone', signatureValid: true, format: 'gcm' });
    await expectClean(page, problems);
    await page.keyboard.press('Escape');
    await test.waitFor({ state: 'hidden' });

    // Edit: the server's 400 at the field, then a change saved (the connection string left as it was).
    await region.getByRole('button', { name: 'Edit Portal hub' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit push gateway Portal hub' });
    await edit.getByRole('textbox', { name: 'Notification lifetime (seconds)' }).fill('soon');
    await edit.getByRole('button', { name: 'Save' }).click();
    await edit
      .getByText(/notificationTimeToLive|number of seconds|must be/i)
      .first()
      .waitFor();
    expect(await edit.getByRole('textbox', { name: 'Notification lifetime (seconds)' }).getAttribute('aria-invalid')).toBe('true');
    await edit.getByRole('textbox', { name: 'Notification lifetime (seconds)' }).fill('600');
    await edit.getByRole('textbox', { name: 'Notes' }).fill('Ada’s test hub');
    await edit.getByRole('button', { name: 'Save' }).click();
    await edit.waitFor({ state: 'hidden' });
    await row.getByRole('cell', { name: '600' }).waitFor();
    const edited = await t.http.get(`/configuration/${ORG}/v2/DeliveryGateway/Push/${created.id}?api-version=3`).auth(orgToken, { type: 'bearer' });
    expect(edited.body).toMatchObject({ notificationTimeToLive: '600', notes: 'Ada’s test hub', meta: { version: '2' } });
    // The connection string kept: a second test send still reaches the hub, signed.
    await region.getByRole('button', { name: 'Test Portal hub' }).click();
    await test.getByRole('textbox', { name: 'Device push handle' }).fill('fcm-token-of-adas-phone');
    await test.getByRole('button', { name: 'Send test notification' }).click();
    await test.getByRole('status').filter({ hasText: 'Sent (sent)' }).waitFor();
    expect(hub.accepted()).toHaveLength(2);
    await page.keyboard.press('Escape');
    await test.waitFor({ state: 'hidden' });

    // A dead letter: a bound gateway whose hub fails; the notification's one attempt is its last.
    const failing = await FakeNotificationHub.start();
    hubs.push(failing);
    failing.answerAlways({ status: 500 });
    await configureHubGateway(t, orgToken, ORG, failing, { name: 'Failing hub' });
    const { id: userId } = await createCardholder(t, platform, ORG, 'paula');
    await insertAuthenticator(t, ORG, userId, { operatingSystem: 'Android' });
    await t.app
      .get(Database)
      .transaction((tx) =>
        t.app.get(PushNotifications).enqueue({ org: ORG, userId, template: 'credential', values: { event: 'revoked' }, cause: 'credential.revoke' }, tx),
      );
    await eventually(
      async () => (await t.db.query("SELECT 1 FROM push_outbox WHERE user_id = $1 AND state = 'deadLettered'", [userId])).rows.length === 1,
      'the notification dead-lettered',
    );
    // The failing gateway was made beside the page: read the page again.
    await page.reload();
    await region.getByRole('cell', { name: 'Failing hub', exact: true }).waitFor();
    const deliveries = page.getByRole('region', { name: 'Push deliveries' });
    await deliveries.getByLabel('State', { exact: true }).click();
    await page.getByRole('option', { name: 'Dead-lettered' }).click();
    const dead = deliveries.getByRole('row', { name: /Failing hub/ });
    await dead.waitFor();
    expect(await dead.getByRole('cell', { name: /^Dead-lettered$/ }).isVisible()).toBe(true);
    expect(await dead.getByText('hub answered 500', { exact: true }).isVisible()).toBe(true);
    expect(await dead.getByText('dead-lettered after 1 attempts; last: the hub answered 500').isVisible()).toBe(true);
    expect(await dead.getByRole('cell', { name: 'credential.revoke' }).isVisible()).toBe(true);
    await page.waitForLoadState('networkidle');
    await saveScreenshot(deliveries, 'push-gateways.png');
    await expectCleanInBothThemes(page, problems, 400);

    // Delete, confirmed by typing the gateway's name.
    await region.getByRole('button', { name: 'Delete Portal hub' }).click();
    const remove = page.getByRole('dialog', { name: 'Delete push gateway Portal hub' });
    const confirm = remove.getByRole('button', { name: 'Delete' });
    expect(await confirm.isDisabled()).toBe(true);
    await remove.getByRole('textbox', { name: 'Type Portal hub to confirm' }).fill('Portal hub');
    await expectClean(page, problems, 400);
    await confirm.click();
    await remove.waitFor({ state: 'hidden' });
    await row.waitFor({ state: 'detached' });
    expect((await t.http.get(`/configuration/${ORG}/v2/DeliveryGateway/Push/${created.id}`).auth(orgToken, { type: 'bearer' })).status).toBe(404);
    await expectClean(page, problems, 400);
    await context.close();
  }, 120_000);
});
