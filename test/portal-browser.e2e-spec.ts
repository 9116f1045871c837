import { Browser } from 'playwright-core';
import {
  IssuedPerson,
  TestApp,
  createIssuingOrganization,
  createPersonWithCard,
  makeOrganizationAdministrator,
  platformAdminToken,
  signInOnLoginPage,
  startServiceForBrowser,
} from '@app/testing';
import { accessibilityViolations, launchBrowser, watchedPage } from './support/browser';

/**
 * The management portal in a real browser (issue 24; DECISIONS 17): Debian's headless Chromium
 * against the service serving the built portal, every page checked by axe-core (WCAG 2.1 A and AA)
 * and for console errors and CSP violations.
 */
const ORG = 'portal';

describe('The management portal in a browser', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let platform: string;
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

  it('the start page asks for the organization, accessibly, without a CSP violation', async () => {
    const { context, page, problems } = await watchedPage(browser);
    await page.goto(`${base}/portal/`);
    await page.getByRole('heading', { name: 'Management portal' }).waitFor();
    expect(await accessibilityViolations(page)).toEqual([]);
    await page.getByLabel('Organization').fill(ORG);
    await page.getByRole('button', { name: 'Continue' }).click();
    // Not signed in: the organization's hosted login page, to come back here.
    await page.waitForURL(/\/authentication\/customer\/portal\/login\?/);
    expect(new URL(page.url()).searchParams.get('return_to')).toBe(`/portal/${ORG}/`);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('a deep link without a session goes to the login page and, signed in, comes back to it', async () => {
    const { context, page, problems } = await watchedPage(browser);
    await page.goto(`${base}/portal/${ORG}/roles`);
    await page.waitForURL(/\/login\?/);
    expect(new URL(page.url()).searchParams.get('return_to')).toBe(`/portal/${ORG}/roles`);
    page.setDefaultTimeout(8000);
    try {
      await signInOnLoginPage(page, t, ada);
      await page.waitForURL(`${base}/portal/${ORG}/roles`, { timeout: 8000 });
    } catch (e) {
      console.log('DEBUG', page.url(), problems, (await page.content()).slice(0, 3000));
      await page.screenshot({ path: '/tmp/portal-debug.png' });
      throw e;
    }
    await page.getByRole('heading', { name: 'Roles', level: 1 }).waitFor();
    expect(await page.getByRole('cell', { name: 'Help Desk' }).isVisible()).toBe(true);
    expect(await accessibilityViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });
});
