import { p256Csr } from '@app/pki/testing';
import { TestApp, createCardholder, createIssuingOrganization, createTestApp, insertCard, platformAdminToken, tokenRequest } from '@app/testing';

/**
 * A device shows what it carries (CREDENTIAL-MANAGEMENT.md "Resources", Device row: `policy`
 * (DevicePolicy ref) and `credentials` [ref]; issue 27): after a sync session, every answer that shows
 * the device (GET, .search, the customer form, Self, the actions) names the device policy it was issued
 * under and its credentials with their status, kept current as they follow the device, are superseded
 * or leave with a recycle, also where the device was read from the cache before.
 */

const SCIM = 'application/scim+json';
const BASE = 'https://api.example.test';
const REQUEST = 'urn:vendor:scim:api:cms:1.0:ContentRequest';
const SESSION = 'urn:vendor:scim:api:cms:1.0:SyncSession';
const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';
const PASSWORD = 'correct horse battery staple';
const ORG = 'contents';

interface CredentialRef {
  value: string;
  $ref: string;
  type: string;
  status: string;
}

describe('Device: its policy and credentials', () => {
  let t: TestApp;
  let admin: string;
  let tokens: Record<string, string>;
  let pkiAndTotp: string;
  let pkiOnly: string;

  beforeAll(async () => {
    t = await createTestApp();
    admin = await platformAdminToken(t.http);
    ({ tokens } = await createIssuingOrganization(t, admin, ORG, { issuer: 'Issuance', approver: 'Issuance', helpdesk: 'Help Desk' }));
    const policy = (body: unknown) =>
      t.http
        .post(`/admin/v1/organizations/${ORG}/device-policies`)
        .auth(admin, { type: 'bearer' })
        .send(body as object);
    pkiAndTotp = (await policy({ name: 'Badge and OTP', credentialTypes: ['PKI_CERTIFICATE', 'OATH_TOTP'] })).body.id;
    pkiOnly = (await policy({ name: 'Badge', credentialTypes: ['PKI_CERTIFICATE'] })).body.id;
  });
  afterAll(() => t.close());

  const get = (path: string, token = tokens.helpdesk) => t.http.get(path).auth(token, { type: 'bearer' }).set('Accept', SCIM);
  const post = (path: string, body: unknown, token = tokens.issuer) =>
    t.http.post(path).auth(token, { type: 'bearer' }).set('Content-Type', SCIM).send(JSON.stringify(body));
  const device = (id: string, query = '') => get(`/aims/rs/scim/v2/Device/${id}${query}`);

  const policyRef = (id: string) => ({ value: id, $ref: `${BASE}/aims/rs/scim/v2/DevicePolicy/${id}` });
  const credentialRef = (id: string, type: string, status: string): CredentialRef => ({
    value: id,
    $ref: `${BASE}/aims/rs/scim/v2/Credential/${id}`,
    type,
    status,
  });
  const byType = (refs: CredentialRef[]) => [...refs].sort((a, b) => a.type.localeCompare(b.type) || a.status.localeCompare(b.status));

  /** A request of `type` on the card, approved by a second operator when it needs approval. */
  async function approved(type: string, card: string, options: { wallet?: string; policy?: string; token?: string } = {}): Promise<string> {
    const created = await post(
      '/aims/rs/scim/v2/ContentRequest',
      {
        schemas: [REQUEST],
        type,
        target: { device: { value: card }, ...(options.policy ? { devicePolicy: { value: options.policy } } : {}) },
        ...(options.wallet ? { wallet: { value: options.wallet } } : {}),
      },
      options.token,
    );
    expect(created.status).toBe(201);
    if (created.body.status === 'approved') return created.body.id;
    const done = await post(`/aims/rs/scim/v2/ContentRequest/${created.body.id}/approve`, {}, tokens.approver);
    expect(done.body.status).toBe('approved');
    return created.body.id;
  }

  async function sync(request: string, card: { ATR: string; CUID: string }, types: string[]): Promise<CredentialRef[]> {
    const results = [];
    for (const type of types)
      results.push({
        operation: 'WRITE',
        status: 'SUCCESS',
        credentialType: type,
        ...(type === 'PKI_CERTIFICATE' ? { csr: (await p256Csr()).toString('base64') } : {}),
      });
    if (types.length === 0) results.push({ operation: 'ERASE', status: 'SUCCESS' });
    const done = await post('/aims/rs/scim/v2/SyncSession', {
      schemas: [SESSION],
      contentRequest: { value: request },
      device: { ATR: card.ATR, CUID: card.CUID },
      results,
    });
    expect(done.status).toBe(201);
    return done.body.credentials.map((c: { value: string; type: string; status: string }) => credentialRef(c.value, c.type, c.status));
  }

  /** A card issued to a new cardholder under the PKI + TOTP policy: the card, the owner's wallet and the credentials. */
  async function issuedCard(userName: string) {
    const holder = await createCardholder(t, admin, ORG, userName, { password: PASSWORD });
    const card = await insertCard(t, ORG);
    const credentials = await sync(await approved('issuance', card.id, { wallet: holder.wallet, policy: pkiAndTotp }), card, ['PKI_CERTIFICATE', 'OATH_TOTP']);
    return { card, holder, credentials };
  }

  it('after a sync session, GET, .search, the customer form and Self show the policy and the credentials as references', async () => {
    const { card, credentials } = await issuedCard('jane');
    expect(credentials.map((c) => c.status)).toEqual(['ISSUED', 'ISSUED']);

    const read = await device(card.id);
    expect(read.status).toBe(200);
    expect(read.body.policy).toEqual(policyRef(pkiAndTotp));
    expect(byType(read.body.credentials)).toEqual(byType(credentials));

    const found = await post('/aims/rs/scim/v2/Device/.search', { schemas: [SEARCH], filter: `id eq "${card.id}"` }, tokens.helpdesk);
    expect(found.status).toBe(200);
    expect(found.body.Resources).toHaveLength(1);
    expect(found.body.Resources[0].policy).toEqual(policyRef(pkiAndTotp));
    expect(byType(found.body.Resources[0].credentials)).toEqual(byType(credentials));

    const customer = await get(`/credential-management/customer/${ORG}/device/${card.id}`);
    expect(customer.status).toBe(200);
    expect(customer.body.policy).toEqual(policyRef(pkiAndTotp));
    expect(byType(customer.body.credentials)).toEqual(byType(credentials));

    const self = (await tokenRequest(t.http, ORG, { grant_type: 'password', username: 'jane', password: PASSWORD })).body.access_token;
    const mine = await get('/aims/rs/scim/v2/Self/Device', self);
    expect(mine.status).toBe(200);
    expect(mine.body.Resources).toHaveLength(1);
    expect(mine.body.Resources[0].policy).toEqual(policyRef(pkiAndTotp));
    expect(byType(mine.body.Resources[0].credentials)).toEqual(byType(credentials));

    // A device in stock carries nothing: neither attribute appears.
    const stock = await insertCard(t, ORG);
    const blank = await device(stock.id);
    expect(blank.status).toBe(200);
    expect(blank.body).not.toHaveProperty('policy');
    expect(blank.body).not.toHaveProperty('credentials');
  });

  it('the credentials follow the device: suspend shows them ON_HOLD, resume ISSUED, revoke REVOKED (answers and cached reads alike)', async () => {
    const { card, credentials } = await issuedCard('kim');
    const statuses = (body: { credentials: CredentialRef[] }) => body.credentials.map((c) => c.status);
    expect(statuses((await device(card.id)).body)).toEqual(['ISSUED', 'ISSUED']);

    const suspended = await post(`/aims/rs/scim/v2/Device/${card.id}/suspend`, { reason: 'LOST' }, tokens.helpdesk);
    expect(suspended.status).toBe(200);
    expect(byType(suspended.body.credentials)).toEqual(byType(credentials.map((c) => ({ ...c, status: 'ON_HOLD' }))));
    expect(statuses((await device(card.id)).body)).toEqual(['ON_HOLD', 'ON_HOLD']);

    const resumed = await post(`/aims/rs/scim/v2/Device/${card.id}/resume`, {}, tokens.helpdesk);
    expect(statuses(resumed.body)).toEqual(['ISSUED', 'ISSUED']);
    expect(statuses((await device(card.id)).body)).toEqual(['ISSUED', 'ISSUED']);

    const self = (await tokenRequest(t.http, ORG, { grant_type: 'password', username: 'kim', password: PASSWORD })).body.access_token;
    const lost = await post(`/aims/rs/scim/v2/Self/Device/${card.id}/suspend`, { reason: 'LOST' }, self);
    expect(lost.status).toBe(200);
    expect(statuses(lost.body)).toEqual(['ON_HOLD', 'ON_HOLD']);

    const revoked = await post(`/aims/rs/scim/v2/Device/${card.id}/revoke`, { reason: 'STOLEN' }, tokens.helpdesk);
    expect(revoked.status).toBe(200);
    expect(statuses(revoked.body)).toEqual(['REVOKED', 'REVOKED']);
    const read = await device(card.id);
    expect(statuses(read.body)).toEqual(['REVOKED', 'REVOKED']);
    expect(read.body.policy).toEqual(policyRef(pkiAndTotp));
  });

  it('an update shows the superseded credentials REVOKED, the new ones and the new policy; a recycle leaves the card blank', async () => {
    const holder = await createCardholder(t, admin, ORG, 'lou', { password: PASSWORD });
    const card = await insertCard(t, ORG);
    const [first] = await sync(await approved('issuance', card.id, { wallet: holder.wallet, policy: pkiOnly }), card, ['PKI_CERTIFICATE']);
    // Read once, so that the device is cached: the update does not move the device, yet must show.
    expect((await device(card.id)).body).toMatchObject({ policy: policyRef(pkiOnly), credentials: [first] });

    // Time passes between an issuance and its update (the test clock stands still otherwise): the
    // device's policy is that of its newest credentials.
    t.clock.advance(60);
    const renewed = await sync(await approved('update', card.id, { policy: pkiAndTotp }), card, ['PKI_CERTIFICATE', 'OATH_TOTP']);
    const read = await device(card.id);
    expect(read.body.status).toEqual({ status: 'ISSUED', reason: 'NONE' });
    expect(read.body.policy).toEqual(policyRef(pkiAndTotp));
    expect(byType(read.body.credentials)).toEqual(byType([{ ...first, status: 'REVOKED' }, ...renewed]));

    expect((await post(`/aims/rs/scim/v2/Device/${card.id}/terminate`, {}, tokens.helpdesk)).status).toBe(200);
    await sync(await approved('recycle', card.id, { token: tokens.helpdesk }), card, []);
    const blank = await device(card.id);
    expect(blank.body.status).toEqual({ status: 'AVAILABLE', reason: 'RECYCLE' });
    expect(blank.body).not.toHaveProperty('policy');
    expect(blank.body).not.toHaveProperty('credentials');
  });

  it('a device policy that a device shows is not deleted (409 naming the count) until no device shows it', async () => {
    const removePolicy = (id: string) => t.http.delete(`/admin/v1/organizations/${ORG}/device-policies/${id}`).auth(admin, { type: 'bearer' });
    const temporary = (
      await t.http
        .post(`/admin/v1/organizations/${ORG}/device-policies`)
        .auth(admin, { type: 'bearer' })
        .send({ name: 'Temporary badge', credentialTypes: ['PKI_CERTIFICATE'] })
    ).body.id;
    const holder = await createCardholder(t, admin, ORG, 'ned');
    const card = await insertCard(t, ORG);
    await sync(await approved('issuance', card.id, { wallet: holder.wallet, policy: temporary }), card, ['PKI_CERTIFICATE']);
    expect((await device(card.id)).body.policy).toEqual(policyRef(temporary));

    const refused = await removePolicy(temporary);
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toBe(
      'Device policy "Temporary badge" is the policy of 1 device issued under it; recycle it or update it to another policy before deleting the policy.',
    );
    // Revoked, the card still shows what it was issued under.
    expect((await post(`/aims/rs/scim/v2/Device/${card.id}/revoke`, {}, tokens.helpdesk)).status).toBe(200);
    expect((await removePolicy(temporary)).status).toBe(409);

    expect((await post(`/aims/rs/scim/v2/Device/${card.id}/terminate`, {}, tokens.helpdesk)).status).toBe(200);
    await sync(await approved('recycle', card.id, { token: tokens.helpdesk }), card, []);
    expect((await removePolicy(temporary)).status).toBe(204);
  });

  it('attributes and excludedAttributes select them, on GET and .search; /Schemas declares them', async () => {
    const { card, credentials } = await issuedCard('max');

    const without = await device(card.id, '?excludedAttributes=credentials');
    expect(without.status).toBe(200);
    expect(without.body).not.toHaveProperty('credentials');
    expect(without.body.policy).toEqual(policyRef(pkiAndTotp));
    expect(without.body.externalIds).toEqual([{ ATR: card.ATR, CUID: card.CUID }]);

    const only = await device(card.id, '?attributes=credentials');
    expect(only.status).toBe(200);
    expect(Object.keys(only.body).sort()).toEqual(['credentials', 'id', 'schemas']);
    expect(byType(only.body.credentials)).toEqual(byType(credentials));

    const statuses = await device(card.id, '?attributes=credentials.status,policy');
    expect(Object.keys(statuses.body).sort()).toEqual(['credentials', 'id', 'policy', 'schemas']);
    expect(statuses.body.credentials).toEqual([{ status: 'ISSUED' }, { status: 'ISSUED' }]);

    const excludedPolicy = await device(card.id, '?excludedAttributes=policy,credentials.$ref');
    expect(excludedPolicy.body).not.toHaveProperty('policy');
    expect(excludedPolicy.body.credentials.every((c: object) => !('$ref' in c))).toBe(true);

    const found = await post(
      '/aims/rs/scim/v2/Device/.search',
      { schemas: [SEARCH], filter: `id eq "${card.id}"`, attributes: ['credentials.type', 'policy.value'] },
      tokens.helpdesk,
    );
    expect(found.body.Resources).toEqual([
      { schemas: ['urn:vendor:scim:api:cms:1.0:Device'], id: card.id, policy: { value: pkiAndTotp }, credentials: expect.any(Array) },
    ]);
    expect(found.body.Resources[0].credentials.map((c: { type: string }) => c.type).sort()).toEqual(['OATH_TOTP', 'PKI_CERTIFICATE']);

    const schema = await get('/aims/rs/scim/v2/Schemas/urn:vendor:scim:api:cms:1.0:Device');
    expect(schema.status).toBe(200);
    const attribute = (name: string) => schema.body.attributes.find((a: { name: string }) => a.name === name);
    expect(attribute('policy')).toMatchObject({ type: 'complex', multiValued: false, mutability: 'readOnly' });
    expect(attribute('credentials')).toMatchObject({ type: 'complex', multiValued: true, mutability: 'readOnly' });
    expect(attribute('credentials').subAttributes.map((s: { name: string }) => s.name)).toEqual(['value', '$ref', 'type', 'status']);

    // The OpenAPI document describes them on the Device answers (the resource's own GET and Self's list).
    const openapi = (await t.http.get('/api-docs-json')).body;
    const answer = (path: string) => openapi.paths[path].get.responses['200'].content['application/scim+json'].schema;
    const described = answer('/aims/rs/scim/v2/Device/{id}').properties;
    expect(described.policy).toMatchObject({ type: 'object', properties: { value: { type: 'string' } } });
    expect(described.credentials).toMatchObject({
      type: 'array',
      items: { type: 'object', properties: { type: { type: 'string' }, status: { type: 'string' } } },
    });
    expect(answer('/aims/rs/scim/v2/Self/Device').properties.Resources.items.properties.credentials).toMatchObject({ type: 'array' });
  });
});
