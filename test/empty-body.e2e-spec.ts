import { TestApp, createCardholder, createIssuingOrganization, createTestApp, expectScimError, insertCard, platformAdminToken } from '@app/testing';

/**
 * Clients that send a JSON Content-Type on every call, DELETE and bodiless actions included (issue
 * 27; docs/decisions.md, "Bad input"): an empty body is no body, so a route that takes none, or
 * takes one optionally, acts; a route that needs one says what it needs. The sweep over every route
 * is in test/bad-input-sweep.
 */

const SCIM = 'application/scim+json';
const JSON_TYPE = 'application/json';
const ORG = 'emptybody';
const USERS = '/aims/rs/scim/v2/Users';
const DEVICES = '/aims/rs/scim/v2/Device';
const REQUESTS = '/aims/rs/scim/v2/ContentRequest';
const REQUEST_SCHEMA = 'urn:vendor:scim:api:cms:1.0:ContentRequest';

describe('an empty body with a JSON Content-Type', () => {
  let t: TestApp;
  let admin: string;
  let tokens: Record<string, string>;
  let policy: string;

  beforeAll(async () => {
    t = await createTestApp();
    admin = await platformAdminToken(t.http);
    ({ tokens } = await createIssuingOrganization(t, admin, ORG, { administration: 'Administration', issuer: 'Issuance', approver: 'Issuance' }));
    const created = await t.http
      .post(`/admin/v1/organizations/${ORG}/device-policies`)
      .auth(admin, { type: 'bearer' })
      .send({ name: 'Badge', credentialTypes: ['PKI_CERTIFICATE'] });
    expect(created.status).toBe(201);
    policy = created.body.id;
  });
  afterAll(() => t.close());

  /** A request with `contentType` set and an empty body, as such a client sends it. */
  const empty = (method: 'post' | 'delete', path: string, contentType: string, token = tokens.administration) =>
    t.http[method](path).auth(token, { type: 'bearer' }).set('Content-Type', contentType).send('');

  const deviceRow = async (id: string) => (await t.db.query('SELECT status, reason FROM devices WHERE id = $1', [id])).rows[0];

  it.each([SCIM, JSON_TYPE])('DELETE of a user (SCIM and administration API) with %s: 204, the user is gone', async (contentType) => {
    const scimUser = await createCardholder(t, admin, ORG, `scim.leaver.${contentType.length}`);
    expect((await empty('delete', `${USERS}/${scimUser.id}`, contentType)).status).toBe(204);
    expectScimError(await t.http.get(`${USERS}/${scimUser.id}`).auth(tokens.administration, { type: 'bearer' }), 404, undefined, 'does not exist');
    const adminUser = await createCardholder(t, admin, ORG, `admin.leaver.${contentType.length}`);
    expect((await empty('delete', `/admin/v1/organizations/${ORG}/users/${adminUser.id}`, contentType, admin)).status).toBe(204);
    expect((await t.db.query('SELECT 1 FROM users WHERE id = $1', [adminUser.id])).rowCount).toBe(0);
  });

  it.each([SCIM, JSON_TYPE])('device actions whose body is optional act with %s (resume, terminate, DELETE)', async (contentType) => {
    const held = (await insertCard(t, ORG, { status: 'ON_HOLD' })).id;
    const resumed = await empty('post', `${DEVICES}/${held}/resume`, contentType);
    expect({ status: resumed.status, device: resumed.body.status }).toEqual({ status: 200, device: { status: 'ISSUED', reason: 'NONE' } });
    const terminated = await empty('post', `${DEVICES}/${held}/terminate`, contentType);
    expect({ status: terminated.status, device: terminated.body.status }).toEqual({ status: 200, device: { status: 'TERMINATED', reason: 'UNASSIGNED' } });
    const spare = (await insertCard(t, ORG)).id;
    expect((await empty('delete', `${DEVICES}/${spare}`, contentType)).status).toBe(204);
    expect(await deviceRow(spare)).toBeUndefined();
  });

  it('a device action that needs a reason says so, not that the body is empty', async () => {
    const issued = (await insertCard(t, ORG, { status: 'ISSUED' })).id;
    expectScimError(
      await empty('post', `${DEVICES}/${issued}/suspend`, SCIM),
      400,
      'invalidValue',
      'Invalid reason: suspend needs a reason: one of LOST, STOLEN, DAMAGED, FORGOTTEN.',
    );
    expect(await deviceRow(issued)).toEqual({ status: 'ISSUED', reason: 'NONE' });
  });

  it('ContentRequest actions take an empty body (approve, cancel, DELETE)', async () => {
    const request = async (userName: string) => {
      const holder = await createCardholder(t, admin, ORG, userName);
      const card = await insertCard(t, ORG);
      const created = await t.http
        .post(REQUESTS)
        .auth(tokens.issuer, { type: 'bearer' })
        .set('Content-Type', SCIM)
        .send(
          JSON.stringify({
            schemas: [REQUEST_SCHEMA],
            type: 'issuance',
            target: { device: { value: card.id }, devicePolicy: { value: policy } },
            wallet: { value: holder.wallet },
          }),
        );
      expect(created.status).toBe(201);
      return created.body.id as string;
    };
    const approvedId = await request('approved.holder');
    const approved = await empty('post', `${REQUESTS}/${approvedId}/approve`, SCIM, tokens.approver);
    expect({ status: approved.status, request: approved.body.status }).toEqual({ status: 200, request: 'approved' });
    const cancelledId = await request('cancelled.holder');
    const cancelled = await empty('post', `${REQUESTS}/${cancelledId}/cancel`, JSON_TYPE, tokens.issuer);
    expect({ status: cancelled.status, request: cancelled.body.status }).toEqual({ status: 200, request: 'cancelled' });
    const deletedId = await request('deleted.holder');
    expect((await empty('delete', `${REQUESTS}/${deletedId}`, SCIM, tokens.issuer)).status).toBe(204);
    expect((await t.db.query('SELECT status FROM content_requests WHERE id = $1', [deletedId])).rows).toEqual([{ status: 'cancelled' }]);
  });

  it.each([SCIM, JSON_TYPE])('a route that needs a body says so with %s: 400 invalidSyntax saying what it needs', async (contentType) => {
    expectScimError(await empty('post', USERS, contentType), 400, 'invalidSyntax', 'The User must be a JSON object.');
    expectScimError(await empty('post', `/admin/v1/organizations/${ORG}/system-accounts`, contentType, admin), 400, 'invalidSyntax', 'must be a JSON object');
  });
});
