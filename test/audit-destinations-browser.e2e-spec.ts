import { Browser, Page } from 'playwright-core';
import { verifyWebhook } from '@app/audit';
import {
  IssuedPerson,
  TestApp,
  SyslogReceiver,
  WebhookReceiver,
  createOrganization,
  createPersonWithCard,
  eventually,
  makeOrganizationAdministrator,
  platformAdminToken,
  selfSignedServerCertificate,
  signInOnLoginPage,
  startServiceForBrowser,
} from '@app/testing';
import { accessibilityViolations, launchBrowser, saveScreenshot, watchedPage, WatchedPage } from './support/browser';

/**
 * The audit event stream's screen (issue 36 item 2, DECISIONS 11.4) in a real browser: an
 * organization administrator creates a webhook destination pointing at an HTTPS receiver made by this
 * test (its self-signed CA pasted in the form), sees the secret once, sends a test event that arrives
 * signed with it, sees a delivery dead-letter while the receiver fails (one attempt:
 * AUDIT_STREAM_MAX_ATTEMPTS=1), delivers it again once the receiver is back, and deletes the
 * destination by typing its name. axe finds nothing in both themes; no console error and no CSP
 * violation beyond the 400 the test provokes on purpose.
 */
const ORG = 'siemui';

describe('Audit destinations in the portal, in a browser', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let platform: string;
  let ada: IssuedPerson;
  let server: { cert: string; key: string };
  let webhook: WebhookReceiver;
  let syslog: SyslogReceiver | undefined;

  beforeAll(async () => {
    // One attempt: a failed delivery is a dead letter at once (no clock to move). Loopback
    // destinations are allowed in tests (AUDIT_STREAM_LOOPBACK=true, test/support/test-app.ts).
    ({ t, base } = await startServiceForBrowser({ AUDIT_STREAM_MAX_ATTEMPTS: '1', AUDIT_STREAM_POLL_INTERVAL_MS: '100', AUDIT_STREAM_LOOPBACK: 'true' }));
    browser = await launchBrowser();
    platform = await platformAdminToken(t.http);
    await createOrganization(t.http, platform, ORG);
    ada = await createPersonWithCard(t, platform, ORG, 'ada');
    await makeOrganizationAdministrator(t, platform, ORG, ada);
    server = selfSignedServerCertificate();
    webhook = await WebhookReceiver.start(server);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await webhook?.down();
    await syslog?.down();
  });

  async function signedIn(person: IssuedPerson, path: string): Promise<WatchedPage> {
    const watched = await watchedPage(browser, { colorScheme: 'light', reducedMotion: 'reduce' });
    watched.page.setDefaultTimeout(10_000);
    await watched.page.goto(`${base}${path}`);
    await watched.page.waitForURL(/\/authentication\/customer\/[^/]+\/login\?/);
    await signInOnLoginPage(watched.page, t, person);
    await watched.page.waitForURL(`${base}${path}`);
    return watched;
  }

  /** axe finds nothing; nothing logged but Chromium's note of the refusals the test provokes on purpose. */
  async function expectClean(page: Page, problems: string[], ...refusals: number[]): Promise<void> {
    expect(await accessibilityViolations(page)).toEqual([]);
    const expected = (problem: string) =>
      refusals.some((status) => problem.startsWith(`console: Failed to load resource: the server responded with a status of ${status} `));
    expect(problems.filter((problem) => !expected(problem))).toEqual([]);
  }

  async function expectCleanInBothThemes(page: Page, problems: string[], ...refusals: number[]): Promise<void> {
    await expectClean(page, problems, ...refusals);
    await page.getByRole('button', { name: 'Switch to the dark theme' }).click();
    expect(await page.locator('html').getAttribute('data-mantine-color-scheme')).toBe('dark');
    await expectClean(page, problems, ...refusals);
    await page.getByRole('button', { name: 'Switch to the light theme' }).click();
  }

  const api = (method: 'get' | 'delete', path: string) => t.http[method](`/admin/v1/organizations/${ORG}${path}`).auth(platform, { type: 'bearer' });

  it('creates a webhook, shows its secret once, tests it, shows a dead letter and delivers it again, and deletes it by its name', async () => {
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/organization`);
    const region = page.getByRole('region', { name: 'Sending to a SIEM' });
    await region.getByText('No audit destination is configured. Create one with').waitFor();
    await page.waitForLoadState('networkidle');
    await expectCleanInBothThemes(page, problems);

    // Create: the server's 400 at the URL field, then a webhook the receiver's CA is trusted for.
    await region.getByRole('button', { name: 'Create audit destination' }).click();
    const create = page.getByRole('dialog', { name: 'Create an audit destination' });
    await create.getByLabel(/^Type/).click();
    await page.getByRole('option', { name: 'HTTPS webhook' }).click();
    await create.getByRole('textbox', { name: /^Name/ }).fill('SIEM hook');
    const url = create.getByRole('textbox', { name: /^URL/ });
    await url.fill(webhook.url.replace('https:', 'http:'));
    await create.getByRole('textbox', { name: 'CA certificate (PEM)' }).fill(server.cert);
    await create.getByRole('button', { name: 'Create' }).click();
    await create.getByText('url must use https').waitFor();
    expect(await url.getAttribute('aria-invalid')).toBe('true');
    expect((await api('get', '/audit-destinations')).body.totalResults).toBe(0);
    await url.fill(webhook.url);
    await expectClean(page, problems, 400);
    await create.getByRole('button', { name: 'Create' }).click();

    // The secret, once, with how a receiver verifies the signature.
    const secretCode = create.getByLabel('Webhook secret');
    await secretCode.waitFor();
    const secret = (await secretCode.textContent())!.trim();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(await create.getByText(/webhook-signature header/).isVisible()).toBe(true);
    expect(await create.getByRole('button', { name: 'Copy secret' }).isVisible()).toBe(true);
    await expectClean(page, problems, 400);
    await create.getByRole('button', { name: 'Done' }).click();
    await create.waitFor({ state: 'hidden' });
    expect(await page.content()).not.toContain(secret);
    const row = region.getByRole('row', { name: /SIEM hook/ });
    await row.getByRole('cell', { name: webhook.url }).waitFor();
    expect(await row.getByRole('cell', { name: 'webhook', exact: true }).isVisible()).toBe(true);
    const listed = (await api('get', '/audit-destinations')).body.Resources;
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({
      name: 'SIEM hook',
      type: 'webhook',
      url: webhook.url,
      enabled: true,
      caCertificate: expect.stringContaining('-----BEGIN CERTIFICATE-----'),
    });
    expect(listed[0].secret).toBeUndefined();
    const id = listed[0].id as string;

    // A test event: delivered, and the receiver got it, signed with the secret shown.
    await region.getByRole('button', { name: 'Test SIEM hook' }).click();
    const test = page.getByRole('dialog', { name: 'Test audit destination SIEM hook' });
    await test.getByRole('button', { name: 'Send a test event' }).click();
    await test.getByRole('status').filter({ hasText: 'Delivered: the receiver accepted the test event.' }).waitFor();
    const testCalls = webhook.calls.filter((call) => JSON.parse(call.body).type === 'audit.test');
    expect(testCalls).toHaveLength(1);
    expect(verifyWebhook(secret, testCalls[0].headers, testCalls[0].body, Math.floor(Date.now() / 1000))).toBe(true);
    // The receiver fails: the test says how, in its coarse class.
    webhook.status = 503;
    await test.getByRole('button', { name: 'Send a test event' }).click();
    await test.getByRole('status').filter({ hasText: 'Not delivered (http_503): http_503: the webhook answered 503, not 2xx' }).waitFor();
    await expectClean(page, problems, 400);
    await page.keyboard.press('Escape');
    await test.waitFor({ state: 'hidden' });

    // An edit while the receiver fails (If-Match on the version read): its own audit event is dead-lettered after its one attempt.
    await region.getByRole('button', { name: 'Edit SIEM hook' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit audit destination SIEM hook' });
    await edit.getByRole('textbox', { name: /^Name/ }).fill('SIEM webhook');
    await edit.getByRole('button', { name: 'Save' }).click();
    await edit.waitFor({ state: 'hidden' });
    const renamed = region.getByRole('row', { name: /SIEM webhook/ });
    await renamed.waitFor();
    expect((await api('get', `/audit-destinations/${id}`)).body).toMatchObject({ name: 'SIEM webhook', meta: { version: '2' } });
    await eventually(
      async () => (await t.db.query("SELECT 1 FROM audit_outbox WHERE destination_id = $1 AND state = 'deadLettered'", [id])).rows.length > 0,
      'a dead letter',
    );
    await region.getByRole('button', { name: 'Deliveries of SIEM webhook' }).click();
    const deliveries = page.getByRole('region', { name: 'Deliveries to SIEM webhook' });
    await deliveries.getByText('Dead-lettered', { exact: true }).click();
    expect(await deliveries.getByRole('radio', { name: 'Dead-lettered' }).isChecked()).toBe(true);
    const dead = deliveries.getByRole('row', { name: /audit_destination\.update/ });
    await eventually(async () => {
      await deliveries.getByRole('button', { name: 'Refresh' }).click();
      return dead.isVisible();
    }, 'the dead letter shown');
    expect(await dead.getByText('http_503', { exact: true }).isVisible()).toBe(true);
    expect(await dead.getByText(/dead-lettered after 1 attempts?; last: http_503/).isVisible()).toBe(true);
    expect(await renamed.getByText(/Dead-lettered \(http_503\)/).isVisible()).toBe(true);
    const letters = (await api('get', `/audit-destinations/${id}/deliveries?state=deadLettered`)).body.Resources;
    const letter = letters.find((delivery: { action: string }) => delivery.action === 'audit_destination.update');
    expect(await dead.getByRole('cell', { name: letter.eventId, exact: true }).isVisible()).toBe(true);
    await page.waitForLoadState('networkidle');
    await region.scrollIntoViewIfNeeded();
    await saveScreenshot(page, 'audit-destinations.png');
    await expectCleanInBothThemes(page, problems, 400);

    // The receiver recovers; the dead letter is delivered again, asked once.
    webhook.status = 200;
    await dead.getByRole('button', { name: `Deliver event ${letter.eventId} again` }).click();
    const confirm = page.getByRole('dialog', { name: `Deliver event ${letter.eventId} again` });
    await confirm.getByRole('button', { name: 'Deliver again' }).click();
    await confirm.waitFor({ state: 'hidden' });
    await eventually(async () => webhook.acceptedIds().includes(letter.eventId), 'the event delivered again');
    await deliveries.getByText('Delivered', { exact: true }).click();
    expect(await deliveries.getByRole('radio', { name: 'Delivered' }).isChecked()).toBe(true);
    const delivered = deliveries.getByRole('row', { name: new RegExp(`${letter.eventId}.*audit_destination\\.update`) });
    await eventually(async () => {
      await deliveries.getByRole('button', { name: 'Refresh' }).click();
      return delivered.isVisible();
    }, 'the delivery shown as delivered');
    await expectClean(page, problems, 400);

    // Delete, confirmed by typing the destination's name.
    await region.getByRole('button', { name: 'Delete SIEM webhook' }).click();
    const remove = page.getByRole('dialog', { name: 'Delete audit destination SIEM webhook' });
    const deleteButton = remove.getByRole('button', { name: 'Delete' });
    expect(await deleteButton.isDisabled()).toBe(true);
    await remove.getByRole('textbox', { name: 'Type SIEM webhook to confirm' }).fill('SIEM webhook');
    await deleteButton.click();
    await remove.waitFor({ state: 'hidden' });
    await renamed.waitFor({ state: 'detached' });
    await region.getByText('No audit destination is configured.').waitFor();
    expect((await api('get', `/audit-destinations/${id}`)).status).toBe(404);
    await expectClean(page, problems, 400);
    await context.close();
  }, 120_000);

  it('creates a syslog destination (the host refused at its field first), tests it over TLS, disables it with If-Match, and deletes it', async () => {
    syslog = await SyslogReceiver.start(server);
    const { context, page, problems } = await signedIn(ada, `/portal/${ORG}/organization`);
    const region = page.getByRole('region', { name: 'Sending to a SIEM' });
    await region.getByText('No audit destination is configured.').waitFor();
    await region.getByRole('button', { name: 'Create audit destination' }).click();
    const create = page.getByRole('dialog', { name: 'Create an audit destination' });
    await create.getByLabel(/^Type/).click();
    await page.getByRole('option', { name: 'Syslog over TLS' }).click();
    await create.getByRole('textbox', { name: /^Name/ }).fill('Syslog');
    const host = create.getByRole('textbox', { name: /^Host/ });
    await host.fill('siem.invalid/x');
    await create.getByRole('textbox', { name: 'Port' }).fill(String(syslog.port));
    await create.getByRole('textbox', { name: 'CA certificate (PEM)' }).fill(server.cert);
    await create.getByRole('button', { name: 'Create' }).click();
    await create.getByText('host must be a DNS name or an IP address').waitFor();
    expect(await host.getAttribute('aria-invalid')).toBe('true');
    await host.fill('127.0.0.1');
    await create.getByRole('button', { name: 'Create' }).click();
    // No secret for syslog: the dialog closes.
    await create.waitFor({ state: 'hidden' });
    const row = region.getByRole('row', { name: /Syslog/ });
    await row.getByRole('cell', { name: `127.0.0.1:${syslog.port}` }).waitFor();
    expect(await row.getByRole('cell', { name: 'syslog', exact: true }).isVisible()).toBe(true);
    const id = (await api('get', '/audit-destinations')).body.Resources[0].id as string;

    await region.getByRole('button', { name: 'Test Syslog' }).click();
    const test = page.getByRole('dialog', { name: 'Test audit destination Syslog' });
    await test.getByRole('button', { name: 'Send a test event' }).click();
    await test.getByRole('status').filter({ hasText: 'Delivered: the receiver accepted the test event.' }).waitFor();
    await eventually(async () => syslog!.messages.some((message) => message.event.action === 'audit_destination.test'), 'the test event over TLS');
    await page.keyboard.press('Escape');
    await test.waitFor({ state: 'hidden' });

    await region.getByRole('button', { name: 'Edit Syslog' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit audit destination Syslog' });
    await edit.getByRole('switch', { name: 'Enabled' }).uncheck();
    await edit.getByRole('button', { name: 'Save' }).click();
    await edit.waitFor({ state: 'hidden' });
    await row.getByRole('cell', { name: 'No', exact: true }).waitFor();
    expect((await api('get', `/audit-destinations/${id}`)).body).toMatchObject({
      enabled: false,
      host: '127.0.0.1',
      port: syslog.port,
      meta: { version: '2' },
    });
    await page.waitForLoadState('networkidle');
    await expectCleanInBothThemes(page, problems, 400);

    await region.getByRole('button', { name: 'Delete Syslog' }).click();
    const remove = page.getByRole('dialog', { name: 'Delete audit destination Syslog' });
    await remove.getByRole('textbox', { name: 'Type Syslog to confirm' }).fill('Syslog');
    await remove.getByRole('button', { name: 'Delete' }).click();
    await region.getByText('No audit destination is configured.').waitFor();
    expect((await api('get', `/audit-destinations/${id}`)).status).toBe(404);
    await expectClean(page, problems, 400);
    await context.close();
  }, 90_000);
});
