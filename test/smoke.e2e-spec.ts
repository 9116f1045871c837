import { TestApp, createOrganization, createSystemAccount, createTestApp, platformAdminToken, tokenBySecret } from '@app/testing';

describe('smoke', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('issues a token and answers whoami', async () => {
    const admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, 'acme');
    const account = await createSystemAccount(t.http, admin, 'acme', { role: 'Issuance' });
    const token = await tokenBySecret(t.http, 'acme', account.clientId, account.secret);
    const whoami = await t.http.get('/authentication/customer/acme/whoami').auth(token, { type: 'bearer' });
    expect(whoami.status).toBe(200);
    expect(whoami.body).toEqual({
      clientId: account.clientId,
      org: 'acme',
      role: 'Issuance',
      scopes: ['Scope.device_management'],
      permissions: expect.arrayContaining(['device.create', 'device.read']),
    });
    expect(whoami.body.permissions).not.toContain('device.terminate');
  });
});
