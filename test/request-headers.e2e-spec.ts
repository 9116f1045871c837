import { PLATFORM_ADMIN_SECRET, TestApp, createOrganization, createSystemAccount, createTestApp, platformAdminToken, tokenBySecret } from '@app/testing';

/** DECISIONS 6: Application-ID and Application-Version on every call but the token service, health and docs. */
describe('request headers', () => {
  let t: TestApp;
  let admin: string;
  beforeAll(async () => {
    t = await createTestApp();
    admin = await platformAdminToken(t.http);
  });
  afterAll(() => t.close());

  const call = (headers: Record<string, string>, token = admin) => {
    let request = t.bare.get('/admin/v1/roles').auth(token, { type: 'bearer' });
    for (const [name, value] of Object.entries(headers)) request = request.set(name, value);
    return request;
  };

  it('with both headers: 200', async () => {
    expect((await call({ 'Application-ID': 'com.example.app', 'Application-Version': '2.2' })).status).toBe(200);
    expect((await call({ 'Application-ID': 'A_b-9', 'Application-Version': '1.4.2' })).status).toBe(200);
  });

  it.each([
    [{ 'Application-Version': '2.2' }, 'The header Application-ID is required'],
    [{ 'Application-ID': 'com.example.app' }, 'The header Application-Version is required'],
    [{ 'Application-ID': '', 'Application-Version': '2.2' }, 'The header Application-ID is empty'],
    [{ 'Application-ID': 'com.example.app', 'Application-Version': ' ' }, 'The header Application-Version is empty'],
    [{ 'Application-ID': 'has spaces', 'Application-Version': '2.2' }, 'The header Application-ID "has spaces" is malformed'],
    [{ 'Application-ID': 'x'.repeat(129), 'Application-Version': '2.2' }, 'is malformed'],
    [{ 'Application-ID': 'com.example.app', 'Application-Version': '2' }, 'The header Application-Version "2" is malformed'],
    [{ 'Application-ID': 'com.example.app', 'Application-Version': '1.2.3.4' }, 'The header Application-Version "1.2.3.4" is malformed'],
    [{ 'Application-ID': 'com.example.app', 'Application-Version': 'v2.2' }, 'The header Application-Version "v2.2" is malformed'],
  ])('%j: 400 naming the header', async (headers, detail) => {
    const response = await call(headers);
    expect(response.status).toBe(400);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '400', scimType: 'invalidValue' });
    expect(response.body.detail).toContain(detail);
  });

  it('the token service, discovery, whoami, health and docs need no headers', async () => {
    const token = await tokenBySecret(t.bare, 'platform', 'platform-admin', PLATFORM_ADMIN_SECRET);
    expect((await t.bare.get('/authentication/customer/platform/whoami').auth(token, { type: 'bearer' })).status).toBe(200);
    expect((await t.bare.get('/authentication/customer/platform/.well-known/openid-configuration')).status).toBe(200);
    expect((await t.bare.get('/health/ready')).status).toBe(200);
    expect((await t.bare.get('/api-docs')).status).toBe(200);
  });

  it('certified policy: a registered Application-ID passes, another gets 403 naming it; policy any lets both pass', async () => {
    await createOrganization(t.http, admin, 'certified', { applicationIdPolicy: 'certified' });
    const orgAdmin = await createSystemAccount(t.http, admin, 'certified', { role: 'Administration', organizationAdministrator: true });
    const token = await tokenBySecret(t.http, 'certified', orgAdmin.clientId, orgAdmin.secret);
    const registered = await t.http
      .post('/admin/v1/organizations/certified/applications')
      .auth(admin, { type: 'bearer' })
      .send({ applicationId: 'com.partner.certified', name: 'Partner app' });
    expect(registered.status).toBe(201);
    expect(registered.body).toEqual({ applicationId: 'com.partner.certified', name: 'Partner app', created: expect.any(String) });

    expect((await call({ 'Application-ID': 'com.partner.certified', 'Application-Version': '1.0' }, token)).status).toBe(200);
    const refused = await call({ 'Application-ID': 'com.partner.other', 'Application-Version': '1.0' }, token);
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toContain('Application-ID "com.partner.other" is not certified for organization "certified"');

    const listed = await t.http
      .get('/admin/v1/organizations/certified/applications')
      .auth(token, { type: 'bearer' })
      .set('Application-ID', 'com.partner.certified');
    expect(listed.status).toBe(200);
    expect(listed.body.Resources.map((a: { applicationId: string }) => a.applicationId)).toEqual(['com.partner.certified']);
    const duplicate = await t.http
      .post('/admin/v1/organizations/certified/applications')
      .auth(admin, { type: 'bearer' })
      .send({ applicationId: 'com.partner.certified' });
    expect(duplicate.status).toBe(409);

    // Switching the organization back to `any` lets any well-formed Application-ID through at once.
    const settings = await t.http
      .put('/admin/v1/organizations/certified/settings')
      .auth(admin, { type: 'bearer' })
      .send({ automaticDeviceCreation: false, applicationIdPolicy: 'any' });
    expect(settings.status).toBe(200);
    expect((await call({ 'Application-ID': 'com.partner.other', 'Application-Version': '1.0' }, token)).status).toBe(200);

    const removed = await t.http.delete('/admin/v1/organizations/certified/applications/com.partner.certified').auth(admin, { type: 'bearer' });
    expect(removed.status).toBe(204);
    expect((await t.http.delete('/admin/v1/organizations/certified/applications/com.partner.certified').auth(admin, { type: 'bearer' })).status).toBe(404);
  });

  it('a bad Application-ID in the register body is a 400 naming the field', async () => {
    const response = await t.http
      .post('/admin/v1/organizations/platform/applications')
      .auth(admin, { type: 'bearer' })
      .send({ applicationId: 'no spaces allowed' });
    expect(response.status).toBe(400);
    expect(response.body.detail).toContain('applicationId');
  });
});
