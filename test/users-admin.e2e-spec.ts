import { X509Certificate, createHash, randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { PasswordHasher, UserRepository } from '@app/accounts';
import {
  PLATFORM_ADMIN_SECRET,
  TestApp,
  TestCertificate,
  createOrganization,
  createTestApp,
  makeCertificate,
  platformAdminToken,
  expectScimError,
  HttpMethod,
  adminCall,
  createAdminAndPlainAccounts,
} from '@app/testing';

/**
 * Users of the credential-management API in the administration API (DECISIONS 11 users rows,
 * DECISIONS 3.5 for passwords and certificates), with the tenancy rules of DECISIONS 2 and the
 * errors of DECISIONS 7, driven over HTTP as an integrator would.
 */

const SCIM_ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const LIST_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
const ISO_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SCRYPT_HASH = /^scrypt\$32768\$8\$1\$[A-Za-z0-9+/]+={0,2}\$[A-Za-z0-9+/]+={0,2}$/;
const PUBLIC_BASE_URL = 'https://api.example.test';
const DAY_MS = 86_400_000;
const PASSWORD = 'Tr0ub4dor&3-horse-staple';

/** The user resource as the API answers it (DECISIONS 11). */
interface UserView {
  id: string;
  userName: string;
  meta: { created: string; lastModified: string; location: string; version: string };
  [attribute: string]: unknown;
}

describe('admin API: users (DECISIONS 11, 3.5)', () => {
  let t: TestApp;
  let admin: string;
  let counter = 0;
  const newOrgId = (prefix = 'uorg') => `${prefix}_${++counter}`;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());
  // A fresh platform-administrator token per test: some tests move the clock past a token's lifetime.
  beforeEach(async () => {
    admin = await platformAdminToken(t.http);
  });

  const call = (method: HttpMethod, path: string, token?: string) => adminCall(t.http, method, path, token);

  function expectJson(response: Response): void {
    expect(response.headers['content-type']).toMatch(/^application\/json/);
  }

  async function newOrg(prefix?: string): Promise<string> {
    const id = newOrgId(prefix);
    await createOrganization(t.http, admin, id);
    return id;
  }

  /** A new organization with an organization administrator and a plain account, with tokens. */
  const orgWithAccounts = async () => createAdminAndPlainAccounts(t.http, admin, await newOrg());

  const usersPath = (org: string) => `/organizations/${org}/users`;
  const userPath = (org: string, id: string) => `/organizations/${org}/users/${id}`;

  async function createUser(org: string, body: Record<string, unknown> = {}): Promise<UserView> {
    const response = await call('post', usersPath(org), admin).send({ userName: `user${++counter}`, role: 'Cardholder', ...body });
    if (response.status !== 201) throw new Error(`create user failed: ${response.status} ${JSON.stringify(response.body)}`);
    return response.body as UserView;
  }

  /** The user resource of DECISIONS 11 with the given attributes. */
  function userView(org: string, fields: Record<string, unknown> & { id?: string }) {
    return {
      id: fields.id ?? expect.stringMatching(UUID),
      userType: 'cardholder',
      groups: [],
      name: null,
      displayName: null,
      emails: [],
      active: true,
      organizationAdministrator: false,
      platformAdministrator: false,
      hasPassword: false,
      certificates: [],
      ...fields,
      meta: {
        resourceType: 'User',
        created: expect.stringMatching(ISO_MS_UTC),
        lastModified: expect.stringMatching(ISO_MS_UTC),
        location: fields.id
          ? `${PUBLIC_BASE_URL}/admin/v1${userPath(org, fields.id)}`
          : expect.stringMatching(new RegExp(`^${PUBLIC_BASE_URL}/admin/v1/organizations/${org}/users/[0-9a-f-]{36}$`)),
        version: expect.stringMatching(/^\d+$/),
      },
    };
  }

  async function storedPasswordHash(id: string): Promise<string | null> {
    const { rows } = await t.db.query<{ password_hash: string | null }>('SELECT password_hash FROM users WHERE id = $1', [id]);
    return rows[0].password_hash;
  }

  /** X.509 carries whole seconds; validity is relative to the service's (fake) clock. */
  function certificate(): Promise<TestCertificate> {
    const notBefore = new Date(Math.floor((t.clock.now().getTime() - 3600_000) / 1000) * 1000);
    return makeCertificate({ notBefore, notAfter: new Date(notBefore.getTime() + 2 * 365 * DAY_MS), subject: `CN=operator-${++counter}, O=Example` });
  }

  function enroll(org: string, id: string, pem: string, form: 'pem-file' | 'text' | 'json' = 'pem-file', token = admin) {
    const request = call('post', `${userPath(org, id)}/certificates`, token);
    if (form === 'json') return request.send({ pem });
    return request.set('Content-Type', form === 'pem-file' ? 'application/x-pem-file' : 'text/plain').send(pem);
  }

  describe('POST /organizations/{org}/users', () => {
    it('creates a cardholder with every attribute: 201, Location = meta.location, never the password', async () => {
      const org = await newOrg();
      const body = {
        userName: 'jane.doe@example.com',
        role: 'Cardholder',
        userType: 'cardholder',
        groups: ['Finance', 'Badges'],
        password: PASSWORD,
        name: { givenName: 'Jane', familyName: 'Doe', middleName: 'Q', formatted: 'Jane Q. Doe' },
        displayName: 'Jane Doe',
        emails: [{ value: 'jane@example.com', type: 'work', primary: true }, { value: 'jd@home.example' }],
      };
      const response = await call('post', usersPath(org), admin).send(body);
      expect(response.status).toBe(201);
      expectJson(response);
      const { password: _password, ...visible } = body;
      expect(response.body).toEqual(userView(org, { ...visible, hasPassword: true }));
      expect(response.headers.location).toBe(response.body.meta.location);
      expect(response.body.meta.location).toBe(`${PUBLIC_BASE_URL}/admin/v1/organizations/${org}/users/${response.body.id}`);
      const now = t.clock.now().toISOString();
      expect(response.body.meta.created).toBe(now);
      expect(response.body.meta.lastModified).toBe(now);
      expect(response.body.meta.version).toBe('1');
      expect(response.text).not.toContain(PASSWORD);
      expect(response.text).not.toMatch(/scrypt|passwordHash|password_hash/);

      const read = await call('get', userPath(org, response.body.id), admin);
      expect(read.status).toBe(200);
      expectJson(read);
      expect(read.body).toEqual(response.body);
    });

    it('with only userName and role: a cardholder with no groups, name, e-mails, password or certificates', async () => {
      const org = await newOrg();
      const response = await call('post', usersPath(org), admin).send({ userName: 'minimal', role: 'Cardholder' });
      expect(response.status).toBe(201);
      expect(response.body).toEqual(userView(org, { userName: 'minimal', role: 'Cardholder' }));
    });

    it('creates an operator (userType operator), without a password', async () => {
      const org = await newOrg();
      const response = await call('post', usersPath(org), admin).send({ userName: 'op.one', role: 'Help Desk', userType: 'operator', groups: ['North'] });
      expect(response.status).toBe(201);
      expect(response.body).toEqual(userView(org, { userName: 'op.one', role: 'Help Desk', userType: 'operator', groups: ['North'] }));
    });

    it('an operator with a password is a 400 naming password, and nothing is created', async () => {
      const org = await newOrg();
      const response = await call('post', usersPath(org), admin).send({ userName: 'op.pw', role: 'Help Desk', userType: 'operator', password: PASSWORD });
      expectScimError(response, 400, 'invalidValue', 'password');
      expect(response.body.detail).not.toContain(PASSWORD);
      expect((await call('get', usersPath(org), admin)).body.totalResults).toBe(0);
    });

    it('accepts a userName of 128 characters using every allowed character', async () => {
      const org = await newOrg();
      const userName = `Az09._@-${'x'.repeat(120)}`;
      expect(userName).toHaveLength(128);
      const response = await call('post', usersPath(org), admin).send({ userName, role: 'Cardholder' });
      expect(response.status).toBe(201);
      expect(response.body.userName).toBe(userName);
    });

    it('ignores the read-only attributes id and meta (DECISIONS 7)', async () => {
      const org = await newOrg();
      const id = randomUUID();
      const response = await call('post', usersPath(org), admin).send({ id, meta: { version: '9' }, userName: 'ro', role: 'Cardholder' });
      expect(response.status).toBe(201);
      expect(response.body.id).not.toBe(id);
      expect(response.body.meta.version).toBe('1');
    });

    it('null for an optional attribute reads as absent', async () => {
      const org = await newOrg();
      const response = await call('post', usersPath(org), admin).send({
        userName: 'nulls',
        role: 'Cardholder',
        groups: null,
        name: null,
        displayName: null,
        emails: null,
      });
      expect(response.status).toBe(201);
      expect(response.body).toEqual(userView(org, { userName: 'nulls', role: 'Cardholder' }));
    });

    it('a password is stored as an scrypt hash, never as the password', async () => {
      const org = await newOrg();
      const user = await createUser(org, { password: PASSWORD });
      const hash = await storedPasswordHash(user.id);
      expect(hash).toMatch(SCRYPT_HASH);
      expect(hash).not.toContain(PASSWORD);
      expect(await t.app.get(PasswordHasher).verify(PASSWORD, hash!)).toBe(true);
      const { rows } = await t.db.query<{ row: string }>('SELECT row_to_json(u)::text AS row FROM users u WHERE id = $1', [user.id]);
      expect(rows[0].row).not.toContain(PASSWORD);
    });

    it('without a role, a person is a Cardholder; a role that names nothing lists the shipped roles (issue 33 item 3)', async () => {
      const org = await newOrg();
      const created = await call('post', usersPath(org), admin).send({ userName: 'norole' });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ userName: 'norole', role: 'Cardholder', userType: 'cardholder' });
      const empty = await call('post', usersPath(org), admin).send({ userName: 'emptyrole2', role: ' ' });
      expect(empty.status).toBe(400);
      expect(empty.body.detail).toContain(
        'Administration, Help Desk, Issuance or Cardholder in the shipped mapping; GET /admin/v1/roles lists the loaded ones',
      );
    });

    describe('400 for each bad field, naming it', () => {
      it.each<[string, Record<string, unknown>, string]>([
        ['missing userName', { role: 'Cardholder' }, 'userName'],
        ['empty userName', { userName: '', role: 'Cardholder' }, 'userName'],
        ['userName of 129 characters', { userName: 'u'.repeat(129), role: 'Cardholder' }, 'userName'],
        ['userName with a space', { userName: 'jane doe', role: 'Cardholder' }, 'userName'],
        ['userName with a slash', { userName: 'jane/doe', role: 'Cardholder' }, 'userName'],
        ['userName with a non-ASCII letter', { userName: 'jané', role: 'Cardholder' }, 'userName'],
        ['userName not a string', { userName: 42, role: 'Cardholder' }, 'userName'],
        ['empty role', { userName: 'emptyrole', role: ' ' }, 'role'],
        ['role not a string', { userName: 'numrole', role: 3 }, 'role'],
        ['unknown userType', { userName: 'ut', role: 'Cardholder', userType: 'administrator' }, 'userType'],
        ['groups not an array', { userName: 'g1', role: 'Cardholder', groups: 'Finance' }, 'groups'],
        ['an empty group name', { userName: 'g2', role: 'Cardholder', groups: ['Finance', ''] }, 'groups'],
        ['a group listed twice', { userName: 'g3', role: 'Cardholder', groups: ['Finance', 'Finance'] }, 'groups'],
        ['a group that is not a string', { userName: 'g4', role: 'Cardholder', groups: [7] }, 'groups'],
        ['a password of 11 characters', { userName: 'pw1', role: 'Cardholder', password: 'elevenchars' }, 'password'],
        ['a password of 1025 characters', { userName: 'pw2', role: 'Cardholder', password: 'p'.repeat(1025) }, 'password'],
        ['a password that is not a string', { userName: 'pw3', role: 'Cardholder', password: 123456789012 }, 'password'],
        ['name not an object', { userName: 'n1', role: 'Cardholder', name: 'Jane Doe' }, 'name'],
        ['name without familyName', { userName: 'n2', role: 'Cardholder', name: { givenName: 'Jane' } }, 'name.familyName'],
        ['name with an empty givenName', { userName: 'n3', role: 'Cardholder', name: { givenName: '', familyName: 'Doe' } }, 'name.givenName'],
        [
          'name with an unknown attribute',
          { userName: 'n4', role: 'Cardholder', name: { givenName: 'J', familyName: 'D', honorificPrefix: 'Dr' } },
          'honorificPrefix',
        ],
        ['empty displayName', { userName: 'd1', role: 'Cardholder', displayName: '' }, 'displayName'],
        ['displayName not a string', { userName: 'd2', role: 'Cardholder', displayName: ['Jane'] }, 'displayName'],
        ['emails not an array', { userName: 'e1', role: 'Cardholder', emails: 'jane@example.com' }, 'emails'],
        ['an e-mail value that is not an address', { userName: 'e2', role: 'Cardholder', emails: [{ value: 'not-an-address' }] }, 'emails.0.value'],
        ['an e-mail without value', { userName: 'e3', role: 'Cardholder', emails: [{ type: 'work' }] }, 'emails.0.value'],
        [
          'two primary e-mails',
          {
            userName: 'e4',
            role: 'Cardholder',
            emails: [
              { value: 'a@example.com', primary: true },
              { value: 'b@example.com', primary: true },
            ],
          },
          'emails',
        ],
        ['an e-mail with an unknown attribute', { userName: 'e5', role: 'Cardholder', emails: [{ value: 'a@example.com', verified: true }] }, 'verified'],
        ['primary not a boolean', { userName: 'e6', role: 'Cardholder', emails: [{ value: 'a@example.com', primary: 'yes' }] }, 'emails.0.primary'],
        ['an unknown attribute', { userName: 'u1', role: 'Cardholder', title: 'Boss' }, 'title'],
        ['a password hash given by the caller', { userName: 'u2', role: 'Cardholder', passwordHash: 'scrypt$1' }, 'passwordHash'],
        ['the read-only hasPassword', { userName: 'u3', role: 'Cardholder', hasPassword: true }, 'hasPassword'],
      ])('POST user with %s', async (_case, body, field) => {
        const org = await newOrg();
        const response = await call('post', usersPath(org), admin).send(body);
        expectScimError(response, 400, 'invalidValue', field);
        if (typeof body.password === 'string') expect(response.body.detail).not.toContain(body.password);
        expect((await call('get', usersPath(org), admin)).body.totalResults).toBe(0);
      });

      it('a body that is not JSON is a 400 invalidSyntax', async () => {
        const org = await newOrg();
        const response = await call('post', usersPath(org), admin).set('Content-Type', 'application/json').send('{"userName": "broken",');
        expectScimError(response, 400, 'invalidSyntax', /\S/);
      });

      it('a JSON array is a 400 invalidSyntax', async () => {
        const org = await newOrg();
        const response = await call('post', usersPath(org), admin).send([{ userName: 'array', role: 'Cardholder' }]);
        expectScimError(response, 400, 'invalidSyntax', /JSON object/);
      });
    });

    it('a userName taken in the organization is a 409 uniqueness; another organization may use it', async () => {
      const org = await newOrg();
      const other = await newOrg();
      await createUser(org, { userName: 'twin' });
      const response = await call('post', usersPath(org), admin).send({ userName: 'twin', role: 'Help Desk', userType: 'operator' });
      expectScimError(response, 409, 'uniqueness', 'twin');
      const elsewhere = await call('post', usersPath(other), admin).send({ userName: 'twin', role: 'Cardholder' });
      expect(elsewhere.status).toBe(201);
    });

    it('two concurrent creates of one userName: exactly one 201 and one 409', async () => {
      const org = await newOrg();
      const responses = await Promise.all(
        [0, 1].map(() => call('post', usersPath(org), admin).send({ userName: 'race', role: 'Cardholder', password: PASSWORD })),
      );
      expect(responses.map((r) => r.status).sort()).toEqual([201, 409]);
      expectScimError(
        responses.find((r) => r.status === 409)!,
        409,
        'uniqueness',
        'race',
      );
      const { rows } = await t.db.query('SELECT id FROM users WHERE org_id = $1', [org]);
      expect(rows).toHaveLength(1);
    });
  });

  describe('GET /organizations/{org}/users', () => {
    it('is a ListResponse ordered by userName, with startIndex/count paging and no password material', async () => {
      const org = await newOrg();
      const created = [];
      for (const userName of ['delta', 'alpha', 'charlie', 'bravo']) created.push(await createUser(org, { userName, password: PASSWORD }));
      const all = await call('get', usersPath(org), admin);
      expect(all.status).toBe(200);
      expectJson(all);
      expect(all.body).toEqual({ schemas: [LIST_RESPONSE], totalResults: 4, itemsPerPage: 4, startIndex: 1, Resources: expect.any(Array) });
      expect(all.body.Resources.map((r: { userName: string }) => r.userName)).toEqual(['alpha', 'bravo', 'charlie', 'delta']);
      for (const resource of all.body.Resources) expect(resource).toEqual(created.find((c) => c.id === resource.id));
      expect(all.text).not.toContain(PASSWORD);
      expect(all.text).not.toContain('scrypt');

      const page = await call('get', `${usersPath(org)}?startIndex=2&count=2`, admin);
      expect(page.body).toEqual({ schemas: [LIST_RESPONSE], totalResults: 4, itemsPerPage: 2, startIndex: 2, Resources: all.body.Resources.slice(1, 3) });
      const countOnly = await call('get', `${usersPath(org)}?count=0`, admin);
      expect(countOnly.body).toEqual({ schemas: [LIST_RESPONSE], totalResults: 4, itemsPerPage: 0, startIndex: 1, Resources: [] });
      const beyond = await call('get', `${usersPath(org)}?startIndex=10`, admin);
      expect(beyond.body).toEqual({ schemas: [LIST_RESPONSE], totalResults: 4, itemsPerPage: 0, startIndex: 10, Resources: [] });
    });

    it("lists only the organization's own users", async () => {
      const org = await newOrg();
      const other = await newOrg();
      await createUser(org, { userName: 'mine' });
      await createUser(other, { userName: 'theirs' });
      const list = await call('get', usersPath(org), admin);
      expect(list.body.Resources.map((r: { userName: string }) => r.userName)).toEqual(['mine']);
    });

    it.each([
      ['count=abc', 'count'],
      ['startIndex=first', 'startIndex'],
    ])('?%s is a 400 naming the parameter', async (query, field) => {
      const org = await newOrg();
      expectScimError(await call('get', `${usersPath(org)}?${query}`, admin), 400, 'invalidValue', field);
    });
  });

  describe('GET /organizations/{org}/users/{id}', () => {
    it('an unknown id, an id that is not a UUID, and the id of another organization: the same 404', async () => {
      const org = await newOrg();
      const other = await newOrg();
      const theirs = await createUser(other);
      for (const id of [randomUUID(), theirs.id]) {
        const response = await call('get', userPath(org, id), admin);
        expectScimError(response, 404, undefined, /does not exist/);
      }
      expectScimError(
        await call('get', userPath(org, 'not-a-uuid'), admin),
        404,
        undefined,
        'Nothing is named "not-a-uuid": the path parameter id must be a UUID',
      );
    });
  });

  describe('PATCH /organizations/{org}/users/{id}', () => {
    it('changes role, groups, disabled, name, displayName and e-mails; answers the whole resource; version grows', async () => {
      const org = await newOrg();
      const user = await createUser(org, { userName: 'patchme', password: PASSWORD });
      t.clock.advance(5);
      const changes = {
        role: 'Help Desk',
        groups: ['South'],
        disabled: true,
        name: { givenName: 'Pat', familyName: 'Smith' },
        displayName: 'Pat S.',
        emails: [{ value: 'pat@example.com', primary: true }],
      };
      const patched = await call('patch', userPath(org, user.id), admin).send(changes);
      expect(patched.status).toBe(200);
      expectJson(patched);
      const { disabled: _disabled, ...visible } = changes;
      expect(patched.body).toEqual(userView(org, { id: user.id, userName: 'patchme', ...visible, active: false, hasPassword: true }));
      expect(patched.body.meta.created).toBe(user.meta.created);
      expect(patched.body.meta.lastModified).toBe(t.clock.now().toISOString());
      expect(patched.body.meta.version).toBe('2');
      expect((await call('get', userPath(org, user.id), admin)).body).toEqual(patched.body);
    });

    it('leaves out attributes it does not name, and null clears (DECISIONS 7)', async () => {
      const org = await newOrg();
      const user = await createUser(org, {
        groups: ['A'],
        displayName: 'Shown',
        name: { givenName: 'A', familyName: 'B' },
        emails: [{ value: 'a@example.com' }],
      });
      const onlyRole = await call('patch', userPath(org, user.id), admin).send({ role: 'Issuance' });
      expect(onlyRole.status).toBe(200);
      expect(onlyRole.body).toEqual({ ...user, role: 'Issuance', meta: { ...user.meta, lastModified: expect.any(String), version: '2' } });

      const cleared = await call('patch', userPath(org, user.id), admin).send({ groups: null, displayName: null, name: null, emails: null });
      expect(cleared.status).toBe(200);
      expect(cleared.body).toEqual(userView(org, { id: user.id, userName: user.userName, role: 'Issuance' }));
      expect(cleared.body.meta.version).toBe('3');
    });

    it('re-enabling makes the user active again', async () => {
      const org = await newOrg();
      const user = await createUser(org);
      expect((await call('patch', userPath(org, user.id), admin).send({ disabled: true })).body.active).toBe(false);
      expect((await call('patch', userPath(org, user.id), admin).send({ disabled: false })).body.active).toBe(true);
    });

    it('ignores id and meta; userName and userType sent back unchanged are accepted', async () => {
      const org = await newOrg();
      const user = await createUser(org);
      const response = await call('patch', userPath(org, user.id), admin).send({
        id: randomUUID(),
        meta: { version: '42' },
        userName: user.userName,
        userType: 'cardholder',
        displayName: 'Same',
      });
      expect(response.status).toBe(200);
      expect(response.body.id).toBe(user.id);
      expect(response.body.displayName).toBe('Same');
    });

    it.each<[string, Record<string, unknown>, string]>([
      ['a new userName', { userName: 'renamed' }, 'userName'],
      ['a new userType', { userType: 'operator' }, 'userType'],
    ])('%s is a 400 mutability naming it, and nothing changes', async (_case, body, field) => {
      const org = await newOrg();
      const user = await createUser(org);
      expectScimError(await call('patch', userPath(org, user.id), admin).send(body), 400, 'mutability', field);
      expect((await call('get', userPath(org, user.id), admin)).body).toEqual(user);
    });

    it.each<[string, Record<string, unknown>, string]>([
      ['empty role', { role: '' }, 'role'],
      ['role null', { role: null }, 'role'],
      ['disabled not a boolean', { disabled: 'yes' }, 'disabled'],
      ['groups with a duplicate', { groups: ['X', 'X'] }, 'groups'],
      ['name without givenName', { name: { familyName: 'Doe' } }, 'name.givenName'],
      ['displayName too long', { displayName: 'd'.repeat(257) }, 'displayName'],
      ['a bad e-mail', { emails: [{ value: 'nope' }] }, 'emails.0.value'],
      ['the password (it has its own endpoint)', { password: PASSWORD }, 'password'],
      ['active (PATCH takes disabled)', { active: false }, 'active'],
      ['an unknown attribute', { nickName: 'JJ' }, 'nickName'],
    ])('PATCH with %s is a 400 naming it, and nothing changes', async (_case, body, field) => {
      const org = await newOrg();
      const user = await createUser(org);
      const response = await call('patch', userPath(org, user.id), admin).send(body);
      expectScimError(response, 400, 'invalidValue', field);
      expect(response.body.detail).not.toContain(PASSWORD);
      expect((await call('get', userPath(org, user.id), admin)).body).toEqual(user);
    });

    it('an unknown id or one of another organization is a 404, and the other user is unchanged', async () => {
      const org = await newOrg();
      const other = await newOrg();
      const theirs = await createUser(other);
      expectScimError(await call('patch', userPath(org, randomUUID()), admin).send({ role: 'Issuance' }), 404, undefined, /does not exist/);
      expectScimError(await call('patch', userPath(org, theirs.id), admin).send({ role: 'Issuance' }), 404, undefined, /does not exist/);
      expect((await call('get', userPath(other, theirs.id), admin)).body).toEqual(theirs);
    });
  });

  describe('DELETE /organizations/{org}/users/{id}', () => {
    it('answers 204 with no body; the user, its certificates, token rows and assertion jtis are gone; a second DELETE is 404', async () => {
      const org = await newOrg();
      const user = await createUser(org, { userType: 'operator', role: 'Help Desk' });
      expect((await enroll(org, user.id, (await certificate()).pem)).status).toBe(201);
      // A token row and an assertion jti of the user, as the token service would store them.
      const now = t.clock.now();
      await t.db.query('INSERT INTO access_tokens (jti, org_id, user_id, issued_at, expires_at) VALUES ($1, $2, $3, $4, $4)', [
        randomUUID(),
        org,
        user.id,
        now,
      ]);
      await t.db.query('INSERT INTO user_assertion_jtis (user_id, jti, expires_at) VALUES ($1, $2, $3)', [user.id, randomUUID(), now]);
      const response = await call('delete', userPath(org, user.id), admin);
      expect(response.status).toBe(204);
      expect(response.text).toBe('');
      expectScimError(await call('get', userPath(org, user.id), admin), 404, undefined, /does not exist/);
      for (const table of ['user_certificates', 'access_tokens', 'user_assertion_jtis']) {
        const { rows } = await t.db.query(`SELECT 1 FROM ${table} WHERE user_id = $1`, [user.id]);
        expect({ table, rows }).toEqual({ table, rows: [] });
      }
      expectScimError(await call('delete', userPath(org, user.id), admin), 404, undefined, /does not exist/);
      // The userName is free again.
      expect((await call('post', usersPath(org), admin).send({ userName: user.userName, role: 'Cardholder' })).status).toBe(201);
    });

    it('the id of another organization is a 404 and that user stays', async () => {
      const org = await newOrg();
      const other = await newOrg();
      const theirs = await createUser(other);
      expectScimError(await call('delete', userPath(org, theirs.id), admin), 404, undefined, /does not exist/);
      expectScimError(await call('delete', userPath(org, 'not-a-uuid'), admin), 404, undefined, 'the path parameter id must be a UUID');
      expect((await call('get', userPath(other, theirs.id), admin)).status).toBe(200);
    });
  });

  describe('POST /organizations/{org}/users/{id}/certificates', () => {
    it('enrolls a PEM certificate: 201 with the certificate shape of system accounts; the user lists its thumbprint', async () => {
      const org = await newOrg();
      const user = await createUser(org, { userType: 'operator', role: 'Help Desk' });
      const cert = await certificate();
      t.clock.advance(3);
      const response = await enroll(org, user.id, cert.pem);
      expect(response.status).toBe(201);
      expectJson(response);
      const x509 = new X509Certificate(cert.pem);
      const thumbprint = createHash('sha256').update(x509.raw).digest('base64url');
      expect(response.body).toEqual({
        id: thumbprint,
        subject: expect.stringContaining(x509.subject.split('\n').find((part) => part.startsWith('CN='))!),
        issuer: expect.stringContaining('O=Example'),
        serialNumber: expect.stringMatching(/^[0-9A-Fa-f:]+$/),
        notBefore: new Date(x509.validFrom).toISOString(),
        notAfter: new Date(x509.validTo).toISOString(),
        expiresAt: expect.stringMatching(ISO_MS_UTC),
        created: t.clock.now().toISOString(),
      });
      const ahead = new Date(response.body.expiresAt).getTime() - t.clock.now().getTime();
      expect(ahead).toBeGreaterThanOrEqual(365 * DAY_MS);
      expect(ahead).toBeLessThanOrEqual(366 * DAY_MS);
      const read = await call('get', userPath(org, user.id), admin);
      expect(read.body.certificates).toEqual([thumbprint]);
    });

    it.each<['text' | 'json']>([['text'], ['json']])('takes the PEM as %s too', async (form) => {
      const org = await newOrg();
      const user = await createUser(org, { userType: 'operator', role: 'Help Desk' });
      const cert = await certificate();
      const response = await enroll(org, user.id, cert.pem, form);
      expect(response.status).toBe(201);
      expect(response.body.id).toBe(cert.thumbprint);
    });

    it('refuses what the upload rules refuse, saying why (the parser of DECISIONS 4)', async () => {
      const org = await newOrg();
      const user = await createUser(org, { userType: 'operator', role: 'Help Desk' });
      const withKey = `${(await certificate()).pem}\n-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n`;
      expectScimError(await enroll(org, user.id, withKey), 400, 'invalidValue', /private key/);
      expectScimError(await enroll(org, user.id, 'hello'), 400, 'invalidValue', /not PEM/);
      expectScimError(await call('post', `${userPath(org, user.id)}/certificates`, admin).send({ certificate: 'x' }), 400, 'invalidValue', 'certificate');
      expect((await call('get', userPath(org, user.id), admin)).body.certificates).toEqual([]);
    });

    it('the same active certificate again is a 409; after the credential expiry a re-upload restores it', async () => {
      const org = await newOrg();
      const user = await createUser(org, { userType: 'operator', role: 'Help Desk' });
      const cert = await certificate();
      const first = await enroll(org, user.id, cert.pem);
      expect(first.status).toBe(201);
      expectScimError(await enroll(org, user.id, cert.pem), 409, 'uniqueness', cert.thumbprint);
      t.clock.advance(366 * 86_400);
      admin = await platformAdminToken(t.http);
      const renewed = await enroll(org, user.id, cert.pem);
      expect(renewed.status).toBe(201);
      expect(new Date(renewed.body.expiresAt).getTime()).toBeGreaterThan(new Date(first.body.expiresAt).getTime());
      expect((await call('get', userPath(org, user.id), admin)).body.certificates).toEqual([cert.thumbprint]);
    });

    it('at most 5 certificates per user: the sixth is a 409', async () => {
      const org = await newOrg();
      const user = await createUser(org, { userType: 'operator', role: 'Help Desk' });
      for (let i = 0; i < 5; i++) expect((await enroll(org, user.id, (await certificate()).pem)).status).toBe(201);
      expectScimError(await enroll(org, user.id, (await certificate()).pem), 409, undefined, /5 certificates/);
      expect((await call('get', userPath(org, user.id), admin)).body.certificates).toHaveLength(5);
    });

    it('an unknown user or one of another organization is a 404', async () => {
      const org = await newOrg();
      const other = await newOrg();
      const theirs = await createUser(other, { userType: 'operator', role: 'Help Desk' });
      const pem = (await certificate()).pem;
      expectScimError(await enroll(org, randomUUID(), pem), 404, undefined, /does not exist/);
      expectScimError(await enroll(org, theirs.id, pem), 404, undefined, /does not exist/);
      expect((await call('get', userPath(other, theirs.id), admin)).body.certificates).toEqual([]);
    });
  });

  describe('PUT /organizations/{org}/users/{id}/password', () => {
    it("sets a cardholder's password: 204, hasPassword, an scrypt hash; a new password replaces it", async () => {
      const org = await newOrg();
      const user = await createUser(org);
      const response = await call('put', `${userPath(org, user.id)}/password`, admin).send({ password: PASSWORD });
      expect(response.status).toBe(204);
      expect(response.text).toBe('');
      const read = await call('get', userPath(org, user.id), admin);
      expect(read.body.hasPassword).toBe(true);
      expect(read.body.meta.version).toBe('2');
      const first = await storedPasswordHash(user.id);
      expect(first).toMatch(SCRYPT_HASH);
      expect(first).not.toContain(PASSWORD);
      const hasher = t.app.get(PasswordHasher);
      expect(await hasher.verify(PASSWORD, first!)).toBe(true);

      const next = 'another-long-passphrase';
      expect((await call('put', `${userPath(org, user.id)}/password`, admin).send({ password: next })).status).toBe(204);
      const second = await storedPasswordHash(user.id);
      expect(second).toMatch(SCRYPT_HASH);
      expect(await hasher.verify(next, second!)).toBe(true);
      expect(await hasher.verify(PASSWORD, second!)).toBe(false);
    });

    it('accepts exactly 12 characters', async () => {
      const org = await newOrg();
      const user = await createUser(org);
      expect((await call('put', `${userPath(org, user.id)}/password`, admin).send({ password: 'twelve-chars' })).status).toBe(204);
    });

    it("an operator's password is a 400 naming password, and none is stored", async () => {
      const org = await newOrg();
      const user = await createUser(org, { userType: 'operator', role: 'Help Desk' });
      expectScimError(await call('put', `${userPath(org, user.id)}/password`, admin).send({ password: PASSWORD }), 400, 'invalidValue', 'password');
      expect(await storedPasswordHash(user.id)).toBeNull();
    });

    it.each<[string, unknown, string]>([
      ['11 characters', { password: 'elevenchars' }, 'password'],
      ['missing password', {}, 'password'],
      ['password not a string', { password: 123456789012345 }, 'password'],
      ['an unknown attribute', { password: PASSWORD, confirm: PASSWORD }, 'confirm'],
    ])('%s is a 400 naming the field, and nothing is stored', async (_case, body, field) => {
      const org = await newOrg();
      const user = await createUser(org);
      const response = await call('put', `${userPath(org, user.id)}/password`, admin).send(body as object);
      expectScimError(response, 400, 'invalidValue', field);
      expect(response.body.detail).not.toContain(PASSWORD);
      expect(await storedPasswordHash(user.id)).toBeNull();
    });

    it('an unknown user or one of another organization is a 404', async () => {
      const org = await newOrg();
      const other = await newOrg();
      const theirs = await createUser(other);
      expectScimError(await call('put', `${userPath(org, randomUUID())}/password`, admin).send({ password: PASSWORD }), 404, undefined, /does not exist/);
      expectScimError(await call('put', `${userPath(org, theirs.id)}/password`, admin).send({ password: PASSWORD }), 404, undefined, /does not exist/);
      expect(await storedPasswordHash(theirs.id)).toBeNull();
    });
  });

  describe('reads of secret material for the token service (UserRepository)', () => {
    it('findWithPasswordHash: the user, its organization settings and its hash; undefined for an unknown userName or another org', async () => {
      const org = await newOrg();
      const other = await newOrg();
      const created = await createUser(org, { userName: 'card.holder', password: PASSWORD, groups: ['G'] });
      const users = t.app.get(UserRepository);

      const found = await users.findWithPasswordHash(org, 'card.holder');
      expect(found).toEqual({
        user: expect.objectContaining({
          id: created.id,
          org_id: org,
          user_name: 'card.holder',
          user_type: 'cardholder',
          role: 'Cardholder',
          groups: ['G'],
          disabled: false,
          has_password: true,
        }),
        orgSettings: {
          automaticDeviceCreation: false,
          applicationIdPolicy: 'any',
          passwordGrant: true,
          passwordOnlySignIn: false,
          passwordlessSignIn: false,
          accessTokenLifetime: null,
        },
        passwordHash: expect.stringMatching(SCRYPT_HASH),
        mustEnrolSecondFactor: false,
      });
      // The hash travels only in passwordHash, never inside the user row.
      expect(JSON.stringify(found!.user)).not.toContain('scrypt');
      expect(await t.app.get(PasswordHasher).verify(PASSWORD, found!.passwordHash!)).toBe(true);

      const withoutPassword = await createUser(org, { userName: 'no.password' });
      expect((await users.findWithPasswordHash(org, 'no.password'))?.passwordHash).toBeNull();
      expect((await users.findWithPasswordHash(org, 'no.password'))?.user.id).toBe(withoutPassword.id);
      expect(await users.findWithPasswordHash(org, 'nobody')).toBeUndefined();
      expect(await users.findWithPasswordHash(other, 'card.holder')).toBeUndefined();
    });

    it('findWithCertificates: the user, its organization settings and its certificates with PEM and expiry', async () => {
      const org = await newOrg();
      await call('put', `/organizations/${org}/settings`, admin).send({ automaticDeviceCreation: false, applicationIdPolicy: 'any', passwordGrant: false });
      const operator = await createUser(org, { userName: 'op.cert', userType: 'operator', role: 'Help Desk' });
      const first = await certificate();
      const second = await certificate();
      const enrolled = [];
      for (const cert of [first, second]) {
        const response = await enroll(org, operator.id, cert.pem);
        expect(response.status).toBe(201);
        enrolled.push(response.body);
        t.clock.advance(1);
      }
      const users = t.app.get(UserRepository);

      const found = await users.findWithCertificates(org, 'op.cert');
      expect(found).toEqual({
        user: expect.objectContaining({
          id: operator.id,
          user_name: 'op.cert',
          user_type: 'operator',
          has_password: false,
          certificate_thumbprints: [first.thumbprint, second.thumbprint],
        }),
        orgSettings: expect.objectContaining({ passwordGrant: false }),
        certificates: enrolled.map((view, i) => ({
          thumbprint: [first, second][i].thumbprint,
          pem: expect.stringContaining('-----BEGIN CERTIFICATE-----'),
          not_before: new Date(view.notBefore),
          not_after: new Date(view.notAfter),
          expires_at: new Date(view.expiresAt),
        })),
      });
      expect(new X509Certificate(found!.certificates[0].pem).raw.equals(new X509Certificate(first.pem).raw)).toBe(true);

      await createUser(org, { userName: 'no.cert' });
      expect((await users.findWithCertificates(org, 'no.cert'))?.certificates).toEqual([]);
      expect(await users.findWithCertificates(org, 'nobody')).toBeUndefined();
      expect(await users.findWithCertificates(await newOrg(), 'op.cert')).toBeUndefined();
    });
  });

  describe('who may call (DECISIONS 11, 2)', () => {
    const routes: [HttpMethod, string][] = [
      ['post', '/organizations/ORG/users'],
      ['get', '/organizations/ORG/users'],
      ['get', '/organizations/ORG/users/USER'],
      ['patch', '/organizations/ORG/users/USER'],
      ['delete', '/organizations/ORG/users/USER'],
      ['post', '/organizations/ORG/users/USER/certificates'],
      ['put', '/organizations/ORG/users/USER/password'],
    ];
    /** A body that would be valid for the route, so only the caller decides the answer. */
    const bodyFor = async (method: HttpMethod, path: string): Promise<Record<string, unknown> | undefined> => {
      if (method === 'get' || method === 'delete') return undefined;
      if (path.endsWith('/users')) return { userName: `denied${++counter}`, role: 'Cardholder' };
      if (path.endsWith('/certificates')) return { pem: (await certificate()).pem };
      if (path.endsWith('/password')) return { password: PASSWORD };
      return { displayName: 'Changed' };
    };
    const send = async (method: HttpMethod, path: string, token?: string) => {
      const body = await bodyFor(method, path);
      const request = call(method, path, token);
      return body ? request.send(body) : request;
    };

    it.each(routes)('%s %s without a token is 401 with a Bearer challenge', async (method, path) => {
      const org = await newOrg();
      const user = await createUser(org);
      const response = await send(method, path.replace('ORG', org).replace('USER', user.id));
      expectScimError(response, 401, undefined, /\S/);
      expect(response.headers['www-authenticate']).toMatch(/^Bearer/);
      expect((await call('get', userPath(org, user.id), admin)).body).toEqual(user);
    });

    it.each(routes)('%s %s by a system account without organizationAdministrator is 403 saying why, and changes nothing', async (method, path) => {
      const { org, plainToken } = await orgWithAccounts();
      const user = await createUser(org);
      const response = await send(method, path.replace('ORG', org).replace('USER', user.id), plainToken);
      expectScimError(response, 403, undefined, /administrator/i);
      expect((await call('get', userPath(org, user.id), admin)).body).toEqual(user);
      expect((await call('get', usersPath(org), admin)).body.totalResults).toBe(1);
    });

    it.each(routes)('%s %s by an organization administrator naming another org or an unknown org: the same 404', async (method, path) => {
      const mine = await orgWithAccounts();
      const theirs = await newOrg();
      const user = await createUser(theirs);
      const unknown = newOrgId('nowhere');
      const answer = async (org: string) => {
        const response = await send(method, path.replace('ORG', org).replace('USER', user.id), mine.orgAdminToken);
        return { status: response.status, body: JSON.parse(JSON.stringify(response.body).replaceAll(org, '<org>')) as unknown };
      };
      const other = await answer(theirs);
      const missing = await answer(unknown);
      expect(other.status).toBe(404);
      expect(other.body).toEqual({ schemas: [SCIM_ERROR], status: '404', detail: expect.any(String) });
      expect(other).toEqual(missing);
      expect((await call('get', userPath(theirs, user.id), admin)).body).toEqual(user);
      expect((await call('get', usersPath(theirs), admin)).body.totalResults).toBe(1);
    });

    it("an organization administrator cannot reach another org's user through its own org path", async () => {
      const mine = await orgWithAccounts();
      const theirs = await newOrg();
      const user = await createUser(theirs);
      expectScimError(await call('get', userPath(mine.org, user.id), mine.orgAdminToken), 404, undefined, /\S/);
      expectScimError(await call('delete', userPath(mine.org, user.id), mine.orgAdminToken), 404, undefined, /\S/);
      expect((await call('get', userPath(theirs, user.id), admin)).status).toBe(200);
    });

    it('an organization administrator manages the users of its own organization', async () => {
      const { org, orgAdminToken } = await orgWithAccounts();
      const created = await call('post', usersPath(org), orgAdminToken).send({ userName: 'by.org.admin', role: 'Cardholder', password: PASSWORD });
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      expect((await call('get', usersPath(org), orgAdminToken)).body.totalResults).toBe(1);
      expect((await call('get', userPath(org, id), orgAdminToken)).status).toBe(200);
      expect((await call('patch', userPath(org, id), orgAdminToken).send({ groups: ['G'] })).status).toBe(200);
      expect((await call('put', `${userPath(org, id)}/password`, orgAdminToken).send({ password: 'yet-another-passphrase' })).status).toBe(204);
      expect((await enroll(org, id, (await certificate()).pem, 'pem-file', orgAdminToken)).status).toBe(201);
      expect((await call('delete', userPath(org, id), orgAdminToken)).status).toBe(204);
    });

    it('an unknown organization is 404 for the platform administrator too', async () => {
      const unknown = newOrgId('nowhere');
      expectScimError(await call('get', usersPath(unknown), admin), 404, undefined, /\S/);
      expectScimError(await call('post', usersPath(unknown), admin).send({ userName: 'ghost', role: 'Cardholder' }), 404, undefined, /\S/);
    });
  });

  it('every change is audited (actor, org, action, target, outcome); no password or hash reaches the audit log or the logs', async () => {
    const { org, orgAdminToken } = await orgWithAccounts();
    const created = await call('post', usersPath(org), orgAdminToken).send({
      userName: 'audited',
      role: 'Cardholder',
      password: PASSWORD,
      emails: [{ value: 'private@example.com' }],
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const firstHash = (await storedPasswordHash(id))!;
    const secondPassword = 'second-secret-passphrase';
    expect((await call('patch', userPath(org, id), orgAdminToken).send({ role: 'Issuance', displayName: 'Audited User' })).status).toBe(200);
    expect((await call('put', `${userPath(org, id)}/password`, orgAdminToken).send({ password: secondPassword })).status).toBe(204);
    const secondHash = (await storedPasswordHash(id))!;
    const refusedPassword = 'short-pw';
    expect((await call('put', `${userPath(org, id)}/password`, orgAdminToken).send({ password: refusedPassword })).status).toBe(400);
    const cert = await certificate();
    expect((await enroll(org, id, cert.pem, 'pem-file', orgAdminToken)).status).toBe(201);
    expect((await call('delete', userPath(org, id), orgAdminToken)).status).toBe(204);

    const { rows } = await t.db.query<{ action: string; actor: string; target: string | null; outcome: string; details: Record<string, unknown> }>(
      "SELECT action, actor, target, outcome, details FROM audit_events WHERE org_id = $1 AND action LIKE 'user.%' ORDER BY id",
      [org],
    );
    const actor = `${org}-admin`;
    expect(rows).toEqual([
      {
        action: 'user.create',
        actor,
        target: id,
        outcome: 'success',
        details: expect.objectContaining({ userName: 'audited', userType: 'cardholder', role: 'Cardholder', hasPassword: true }),
      },
      {
        action: 'user.update',
        actor,
        target: id,
        outcome: 'success',
        details: expect.objectContaining({ userName: 'audited', role: 'Issuance', changed: ['role', 'displayName'] }),
      },
      { action: 'user.password.set', actor, target: id, outcome: 'success', details: expect.objectContaining({ userName: 'audited' }) },
      { action: 'user.certificate.enroll', actor, target: id, outcome: 'success', details: expect.objectContaining({ thumbprint: cert.thumbprint }) },
      { action: 'user.delete', actor, target: id, outcome: 'success', details: expect.objectContaining({ userName: 'audited' }) },
    ]);

    const secrets = [PASSWORD, secondPassword, refusedPassword, firstHash, secondHash, PLATFORM_ADMIN_SECRET];
    for (const value of secrets) {
      const anywhere = await t.db.query('SELECT id FROM audit_events a WHERE position($1 in row_to_json(a)::text) > 0', [value]);
      expect(anywhere.rows).toEqual([]);
    }
    // Personal data stays out of the append-only log.
    const personal = await t.db.query("SELECT id FROM audit_events a WHERE position('private@example.com' in row_to_json(a)::text) > 0");
    expect(personal.rows).toEqual([]);
    const logs = t.logs.join('');
    expect(logs.length).toBeGreaterThan(0);
    for (const value of [...secrets, 'scrypt$']) expect(logs).not.toContain(value);
  });
});
