import {
  TestApp,
  createOrganization,
  createSystemAccount,
  createTestApp,
  platformAdminToken,
  registerOidcClient,
  scopeAssignmentFile,
  tokenBySecret,
} from '@app/testing';

/**
 * A system account set up as an OpenID Connect client through the admin API (DECISIONS 15.1):
 * redirect URIs matched as exact strings, https except loopback, and the grant rules of DECISIONS
 * 5.3 apply to this write as to every other write to the account.
 */
describe('OIDC client settings of system accounts (admin API)', () => {
  let t: TestApp;
  let admin: string;
  const org = 'oidc_clients';
  let clientId: string;
  const path = () => `/admin/v1/organizations/${org}/system-accounts/${clientId}/oidc-client`;

  beforeAll(async () => {
    t = await createTestApp({
      env: {
        SCOPE_ASSIGNMENT_FILE: scopeAssignmentFile('oidc-clients.properties', {
          Administration: ['Scope.device_management', 'Scope.helpdesk', 'Scope.configuration_operator'],
          'Help Desk': ['Scope.helpdesk'],
          Cardholder: ['Scope.device'],
        }),
      },
    });
    admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, org);
    clientId = (await createSystemAccount(t.http, admin, org, { suffix: 'portal', role: 'Administration' })).clientId;
  });
  afterAll(() => t.close());

  it('is 404 until the account is set up, then answers what was set; DELETE takes the account out again', async () => {
    const before = await t.http.get(path()).auth(admin, { type: 'bearer' });
    expect(before.status).toBe(404);
    expect(before.body.detail).toMatch(/not set up for the authorization code flow/);
    // The account itself says so (oidcClient), so a client need not provoke the 404 to find out.
    const account = () => t.http.get(`/admin/v1/organizations/${org}/system-accounts/${clientId}`).auth(admin, { type: 'bearer' });
    expect((await account()).body.oidcClient).toBe(false);

    const put = await t.http
      .put(path())
      .auth(admin, { type: 'bearer' })
      .send({
        redirectUris: ['https://app.example.test/cb', 'http://127.0.0.1:8765/cb', 'http://[::1]/cb', 'http://localhost:3000/callback?x=1'],
        postLogoutRedirectUris: ['https://app.example.test/bye'],
        firstParty: true,
        refreshTokens: true,
      });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({
      id: clientId,
      redirectUris: ['https://app.example.test/cb', 'http://127.0.0.1:8765/cb', 'http://[::1]/cb', 'http://localhost:3000/callback?x=1'],
      postLogoutRedirectUris: ['https://app.example.test/bye'],
      publicClient: false,
      firstParty: true,
      refreshTokens: true,
      meta: expect.objectContaining({ resourceType: 'OidcClient', version: '1', location: expect.stringMatching(/\/oidc-client$/) }),
    });
    const read = await t.http.get(path()).auth(admin, { type: 'bearer' });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(put.body);
    expect((await account()).body.oidcClient).toBe(true);
    // The list and a PATCH answer it too, as every answer that shows the account.
    const listed = await t.http.get(`/admin/v1/organizations/${org}/system-accounts`).auth(admin, { type: 'bearer' });
    expect(listed.body.Resources.find((a: { clientId: string }) => a.clientId === clientId).oidcClient).toBe(true);
    const patched = await t.http
      .patch(`/admin/v1/organizations/${org}/system-accounts/${clientId}`)
      .auth(admin, { type: 'bearer' })
      .send({ description: 'portal' });
    expect(patched.body.oidcClient).toBe(true);

    const replaced = await t.http
      .put(path())
      .auth(admin, { type: 'bearer' })
      .send({ redirectUris: ['https://app.example.test/other'], publicClient: true });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({
      redirectUris: ['https://app.example.test/other'],
      postLogoutRedirectUris: [],
      publicClient: true,
      firstParty: false,
      refreshTokens: false,
    });
    expect(replaced.body.meta.version).toBe('2');

    const events = await t.db.query("SELECT code, target FROM audit_events WHERE action = 'oidc_client.configure' AND org_id = $1", [org]);
    expect(events.rows).toEqual([
      { code: 83001, target: clientId },
      { code: 83001, target: clientId },
    ]);

    expect((await t.http.delete(path()).auth(admin, { type: 'bearer' })).status).toBe(204);
    expect((await t.http.get(path()).auth(admin, { type: 'bearer' })).status).toBe(404);
    expect((await account()).body.oidcClient).toBe(false);
    expect((await t.http.delete(path()).auth(admin, { type: 'bearer' })).status).toBe(404);
    const removed = await t.db.query("SELECT code FROM audit_events WHERE action = 'oidc_client.remove' AND org_id = $1", [org]);
    expect(removed.rows).toEqual([{ code: 83002 }]);
  });

  it.each([
    [{ redirectUris: [] }, /redirectUris.*at least 1/],
    [{}, /redirectUris/],
    [{ redirectUris: ['http://app.example.test/cb'] }, /must use https/],
    [{ redirectUris: ['https://app.example.test/cb#frag'] }, /fragment/],
    [{ redirectUris: ['/cb'] }, /not an absolute URL/],
    [{ redirectUris: ['https://user:pw@app.example.test/cb'] }, /user information/],
    [{ redirectUris: ['https://app.example.test/a b'] }, /space/],
    [{ redirectUris: ['custom-scheme:/cb'] }, /must use https/],
    // #32 item 8: an empty host, an internationalized host, a right-to-left override.
    [{ redirectUris: ['https:///cb'] }, /needs a host after "https:\/\/"/],
    [{ redirectUris: ['https:cb.example/x'] }, /needs a host/],
    [{ redirectUris: ['http:///localhost/cb'] }, /needs a host/],
    [{ redirectUris: ['https://bücher.example/cb'] }, /punycode form and the path percent-encoded: https:\/\/xn--bcher-kva\.example\/cb/],
    [{ redirectUris: ['https://app.example.test/café'] }, /ASCII.*https:\/\/app\.example\.test\/caf%C3%A9/],
    [{ redirectUris: ['https://app.example.test/\u202Egpj.cb'] }, /bidirectional control character/],
    [{ redirectUris: ['https://app\u200B.example.test/cb'] }, /invisible/],
    [{ redirectUris: ['https://app.example.test/cb'], postLogoutRedirectUris: ['https://evil\u2066.example/'] }, /postLogoutRedirectUris.*bidirectional/],
    [{ redirectUris: [`https://app.example.test/${'a'.repeat(2000)}`] }, /longer than 2000/],
    [{ redirectUris: ['https://app.example.test/cb', 'https://app.example.test/cb'] }, /twice/],
    [{ redirectUris: Array.from({ length: 21 }, (_, i) => `https://app.example.test/${i}`) }, /at most 20/],
    [{ redirectUris: ['https://app.example.test/cb'], postLogoutRedirectUris: ['http://evil.example/'] }, /postLogoutRedirectUris.*https/],
    [{ redirectUris: ['https://app.example.test/cb'], publicClient: 'yes' }, /publicClient.*true or false/],
    [{ redirectUris: ['https://app.example.test/cb'], wildcard: true }, /"wildcard" is not part/],
    [{ redirectUris: 'https://app.example.test/cb' }, /redirectUris.*array/],
  ])('refuses a bad body with a 400 that says why (%#: %p)', async (body, detail) => {
    const response = await t.http.put(path()).auth(admin, { type: 'bearer' }).send(body);
    expect(response.status).toBe(400);
    expect(response.body.detail).toMatch(detail);
  });

  it('needs an administrator (401 without a token, 403 for a plain account) and 404 for an unknown account', async () => {
    const body = { redirectUris: ['https://app.example.test/cb'] };
    expect((await t.http.put(path()).send(body)).status).toBe(401);
    const plain = await createSystemAccount(t.http, admin, org, { role: 'Help Desk' });
    const plainToken = await tokenBySecret(t.http, org, plain.clientId, plain.secret);
    expect((await t.http.put(path()).auth(plainToken, { type: 'bearer' }).send(body)).status).toBe(403);
    const unknown = await t.http.put(`/admin/v1/organizations/${org}/system-accounts/${org}-nobody/oidc-client`).auth(admin, { type: 'bearer' }).send(body);
    expect(unknown.status).toBe(404);
  });

  it('follows the grant rules: an organization administrator with a lesser role cannot set up an account above its own', async () => {
    const deskAdmin = await createSystemAccount(t.http, admin, org, { role: 'Help Desk', organizationAdministrator: true });
    const deskToken = await tokenBySecret(t.http, org, deskAdmin.clientId, deskAdmin.secret);
    const refused = await t.http
      .put(path())
      .auth(deskToken, { type: 'bearer' })
      .send({ redirectUris: ['https://app.example.test/cb'] });
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toMatch(/account-above-own/);
    const denied = await t.db.query("SELECT code FROM audit_events WHERE action = 'authorization.grant_denied' AND actor = $1", [deskAdmin.clientId]);
    expect(denied.rows).toEqual([{ code: 70006 }]);
    // Its own kind of account it may set up.
    const desk = await createSystemAccount(t.http, admin, org, { role: 'Help Desk' });
    const ok = await t.http
      .put(`/admin/v1/organizations/${org}/system-accounts/${desk.clientId}/oidc-client`)
      .auth(deskToken, { type: 'bearer' })
      .send({ redirectUris: ['https://app.example.test/cb'] });
    expect(ok.status).toBe(200);
    // A client set up through the API is also gone with its account.
    await registerOidcClient(t.http, admin, org, clientId, { redirectUris: ['https://app.example.test/cb'] });
    expect((await t.http.delete(`/admin/v1/organizations/${org}/system-accounts/${clientId}`).auth(admin, { type: 'bearer' })).status).toBe(204);
    expect(
      (await t.db.query('SELECT count(*)::int AS n FROM oidc_clients c LEFT JOIN system_accounts a ON a.id = c.account_id WHERE a.id IS NULL')).rows,
    ).toEqual([{ n: 0 }]);
  });
});
