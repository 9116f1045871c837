import { Page } from 'playwright-core';
import { freePort } from './service-process';
import { IssuedPerson, nextTotpCode } from './sign-in';
import { createTestApp, TestApp } from './test-app';

/**
 * The service listening on a loopback port for a real browser, its public and authentication base
 * URL that very origin (the session cookie's same-origin rule compares with it; Chromium keeps
 * `__Host-` cookies on http://127.0.0.1), serving the built portal (portal/dist).
 */
export async function startServiceForBrowser(env: Record<string, string> = {}): Promise<{ t: TestApp; base: string }> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const t = await createTestApp({ env: { PUBLIC_BASE_URL: base, AUTH_BASE_URL: base, ...env } });
  await t.app.listen(port, '127.0.0.1');
  return { t, base };
}

/**
 * Signs `person` in on the hosted login page the browser is on, as a person does: user name,
 * password, then the one-time code of their OATH TOTP credential at the service's clock.
 */
export async function signInOnLoginPage(page: Page, t: TestApp, person: IssuedPerson): Promise<void> {
  await page.getByLabel('User name').fill(person.userName);
  await page.getByLabel('Password').fill(person.password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByLabel('One-time code').fill(nextTotpCode(t, person.totpSecret!));
  await page.getByRole('button', { name: 'Verify' }).click();
}

/** Promotes a person to their organization's administrator with the Administration role (admin API, as the platform administrator). */
export async function makeOrganizationAdministrator(t: TestApp, platformToken: string, org: string, person: IssuedPerson): Promise<void> {
  const answer = await t.http
    .patch(`/admin/v1/organizations/${org}/users/${person.id}`)
    .auth(platformToken, { type: 'bearer' })
    .send({ role: 'Administration', organizationAdministrator: true });
  if (answer.status !== 200) throw new Error(`promote ${person.userName}: ${answer.status} ${JSON.stringify(answer.body)}`);
}

/** Gives a person a role (admin API, as the platform administrator). */
export async function giveRole(t: TestApp, platformToken: string, org: string, person: IssuedPerson, role: string): Promise<void> {
  const answer = await t.http.patch(`/admin/v1/organizations/${org}/users/${person.id}`).auth(platformToken, { type: 'bearer' }).send({ role });
  if (answer.status !== 200) throw new Error(`role of ${person.userName}: ${answer.status} ${JSON.stringify(answer.body)}`);
}
