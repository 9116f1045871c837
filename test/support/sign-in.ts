import { createHmac, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { insertCard, createCardholder } from './cards';
import { opensslCsr } from './certificates';
import { createSystemAccount, tokenBySecret } from './platform';
import { TestApp } from './test-app';

/**
 * Signing a person in through the hosted login page as a browser does (DECISIONS 14): GET the form
 * (its pre-session cookie and form token), POST userName and password, then, when the page asks,
 * POST the one-time code computed from `totpSecret` at the app's clock. Answers the session cookie
 * (`__Host-Http-session=...`, ready for a Cookie header) and where the page sent the person (the
 * 303's Location, `return_to` when it was a safe one; '' when the page answered the signed-in page).
 *
 * A one-time code is accepted once: signing the same person in again within the same 30-second
 * step uses the next step's code (one step of drift is allowed), and past that moves the app's
 * FakeClock on by a step.
 */
export async function signIn(
  t: TestApp,
  options: { org: string; userName: string; password: string; totpSecret?: string; returnTo?: string; userAgent?: string },
): Promise<{ cookie: string; location: string }> {
  const { org, userName, password, totpSecret, returnTo } = options;
  const path = `/authentication/customer/${org}/login`;
  const origin = new URL(t.config.authBaseUrl).origin;
  const form = await t.bare.get(returnTo ? `${path}?return_to=${encodeURIComponent(returnTo)}` : path);
  if (form.status !== 200) throw new Error(`GET ${path} answered ${form.status}: ${form.text.slice(0, 300)}`);
  const formCookie = cookiePair(form.headers['set-cookie'], '__Host-Http-login-form');
  if (!formCookie) throw new Error('The login form set no __Host-Http-login-form cookie.');
  const post = (fields: Record<string, string>) =>
    t.bare
      .post(path)
      .set('Cookie', formCookie)
      .set('Origin', origin)
      .set('Sec-Fetch-Site', 'same-origin')
      .set('User-Agent', options.userAgent ?? 'sign-in test helper')
      .type('form')
      .send({ form_token: hiddenField(form.text, 'form_token')!, ...(returnTo ? { return_to: returnTo } : {}), ...fields });
  let answer = await post({ step: 'password', userName, password });
  const stepToken = answer.status === 200 ? hiddenField(answer.text, 'step_token') : undefined;
  if (stepToken) {
    if (!totpSecret) throw new Error(`The login page asks ${userName} for a one-time code; pass totpSecret.`);
    answer = await post({ step: 'code', step_token: stepToken, code: nextTotpCode(t, totpSecret) });
  }
  const cookie = cookiePair(answer.headers['set-cookie'], '__Host-Http-session');
  if (!cookie || (answer.status !== 303 && answer.status !== 200)) {
    throw new Error(`Sign-in of ${userName} failed: ${answer.status} ${errorText(answer.text)}`);
  }
  return { cookie, location: answer.status === 303 ? String(answer.headers.location) : '' };
}

/**
 * Signs the person of `sessionCookie` out as a browser does: the signed-in page (its form cookie and
 * token), then its sign-out form, from the service's own origin. Answers the sign-out's response.
 */
export async function signOut(t: TestApp, org: string, sessionCookie: string) {
  const page = await t.bare.get(`/authentication/customer/${org}/login`).set('Cookie', sessionCookie);
  const formCookie = cookiePair(page.headers['set-cookie'], '__Host-Http-login-form');
  if (!formCookie) throw new Error(`The signed-in page set no __Host-Http-login-form cookie: ${page.status}`);
  return t.bare
    .post(`/authentication/customer/${org}/logout`)
    .set({ Cookie: `${sessionCookie}; ${formCookie}`, Origin: new URL(t.config.authBaseUrl).origin })
    .type('form')
    .send({ form_token: hiddenField(page.text, 'form_token')! });
}

/** The `name=value` of a Set-Cookie among `setCookie`, or undefined. */
export function cookiePair(setCookie: string | string[] | undefined, name: string): string | undefined {
  const all = setCookie === undefined ? [] : Array.isArray(setCookie) ? setCookie : [setCookie];
  const found = all.find((c) => c.startsWith(`${name}=`));
  return found?.split(';')[0];
}

/** The value of a hidden field of the page's HTML. */
export function hiddenField(html: string, name: string): string | undefined {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  return match?.[1]
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>');
}

/** The page's error message (role="alert"), for failure messages. */
export function errorText(html: string): string {
  return /role="alert">([^<]*)</.exec(html)?.[1] ?? html.slice(0, 200);
}

const usedSteps = new Map<string, number>();

/**
 * The code of the earliest time step this helper has not used yet for `secret`, among the current one
 * and the next (moving the FakeClock on by a step when both were used).
 */
export function nextTotpCode(t: TestApp, secret: string, period = 30, digits = 6): string {
  const now = Math.floor(t.clock.now().getTime() / 1000 / period);
  const last = usedSteps.get(secret);
  const step = last === undefined || last < now ? now : last + 1;
  if (step > now + 1) t.clock.advance((step - now - 1) * period);
  usedSteps.set(secret, step);
  return totpCode(secret, step, digits);
}

/** RFC 6238 TOTP (HMAC-SHA1) of a base32 secret for time step `step`: computed here, independently of the service's code. */
export function totpCode(secret: string, step: number, digits = 6): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const char of secret.toUpperCase()) bits += alphabet.indexOf(char).toString(2).padStart(5, '0');
  const key = Buffer.from((bits.match(/.{8}/g) ?? []).map((byte) => parseInt(byte, 2)));
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = createHmac('sha1', key).update(counter).digest();
  const offset = mac[mac.length - 1] & 0x0f;
  return String((mac.readUInt32BE(offset) & 0x7fffffff) % 10 ** digits).padStart(digits, '0');
}

export interface IssuedPerson {
  id: string;
  wallet: string;
  userName: string;
  password: string;
  /** The OATH TOTP secret (base32) SyncSession answered, when `totp`. */
  totpSecret?: string;
  /** The smart-card logon certificate (PEM) and its key's file, when `smartCard`. */
  certificatePem?: string;
  keyFile?: string;
  /** The issuing CA's chain, PEM. */
  chainPem?: string[];
}

/**
 * A cardholder with a password and a card issued through the real flow (content request approved by
 * a second operator, SyncSession), carrying an OATH TOTP credential and/or a certificate from the
 * organization's CA. The organization needs its CA (createIssuingOrganization creates one).
 */
export async function createPersonWithCard(
  t: TestApp,
  adminToken: string,
  org: string,
  userName: string,
  { password = 'correct horse battery staple', totp = true, smartCard = false }: { password?: string; totp?: boolean; smartCard?: boolean } = {},
): Promise<IssuedPerson> {
  const person = await createCardholder(t, adminToken, org, userName, { password, emails: [{ value: `${userName}@example.com`, primary: true }] });
  const types = [...(smartCard ? ['PKI_CERTIFICATE'] : []), ...(totp ? ['OATH_TOTP'] : [])];
  const policy = await t.http
    .post(`/admin/v1/organizations/${org}/device-policies`)
    .auth(adminToken, { type: 'bearer' })
    .send({ name: `Card of ${userName} ${randomBytes(3).toString('hex')}`, credentialTypes: types });
  if (policy.status !== 201) throw new Error(`device policy: ${policy.status} ${JSON.stringify(policy.body)}`);
  const issuer = await createSystemAccount(t.http, adminToken, org, { role: 'Issuance' });
  const approver = await createSystemAccount(t.http, adminToken, org, { role: 'Issuance' });
  const [issuerToken, approverToken] = [
    await tokenBySecret(t.http, org, issuer.clientId, issuer.secret),
    await tokenBySecret(t.http, org, approver.clientId, approver.secret),
  ];
  const scim = (token: string, path: string, body: unknown) =>
    t.http.post(path).auth(token, { type: 'bearer' }).set('Content-Type', 'application/scim+json').send(JSON.stringify(body));
  const card = await insertCard(t, org);
  const request = await scim(issuerToken, '/aims/rs/scim/v2/ContentRequest', {
    schemas: ['urn:vendor:scim:api:cms:1.0:ContentRequest'],
    type: 'issuance',
    target: { device: { value: card.id }, devicePolicy: { value: policy.body.id } },
    wallet: { value: person.wallet },
  });
  if (request.status !== 201) throw new Error(`content request: ${request.status} ${JSON.stringify(request.body)}`);
  const approved = await scim(approverToken, `/aims/rs/scim/v2/ContentRequest/${request.body.id}/approve`, {});
  if (approved.body.status !== 'approved') throw new Error(`approve: ${approved.status} ${JSON.stringify(approved.body)}`);
  const dir = join(process.env.TEST_RUN_DIR!, `cards-${randomBytes(4).toString('hex')}`);
  mkdirSync(dir, { recursive: true });
  const csr = smartCard ? opensslCsr(dir) : undefined;
  const results = [
    ...(smartCard ? [{ operation: 'GENERATE_KEY', status: 'SUCCESS', credentialType: 'PKI_CERTIFICATE', csr }] : []),
    ...(totp ? [{ operation: 'WRITE_OTP', status: 'SUCCESS', credentialType: 'OATH_TOTP' }] : []),
  ];
  const session = await scim(issuerToken, '/aims/rs/scim/v2/SyncSession', {
    schemas: ['urn:vendor:scim:api:cms:1.0:SyncSession'],
    contentRequest: { value: request.body.id },
    device: { ATR: card.ATR, CUID: card.CUID },
    results,
  });
  if (session.status !== 201) throw new Error(`sync session: ${session.status} ${JSON.stringify(session.body)}`);
  const credentials = session.body.credentials as { type: string; secret?: string; certificate?: { pem: string; chain: string[] } }[];
  const pki = credentials.find((c) => c.type === 'PKI_CERTIFICATE');
  const keyFile = smartCard
    ? join(
        dir,
        readdirSync(dir).find((f) => f.endsWith('.key'))!,
      )
    : undefined;
  return {
    id: person.id,
    wallet: person.wallet,
    userName,
    password,
    totpSecret: credentials.find((c) => c.type === 'OATH_TOTP')?.secret,
    certificatePem: pki?.certificate?.pem,
    chainPem: pki?.certificate?.chain,
    keyFile,
  };
}
