import { JwsService, SigningKeys } from '@app/auth';
import { TestApp, createOrganization, createSystemAccount, createTestApp, platformAdminToken, tokenBySecret } from '@app/testing';

/**
 * Tokens that carry this service's signature but not its claim shape (DECISIONS 3.4): the service
 * mints every jti as a UUID, so any other jti is a malformed token (401), never a database error.
 */
describe('service-signed tokens with a jti the service never mints', () => {
  let t: TestApp;
  let org: string;
  let account: { clientId: string; secret: string };
  let claims: Record<string, unknown>;

  beforeAll(async () => {
    t = await createTestApp();
    const admin = await platformAdminToken(t.http);
    org = 'jtiform';
    await createOrganization(t.http, admin, org);
    account = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
    const genuine = await tokenBySecret(t.http, org, account.clientId, account.secret);
    claims = JSON.parse(Buffer.from(genuine.split('.')[1], 'base64url').toString('utf8')) as Record<string, unknown>;
  });
  afterAll(() => t.close());

  const signed = (jti: unknown) => t.app.get(JwsService).sign('at+jwt', { ...claims, jti }, t.app.get(SigningKeys).active());

  it.each([['not-a-uuid'], ['0'.repeat(300)], ["x' OR '1'='1"], [42]])('jti %j: 401 invalid_token (malformed)', async (jti) => {
    const response = await t.http.get(`/authentication/customer/${org}/whoami`).auth(await signed(jti), { type: 'bearer' });
    expect(response.status).toBe(401);
    expect(response.headers['www-authenticate']).toBe(
      'Bearer realm="credential-platform", error="invalid_token", error_description="The access token is malformed."',
    );
  });

  it('introspection answers active: false, and revocation 200 without effect', async () => {
    const token = await signed('not-a-uuid');
    const form = { client_id: account.clientId, client_secret: account.secret, token };
    const introspected = await t.http.post(`/authentication/customer/${org}/introspect`).type('form').send(form);
    expect(introspected.status).toBe(200);
    expect(introspected.body).toEqual({ active: false });
    const revoked = await t.http.post(`/authentication/customer/${org}/revoke`).type('form').send(form);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({});
  });
});
