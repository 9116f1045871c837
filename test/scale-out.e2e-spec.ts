import { ChangeFeed } from '@app/persistence';
import { p256Csr } from '@app/pki/testing';
import {
  CreatedAccount,
  TestApp,
  createCardholder,
  createIssuingOrganization,
  createOrganization,
  createSystemAccount,
  createTestApp,
  makeCertificate,
  platformAdminToken,
  signAssertion,
  tokenBySecret,
  insertCard,
  tokenRequest,
  uploadCertificate,
} from '@app/testing';

/**
 * Two instances over one database (DECISIONS 13): tokens in use are checked from an in-process cache,
 * so a change made through one instance must reach the other's cache at once (LISTEN/NOTIFY).
 */
describe('scale-out: two instances, one database', () => {
  let a: TestApp;
  let b: TestApp;
  let admin: string;
  let counter = 0;

  beforeAll(async () => {
    a = await createTestApp();
    b = await createTestApp({ databaseUrl: a.databaseUrl, clock: a.clock, shareHsmWith: a });
    admin = await platformAdminToken(a.http);
  });
  afterAll(async () => {
    await b.close();
    await a.close();
  });

  async function accountWithToken(): Promise<{ org: string; account: CreatedAccount; token: string }> {
    const org = `scale${++counter}`;
    await createOrganization(a.http, admin, org);
    const account = await createSystemAccount(a.http, admin, org, { role: 'Issuance' });
    const token = await tokenBySecret(a.http, org, account.clientId, account.secret);
    return { org, account, token };
  }

  const whoami = (t: TestApp, org: string, token: string) => t.http.get(`/authentication/customer/${org}/whoami`).auth(token, { type: 'bearer' });

  /** The other instance learns of a change within milliseconds; allow up to two seconds. */
  async function eventually(check: () => Promise<boolean>): Promise<boolean> {
    for (let i = 0; i < 40; i++) {
      if (await check()) return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return false;
  }

  it('a token issued on one instance works on the other', async () => {
    const { org, token } = await accountWithToken();
    expect((await whoami(b, org, token)).status).toBe(200);
    expect((await whoami(a, org, token)).status).toBe(200);
  });

  it('disabling the account on one instance stops the token on the other, whose cache held it', async () => {
    const { org, account, token } = await accountWithToken();
    expect((await whoami(a, org, token)).status).toBe(200);
    expect((await whoami(a, org, token)).status).toBe(200);
    const patched = await b.http
      .patch(`/admin/v1/organizations/${org}/system-accounts/${account.clientId}`)
      .auth(admin, { type: 'bearer' })
      .send({ disabled: true });
    expect(patched.status).toBe(200);
    expect((await whoami(b, org, token)).status).toBe(401);
    expect(await eventually(async () => (await whoami(a, org, token)).status === 401)).toBe(true);
  });

  it('revoking on one instance stops the token on the other', async () => {
    const { org, account, token } = await accountWithToken();
    expect((await whoami(a, org, token)).status).toBe(200);
    const revoked = await b.http
      .post(`/authentication/customer/${org}/revoke`)
      .type('form')
      .send({ token, client_id: account.clientId, client_secret: account.secret });
    expect(revoked.status).toBe(200);
    expect(await eventually(async () => (await whoami(a, org, token)).status === 401)).toBe(true);
    expect((await whoami(a, org, token)).headers['www-authenticate']).toContain('revoked');
  });

  it('a role change on one instance applies on the other', async () => {
    const { org, account, token } = await accountWithToken();
    expect((await whoami(a, org, token)).body.role).toBe('Issuance');
    await b.http.patch(`/admin/v1/organizations/${org}/system-accounts/${account.clientId}`).auth(admin, { type: 'bearer' }).send({ role: 'Help Desk' });
    expect(await eventually(async () => (await whoami(a, org, token)).body.role === 'Help Desk')).toBe(true);
  });

  it('a device deleted through one instance is gone on the other, whose cache held it', async () => {
    const org = `scale${++counter}`;
    await createOrganization(a.http, admin, org, { automaticDeviceCreation: true });
    const account = await createSystemAccount(a.http, admin, org, { role: 'Administration' });
    const token = await tokenBySecret(a.http, org, account.clientId, account.secret);
    const created = await a.http
      .post('/aims/rs/scim/v2/Device')
      .auth(token, { type: 'bearer' })
      .set('Content-Type', 'application/scim+json')
      .send({ schemas: ['urn:vendor:scim:api:cms:1.0:Device'], externalIds: [{ ATR: '3B8F8001', CUID: '4711' }] });
    expect(created.status).toBe(201);
    const read = (t: TestApp) => t.http.get(`/aims/rs/scim/v2/Device/${created.body.id}`).auth(token, { type: 'bearer' });
    expect((await read(a)).status).toBe(200);
    expect((await read(a)).status).toBe(200);
    expect((await b.http.delete(`/aims/rs/scim/v2/Device/${created.body.id}`).auth(token, { type: 'bearer' })).status).toBe(204);
    expect(await eventually(async () => (await read(a)).status === 404)).toBe(true);
  });

  it('credentials superseded through one instance show on the other, whose cache held the device (the device itself did not move)', async () => {
    const org = `scale${++counter}`;
    const { tokens } = await createIssuingOrganization(a, admin, org, { issuer: 'Issuance', approver: 'Issuance' });
    const policy = async (credentialTypes: string[]) =>
      (
        await a.http
          .post(`/admin/v1/organizations/${org}/device-policies`)
          .auth(admin, { type: 'bearer' })
          .send({ name: credentialTypes.join(' '), credentialTypes, requiresApproval: false })
      ).body.id;
    const [badge, badgeAndOtp] = [await policy(['PKI_CERTIFICATE']), await policy(['PKI_CERTIFICATE', 'OATH_TOTP'])];
    const holder = await createCardholder(a, admin, org, 'sam');
    const card = await insertCard(a, org);
    const scim = (t: TestApp, path: string, body: unknown) =>
      t.http.post(path).auth(tokens.issuer, { type: 'bearer' }).set('Content-Type', 'application/scim+json').send(JSON.stringify(body));
    const execute = async (type: string, devicePolicy: string, credentialTypes: string[]) => {
      const request = await scim(a, '/aims/rs/scim/v2/ContentRequest', {
        schemas: ['urn:vendor:scim:api:cms:1.0:ContentRequest'],
        type,
        target: { device: { value: card.id }, devicePolicy: { value: devicePolicy } },
        ...(type === 'issuance' ? { wallet: { value: holder.wallet } } : {}),
      });
      expect(request.body.status).toBe('approved');
      const results = [];
      for (const credentialType of credentialTypes)
        results.push({
          operation: 'WRITE',
          status: 'SUCCESS',
          credentialType,
          ...(credentialType === 'PKI_CERTIFICATE' ? { csr: (await p256Csr()).toString('base64') } : {}),
        });
      const session = await scim(a, '/aims/rs/scim/v2/SyncSession', {
        schemas: ['urn:vendor:scim:api:cms:1.0:SyncSession'],
        contentRequest: { value: request.body.id },
        device: { ATR: card.ATR, CUID: card.CUID },
        results,
      });
      expect(session.status).toBe(201);
    };
    await execute('issuance', badge, ['PKI_CERTIFICATE']);
    const read = async (t: TestApp) => (await t.http.get(`/aims/rs/scim/v2/Device/${card.id}`).auth(tokens.issuer, { type: 'bearer' })).body;
    expect((await read(b)).credentials.map((c: { status: string }) => c.status)).toEqual(['ISSUED']);
    expect((await read(b)).policy.value).toBe(badge);

    a.clock.advance(60); // time passes before the update: the device's policy is that of its newest credentials
    await execute('update', badgeAndOtp, ['PKI_CERTIFICATE', 'OATH_TOTP']);
    expect(await eventually(async () => (await read(b)).policy.value === badgeAndOtp)).toBe(true);
    expect((await read(b)).credentials.map((c: { status: string }) => c.status).sort()).toEqual(['ISSUED', 'ISSUED', 'REVOKED']);
  });

  it('an organization setting changed through one instance applies on the other', async () => {
    const org = `scale${++counter}`;
    await createOrganization(a.http, admin, org, { automaticDeviceCreation: true });
    const account = await createSystemAccount(a.http, admin, org, { role: 'Administration' });
    const token = await tokenBySecret(a.http, org, account.clientId, account.secret);
    const create = (cuid: string) =>
      a.http
        .post('/aims/rs/scim/v2/Device')
        .auth(token, { type: 'bearer' })
        .set('Content-Type', 'application/scim+json')
        .send({ schemas: ['urn:vendor:scim:api:cms:1.0:Device'], externalIds: [{ ATR: '3B8F8001', CUID: cuid }] });
    expect((await create('1001')).status).toBe(201);
    const off = await b.http
      .put(`/admin/v1/organizations/${org}/settings`)
      .auth(admin, { type: 'bearer' })
      .send({ automaticDeviceCreation: false, applicationIdPolicy: 'any' });
    expect(off.status).toBe(200);
    let n = 1001;
    expect(await eventually(async () => (await create(String(++n))).status === 403)).toBe(true);
  });

  it('an organization renamed through one instance has its new name on the other, whose cache held it', async () => {
    const org = `scale${++counter}`;
    await createOrganization(a.http, admin, org);
    const read = async () => (await a.http.get(`/admin/v1/organizations/${org}`).auth(admin, { type: 'bearer' })).body.name;
    const before = await read();
    const renamed = await b.http.patch(`/admin/v1/organizations/${org}`).auth(admin, { type: 'bearer' }).send({ name: 'Renamed Elsewhere' });
    expect(renamed.status).toBe(200);
    expect(before).not.toBe('Renamed Elsewhere');
    expect(await eventually(async () => (await read()) === 'Renamed Elsewhere')).toBe(true);
  });

  it('a secret revoked through one instance stops working on the other, whose cache held the account', async () => {
    const { org, account } = await accountWithToken();
    const form = { grant_type: 'client_credentials', client_id: account.clientId, client_secret: account.secret };
    expect((await tokenRequest(a.http, org, form)).status).toBe(200);
    const secrets = await b.http.get(`/admin/v1/organizations/${org}/system-accounts/${account.clientId}/secrets`).auth(admin, { type: 'bearer' });
    const revoked = await b.http
      .delete(`/admin/v1/organizations/${org}/system-accounts/${account.clientId}/secrets/${secrets.body.Resources[0].id}`)
      .auth(admin, { type: 'bearer' });
    expect(revoked.status).toBe(204);
    expect(await eventually(async () => (await tokenRequest(a.http, org, form)).status === 401)).toBe(true);
  });

  it('a certificate deleted through one instance stops signing on the other', async () => {
    const { org, account } = await accountWithToken();
    const certificate = await makeCertificate();
    expect((await uploadCertificate(a.http, admin, org, account.clientId, certificate.pem)).status).toBe(201);
    const assertionForm = async () => ({
      grant_type: 'client_credentials',
      client_assertion: await signAssertion(certificate, account.clientId, account.tokenUrl, { now: a.clock.now() }),
    });
    expect((await tokenRequest(a.http, org, await assertionForm())).status).toBe(200);
    const deleted = await b.http
      .delete(`/admin/v1/organizations/${org}/system-accounts/${account.clientId}/certificates/${certificate.thumbprint}`)
      .auth(admin, { type: 'bearer' });
    expect(deleted.status).toBe(204);
    expect(await eventually(async () => (await tokenRequest(a.http, org, await assertionForm())).status === 401)).toBe(true);
  });

  it('failures counted on one instance block the pair on the other, which had seen it clean', async () => {
    const { org, account } = await accountWithToken();
    const form = (secret: string) => ({ grant_type: 'client_credentials', client_id: account.clientId, client_secret: secret });
    // A has read this pair's counters (none) and remembers the pair as clean.
    expect((await tokenRequest(a.http, org, form(account.secret))).status).toBe(200);
    expect((await tokenRequest(a.http, org, form(account.secret))).status).toBe(200);
    for (let i = 0; i < 10; i++) expect((await tokenRequest(b.http, org, form('wrong'))).status).toBe(401);
    expect(await eventually(async () => (await tokenRequest(a.http, org, form(account.secret))).status === 429)).toBe(true);
  });

  it('while the change feed is down, nothing is served from memory', async () => {
    const { org, token } = await accountWithToken();
    expect((await whoami(a, org, token)).status).toBe(200);
    // Cut instance A's listening connection, then change the row behind every cache's back.
    await a.db.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN platform_changes' AND datname = current_database()`);
    await a.db.query('UPDATE access_tokens SET revoked_at = now() WHERE org_id = $1', [org]);
    expect(await eventually(async () => (await whoami(a, org, token)).status === 401)).toBe(true);
    // And the feed comes back by itself.
    expect(await eventually(async () => a.app.get(ChangeFeed).live)).toBe(true);
  });
});
