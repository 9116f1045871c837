import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import TestAgent from 'supertest/lib/agent';
import { TestCertificate } from './certificates';
import { PLATFORM_ADMIN_SECRET } from './test-app';

/** Small factories that drive the service through its HTTP API, as an integrator would. */

export function tokenRequest(http: TestAgent, org: string, form: Record<string, string>) {
  return http.post(`/authentication/customer/${org}/token`).type('form').send(form);
}

export async function tokenBySecret(http: TestAgent, org: string, clientId: string, secret: string): Promise<string> {
  const response = await tokenRequest(http, org, { grant_type: 'client_credentials', client_id: clientId, client_secret: secret });
  if (response.status !== 200) throw new Error(`token request failed: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body.access_token as string;
}

export function platformAdminToken(http: TestAgent): Promise<string> {
  return tokenBySecret(http, 'platform', 'platform-admin', PLATFORM_ADMIN_SECRET);
}

export async function createOrganization(http: TestAgent, adminToken: string, id: string, settings: Record<string, unknown> = {}): Promise<void> {
  const response = await http
    .post('/admin/v1/organizations')
    .auth(adminToken, { type: 'bearer' })
    .send({ id, name: `Organization ${id}`, settings });
  if (response.status !== 201) throw new Error(`create organization failed: ${response.status} ${JSON.stringify(response.body)}`);
}

export interface CreatedAccount {
  clientId: string;
  secret: string;
  tokenUrl: string;
}

export async function createSystemAccount(
  http: TestAgent,
  token: string,
  org: string,
  body: Record<string, unknown> = { role: 'Administration' },
): Promise<CreatedAccount> {
  const response = await http.post(`/admin/v1/organizations/${org}/system-accounts`).auth(token, { type: 'bearer' }).send(body);
  if (response.status !== 201) throw new Error(`create system account failed: ${response.status} ${JSON.stringify(response.body)}`);
  return { clientId: response.body.clientId, secret: response.body.secret.value, tokenUrl: response.body.tokenUrl };
}

/** In an existing organization: an organization administrator and a plain (Issuance) account, each with a token. */
export async function createAdminAndPlainAccounts(http: TestAgent, adminToken: string, org: string) {
  const orgAdmin = await createSystemAccount(http, adminToken, org, { suffix: 'admin', role: 'Administration', organizationAdministrator: true });
  const plain = await createSystemAccount(http, adminToken, org, { suffix: 'plain', role: 'Issuance' });
  return {
    org,
    orgAdmin,
    plain,
    orgAdminToken: await tokenBySecret(http, org, orgAdmin.clientId, orgAdmin.secret),
    plainToken: await tokenBySecret(http, org, plain.clientId, plain.secret),
  };
}

export async function uploadCertificate(http: TestAgent, token: string, org: string, clientId: string, pem: string) {
  return http
    .post(`/admin/v1/organizations/${org}/system-accounts/${clientId}/certificates`)
    .auth(token, { type: 'bearer' })
    .set('Content-Type', 'application/x-pem-file')
    .send(pem);
}

/** A client assertion (RFC 7523) signed with the certificate's key; `claims` override the defaults. */
export async function signAssertion(
  certificate: TestCertificate,
  clientId: string,
  aud: string | string[],
  options: { claims?: Record<string, unknown>; header?: Record<string, unknown>; now?: Date } = {},
): Promise<string> {
  const iat = Math.floor((options.now ?? new Date()).getTime() / 1000);
  const claims = { iss: clientId, sub: clientId, aud, iat, nbf: iat, exp: iat + 300, jti: randomUUID(), ...options.claims };
  for (const [key, value] of Object.entries(claims)) if (value === undefined) delete (claims as Record<string, unknown>)[key];
  return new SignJWT(claims).setProtectedHeader({ alg: certificate.alg, ...options.header }).sign(certificate.privateKey);
}

export type HttpMethod = 'get' | 'post' | 'patch' | 'put' | 'delete';

/** A request to /admin/v1 (the agent already carries Application-ID and Application-Version). */
export function adminCall(http: TestAgent, method: HttpMethod, path: string, token?: string) {
  const request = http[method](`/admin/v1${path}`);
  return token === undefined ? request : request.auth(token, { type: 'bearer' });
}
