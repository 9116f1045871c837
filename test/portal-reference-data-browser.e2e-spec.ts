import { Browser } from 'playwright-core';
import {
  IssuedPerson,
  TestApp,
  createIssuingOrganization,
  createPersonWithCard,
  eventually,
  makeOrganizationAdministrator,
  platformAdminToken,
  signIn,
  startServiceForBrowser,
} from '@app/testing';
import { accessibilityViolations, expectClean, launchBrowser, saveScreenshot, signedInPortal, WatchedPage } from './support/browser';

/**
 * The portal's administration of reference data and people (issue 37 item 3, second half; DECISIONS
 * 17.2) in a real browser, as test/portal-browser.e2e-spec.ts drives the rest: device policies,
 * groups and printers created, edited and deleted (the deletion confirmed by typing the name), the
 * credential and wallet policies saved, the server's 400 shown at its field; users searched on the
 * server, with e-mail and last sign-in, a person's sessions ended one and then all, and their
 * sign-in reset (an enrolment link, a new password). axe finds nothing in either theme, and nothing
 * is logged but the refusals a test provokes on purpose.
 */
const ORG = 'padmin';

describe('The portal administers reference data and people in a browser', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let platform: string;
  let ada: IssuedPerson;
  let lee: IssuedPerson;

  beforeAll(async () => {
    ({ t, base } = await startServiceForBrowser());
    browser = await launchBrowser();
    platform = await platformAdminToken(t.http);
    await createIssuingOrganization(t, platform, ORG, {});
    ada = await createPersonWithCard(t, platform, ORG, 'ada');
    await makeOrganizationAdministrator(t, platform, ORG, ada);
    lee = await createPersonWithCard(t, platform, ORG, 'lee');
    const named = await t.http.patch(`/admin/v1/organizations/${ORG}/users/${lee.id}`).auth(platform, { type: 'bearer' }).send({ displayName: 'Lee Park' });
    expect(named.status).toBe(200);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const signedIn = (path: string, colorScheme: 'light' | 'dark' = 'light'): Promise<WatchedPage> =>
    signedInPortal(browser, { t, base }, ada, path, { colorScheme });

  const admin = (path: string) => t.http.get(`/admin/v1/organizations/${ORG}${path}`).auth(platform, { type: 'bearer' });

  it("creates, edits and deletes a device policy: the server's 400 at its field, the deletion confirmed by typing the name", async () => {
    const { context, page, problems } = await signedIn(`/portal/${ORG}/device-policies`);
    await page.getByRole('heading', { name: 'Device policies', level: 1 }).waitFor();
    // Listed by name (the policies of the suite's cards), never by id.
    await page.getByRole('cell', { name: /^Card of ada / }).waitFor();
    await page.getByRole('button', { name: 'Create device policy' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create a device policy' });
    await dialog.getByLabel('Name').fill('Employee badge');
    // No credential type: the server refuses, and says so at the field.
    await dialog.getByRole('checkbox', { name: /^Certificate/ }).uncheck();
    await dialog.getByRole('button', { name: 'Create' }).click();
    await dialog.getByText('must name at least one credential type').waitFor();
    await expectClean(page, problems, 400);
    await dialog.getByRole('checkbox', { name: /^Certificate/ }).check();
    await dialog.getByRole('checkbox', { name: /time-based/ }).check();
    await dialog.getByLabel('Device types').fill('IDPrime 940\nIDPrime 3940');
    await dialog.getByRole('button', { name: 'Create' }).click();
    await dialog.waitFor({ state: 'hidden' });
    const row = page.getByRole('row', { name: /Employee badge/ });
    await row.getByRole('cell', { name: 'IDPrime 940, IDPrime 3940' }).waitFor();
    expect(await row.getByRole('cell', { name: 'Second operator' }).isVisible()).toBe(true);
    await saveScreenshot(page, 'device-policies.png');
    await expectClean(page, problems, 400);

    await row.getByRole('button', { name: 'Edit Employee badge' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit Employee badge' });
    await edit.getByLabel('Name').fill('Visitor badge');
    await edit.getByRole('checkbox', { name: 'A second operator approves each request' }).uncheck();
    await edit.getByRole('button', { name: 'Save' }).click();
    await edit.waitFor({ state: 'hidden' });
    const renamed = page.getByRole('row', { name: /Visitor badge/ });
    await renamed.getByRole('cell', { name: 'None', exact: true }).waitFor();
    const stored = (await admin('/device-policies?filter=' + encodeURIComponent('name eq "Visitor badge"'))).body.Resources;
    expect(stored).toEqual([
      expect.objectContaining({
        name: 'Visitor badge',
        credentialTypes: ['PKI_CERTIFICATE', 'OATH_TOTP'],
        requiresApproval: false,
        deviceTypes: ['IDPrime 940', 'IDPrime 3940'],
      }),
    ]);
    // Changed once (the portal sent If-Match W/"1", which test/reference-data-if-match shows the server honours).
    expect(stored[0].meta.version).toBe('2');

    await renamed.getByRole('button', { name: 'Delete Visitor badge' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete Visitor badge' });
    expect(await confirm.getByRole('button', { name: 'Delete device policy' }).isDisabled()).toBe(true);
    await confirm.getByLabel('Type Visitor badge to confirm').fill('Visitor badge');
    await confirm.getByRole('button', { name: 'Delete device policy' }).click();
    await confirm.waitFor({ state: 'hidden' });
    await renamed.waitFor({ state: 'hidden' });
    expect((await admin('/device-policies?filter=' + encodeURIComponent('name eq "Visitor badge"'))).body.totalResults).toBe(0);
    await expectClean(page, problems, 400);
    await context.close();
  }, 120_000);

  it('creates a group with a member found by user name, renames it and deletes it', async () => {
    const { context, page, problems } = await signedIn(`/portal/${ORG}/groups`);
    await page.getByRole('heading', { name: 'Groups', level: 1 }).waitFor();
    await page.getByText('No group yet.').waitFor();
    await expectClean(page, problems);
    await page.getByRole('button', { name: 'Create group' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create a group' });
    await dialog.getByLabel('Name').fill('Berlin');
    await dialog.getByLabel('Members').fill('le');
    await page.getByRole('option', { name: 'lee', exact: true }).click();
    // The chosen member shows as a pill; leaving the field closes its list.
    await dialog.getByLabel('Name').click();
    await expectClean(page, problems);
    await dialog.getByRole('button', { name: 'Create' }).click();
    await dialog.waitFor({ state: 'hidden' });
    const row = page.getByRole('row', { name: /Berlin/ });
    await row.getByRole('cell', { name: '1: lee' }).waitFor();
    const [group] = (await admin('/groups')).body.Resources;
    expect(group).toMatchObject({ displayName: 'Berlin', members: [expect.objectContaining({ value: lee.id, display: 'lee' })] });

    await row.getByRole('button', { name: 'Edit Berlin' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit Berlin' });
    await edit.getByLabel('Name').fill('Berlin Mitte');
    await edit.getByRole('button', { name: 'Save' }).click();
    await edit.waitFor({ state: 'hidden' });
    const renamed = page.getByRole('row', { name: /Berlin Mitte/ });
    await renamed.getByRole('cell', { name: '1: lee' }).waitFor();
    const member = await admin(`/users/${lee.id}`);
    expect(member.body.groups).toEqual(['Berlin Mitte']);

    await renamed.getByRole('button', { name: 'Delete Berlin Mitte' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete Berlin Mitte' });
    await confirm.getByLabel('Type Berlin Mitte to confirm').fill('Berlin Mitte');
    await confirm.getByRole('button', { name: 'Delete group' }).click();
    await page.getByText('No group yet.').waitFor();
    expect((await admin(`/users/${lee.id}`)).body.groups).toEqual([]);
    await expectClean(page, problems);
    await context.close();
  }, 120_000);

  it('adds a printer, marks it offline and deletes it', async () => {
    const { context, page, problems } = await signedIn(`/portal/${ORG}/printers`);
    await page.getByRole('heading', { name: 'Printers', level: 1 }).waitFor();
    await page.getByText('No printer yet. Add one with Add printer').waitFor();
    await page.getByRole('button', { name: 'Add printer' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add a printer' });
    await dialog.getByLabel('Name').fill('Front desk');
    await dialog.getByLabel('Model').fill('Evolis Primacy 2');
    await dialog.getByLabel('Location').fill('Berlin, lobby');
    await expectClean(page, problems);
    await dialog.getByRole('button', { name: 'Add' }).click();
    await dialog.waitFor({ state: 'hidden' });
    const row = page.getByRole('row', { name: /Front desk/ });
    await row.getByRole('cell', { name: 'Ready' }).waitFor();
    expect(await row.getByRole('cell', { name: 'Evolis Primacy 2' }).isVisible()).toBe(true);

    await row.getByRole('button', { name: 'Edit Front desk' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit Front desk' });
    await edit.getByLabel('Status').click();
    await page.getByRole('option', { name: 'Offline' }).click();
    await edit.getByRole('button', { name: 'Save' }).click();
    await edit.waitFor({ state: 'hidden' });
    await row.getByRole('cell', { name: 'Offline' }).waitFor();
    expect((await admin('/printers')).body.Resources).toEqual([
      expect.objectContaining({ name: 'Front desk', model: 'Evolis Primacy 2', location: 'Berlin, lobby', status: 'OFFLINE' }),
    ]);

    await row.getByRole('button', { name: 'Delete Front desk' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete Front desk' });
    await confirm.getByLabel('Type Front desk to confirm').fill('Front desk');
    await confirm.getByRole('button', { name: 'Delete printer' }).click();
    await page.getByText('No printer yet. Add one with Add printer').waitFor();
    expect((await admin('/printers')).body.totalResults).toBe(0);
    await expectClean(page, problems);
    await context.close();
  }, 120_000);

  it("saves the credential and wallet policies with If-Match: the server's 400 at the field, then saved", async () => {
    const { context, page, problems } = await signedIn(`/portal/${ORG}/policies`);
    await page.getByRole('heading', { name: 'Credential and wallet policies', level: 1 }).waitFor();
    const lifetime = page.getByLabel('Certificate lifetime (days)');
    expect(await lifetime.inputValue()).toBe('365');
    await lifetime.fill('4000');
    await page.getByRole('button', { name: 'Save credential policy' }).click();
    await page.getByText('must be at most 1825 (5 years)').waitFor();
    expect(await lifetime.getAttribute('aria-invalid')).toBe('true');
    await expectClean(page, problems, 400);
    await lifetime.fill('730');
    await page.getByRole('button', { name: 'Save credential policy' }).click();
    await page.getByRole('status').getByText('Credential policy saved.').waitFor();
    const devices = page.getByLabel('Devices per person');
    await devices.fill('5');
    await page.getByRole('button', { name: 'Save wallet policy' }).click();
    await page.getByRole('status').getByText('Wallet policy saved.').waitFor();
    const credential = await admin('/credential-policy');
    expect(credential.body).toMatchObject({ certificateLifetimeDays: 730, meta: { version: '1' } });
    expect((await admin('/wallet-policy')).body).toMatchObject({ maxDevicesPerWallet: 5 });
    // Saved again from the same page: its If-Match is the version it read back (1), so no 412.
    await page.getByLabel('Certificate lifetime (days)').fill('700');
    await page.getByRole('button', { name: 'Save credential policy' }).click();
    await page.getByRole('status').getByText('Credential policy saved.').waitFor();
    expect((await admin('/credential-policy')).body).toMatchObject({ certificateLifetimeDays: 700, meta: { version: '2' } });
    await expectClean(page, problems, 400);
    await context.close();
  }, 120_000);

  it('finds a user by display name, shows their e-mail and last sign-in, ends one session and then all, and resets their sign-in', async () => {
    // Lee signs in twice at the login page: two live sessions.
    const first = await signIn(t, { org: ORG, userName: 'lee', password: lee.password, totpSecret: lee.totpSecret, userAgent: 'first browser' });
    t.clock.advance(31);
    await signIn(t, { org: ORG, userName: 'lee', password: lee.password, totpSecret: lee.totpSecret, userAgent: 'second browser' });
    const { context, page, problems } = await signedIn(`/portal/${ORG}/users`);
    await page.getByRole('heading', { name: 'Users and operators', level: 1 }).waitFor();
    await page.getByLabel('Search').fill('Park');
    const table = page.getByRole('table', { name: 'Users' });
    await table.getByRole('row', { name: /Lee Park/ }).waitFor();
    await page.getByRole('status').getByText('1 user', { exact: true }).waitFor();
    const row = table.getByRole('row', { name: /Lee Park/ });
    expect(await row.getByRole('cell', { name: 'lee@example.com' }).isVisible()).toBe(true);
    const listed = (await admin(`/users/${lee.id}`)).body;
    expect(listed.lastSignIn).toEqual(expect.any(String));
    expect(await row.locator('time').getAttribute('datetime')).toBe(listed.lastSignIn);
    // A search for nothing known says so.
    await page.getByLabel('Search').fill('nobody-here');
    await page.getByText('No user matches “nobody-here”.').waitFor();
    await page.getByLabel('Search').fill('lee@');
    await row.waitFor();
    await expectClean(page, problems);

    await row.getByRole('button', { name: 'Sessions of lee', exact: true }).click();
    const sessions = page.getByRole('dialog', { name: 'Sessions of lee' });
    const sessionRows = sessions.getByRole('table', { name: 'Sessions of lee' }).getByRole('row');
    await sessions.getByRole('cell', { name: 'password + one-time code' }).first().waitFor();
    expect(await sessionRows.count()).toBe(3);
    await saveScreenshot(page, 'user-sessions.png');
    await expectClean(page, problems);
    await sessions
      .getByRole('button', { name: /^End the session signed in / })
      .last()
      .click();
    await sessions.getByRole('status').getByText('Session ended.').waitFor();
    await eventually(async () => (await sessionRows.count()) === 2, 'one session left in the list');
    // The older session (the first browser) is the one ended: its cookie no longer opens the portal.
    expect((await t.bare.get(`/portal/${ORG}/`).set('Cookie', first.cookie)).status).toBe(303);
    await sessions.getByRole('button', { name: 'End all sessions' }).click();
    await sessions.getByText('lee has no live browser session.').waitFor();
    expect((await admin(`/users/${lee.id}/sessions`)).body.totalResults).toBe(0);
    await expectClean(page, problems);
    await page.keyboard.press('Escape');
    await sessions.waitFor({ state: 'hidden' });

    await row.getByRole('button', { name: 'Sign-in of lee' }).click();
    const signInDialog = page.getByRole('dialog', { name: 'Sign-in of lee' });
    await signInDialog.getByRole('button', { name: 'Make an enrolment link' }).click();
    const link = (await signInDialog.getByLabel('Enrolment link').textContent())!.trim();
    expect(link).toMatch(new RegExp(`/authentication/customer/${ORG}/enrol`));
    expect(await signInDialog.getByRole('button', { name: 'Copy link' }).isVisible()).toBe(true);
    await expectClean(page, problems);
    await signInDialog.getByLabel('New password').fill('a brand new password');
    await signInDialog.getByRole('button', { name: 'Set password' }).click();
    await signInDialog.getByText('Password set; their sessions have ended.').waitFor();
    // The new password works at the login page, the old one no longer does.
    await signIn(t, { org: ORG, userName: 'lee', password: 'a brand new password', totpSecret: lee.totpSecret });
    await expect(signIn(t, { org: ORG, userName: 'lee', password: lee.password, totpSecret: lee.totpSecret })).rejects.toThrow(/failed/);
    await expectClean(page, problems);
    await context.close();
  }, 150_000);

  it('every new screen is accessible in the dark theme, dialogs included', async () => {
    const { context, page, problems } = await signedIn(`/portal/${ORG}/device-policies`, 'dark');
    await page.getByRole('heading', { name: 'Device policies', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Switch to the light theme' }).waitFor();
    for (const [screen, heading, create] of [
      ['device-policies', 'Device policies', 'Create device policy'],
      ['groups', 'Groups', 'Create group'],
      ['printers', 'Printers', 'Add printer'],
      ['policies', 'Credential and wallet policies', null],
      ['users', 'Users and operators', null],
    ] as const) {
      await page.goto(`${base}/portal/${ORG}/${screen}`);
      await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
      await page.waitForLoadState('networkidle');
      expect(await page.locator('html').getAttribute('data-mantine-color-scheme')).toBe('dark');
      expect([screen, await accessibilityViolations(page)]).toEqual([screen, []]);
      if (create) {
        await page.getByRole('button', { name: create }).click();
        await page.getByRole('dialog').waitFor();
        expect([`${screen} dialog`, await accessibilityViolations(page)]).toEqual([`${screen} dialog`, []]);
        await page.keyboard.press('Escape');
        await page.getByRole('dialog').waitFor({ state: 'hidden' });
      }
    }
    await page
      .getByRole('row', { name: /Lee Park/ })
      .getByRole('button', { name: 'Sessions of lee', exact: true })
      .click();
    await page.getByRole('dialog', { name: 'Sessions of lee' }).waitFor();
    await page.waitForLoadState('networkidle');
    expect(await accessibilityViolations(page)).toEqual([]);
    await page.keyboard.press('Escape');
    await page
      .getByRole('row', { name: /Lee Park/ })
      .getByRole('button', { name: 'Sign-in of lee' })
      .click();
    await page.getByRole('dialog', { name: 'Sign-in of lee' }).waitFor();
    expect(await accessibilityViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  }, 180_000);
});
