import { randomUUID } from 'node:crypto';
import {
  TestApp,
  createOrganization,
  createSystemAccount,
  createTestApp,
  expectScimError,
  makeCertificate,
  platformAdminToken,
  signAssertion,
  tokenBySecret,
  tokenRequest,
  operatorDependentScopeFile,
} from '@app/testing';

/**
 * Users over SCIM (CREDENTIAL-MANAGEMENT.md "Users"; DECISIONS 1, 2, 5.2, 6, 7, 9): the three path
 * forms, create / read / list / search / PUT / PATCH / DELETE as an identity provider's
 * provisioning agent drives them, the wallet of every user, the permissions of each route, tenancy,
 * bad input and the discovery resources.
 */

const SCIM = 'application/scim+json';
const VENDOR = 'application/vnd.vendor.ma.credential-management-2.2+json';
const CORE = 'urn:ietf:params:scim:schemas:core:2.0:User';
const CMS = 'urn:vendor:scim:api:cms:1.0:User';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';
const BASE = 'https://api.example.test';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const USERS = '/aims/rs/scim/v2/Users';

/** What Microsoft Entra ID's provisioning service sends to create a user (its documented request, trimmed to our attributes). */
const entraUser = (userName: string, extra: Record<string, unknown> = {}) => ({
  schemas: [CORE, ENTERPRISE],
  externalId: `ext-${userName}`,
  userName,
  active: true,
  displayName: `Display ${userName}`,
  title: 'Engineer',
  emails: [{ primary: true, type: 'work', value: `${userName}@example.com` }],
  name: { formatted: `Given ${userName}`, familyName: 'Family', givenName: 'Given' },
  [ENTERPRISE]: { department: 'Security', employeeNumber: '4711', manager: { value: 'boss-id', $ref: '../Users/boss-id' } },
  ...extra,
});

describe('Users over SCIM', () => {
  let t: TestApp;
  let admin: string;
  /** System account tokens of org `cm` by default role, and one of org `cm2`. */
  const tokens: Record<string, string> = {};

  beforeAll(async () => {
    t = await createTestApp();
    admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, 'cm');
    await createOrganization(t.http, admin, 'cm2');
    for (const role of ['Administration', 'Issuance', 'Help Desk', 'Cardholder']) {
      const account = await createSystemAccount(t.http, admin, 'cm', { role });
      tokens[role] = await tokenBySecret(t.http, 'cm', account.clientId, account.secret);
    }
    const other = await createSystemAccount(t.http, admin, 'cm2', { role: 'Administration' });
    tokens.other = await tokenBySecret(t.http, 'cm2', other.clientId, other.secret);
  });
  afterAll(() => t.close());

  const send = (method: 'post' | 'put' | 'patch', path: string, body: unknown, token = tokens.Administration) =>
    t.http[method](path).auth(token, { type: 'bearer' }).set('Content-Type', SCIM).send(JSON.stringify(body));
  const get = (path: string, token = tokens.Administration) => t.http.get(path).auth(token, { type: 'bearer' });
  const createUser = async (userName: string, extra: Record<string, unknown> = {}) => {
    const response = await send('post', USERS, entraUser(userName, extra));
    expect(response.status).toBe(201);
    return response.body as { id: string; wallet: { value: string } };
  };

  describe('create', () => {
    it("creates a cardholder from an identity provider's request: 201, Location, both schemas, the extension, a wallet, never the password", async () => {
      const response = await send('post', USERS, entraUser('ada', { password: 'correct horse battery staple' }));
      expect(response.status).toBe(201);
      expect(response.headers['content-type']).toMatch(/^application\/scim\+json/);
      const id = response.body.id;
      expect(id).toMatch(UUID);
      expect(response.headers.location).toBe(`${BASE}${USERS}/${id}`);
      expect(response.headers.etag).toBe('W/"1"');
      expect(response.body).toEqual({
        schemas: [CORE, CMS, ENTERPRISE],
        id,
        externalId: 'ext-ada',
        userName: 'ada',
        name: { formatted: 'Given ada', familyName: 'Family', givenName: 'Given' },
        displayName: 'Display ada',
        title: 'Engineer',
        userType: 'cardholder',
        active: true,
        emails: [{ value: 'ada@example.com', type: 'work', primary: true }],
        groups: [],
        roles: [{ value: 'Cardholder', primary: true }],
        wallet: { value: expect.stringMatching(UUID), display: 'ada', $ref: expect.stringMatching(`^${BASE}/aims/rs/scim/v2/Wallet/`), type: 'Wallet' },
        [ENTERPRISE]: { department: 'Security', employeeNumber: '4711', manager: { value: 'boss-id' } },
        meta: { resourceType: 'User', created: expect.any(String), lastModified: expect.any(String), location: `${BASE}${USERS}/${id}`, version: '1' },
      });
      expect(JSON.stringify(response.body)).not.toContain('horse');
      const wallets = await t.db.query('SELECT id, status FROM wallets WHERE owner_user_id = $1', [id]);
      expect(wallets.rows).toEqual([{ id: response.body.wallet.value, status: 'ACTIVE' }]);
      const audit = await t.db.query("SELECT code, details FROM audit_events WHERE target = $1 AND action = 'user.create'", [id]);
      expect(audit.rows).toHaveLength(1);
      expect(audit.rows[0].code).toBe(40001);
      expect(JSON.stringify(audit.rows[0].details)).not.toMatch(/horse|ada@example/);
    });

    it('creates an operator with its role and groups through the UserPermission extension; the groups get ids', async () => {
      const response = await send('post', USERS, {
        schemas: [CMS, 'urn:vendor:scim:api:cms:1.0:UserPermission'],
        userName: 'oscar.op',
        userType: 'operator',
        'urn:vendor:scim:api:cms:1.0:UserPermission': { roles: ['Help Desk'], groups: ['Berlin'] },
      });
      expect(response.status).toBe(201);
      expect(response.body.roles).toEqual([{ value: 'Help Desk', primary: true }]);
      expect(response.body.groups).toEqual([
        { value: expect.stringMatching(UUID), display: 'Berlin', $ref: expect.stringMatching(`^${BASE}/aims/rs/scim/v2/Groups/`), type: 'direct' },
      ]);
      expect(response.body['urn:vendor:scim:api:cms:1.0:UserPermission']).toEqual({ roles: ['Help Desk'], groups: ['Berlin'] });
    });

    it('an operator without a role, a taken userName, bad bodies: 400 or 409 naming what is wrong', async () => {
      expectScimError(
        await send('post', USERS, { schemas: [CORE], userName: 'no.role', userType: 'operator' }),
        400,
        'invalidValue',
        /an operator needs a role/,
      );
      await createUser('taken');
      expectScimError(await send('post', USERS, entraUser('TAKEN')), 409, 'uniqueness', 'A user with userName "TAKEN" already exists in organization "cm".');
      expectScimError(await send('post', USERS, { userName: 'x1' }), 400, 'invalidValue', /schemas: is required/);
      expectScimError(
        await send('post', USERS, { schemas: [CORE], userName: 'x2', shoeSize: 44 }),
        400,
        'invalidValue',
        /"shoeSize" is not part of this resource/,
      );
      expectScimError(await send('post', USERS, { schemas: [CORE], userName: 'x3', active: 'yes' }), 400, 'invalidValue', /active: must be true or false/);
      expectScimError(
        await send('post', USERS, { schemas: [CORE], userName: 'x4', emails: [{ value: 'nope' }] }),
        400,
        'invalidValue',
        /emails.0.value: must be an e-mail address/,
      );
      expectScimError(await send('post', USERS, { schemas: [CORE], userName: 'bad name!' }), 400, 'invalidValue', /userName: must be 1-128 characters/);
      expectScimError(await send('post', USERS, [1, 2]), 400, 'invalidSyntax', /must be a JSON object/);
      const stored = await t.db.query("SELECT count(*)::int AS n FROM users WHERE org_id = 'cm' AND user_name LIKE 'x%'");
      expect(stored.rows[0].n).toBe(0);
    });

    it('concurrent creates of one userName: exactly one 201, the others 409, one user and one wallet', async () => {
      const answers = await Promise.all(Array.from({ length: 8 }, () => send('post', USERS, entraUser('racer'))));
      expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
      const rows = await t.db.query(
        "SELECT count(*)::int AS n FROM users u JOIN wallets w ON w.owner_user_id = u.id WHERE u.org_id = 'cm' AND u.user_name = 'racer'",
      );
      expect(rows.rows[0].n).toBe(1);
    });

    it('a user created through the admin API is the same user under /Users, with its wallet', async () => {
      const created = await t.http
        .post('/admin/v1/organizations/cm/users')
        .auth(admin, { type: 'bearer' })
        .send({ userName: 'via.admin', role: 'Cardholder', groups: ['Paris'] });
      expect(created.status).toBe(201);
      const scim = await get(`${USERS}/${created.body.id}`);
      expect(scim.status).toBe(200);
      expect(scim.body).toMatchObject({
        userName: 'via.admin',
        wallet: { value: expect.stringMatching(UUID) },
        groups: [{ display: 'Paris', value: expect.stringMatching(UUID) }],
      });
    });
  });

  it('a read user is never served stale: changes through the admin API, a certificate and a group rename show at once', async () => {
    const created = await t.http
      .post('/admin/v1/organizations/cm/users')
      .auth(admin, { type: 'bearer' })
      .send({ userName: 'fresh', role: 'Help Desk', userType: 'operator', groups: ['Lyon'] });
    const path = `${USERS}/${created.body.id}`;
    // Read twice: the first read may not be kept (a change elsewhere while it ran), the second is;
    // a write behind the service's back (nothing published) then proves the answer comes from the cache.
    expect((await get(path)).body.displayName).toBeUndefined();
    expect((await get(path)).body.displayName).toBeUndefined();
    await t.db.query("UPDATE users SET display_name = 'unseen' WHERE id = $1", [created.body.id]);
    expect((await get(path)).body.displayName).toBeUndefined();
    // The id in capitals: the change is published with the id as sent, and must still evict the cached user.
    const patched = await t.http
      .patch(`/admin/v1/organizations/cm/users/${created.body.id.toUpperCase()}`)
      .auth(admin, { type: 'bearer' })
      .send({ displayName: 'Fresh Name' });
    expect(patched.status).toBe(200);
    expect((await get(path)).body).toMatchObject({ displayName: 'Fresh Name', meta: { version: '2' } });
    const certificate = await makeCertificate();
    const enrolled = await t.http
      .post(`/admin/v1/organizations/cm/users/${created.body.id}/certificates`)
      .auth(admin, { type: 'bearer' })
      .set('Content-Type', 'application/x-pem-file')
      .send(certificate.pem);
    expect(enrolled.status).toBe(201);
    const der = certificate.pem.replace(/-----(BEGIN|END) CERTIFICATE-----|\s+/g, '');
    expect((await get(path)).body.x509Certificates).toEqual([{ value: der }]);
    const group = (await get(path)).body.groups[0];
    expect(
      (await t.http.patch(`/admin/v1/organizations/cm/groups/${group.value}`).auth(admin, { type: 'bearer' }).send({ displayName: 'Lyon 2' })).status,
    ).toBe(200);
    expect((await get(path)).body.groups).toEqual([{ ...group, display: 'Lyon 2' }]);
  });

  describe('path forms and media types (DECISIONS 1, 6)', () => {
    it("answers the interface's sample call: GET .../credential-management/customer/{org}/users with the vendor Content-Type", async () => {
      await createUser('sample.user');
      const response = await t.http.get('/credential-management/customer/cm/users').auth(tokens.Administration, { type: 'bearer' }).set('Content-Type', VENDOR);
      expect(response.status).toBe(200);
      // Without Accept the answer follows the request's Content-Type (CREDENTIAL-MANAGEMENT.md, "Open points").
      expect(response.headers['content-type']).toMatch(/^application\/vnd\.vendor\.ma\.credential-management-2\.2\+json/);
      expect(response.body.schemas).toEqual(['urn:ietf:params:scim:api:messages:2.0:ListResponse']);
      expect(response.body.Resources.map((u: { userName: string }) => u.userName)).toContain('sample.user');
      // The same call from curl, which adds `Accept: */*`: a wildcard is no preference, the answer still follows Content-Type.
      const fromCurl = await t.http
        .get('/credential-management/customer/cm/users')
        .auth(tokens.Administration, { type: 'bearer' })
        .set('Content-Type', VENDOR)
        .set('Accept', '*/*');
      expect({ status: fromCurl.status, type: fromCurl.headers['content-type'] }).toEqual({ status: 200, type: `${VENDOR}; charset=utf-8` });
      const asked = await t.http
        .get('/credential-management/customer/cm/USERS?filter=userName eq "sample.user"')
        .auth(tokens.Administration, { type: 'bearer' })
        .set('Accept', VENDOR);
      expect(asked.status).toBe(200);
      expect(asked.headers['content-type']).toMatch(/^application\/vnd\.vendor\.ma\.credential-management-2\.2\+json/);
      expect(asked.body.totalResults).toBe(1);
    });

    it('the scm alias and the customer form reach the same user; Location stays canonical', async () => {
      const user = await createUser('three.forms');
      for (const path of [
        `/aims/rs/scm/v2/Users/${user.id}`,
        `/credential-management/customer/cm/users/${user.id}`,
        `/credential-management/customer/cm/Users/${user.id}`,
      ]) {
        const response = await get(path);
        expect(response.status).toBe(200);
        expect(response.body.meta.location).toBe(`${BASE}${USERS}/${user.id}`);
      }
      const created = await t.http
        .post('/credential-management/customer/cm/users')
        .auth(tokens.Administration, { type: 'bearer' })
        .set('Content-Type', 'application/vnd.vendor.ma.credential-management-2.0+json')
        .send(JSON.stringify(entraUser('customer.form')));
      expect(created.status).toBe(201);
      expect(created.headers.location).toBe(`${BASE}${USERS}/${created.body.id}`);
    });

    it('the Device resource answers on the customer form too (resource name in any case)', async () => {
      await t.http
        .patch('/admin/v1/organizations/cm')
        .auth(admin, { type: 'bearer' })
        .send({ settings: { automaticDeviceCreation: true } });
      const created = await send('post', '/credential-management/customer/cm/device', {
        schemas: ['urn:vendor:scim:api:cms:1.0:Device'],
        externalIds: [{ ATR: '3B00', CUID: '77001' }],
      });
      expect(created.status).toBe(201);
      expect(created.headers.location).toBe(`${BASE}/aims/rs/scim/v2/Device/${created.body.id}`);
      const read = await get(`/credential-management/customer/cm/DEVICE/${created.body.id}`);
      expect(read.status).toBe(200);
      expect(read.body.externalIds).toEqual([{ ATR: '3B00', CUID: '77001' }]);
      expectScimError(
        await get(`/credential-management/customer/cm2/Device/${created.body.id}`),
        403,
        undefined,
        /Organization "cm2" in the path is not your organization/,
      );
    });

    it('another vendor major is 415 (Content-Type) or 406 (Accept); another organization in the path is 403', async () => {
      const wrongType = await t.http
        .post('/credential-management/customer/cm/users')
        .auth(tokens.Administration, { type: 'bearer' })
        .set('Content-Type', 'application/vnd.vendor.ma.credential-management-3.0+json')
        .send(JSON.stringify(entraUser('v3')));
      expectScimError(wrongType, 415, undefined, /is not accepted here/);
      const wrongAccept = await t.http
        .get('/credential-management/customer/cm/users')
        .auth(tokens.Administration, { type: 'bearer' })
        .set('Accept', 'application/vnd.vendor.ma.credential-management-3.1+json');
      expectScimError(wrongAccept, 406, undefined, /allows no answer this API gives/);
      expectScimError(
        await get('/credential-management/customer/cm2/users'),
        403,
        undefined,
        'Organization "cm2" in the path is not your organization; your token is for organization "cm".',
      );
    });
  });

  describe('list, filter and .search (DECISIONS 9)', () => {
    beforeAll(async () => {
      for (const name of ['list.alpha', 'list.beta', 'list.gamma']) await createUser(name);
    });

    it('filters as an identity provider does (userName eq, any case), with paging, sorting and attribute selection', async () => {
      const found = await get(`${USERS}?filter=${encodeURIComponent('userName eq "LIST.BETA"')}`);
      expect(found.status).toBe(200);
      expect(found.body).toMatchObject({ totalResults: 1, startIndex: 1, itemsPerPage: 1 });
      expect(found.body.Resources[0].userName).toBe('list.beta');
      const none = await get(`${USERS}?filter=${encodeURIComponent('userName eq "nobody"')}`);
      expect(none.body).toEqual({
        schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
        totalResults: 0,
        itemsPerPage: 0,
        startIndex: 1,
        Resources: [],
      });
      const page = await get(
        `${USERS}?filter=${encodeURIComponent('userName sw "list."')}&sortBy=userName&sortOrder=descending&startIndex=2&count=1&attributes=userName`,
      );
      expect(page.body.totalResults).toBe(3);
      expect(page.body.Resources).toEqual([{ schemas: [CORE, CMS, ENTERPRISE], id: expect.stringMatching(UUID), userName: 'list.beta' }]);
      const excluded = await get(`${USERS}?filter=${encodeURIComponent('emails[type eq "work" and value co "gamma"]')}&excludedAttributes=emails,name`);
      expect(excluded.body.totalResults).toBe(1);
      expect(excluded.body.Resources[0].userName).toBe('list.gamma');
      expect(excluded.body.Resources[0].emails).toBeUndefined();
      // emails.value outside brackets goes through the trigram-indexed prefilter first, then the exact test.
      const byEmail = await get(
        `${USERS}?filter=${encodeURIComponent('emails.value co "LIST.GAMMA@" or emails.value eq "list.alpha@example.com"')}&sortBy=userName`,
      );
      expect(byEmail.body.Resources.map((u: { userName: string }) => u.userName)).toEqual(['list.alpha', 'list.gamma']);
      expect((await get(`${USERS}?filter=${encodeURIComponent('emails.value eq "list.alpha@example"')}`)).body.totalResults).toBe(0);
      const extension = await get(`${USERS}?filter=${encodeURIComponent('urn:ietf:params:scim:schemas:core:2.0:User:externalId eq "ext-list.alpha"')}`);
      expect(extension.body.Resources.map((u: { userName: string }) => u.userName)).toEqual(['list.alpha']);
    });

    it('userName sw as the desk types: any case, "_" literal, sorted in pages with the exact total, the same after the plan turns generic', async () => {
      for (const name of ['typed.a_1', 'typed.ab1', 'TYPED.A2', 'typed.a-3', 'typed.b']) await createUser(name);
      const search = async (filter: string, fields: Record<string, unknown> = {}) => {
        const response = await send('post', `${USERS}/.search`, { schemas: [SEARCH], filter, sortBy: 'userName', attributes: ['userName'], ...fields });
        expect(response.status).toBe(200);
        return { total: response.body.totalResults, names: response.body.Resources.map((u: { userName: string }) => u.userName) };
      };
      // More than five times each, on every pooled connection: PostgreSQL then plans the prepared statement generically.
      for (let i = 0; i < 12; i += 1) {
        expect(await search('userName sw "TYPED.A"', { count: 2 })).toEqual({ total: 4, names: ['typed.a-3', 'TYPED.A2'] });
      }
      expect(await search('userName sw "typed.a"', { startIndex: 3, count: 2 })).toEqual({ total: 4, names: ['typed.a_1', 'typed.ab1'] });
      expect(await search('userName sw "typed.a"', { startIndex: 5, count: 2 })).toEqual({ total: 4, names: [] });
      expect(await search('userName sw "typed.a"', { count: 3, sortOrder: 'descending' })).toEqual({ total: 4, names: ['typed.ab1', 'typed.a_1', 'TYPED.A2'] });
      expect(await search('userName sw "typed.a"', { count: 0 })).toEqual({ total: 4, names: [] });
      expect(await search('userName sw "typed.a_"')).toEqual({ total: 1, names: ['typed.a_1'] });
      expect(await search('userName sw "typed.a%"')).toEqual({ total: 0, names: [] });
      expect(await search('userName sw "typed." and not (userName sw "typed.a")')).toEqual({ total: 1, names: ['typed.b'] });
      expect(await search('userName sw "typed.b" or userName sw "typed.ab"')).toEqual({ total: 2, names: ['typed.ab1', 'typed.b'] });
    });

    it('a user found by a search is the user GET answers, with its wallet and group ids', async () => {
      const found = await send('post', `${USERS}/.search`, { schemas: [SEARCH], filter: 'userName eq "oscar.op"' });
      expect(found.body.totalResults).toBe(1);
      const [user] = found.body.Resources;
      const wallet = (await t.db.query('SELECT id FROM wallets WHERE owner_user_id = $1', [user.id])).rows[0].id;
      const berlin = (await t.db.query("SELECT id FROM user_groups WHERE org_id = 'cm' AND display_name = 'Berlin'")).rows[0].id;
      expect(user.wallet).toMatchObject({ value: wallet, display: 'oscar.op' });
      expect(user.groups).toEqual([expect.objectContaining({ value: berlin, display: 'Berlin' })]);
      expect(user).toEqual((await get(`${USERS}/${user.id}`)).body);
    });

    it('POST /Users/.search takes a SearchRequest; a bad filter or sortBy is 400 invalidFilter or invalidValue', async () => {
      const search = await send('post', `${USERS}/.search`, {
        schemas: [SEARCH],
        filter: 'userName co "ist.al" or displayName co "LIST.GAMMA"',
        sortBy: 'userName',
      });
      expect(search.status).toBe(200);
      expect(search.body.Resources.map((u: { userName: string }) => u.userName)).toEqual(['list.alpha', 'list.gamma']);
      expectScimError(await get(`${USERS}?filter=${encodeURIComponent('shoeSize eq 1')}`), 400, 'invalidFilter', /"shoeSize" is not an attribute/);
      expectScimError(await get(`${USERS}?filter=${encodeURIComponent('userName eq')}`), 400, 'invalidFilter', /Invalid filter/);
      expectScimError(await send('post', `${USERS}/.search`, { schemas: [SEARCH], sortBy: 'wallet.value' }), 400, 'invalidValue', /sortBy/);
    });
  });

  describe('PATCH and PUT (RFC 7644 3.5)', () => {
    it('applies an identity provider\'s PatchOp: replace with paths (active as the string "False"), a filtered email, and no path', async () => {
      const user = await createUser('patchy', { password: 'correct horse battery staple' });
      const grant = () => tokenRequest(t.http, 'cm', { grant_type: 'password', username: 'patchy', password: 'correct horse battery staple' });
      const before = await grant();
      expect(before.status).toBe(200);
      const patched = await send('patch', `${USERS}/${user.id}`, {
        schemas: [PATCH_OP],
        Operations: [
          { op: 'Replace', path: 'active', value: 'False' },
          { op: 'replace', path: 'emails[type eq "work"].value', value: 'new@example.com' },
          { op: 'add', path: 'emails[type eq "home"].value', value: 'home@example.com' },
          { op: 'replace', path: 'name.givenName', value: 'Patricia' },
          { op: 'replace', path: `${ENTERPRISE}:department`, value: 'Audit' },
          { op: 'replace', value: { displayName: 'Pat', 'name.familyName': 'Chy' } },
          { op: 'remove', path: 'title' },
          { op: 'add', path: 'addresses[type eq "work"].locality', value: 'Berlin' },
          { op: 'add', path: 'phoneNumbers[type eq "mobile"].value', value: '+49 30 1234' },
        ],
      });
      expect(patched.status).toBe(200);
      expect(patched.headers.etag).toBe('W/"2"');
      expect(patched.body).toMatchObject({
        active: false,
        displayName: 'Pat',
        name: { givenName: 'Patricia', familyName: 'Chy', formatted: 'Given patchy' },
        emails: [
          { value: 'new@example.com', type: 'work', primary: true },
          { value: 'home@example.com', type: 'home' },
        ],
        [ENTERPRISE]: { department: 'Audit', employeeNumber: '4711', manager: { value: 'boss-id' } },
        addresses: [{ type: 'work', locality: 'Berlin' }],
        phoneNumbers: [{ type: 'mobile', value: '+49 30 1234' }],
      });
      expect(patched.body.title).toBeUndefined();
      // active: false refuses the user's grants and stops its live tokens (CREDENTIAL-MANAGEMENT.md "Users").
      const after = await grant();
      expect(after.status).toBe(400);
      expect(after.body).toEqual({ error: 'invalid_grant', error_description: 'The user is disabled.' });
      const live = await t.http.get('/authentication/customer/cm/whoami').auth(before.body.access_token, { type: 'bearer' });
      expect(live.status).toBe(401);
      const audit = await t.db.query("SELECT code FROM audit_events WHERE target = $1 AND action = 'user.update'", [user.id]);
      expect(audit.rows).toEqual([{ code: 40002 }]);
    });

    it('bad PatchOps are 400 naming the problem and change nothing', async () => {
      const user = await createUser('patch.refused');
      const patch = (body: unknown) => send('patch', `${USERS}/${user.id}`, body);
      expectScimError(await patch({ Operations: [{ op: 'replace', path: 'active', value: false }] }), 400, 'invalidSyntax', /schemas must contain/);
      expectScimError(
        await patch({ schemas: [PATCH_OP], Operations: [{ op: 'jump', path: 'active' }] }),
        400,
        'invalidSyntax',
        /op must be "add", "replace" or "remove"/,
      );
      expectScimError(await patch({ schemas: [PATCH_OP], Operations: [{ op: 'remove' }] }), 400, 'noTarget', /remove without a path/);
      expectScimError(
        await patch({ schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'shoeSize', value: 1 }] }),
        400,
        'invalidPath',
        /"shoeSize" is not a writable attribute/,
      );
      expectScimError(
        await patch({ schemas: [PATCH_OP], Operations: [{ op: 'remove', path: 'emails[type eq "fax"]' }] }),
        400,
        'noTarget',
        /no value of "emails" matches/,
      );
      expectScimError(
        await patch({ schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'userName', value: 'renamed' }] }),
        400,
        'mutability',
        /userName cannot be changed/,
      );
      expectScimError(
        await patch({ schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: 'maybe' }] }),
        400,
        'invalidValue',
        /active: must be true or false/,
      );
      expect((await get(`${USERS}/${user.id}`)).body.meta.version).toBe('1');
    });

    it('PUT replaces the writable attributes; If-Match with a stale version is 412 and a current one applies', async () => {
      const user = await createUser('putty');
      const replaced = await send('put', `${USERS}/${user.id}`, { schemas: [CORE], userName: 'putty', displayName: 'Replaced' });
      expect(replaced.status).toBe(200);
      expect(replaced.body).toMatchObject({ displayName: 'Replaced', emails: [], active: true, meta: { version: '2' } });
      expect(replaced.body.name).toBeUndefined();
      expect(replaced.body[ENTERPRISE]).toBeUndefined();
      const stale = await t.http
        .put(`${USERS}/${user.id}`)
        .auth(tokens.Administration, { type: 'bearer' })
        .set('If-Match', 'W/"1"')
        .send({ schemas: [CORE], userName: 'putty' });
      expectScimError(stale, 412, undefined, /current version is 2/);
      const current = await t.http
        .put(`${USERS}/${user.id}`)
        .auth(tokens.Administration, { type: 'bearer' })
        .set('If-Match', 'W/"2"')
        .send({ schemas: [CORE], userName: 'putty', title: 'Lead' });
      expect(current.status).toBe(200);
      expect(current.body.title).toBe('Lead');
    });
  });

  describe('DELETE', () => {
    async function seedDevice(owner: string, status: string): Promise<string> {
      const id = randomUUID();
      await t.db.query(
        "INSERT INTO devices (id, org_id, status, reason, owner_user_id, created_at, updated_at) VALUES ($1, 'cm', $2, 'NONE', $3, now(), now())",
        [id, status, owner],
      );
      return id;
    }

    it('deletes a user without devices (204, wallet gone); 404 afterwards', async () => {
      const user = await createUser('leaver');
      const removed = await t.http.delete(`${USERS}/${user.id}`).auth(tokens.Administration, { type: 'bearer' });
      expect(removed.status).toBe(204);
      expect((await t.db.query('SELECT 1 FROM wallets WHERE owner_user_id = $1', [user.id])).rowCount).toBe(0);
      expectScimError(await get(`${USERS}/${user.id}`), 404, undefined, `User "${user.id}" does not exist in organization "cm".`);
      const audit = await t.db.query("SELECT code FROM audit_events WHERE target = $1 AND action = 'user.delete'", [user.id]);
      expect(audit.rows).toEqual([{ code: 40003 }]);
    });

    it('409 naming the devices while the user holds any; force=true terminates them first', async () => {
      const user = await createUser('holder');
      const issued = await seedDevice(user.id, 'ISSUED');
      const terminated = await seedDevice(user.id, 'TERMINATED');
      const refused = await t.http.delete(`${USERS}/${user.id}`).auth(tokens.Administration, { type: 'bearer' });
      expectScimError(
        refused,
        409,
        undefined,
        `User "holder" holds device ${issued} (ISSUED). Terminate them first, or delete with ?force=true, which terminates them and revokes their credentials.`,
      );
      expectScimError(
        await t.http.delete(`${USERS}/${user.id}?force=maybe`).auth(tokens.Administration, { type: 'bearer' }),
        400,
        'invalidValue',
        /force must be true or false/,
      );
      expect((await get(`${USERS}/${user.id}`)).status).toBe(200);
      const forced = await t.http.delete(`${USERS}/${user.id}?force=true`).auth(tokens.Administration, { type: 'bearer' });
      expect(forced.status).toBe(204);
      const devices = await t.db.query('SELECT id, status, reason, owner_user_id FROM devices WHERE id = ANY($1) ORDER BY status', [[issued, terminated]]);
      expect(devices.rows).toEqual(
        expect.arrayContaining([
          { id: issued, status: 'TERMINATED', reason: 'UNASSIGNED', owner_user_id: null },
          { id: terminated, status: 'TERMINATED', reason: 'NONE', owner_user_id: null },
        ]),
      );
      const audit = await t.db.query('SELECT code, action FROM audit_events WHERE target = ANY($1) ORDER BY id', [[issued, user.id]]);
      expect(audit.rows.map((r) => r.code)).toEqual(expect.arrayContaining([10012, 40003]));
    });
  });

  describe('permissions (DECISIONS 5.2) and tenancy (DECISIONS 2)', () => {
    it('Help Desk and Issuance read and search users but cannot create, list, replace or delete them', async () => {
      const user = await createUser('perm.target');
      for (const role of ['Help Desk', 'Issuance']) {
        expect((await get(`${USERS}/${user.id}`, tokens[role])).status).toBe(200);
        expect((await send('post', `${USERS}/.search`, { schemas: [SEARCH] }, tokens[role])).status).toBe(200);
        expectScimError(await send('post', USERS, entraUser('nope'), tokens[role]), 403, undefined, new RegExp('permission operator.create'));
        expectScimError(await get(USERS, tokens[role]), 403, undefined, /permission operator.list/);
        expectScimError(
          await send('put', `${USERS}/${user.id}`, { schemas: [CORE], userName: 'perm.target' }, tokens[role]),
          403,
          undefined,
          /operator.create/,
        );
        expectScimError(await t.http.delete(`${USERS}/${user.id}`).auth(tokens[role], { type: 'bearer' }), 403, undefined, /operator.delete/);
      }
      expectScimError(await get(`${USERS}/${user.id}`, tokens.Cardholder), 403, undefined, /permission user.read/);
    });

    it("another organization's user is 404 on every route and absent from its lists", async () => {
      const user = await createUser('tenant.a');
      const notFound = `User "${user.id}" does not exist in organization "cm2".`;
      expectScimError(await get(`${USERS}/${user.id}`, tokens.other), 404, undefined, notFound);
      expectScimError(await send('put', `${USERS}/${user.id}`, { schemas: [CORE], userName: 'tenant.a' }, tokens.other), 404, undefined, notFound);
      expectScimError(
        await send('patch', `${USERS}/${user.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: false }] }, tokens.other),
        404,
        undefined,
        notFound,
      );
      expectScimError(await t.http.delete(`${USERS}/${user.id}`).auth(tokens.other, { type: 'bearer' }), 404, undefined, notFound);
      expect((await get(`${USERS}?filter=${encodeURIComponent('userName eq "tenant.a"')}`, tokens.other)).body.totalResults).toBe(0);
      expect((await get(`${USERS}/${user.id}`)).body.active).toBe(true);
    });
  });

  describe('discovery (RFC 7644 4)', () => {
    it('ServiceProviderConfig, ResourceTypes and Schemas answer any valid token of the organization', async () => {
      const config = await get('/aims/rs/scim/v2/ServiceProviderConfig', tokens.Cardholder);
      expect(config.status).toBe(200);
      expect(config.body).toMatchObject({
        patch: { supported: true },
        filter: { supported: true, maxResults: 1000 },
        etag: { supported: true },
        bulk: { supported: false },
      });
      const types = await get('/credential-management/customer/cm/resourcetypes', tokens.Cardholder);
      expect(types.status).toBe(200);
      expect(types.body.Resources.map((r: { name: string }) => r.name)).toEqual(['User', 'Device', 'Group', 'DevicePolicy', 'Printer']);
      const schema = await get(`/aims/rs/scim/v2/Schemas/${CORE}`, tokens.Cardholder);
      expect(schema.status).toBe(200);
      const userName = schema.body.attributes.find((a: { name: string }) => a.name === 'userName');
      expect(userName).toMatchObject({ type: 'string', required: true, uniqueness: 'server', mutability: 'readWrite' });
      expect(schema.body.attributes.find((a: { name: string }) => a.name === 'emails')).toMatchObject({ multiValued: true, type: 'complex' });
      expectScimError(await get('/aims/rs/scim/v2/Schemas/urn:nothing:here', tokens.Cardholder), 404, undefined, /is not a schema of this service/);
      expectScimError(await t.http.get('/aims/rs/scim/v2/ServiceProviderConfig'), 401, undefined, /bearer/i);
    });
  });
});

/** Operator Dependent roles (DECISIONS 5.2): an operator reaches only the users who share one of its groups. */
describe('Users over SCIM and Operator Dependent roles', () => {
  let t: TestApp;
  let operator: string;
  const tokenUrl = 'https://auth.example.test/authentication/customer/odu/token';

  beforeAll(async () => {
    const file = operatorDependentScopeFile('users-operator-dependent.properties', ['Scope.helpdesk', 'Scope.configuration_operator']);
    t = await createTestApp({ env: { SCOPE_ASSIGNMENT_FILE: file } });
    const admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, 'odu');
    const user = await t.http
      .post('/admin/v1/organizations/odu/users')
      .auth(admin, { type: 'bearer' })
      .send({ userName: 'olga.op', role: 'Desk East', userType: 'operator', groups: ['east'] });
    expect(user.status).toBe(201);
    const certificate = await makeCertificate();
    const enrolled = await t.http
      .post(`/admin/v1/organizations/odu/users/${user.body.id}/certificates`)
      .auth(admin, { type: 'bearer' })
      .set('Content-Type', 'application/x-pem-file')
      .send(certificate.pem);
    expect(enrolled.status).toBe(201);
    const grant = await tokenRequest(t.http, 'odu', {
      grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
      assertion: await signAssertion(certificate, 'olga.op', tokenUrl, { now: t.clock.now() }),
    });
    expect(grant.status).toBe(200);
    operator = grant.body.access_token;
    for (const [userName, groups] of [
      ['eve.east', ['east', 'north']],
      ['walt.west', ['west']],
    ] as const) {
      const created = await t.http.post('/admin/v1/organizations/odu/users').auth(admin, { type: 'bearer' }).send({ userName, role: 'Cardholder', groups });
      expect(created.status).toBe(201);
    }
  });
  afterAll(() => t.close());

  it("sees the users of its groups in GET, lists and .search; another group's user is 404", async () => {
    const list = await t.http.get('/aims/rs/scim/v2/Users?sortBy=userName').auth(operator, { type: 'bearer' });
    expect(list.status).toBe(200);
    expect(list.body.Resources.map((u: { userName: string }) => u.userName)).toEqual(['eve.east', 'olga.op']);
    expect(list.body.totalResults).toBe(2);
    const search = await t.http
      .post('/aims/rs/scim/v2/Users/.search')
      .auth(operator, { type: 'bearer' })
      .send({ schemas: [SEARCH], filter: 'userName ew "west" or userName ew "east"' });
    expect(search.body.Resources.map((u: { userName: string }) => u.userName)).toEqual(['eve.east']);
    const west = (await t.db.query("SELECT id FROM users WHERE user_name = 'walt.west'")).rows[0].id;
    const missing = `User "${west}" does not exist in organization "odu".`;
    expectScimError(await t.http.get(`/aims/rs/scim/v2/Users/${west}`).auth(operator, { type: 'bearer' }), 404, undefined, missing);
    expectScimError(await t.http.delete(`/aims/rs/scim/v2/Users/${west}`).auth(operator, { type: 'bearer' }), 404, undefined, missing);
  });

  it('reaches only the wallets, groups and counts of its groups (wallets, Groups, Stats)', async () => {
    const get = (path: string) => t.http.get(path).auth(operator, { type: 'bearer' });
    const walletOf = async (userName: string) =>
      (await t.db.query('SELECT w.id FROM wallets w JOIN users u ON u.id = w.owner_user_id WHERE u.user_name = $1', [userName])).rows[0].id as string;
    const eastWallet = await walletOf('eve.east');
    const westWallet = await walletOf('walt.west');
    expect((await get(`/aims/rs/scim/v2/Wallet/${eastWallet}`)).status).toBe(200);
    expectScimError(await get(`/aims/rs/scim/v2/Wallet/${westWallet}`), 404, undefined, `Wallet ${westWallet} does not exist.`);
    const wallets = await t.http
      .post('/aims/rs/scim/v2/Wallet/.search')
      .auth(operator, { type: 'bearer' })
      .send({ schemas: [SEARCH] });
    expect(wallets.body.Resources.map((w: { owner: { display: string } }) => w.owner.display).sort()).toEqual(['eve.east', 'olga.op']);
    const groups = await get('/aims/rs/scim/v2/Groups?sortBy=displayName');
    expect(groups.body.Resources.map((g: { displayName: string }) => g.displayName)).toEqual(['east']);
    const west = (await t.db.query("SELECT id FROM user_groups WHERE display_name = 'west'")).rows[0].id;
    expectScimError(await get(`/aims/rs/scim/v2/Groups/${west}`), 404, undefined, `Group ${west} does not exist.`);
    const stats = await get('/aims/rs/scim/v2/Stats');
    expect(stats.status).toBe(200);
    expect(stats.body.users).toEqual({ cardholders: 1, operators: 1 });
  });
});
