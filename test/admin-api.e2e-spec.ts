import { createHash, createHmac } from 'node:crypto';
import type { Response } from 'supertest';
import {
  PLATFORM_ADMIN_SECRET,
  TestApp,
  createOrganization,
  createSystemAccount,
  createTestApp,
  platformAdminToken,
  tokenBySecret,
  tokenRequest,
  expectScimError,
  HttpMethod,
  adminCall,
  createAdminAndPlainAccounts,
  makeCertificate,
  uploadCertificate,
} from '@app/testing';

/**
 * The administration API of DECISIONS 11 (organizations, system accounts, secrets, the certificate
 * list), with the tenancy rules of DECISIONS 2, the errors of DECISIONS 7 and the credential rules
 * of DECISIONS 4, driven over HTTP as an integrator would.
 */

const SCIM_ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const LIST_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
const ISO_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const PUBLIC_BASE_URL = 'https://api.example.test';
const AUTH_BASE_URL = 'https://auth.example.test';
const DAY_MS = 86_400_000;
const DEFAULT_SETTINGS = {
  automaticDeviceCreation: false,
  applicationIdPolicy: 'any',
  passwordGrant: true,
  passwordOnlySignIn: false,
  passwordlessSignIn: false,
  accessTokenLifetime: null,
};

describe('admin API (DECISIONS 11)', () => {
  let t: TestApp;
  let admin: string;
  let counter = 0;
  /** A fresh organization id per test, so tests never share data. */
  const newOrgId = (prefix = 'org') => `${prefix}_${++counter}`;

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

  function orgView(id: string, name: string, settings: Record<string, unknown>) {
    return {
      id,
      name,
      settings,
      meta: {
        resourceType: 'Organization',
        created: expect.stringMatching(ISO_MS_UTC),
        lastModified: expect.stringMatching(ISO_MS_UTC),
        location: `${PUBLIC_BASE_URL}/admin/v1/organizations/${id}`,
        version: expect.stringMatching(/\S/),
      },
    };
  }

  function accountView(
    org: string,
    clientId: string,
    fields: { role: string; organizationAdministrator: boolean; disabled: boolean; description: string | null; backchannelAuthentication?: unknown },
  ) {
    return {
      id: clientId,
      clientId,
      tokenUrl: `${AUTH_BASE_URL}/authentication/customer/${org}/token`,
      // Not enabled for CIBA unless an administrator enabled it (DECISIONS 16).
      backchannelAuthentication: null,
      // Not set up as an OpenID Connect client unless an administrator set it up (DECISIONS 15.1).
      oidcClient: false,
      ...fields,
      meta: {
        resourceType: expect.stringMatching(/\S/),
        created: expect.stringMatching(ISO_MS_UTC),
        lastModified: expect.stringMatching(ISO_MS_UTC),
        location: `${PUBLIC_BASE_URL}/admin/v1/organizations/${org}/system-accounts/${clientId}`,
        version: expect.stringMatching(/\S/),
      },
    };
  }

  const versionNumber = (version: string) => Number(version.replace(/\D/g, ''));

  /** Secret expiry of DECISIONS 4: 5 years from now by the service's clock (leap days allowed). */
  function expectFiveYearsAhead(expiresAt: string): void {
    expect(expiresAt).toMatch(ISO_MS_UTC);
    const ahead = new Date(expiresAt).getTime() - t.clock.now().getTime();
    expect(ahead).toBeGreaterThanOrEqual(1825 * DAY_MS - 60_000);
    expect(ahead).toBeLessThanOrEqual(1827 * DAY_MS);
  }

  async function newOrg(prefix?: string): Promise<string> {
    const id = newOrgId(prefix);
    await createOrganization(t.http, admin, id);
    return id;
  }

  /** A new organization with an organization administrator and a plain account, with tokens. */
  const orgWithAccounts = async () => createAdminAndPlainAccounts(t.http, admin, await newOrg());

  function decodeJwtPayload(jwt: string): Record<string, unknown> {
    return JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8')) as Record<string, unknown>;
  }

  describe('organizations', () => {
    it('POST creates an organization with default settings, Location = meta.location, timestamps by the clock', async () => {
      const id = newOrgId();
      const response = await call('post', '/organizations', admin).send({ id, name: 'Acme Corp' });
      expect(response.status).toBe(201);
      expectJson(response);
      expect(response.body).toEqual(orgView(id, 'Acme Corp', DEFAULT_SETTINGS));
      expect(response.headers.location).toBe(response.body.meta.location);
      const now = t.clock.now().toISOString();
      expect(response.body.meta.created).toBe(now);
      expect(response.body.meta.lastModified).toBe(now);

      const read = await call('get', `/organizations/${id}`, admin);
      expect(read.status).toBe(200);
      expectJson(read);
      expect(read.body).toEqual(response.body);
    });

    it('POST takes partial settings and fills the rest with defaults', async () => {
      const id = newOrgId();
      const response = await call('post', '/organizations', admin).send({
        id,
        name: 'With settings',
        settings: { passwordGrant: false, accessTokenLifetime: 900 },
      });
      expect(response.status).toBe(201);
      expect(response.body).toEqual(orgView(id, 'With settings', { ...DEFAULT_SETTINGS, passwordGrant: false, accessTokenLifetime: 900 }));
    });

    it('GET /organizations is a SCIM ListResponse with startIndex/count paging', async () => {
      for (let i = 0; i < 3; i++) await newOrg('list');
      const all = await call('get', '/organizations?count=1000', admin);
      expect(all.status).toBe(200);
      expectJson(all);
      const { rows } = await t.db.query<{ n: string }>('SELECT count(*) AS n FROM organizations');
      const total = Number(rows[0].n);
      expect(total).toBeGreaterThanOrEqual(4);
      expect(all.body).toEqual({ schemas: [LIST_RESPONSE], totalResults: total, itemsPerPage: total, startIndex: 1, Resources: expect.any(Array) });
      expect(all.body.Resources).toHaveLength(total);
      for (const resource of all.body.Resources) expect(resource).toEqual(orgView(resource.id, resource.name, expect.any(Object)));
      expect(all.body.Resources.map((r: { id: string }) => r.id)).toEqual(expect.arrayContaining(['platform']));

      const page = await call('get', '/organizations?startIndex=2&count=2', admin);
      expect(page.status).toBe(200);
      expect(page.body).toEqual({ schemas: [LIST_RESPONSE], totalResults: total, itemsPerPage: 2, startIndex: 2, Resources: all.body.Resources.slice(1, 3) });

      const beyond = await call('get', `/organizations?startIndex=${total + 5}`, admin);
      expect(beyond.status).toBe(200);
      expect(beyond.body).toEqual({ schemas: [LIST_RESPONSE], totalResults: total, itemsPerPage: 0, startIndex: total + 5, Resources: [] });

      const clamped = await call('get', '/organizations?count=5000', admin);
      expect(clamped.status).toBe(200);
      expect(clamped.body.itemsPerPage).toBe(total);
    });

    it.each([
      ['count=abc', 'count'],
      ['startIndex=first', 'startIndex'],
    ])('GET /organizations?%s is a 400 naming the parameter', async (query, field) => {
      const response = await call('get', `/organizations?${query}`, admin);
      expectScimError(response, 400, 'invalidValue', field);
    });

    it('PATCH changes name and settings, answers the whole resource, version grows', async () => {
      const id = await newOrg();
      const before = await call('get', `/organizations/${id}`, admin);
      t.clock.advance(5);
      const patched = await call('patch', `/organizations/${id}`, admin).send({ name: 'Renamed', settings: { passwordGrant: false } });
      expect(patched.status).toBe(200);
      expectJson(patched);
      expect(patched.body).toEqual(orgView(id, 'Renamed', { ...DEFAULT_SETTINGS, passwordGrant: false }));
      expect(patched.body.meta.created).toBe(before.body.meta.created);
      expect(patched.body.meta.lastModified).toBe(t.clock.now().toISOString());
      expect(versionNumber(patched.body.meta.version)).toBeGreaterThan(versionNumber(before.body.meta.version));
      const read = await call('get', `/organizations/${id}`, admin);
      expect(read.body).toEqual(patched.body);
    });

    it('PATCH ignores the read-only attributes id and meta (DECISIONS 7)', async () => {
      const id = await newOrg();
      const response = await call('patch', `/organizations/${id}`, admin).send({ id: 'someone_else', meta: { version: '99' }, name: 'Still me' });
      expect(response.status).toBe(200);
      expect(response.body).toEqual(orgView(id, 'Still me', DEFAULT_SETTINGS));
    });

    it('PUT settings replaces the settings and answers them; GET shows them', async () => {
      const id = await newOrg();
      const settings = {
        automaticDeviceCreation: true,
        applicationIdPolicy: 'certified',
        passwordGrant: false,
        passwordOnlySignIn: true,
        passwordlessSignIn: true,
        accessTokenLifetime: 600,
      };
      const response = await call('put', `/organizations/${id}/settings`, admin).send(settings);
      expect(response.status).toBe(200);
      expectJson(response);
      expect(response.body).toEqual(settings);
      const read = await call('get', `/organizations/${id}`, admin);
      expect(read.body.settings).toEqual(settings);
    });

    it('a settings change (accessTokenLifetime 600) changes expires_in of new tokens of that org only', async () => {
      const org = await newOrg();
      const other = await newOrg();
      const account = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
      const otherAccount = await createSystemAccount(t.http, admin, other, { role: 'Issuance' });
      const form = (a: { clientId: string; secret: string }) => ({ grant_type: 'client_credentials', client_id: a.clientId, client_secret: a.secret });

      const before = await tokenRequest(t.http, org, form(account));
      expect(before.status).toBe(200);
      expect(before.body.expires_in).toBe(3600);

      const put = await call('put', `/organizations/${org}/settings`, admin).send({
        automaticDeviceCreation: false,
        applicationIdPolicy: 'any',
        accessTokenLifetime: 600,
      });
      expect(put.status).toBe(200);
      expect(put.body.accessTokenLifetime).toBe(600);

      const after = await tokenRequest(t.http, org, form(account));
      expect(after.status).toBe(200);
      expect(after.body.expires_in).toBe(600);
      const claims = decodeJwtPayload(after.body.access_token);
      expect((claims.exp as number) - (claims.iat as number)).toBe(600);

      const unaffected = await tokenRequest(t.http, other, form(otherAccount));
      expect(unaffected.status).toBe(200);
      expect(unaffected.body.expires_in).toBe(3600);
    });

    it('a duplicate organization id is a 409 uniqueness', async () => {
      const id = await newOrg();
      const response = await call('post', '/organizations', admin).send({ id, name: 'Again' });
      expectScimError(response, 409, 'uniqueness', id);
    });

    describe('400 for each bad field, naming it', () => {
      it.each<[string, Record<string, unknown>, string]>([
        ['id with a hyphen', { id: 'has-hyphen', name: 'x' }, 'id'],
        ['id of 65 characters', { id: 'a'.repeat(65), name: 'x' }, 'id'],
        ['empty id', { id: '', name: 'x' }, 'id'],
        ['missing id', { name: 'x' }, 'id'],
        ['id not a string', { id: 42, name: 'x' }, 'id'],
        ['empty name', { id: 'valid_but_empty_name', name: '' }, 'name'],
        ['blank name', { id: 'valid_but_blank_name', name: '   ' }, 'name'],
        ['missing name', { id: 'valid_but_no_name' }, 'name'],
        ['unknown attribute', { id: 'valid_unknown_attr', name: 'x', colour: 'blue' }, 'colour'],
        ['automaticDeviceCreation not a boolean', { id: 'valid_s1', name: 'x', settings: { automaticDeviceCreation: 'yes' } }, 'automaticDeviceCreation'],
        ['applicationIdPolicy not a policy', { id: 'valid_s2', name: 'x', settings: { applicationIdPolicy: 'sometimes' } }, 'applicationIdPolicy'],
        ['passwordGrant not a boolean', { id: 'valid_s3', name: 'x', settings: { passwordGrant: 1 } }, 'passwordGrant'],
        ['accessTokenLifetime a string', { id: 'valid_s4', name: 'x', settings: { accessTokenLifetime: '600' } }, 'accessTokenLifetime'],
        ['accessTokenLifetime 299', { id: 'valid_s5', name: 'x', settings: { accessTokenLifetime: 299 } }, 'accessTokenLifetime'],
        ['accessTokenLifetime 86401', { id: 'valid_s6', name: 'x', settings: { accessTokenLifetime: 86401 } }, 'accessTokenLifetime'],
        ['unknown setting', { id: 'valid_s7', name: 'x', settings: { darkMode: true } }, 'darkMode'],
        ['settings not an object', { id: 'valid_s8', name: 'x', settings: 'none' }, 'settings'],
      ])('POST /organizations with %s', async (_case, body, field) => {
        const response = await call('post', '/organizations', admin).send(body);
        expectScimError(response, 400, 'invalidValue', field);
        if (typeof body.id === 'string' && body.id.startsWith('valid_')) {
          expect((await call('get', `/organizations/${body.id}`, admin)).status).toBe(404);
        }
      });

      it.each<[string, Record<string, unknown>, string]>([
        ['missing automaticDeviceCreation', { applicationIdPolicy: 'any' }, 'automaticDeviceCreation'],
        ['automaticDeviceCreation a string', { automaticDeviceCreation: 'false', applicationIdPolicy: 'any' }, 'automaticDeviceCreation'],
        ['missing applicationIdPolicy', { automaticDeviceCreation: false }, 'applicationIdPolicy'],
        ['applicationIdPolicy unknown', { automaticDeviceCreation: false, applicationIdPolicy: 'none' }, 'applicationIdPolicy'],
        ['passwordGrant a string', { automaticDeviceCreation: false, applicationIdPolicy: 'any', passwordGrant: 'yes' }, 'passwordGrant'],
        ['accessTokenLifetime 299', { automaticDeviceCreation: false, applicationIdPolicy: 'any', accessTokenLifetime: 299 }, 'accessTokenLifetime'],
        ['accessTokenLifetime 86401', { automaticDeviceCreation: false, applicationIdPolicy: 'any', accessTokenLifetime: 86401 }, 'accessTokenLifetime'],
        ['accessTokenLifetime not whole', { automaticDeviceCreation: false, applicationIdPolicy: 'any', accessTokenLifetime: 600.5 }, 'accessTokenLifetime'],
        ['unknown attribute', { automaticDeviceCreation: false, applicationIdPolicy: 'any', colour: 'red' }, 'colour'],
      ])('PUT settings with %s', async (_case, body, field) => {
        const id = await newOrg();
        const response = await call('put', `/organizations/${id}/settings`, admin).send(body);
        expectScimError(response, 400, 'invalidValue', field);
        expect((await call('get', `/organizations/${id}`, admin)).body.settings).toEqual(DEFAULT_SETTINGS);
      });

      it('PUT settings accepts the bounds 300 and 86400', async () => {
        const id = await newOrg();
        for (const lifetime of [300, 86400]) {
          const response = await call('put', `/organizations/${id}/settings`, admin).send({
            automaticDeviceCreation: false,
            applicationIdPolicy: 'any',
            accessTokenLifetime: lifetime,
          });
          expect(response.status).toBe(200);
          expect(response.body.accessTokenLifetime).toBe(lifetime);
        }
      });

      it.each<[string, Record<string, unknown>, string]>([
        ['empty name', { name: '' }, 'name'],
        ['unknown attribute', { shoeSize: 44 }, 'shoeSize'],
        ['accessTokenLifetime outside 300-86400', { settings: { accessTokenLifetime: 100 } }, 'accessTokenLifetime'],
      ])('PATCH organization with %s', async (_case, body, field) => {
        const id = await newOrg();
        const response = await call('patch', `/organizations/${id}`, admin).send(body);
        expectScimError(response, 400, 'invalidValue', field);
      });

      it.each<[HttpMethod, string]>([
        ['post', '/organizations'],
        ['patch', '/organizations/ORG'],
        ['put', '/organizations/ORG/settings'],
        ['post', '/organizations/ORG/system-accounts'],
        ['patch', '/organizations/ORG/system-accounts/ORG-admin'],
        ['post', '/organizations/ORG/system-accounts/ORG-admin/secrets'],
      ])('a non-JSON body to %s %s is a 400 invalidSyntax', async (method, path) => {
        const org = await newOrg();
        await createSystemAccount(t.http, admin, org, { suffix: 'admin', role: 'Administration' });
        const response = await call(method, path.replaceAll('ORG', org), admin).set('Content-Type', 'application/json').send('{"id": "broken",');
        expectScimError(response, 400, 'invalidSyntax', /\S/);
      });
    });
  });

  describe('who may call (DECISIONS 11, 2)', () => {
    const routes: [HttpMethod, string][] = [
      ['post', '/organizations'],
      ['get', '/organizations'],
      ['get', '/organizations/ORG'],
      ['patch', '/organizations/ORG'],
      ['put', '/organizations/ORG/settings'],
      ['post', '/organizations/ORG/system-accounts'],
      ['get', '/organizations/ORG/system-accounts'],
      ['get', '/organizations/ORG/system-accounts/ORG-admin'],
      ['patch', '/organizations/ORG/system-accounts/ORG-admin'],
      ['post', '/organizations/ORG/system-accounts/ORG-admin/secrets'],
      ['get', '/organizations/ORG/system-accounts/ORG-admin/secrets'],
      ['get', '/organizations/ORG/system-accounts/ORG-admin/certificates'],
    ];
    /** A body that would be valid for the route, so only the caller decides the answer. */
    const bodyFor = (method: HttpMethod, path: string): Record<string, unknown> | undefined => {
      if (method === 'get') return undefined;
      if (path === '/organizations') return { id: newOrgId('denied'), name: 'Denied' };
      if (path.endsWith('/settings')) return { automaticDeviceCreation: false, applicationIdPolicy: 'any' };
      if (path.endsWith('/system-accounts')) return { role: 'Issuance' };
      if (path.endsWith('/secrets')) return {};
      if (path.includes('/system-accounts/')) return { description: 'changed' };
      return { name: 'Changed' };
    };

    it.each(routes)('%s %s without a token is 401 with a Bearer challenge', async (method, path) => {
      const org = await newOrg();
      await createSystemAccount(t.http, admin, org, { suffix: 'admin', role: 'Administration', organizationAdministrator: true });
      const resolved = path.replaceAll('ORG', org);
      const body = bodyFor(method, path);
      const request = call(method, resolved);
      const response = body ? await request.send(body) : await request;
      expectScimError(response, 401, undefined, /\S/);
      expect(response.headers['www-authenticate']).toMatch(/^Bearer/);
    });

    it('a malformed bearer token is 401 invalid_token', async () => {
      const response = await call('get', '/organizations/platform', 'not.a.token');
      expectScimError(response, 401, undefined, /\S/);
      expect(response.headers['www-authenticate']).toMatch(/^Bearer .*error="invalid_token"/);
    });

    it.each(routes)('%s %s by a system account without organizationAdministrator is 403 saying why', async (method, path) => {
      const { org, plainToken } = await orgWithAccounts();
      const resolved = path.replaceAll('ORG', org);
      const body = bodyFor(method, path);
      const request = call(method, resolved, plainToken);
      const response = body ? await request.send(body) : await request;
      expectScimError(response, 403, undefined, /administrator/i);
    });

    it("an organization administrator changes its organization's settings but not its name (403, recorded), and nothing changes", async () => {
      const { org, orgAdminToken, orgAdmin } = await orgWithAccounts();
      const renamed = await call('patch', `/organizations/${org}`, orgAdminToken).send({ name: 'Taken over', settings: { passwordGrant: false } });
      expectScimError(renamed, 403, undefined, /Only the platform administrator/);
      const read = await call('get', `/organizations/${org}`, orgAdminToken);
      expect(read.body).toMatchObject({ name: `Organization ${org}`, settings: { passwordGrant: true } });
      const denied = await t.db.query("SELECT actor, details FROM audit_events WHERE org_id = $1 AND action = 'admin.access_denied'", [org]);
      expect(denied.rows).toEqual([{ actor: orgAdmin.clientId, details: { method: 'PATCH', route: '/admin/v1/organizations/:org', status: 403 } }]);
      const configured = await call('patch', `/organizations/${org}`, orgAdminToken).send({ settings: { passwordGrant: false } });
      expect(configured.status).toBe(200);
      expect(configured.body.settings.passwordGrant).toBe(false);
    });

    it('a 403 changes nothing', async () => {
      const { org, plainToken, plain } = await orgWithAccounts();
      expect(
        (await call('patch', `/organizations/${org}/system-accounts/${plain.clientId}`, plainToken).send({ organizationAdministrator: true })).status,
      ).toBe(403);
      const read = await call('get', `/organizations/${org}/system-accounts/${plain.clientId}`, admin);
      expect(read.body.organizationAdministrator).toBe(false);
    });

    it.each(routes.filter(([, path]) => path !== '/organizations'))(
      '%s %s by an organization administrator naming another org or an unknown org: the same 404',
      async (method, path) => {
        const mine = await orgWithAccounts();
        const theirs = await orgWithAccounts();
        const unknown = newOrgId('nowhere');
        const answer = async (org: string) => {
          const body = bodyFor(method, path);
          const request = call(method, path.replaceAll('ORG', org), mine.orgAdminToken);
          const response = body ? await request.send(body) : await request;
          return { status: response.status, body: JSON.parse(JSON.stringify(response.body).replaceAll(org, '<org>')) as unknown };
        };
        const other = await answer(theirs.org);
        const missing = await answer(unknown);
        expect(other.status).toBe(404);
        expect(other.body).toEqual({ schemas: [SCIM_ERROR], status: '404', detail: expect.any(String) });
        expect(other).toEqual(missing);
        // Nothing of the other organization changed.
        const read = await call('get', `/organizations/${theirs.org}/system-accounts/${theirs.orgAdmin.clientId}`, admin);
        expect(read.body).toEqual(
          accountView(theirs.org, theirs.orgAdmin.clientId, { role: 'Administration', organizationAdministrator: true, disabled: false, description: null }),
        );
      },
    );

    it("an organization administrator cannot reach another org's account through its own org path", async () => {
      const mine = await orgWithAccounts();
      const theirs = await orgWithAccounts();
      const response = await call('get', `/organizations/${mine.org}/system-accounts/${theirs.orgAdmin.clientId}`, mine.orgAdminToken);
      expectScimError(response, 404, undefined, /\S/);
    });

    it('an organization administrator manages its own organization', async () => {
      const { org, orgAdminToken } = await orgWithAccounts();
      const read = await call('get', `/organizations/${org}`, orgAdminToken);
      expect(read.status).toBe(200);
      expect(read.body).toEqual(orgView(org, `Organization ${org}`, DEFAULT_SETTINGS));
      const settings = await call('put', `/organizations/${org}/settings`, orgAdminToken).send({ automaticDeviceCreation: true, applicationIdPolicy: 'any' });
      expect(settings.status).toBe(200);
      expect(settings.body.automaticDeviceCreation).toBe(true);
      const created = await call('post', `/organizations/${org}/system-accounts`, orgAdminToken).send({ suffix: 'byOrgAdmin', role: 'Help Desk' });
      expect(created.status).toBe(201);
      expect(created.body.clientId).toBe(`${org}-byOrgAdmin`);
      const list = await call('get', `/organizations/${org}/system-accounts`, orgAdminToken);
      expect(list.status).toBe(200);
      expect(list.body.totalResults).toBe(3);
    });

    it('an organization administrator cannot create or list organizations (403)', async () => {
      const { orgAdminToken } = await orgWithAccounts();
      const id = newOrgId('forbidden');
      const create = await call('post', '/organizations', orgAdminToken).send({ id, name: 'Not allowed' });
      expectScimError(create, 403, undefined, /platform administrator/i);
      expect((await call('get', `/organizations/${id}`, admin)).status).toBe(404);
      const list = await call('get', '/organizations', orgAdminToken);
      expectScimError(list, 403, undefined, /platform administrator/i);
    });

    it('the platform administrator may act in any organization', async () => {
      const { org, plain } = await orgWithAccounts();
      expect((await call('get', `/organizations/${org}`, admin)).status).toBe(200);
      expect((await call('get', `/organizations/${org}/system-accounts/${plain.clientId}`, admin)).status).toBe(200);
      const created = await call('post', `/organizations/${org}/system-accounts`, admin).send({ role: 'Help Desk' });
      expect(created.status).toBe(201);
      const patched = await call('patch', `/organizations/${org}/system-accounts/${plain.clientId}`, admin).send({ description: 'by platform admin' });
      expect(patched.status).toBe(200);
      expect(patched.body.description).toBe('by platform admin');
    });

    it('an unknown organization is 404 for the platform administrator too', async () => {
      const unknown = newOrgId('nowhere');
      expectScimError(await call('get', `/organizations/${unknown}`, admin), 404, undefined, /\S/);
      expectScimError(await call('post', `/organizations/${unknown}/system-accounts`, admin).send({ role: 'Issuance' }), 404, undefined, /\S/);
      expectScimError(await call('get', `/organizations/${unknown}/system-accounts`, admin), 404, undefined, /\S/);
    });
  });

  describe('system accounts', () => {
    it('a form-encoded or multipart body is 415 naming application/json, and changes nothing (#32 item 8)', async () => {
      const org = await newOrg();
      const form = await call('post', `/organizations/${org}/system-accounts`, admin).type('form').send({ suffix: 'Formed', role: 'Issuance' });
      const multipart = await call('post', `/organizations/${org}/system-accounts`, admin)
        .set('Content-Type', 'multipart/form-data; boundary=x')
        .send('--x\r\nContent-Disposition: form-data; name="suffix"\r\n\r\nFormed\r\n--x--');
      const patch = await call('patch', `/organizations/${org}`, admin).type('form').send({ name: 'Renamed by a form' });
      for (const [name, answer, type] of [
        ['form', form, 'application/x-www-form-urlencoded'],
        ['multipart', multipart, 'multipart/form-data'],
        ['form PATCH', patch, 'application/x-www-form-urlencoded'],
      ] as const) {
        expect({ name, status: answer.status, detail: answer.body.detail }).toEqual({
          name,
          status: 415,
          detail: `Content-Type ${type} is not accepted by the administration API; send the body as application/json.`,
        });
        expectJson(answer);
      }
      expect((await call('get', `/organizations/${org}/system-accounts/${org}-Formed`, admin)).status).toBe(404);
      expect((await call('get', `/organizations/${org}`, admin)).body.name).not.toBe('Renamed by a form');
      // The same body as JSON is taken.
      expect((await call('post', `/organizations/${org}/system-accounts`, admin).send({ suffix: 'Formed', role: 'Issuance' })).status).toBe(201);
    });

    it('POST with a suffix: 201, no-store, Client ID {org}-{suffix}, Token URL, secret shown once', async () => {
      const org = await newOrg();
      const response = await call('post', `/organizations/${org}/system-accounts`, admin).send({
        suffix: 'Billing01',
        role: 'Issuance',
        description: 'Billing robot',
      });
      expect(response.status).toBe(201);
      expectJson(response);
      expect(response.headers['cache-control']).toBe('no-store');
      const clientId = `${org}-Billing01`;
      expect(response.body).toEqual({
        ...accountView(org, clientId, { role: 'Issuance', organizationAdministrator: false, disabled: false, description: 'Billing robot' }),
        secret: { id: expect.any(String), value: expect.stringMatching(/^[A-Za-z0-9_-]{43,}$/), expiresAt: expect.any(String) },
      });
      expect(response.headers.location).toBe(response.body.meta.location);
      expect(response.body.meta.created).toBe(t.clock.now().toISOString());
      expectFiveYearsAhead(response.body.secret.expiresAt);

      const token = await tokenRequest(t.http, org, { grant_type: 'client_credentials', client_id: clientId, client_secret: response.body.secret.value });
      expect(token.status).toBe(200);

      const read = await call('get', `/organizations/${org}/system-accounts/${clientId}`, admin);
      expect(read.status).toBe(200);
      expectJson(read);
      const { secret, ...withoutSecret } = response.body;
      expect(read.body).toEqual(withoutSecret);
      expect(JSON.stringify(read.body)).not.toContain(secret.value);
    });

    it('POST without a suffix generates {org}-OSRV + 9 digits', async () => {
      const org = await newOrg();
      const response = await call('post', `/organizations/${org}/system-accounts`, admin).send({ role: 'Help Desk', organizationAdministrator: true });
      expect(response.status).toBe(201);
      expect(response.body.clientId).toMatch(new RegExp(`^${org}-OSRV\\d{9}$`));
      expect(response.body.id).toBe(response.body.clientId);
      expect(response.body.organizationAdministrator).toBe(true);
      expect(response.body.description).toBeNull();
    });

    it('GET list is a ListResponse without secrets, with paging', async () => {
      const org = await newOrg();
      const created: { clientId: string; secret: string }[] = [];
      for (const suffix of ['a1', 'b2', 'c3', 'd4']) created.push(await createSystemAccount(t.http, admin, org, { suffix, role: 'Issuance' }));
      const all = await call('get', `/organizations/${org}/system-accounts`, admin);
      expect(all.status).toBe(200);
      expectJson(all);
      expect(all.body).toEqual({ schemas: [LIST_RESPONSE], totalResults: 4, itemsPerPage: 4, startIndex: 1, Resources: expect.any(Array) });
      expect(all.body.Resources.map((r: { clientId: string }) => r.clientId).sort()).toEqual(created.map((c) => c.clientId).sort());
      // Each as GET answers it, plus its nearest credential expiry (its one secret's, five years ahead).
      for (const resource of all.body.Resources) {
        expect(resource).toEqual({
          ...accountView(org, resource.clientId, { role: 'Issuance', organizationAdministrator: false, disabled: false, description: null }),
          nearestCredentialExpiry: expect.stringMatching(ISO_MS_UTC),
        });
        expectFiveYearsAhead(resource.nearestCredentialExpiry);
      }
      const text = JSON.stringify(all.body);
      for (const c of created) expect(text).not.toContain(c.secret);

      const page = await call('get', `/organizations/${org}/system-accounts?startIndex=2&count=2`, admin);
      expect(page.status).toBe(200);
      expect(page.body).toEqual({ schemas: [LIST_RESPONSE], totalResults: 4, itemsPerPage: 2, startIndex: 2, Resources: all.body.Resources.slice(1, 3) });

      const beyond = await call('get', `/organizations/${org}/system-accounts?startIndex=10`, admin);
      expect(beyond.body).toEqual({ schemas: [LIST_RESPONSE], totalResults: 4, itemsPerPage: 0, startIndex: 10, Resources: [] });

      expectScimError(await call('get', `/organizations/${org}/system-accounts?count=many`, admin), 400, 'invalidValue', 'count');
    });

    it('GET list with count=0 answers the total and no resources (RFC 7644 3.4.2.4)', async () => {
      const org = await newOrg();
      for (const suffix of ['a1', 'b2', 'c3']) await createSystemAccount(t.http, admin, org, { suffix, role: 'Issuance' });
      const countOnly = await call('get', `/organizations/${org}/system-accounts?count=0`, admin);
      expect(countOnly.status).toBe(200);
      expect(countOnly.body).toEqual({ schemas: [LIST_RESPONSE], totalResults: 3, itemsPerPage: 0, startIndex: 1, Resources: [] });
      const orgs = await call('get', '/organizations?count=0', admin);
      const { rows } = await t.db.query<{ n: string }>('SELECT count(*) AS n FROM organizations');
      expect(orgs.body).toEqual({ schemas: [LIST_RESPONSE], totalResults: Number(rows[0].n), itemsPerPage: 0, startIndex: 1, Resources: [] });
    });

    it('count above 1000 is clamped to 1000, not refused', async () => {
      const org = await newOrg('big');
      const total = 1001;
      for (let start = 0; start < total; start += 50) {
        await Promise.all(
          Array.from({ length: Math.min(50, total - start) }, (_, i) =>
            call('post', `/organizations/${org}/system-accounts`, admin)
              .send({ suffix: `n${String(start + i).padStart(4, '0')}`, role: 'Issuance' })
              .expect(201),
          ),
        );
      }
      const response = await call('get', `/organizations/${org}/system-accounts?count=5000`, admin);
      expect(response.status).toBe(200);
      expect(response.body.totalResults).toBe(total);
      expect(response.body.itemsPerPage).toBe(1000);
      expect(response.body.Resources).toHaveLength(1000);
      const last = await call('get', `/organizations/${org}/system-accounts?startIndex=1001&count=5000`, admin);
      expect(last.body.itemsPerPage).toBe(1);
      expect(last.body.Resources).toHaveLength(1);
    }, 60_000);

    describe('400 for each bad field, naming it', () => {
      it.each<[string, Record<string, unknown>, string]>([
        ['suffix with a hyphen', { suffix: 'bad-suffix', role: 'Issuance' }, 'suffix'],
        ['suffix with an underscore', { suffix: 'bad_suffix', role: 'Issuance' }, 'suffix'],
        ['empty suffix', { suffix: '', role: 'Issuance' }, 'suffix'],
        ['suffix of 65 characters', { suffix: 'a'.repeat(65), role: 'Issuance' }, 'suffix'],
        ['suffix not a string', { suffix: 12, role: 'Issuance' }, 'suffix'],
        ['missing role', { suffix: 'norole' }, 'role'],
        ['empty role', { role: '' }, 'role'],
        ['role not a string', { role: 7 }, 'role'],
        ['organizationAdministrator not a boolean', { role: 'Issuance', organizationAdministrator: 'yes' }, 'organizationAdministrator'],
        ['description too long', { role: 'Issuance', description: 'x'.repeat(501) }, 'description'],
        ['unknown attribute', { role: 'Issuance', scopes: ['all'] }, 'scopes'],
        ['secret given by the caller', { role: 'Issuance', secret: 'my-own-secret' }, 'secret'],
      ])('POST system account with %s', async (_case, body, field) => {
        const org = await newOrg();
        const response = await call('post', `/organizations/${org}/system-accounts`, admin).send(body);
        expectScimError(response, 400, 'invalidValue', field);
        expect((await call('get', `/organizations/${org}/system-accounts`, admin)).body.totalResults).toBe(0);
      });

      it.each<[string, Record<string, unknown>, string]>([
        ['empty role', { role: '' }, 'role'],
        ['disabled not a boolean', { disabled: 'no' }, 'disabled'],
        ['organizationAdministrator not a boolean', { organizationAdministrator: 1 }, 'organizationAdministrator'],
        ['unknown attribute', { clientSecret: 'x' }, 'clientSecret'],
      ])('PATCH system account with %s', async (_case, body, field) => {
        const org = await newOrg();
        const account = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
        const response = await call('patch', `/organizations/${org}/system-accounts/${account.clientId}`, admin).send(body);
        expectScimError(response, 400, 'invalidValue', field);
      });
    });

    it('a duplicate suffix is a 409 uniqueness', async () => {
      const org = await newOrg();
      await createSystemAccount(t.http, admin, org, { suffix: 'twin', role: 'Issuance' });
      const response = await call('post', `/organizations/${org}/system-accounts`, admin).send({ suffix: 'twin', role: 'Help Desk' });
      expectScimError(response, 409, 'uniqueness', `${org}-twin`);
    });

    it('two concurrent creates of one Client ID: exactly one 201 and one 409', async () => {
      const org = await newOrg();
      const responses = await Promise.all(
        [0, 1].map(() => call('post', `/organizations/${org}/system-accounts`, admin).send({ suffix: 'race', role: 'Issuance' })),
      );
      expect(responses.map((r) => r.status).sort()).toEqual([201, 409]);
      const conflict = responses.find((r) => r.status === 409)!;
      expectScimError(conflict, 409, 'uniqueness', `${org}-race`);
      const list = await call('get', `/organizations/${org}/system-accounts`, admin);
      expect(list.body.totalResults).toBe(1);
      const { rows } = await t.db.query('SELECT s.id FROM client_secrets s JOIN system_accounts a ON a.id = s.account_id WHERE a.client_id = $1', [
        `${org}-race`,
      ]);
      expect(rows).toHaveLength(1);
    });

    it('PATCH or GET of an unknown Client ID is 404', async () => {
      const org = await newOrg();
      expectScimError(await call('get', `/organizations/${org}/system-accounts/${org}-ghost`, admin), 404, undefined, /\S/);
      expectScimError(await call('patch', `/organizations/${org}/system-accounts/${org}-ghost`, admin).send({ role: 'Issuance' }), 404, undefined, /\S/);
      expectScimError(await call('post', `/organizations/${org}/system-accounts/${org}-ghost/secrets`, admin).send({}), 404, undefined, /\S/);
      expectScimError(await call('get', `/organizations/${org}/system-accounts/${org}-ghost/secrets`, admin), 404, undefined, /\S/);
      expectScimError(await call('get', `/organizations/${org}/system-accounts/${org}-ghost/certificates`, admin), 404, undefined, /\S/);
    });

    it('PATCH changes role, description and disabled; the answer and GET show them; version grows', async () => {
      const org = await newOrg();
      const account = await createSystemAccount(t.http, admin, org, { suffix: 'worker', role: 'Issuance' });
      const path = `/organizations/${org}/system-accounts/${account.clientId}`;
      const before = await call('get', path, admin);
      t.clock.advance(2);

      const patched = await call('patch', path, admin).send({ role: 'Help Desk', description: 'Night shift', disabled: true });
      expect(patched.status).toBe(200);
      expectJson(patched);
      expect(patched.body).toEqual(
        accountView(org, account.clientId, { role: 'Help Desk', organizationAdministrator: false, disabled: true, description: 'Night shift' }),
      );
      expect(patched.body).not.toHaveProperty('secret');
      expect(patched.body.meta.created).toBe(before.body.meta.created);
      expect(patched.body.meta.lastModified).toBe(t.clock.now().toISOString());
      expect(versionNumber(patched.body.meta.version)).toBeGreaterThan(versionNumber(before.body.meta.version));
      expect((await call('get', path, admin)).body).toEqual(patched.body);

      const cleared = await call('patch', path, admin).send({ description: null, disabled: false });
      expect(cleared.status).toBe(200);
      expect(cleared.body).toEqual(
        accountView(org, account.clientId, { role: 'Help Desk', organizationAdministrator: false, disabled: false, description: null }),
      );
      expect(versionNumber(cleared.body.meta.version)).toBeGreaterThan(versionNumber(patched.body.meta.version));
      expect((await call('get', path, admin)).body).toEqual(cleared.body);
    });

    it('PATCH ignores the read-only attributes id and meta (DECISIONS 7)', async () => {
      const org = await newOrg();
      const account = await createSystemAccount(t.http, admin, org, { suffix: 'ro', role: 'Issuance' });
      const response = await call('patch', `/organizations/${org}/system-accounts/${account.clientId}`, admin).send({
        id: `${org}-other`,
        meta: { version: '42' },
        role: 'Help Desk',
      });
      expect(response.status).toBe(200);
      expect(response.body).toEqual(
        accountView(org, account.clientId, { role: 'Help Desk', organizationAdministrator: false, disabled: false, description: null }),
      );
    });

    it('a role change applies to the live token at once (DECISIONS 3.4)', async () => {
      const org = await newOrg();
      const account = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
      const token = await tokenBySecret(t.http, org, account.clientId, account.secret);
      const whoami = () => t.http.get(`/authentication/customer/${org}/whoami`).auth(token, { type: 'bearer' });
      expect((await whoami()).body).toMatchObject({ clientId: account.clientId, org, role: 'Issuance' });
      expect((await call('patch', `/organizations/${org}/system-accounts/${account.clientId}`, admin).send({ role: 'Help Desk' })).status).toBe(200);
      const after = await whoami();
      expect(after.status).toBe(200);
      expect(after.body).toMatchObject({ clientId: account.clientId, org, role: 'Help Desk' });
    });

    it("disabling stops the account's live token at once; after re-enabling a new token works", async () => {
      const org = await newOrg();
      const account = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
      const path = `/organizations/${org}/system-accounts/${account.clientId}`;
      const form = { grant_type: 'client_credentials', client_id: account.clientId, client_secret: account.secret };
      const token = await tokenBySecret(t.http, org, account.clientId, account.secret);
      const whoami = (bearer: string) => t.http.get(`/authentication/customer/${org}/whoami`).auth(bearer, { type: 'bearer' });
      expect((await whoami(token)).status).toBe(200);

      expect((await call('patch', path, admin).send({ disabled: true })).status).toBe(200);
      const refused = await whoami(token);
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toMatch(/^Bearer /);
      expect(refused.headers['www-authenticate']).toMatch(/error="invalid_token"/);
      expect(refused.headers['www-authenticate']).toMatch(/error_description="[^"]*disabled[^"]*"/i);

      const tokenWhileDisabled = await tokenRequest(t.http, org, form);
      expect(tokenWhileDisabled.status).toBe(401);
      expect(tokenWhileDisabled.body).toEqual({ error: 'invalid_client', error_description: expect.stringMatching(/disabled/i) });

      expect((await call('patch', path, admin).send({ disabled: false })).status).toBe(200);
      const fresh = await tokenRequest(t.http, org, form);
      expect(fresh.status).toBe(200);
      const works = await whoami(fresh.body.access_token);
      expect(works.status).toBe(200);
      expect(works.body).toMatchObject({ clientId: account.clientId, org });
    });
  });

  describe('secrets', () => {
    it("the list answers each account's nearest credential expiry: the earliest among its live secrets and certificates", async () => {
      const org = await newOrg();
      const account = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
      const bare = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
      const nearest = async (clientId: string) => {
        const list = await call('get', `/organizations/${org}/system-accounts`, await platformAdminToken(t.http));
        expect(list.status).toBe(200);
        return (list.body.Resources as Array<{ clientId: string; nearestCredentialExpiry: string | null }>).find((a) => a.clientId === clientId)!
          .nearestCredentialExpiry;
      };
      const [first] = (await call('get', `/organizations/${org}/system-accounts/${account.clientId}/secrets`, admin)).body.Resources as { expiresAt: string }[];
      expect(await nearest(account.clientId)).toBe(first.expiresAt);
      // A certificate whose own notAfter (20 days) comes before its registration's expiry (a year).
      const now = t.clock.now().getTime();
      const certificate = await makeCertificate({ notBefore: new Date(now - 3600_000), notAfter: new Date(now + 20 * DAY_MS) });
      expect((await uploadCertificate(t.http, admin, org, account.clientId, certificate.pem)).status).toBe(201);
      const certificateEnds = new Date(Math.floor((now + 20 * DAY_MS) / 1000) * 1000).toISOString();
      expect(await nearest(account.clientId)).toBe(certificateEnds);
      const soon = await call('post', `/organizations/${org}/system-accounts/${account.clientId}/secrets`, admin).send({
        expiresAt: new Date(now + 10 * DAY_MS).toISOString(),
      });
      expect(soon.status).toBe(201);
      expect(await nearest(account.clientId)).toBe(soon.body.expiresAt);
      // Expired credentials are not live: the next one is the nearest.
      t.clock.advance(11 * 86_400);
      expect(await nearest(account.clientId)).toBe(certificateEnds);
      t.clock.advance(10 * 86_400);
      expect(await nearest(account.clientId)).toBe(first.expiresAt);
      // Both secrets revoked: nothing live, null.
      const secrets = (await call('get', `/organizations/${org}/system-accounts/${bare.clientId}/secrets`, await platformAdminToken(t.http))).body
        .Resources as {
        id: string;
      }[];
      expect(
        (await call('delete', `/organizations/${org}/system-accounts/${bare.clientId}/secrets/${secrets[0].id}`, await platformAdminToken(t.http))).status,
      ).toBe(204);
      expect(await nearest(bare.clientId)).toBeNull();
    });

    it('POST secrets: 201, no-store, a second secret works beside the first (rotation with overlap)', async () => {
      const org = await newOrg();
      const account = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
      const response = await call('post', `/organizations/${org}/system-accounts/${account.clientId}/secrets`, admin).send({});
      expect(response.status).toBe(201);
      expectJson(response);
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.body).toEqual({ id: expect.any(String), value: expect.stringMatching(/^[A-Za-z0-9_-]{43,}$/), expiresAt: expect.any(String) });
      expectFiveYearsAhead(response.body.expiresAt);
      expect(response.body.value).not.toBe(account.secret);

      for (const secret of [account.secret, response.body.value as string]) {
        const token = await tokenRequest(t.http, org, { grant_type: 'client_credentials', client_id: account.clientId, client_secret: secret });
        expect(token.status).toBe(200);
        expect(token.body.token_type).toBe('Bearer');
      }
    });

    it('POST secrets without a body creates a secret with the default expiry', async () => {
      const org = await newOrg();
      const account = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
      const response = await call('post', `/organizations/${org}/system-accounts/${account.clientId}/secrets`, admin);
      expect(response.status).toBe(201);
      expectFiveYearsAhead(response.body.expiresAt);
    });

    it('a secret with a near expiresAt stops working once the clock passes it; the others keep working', async () => {
      const org = await newOrg();
      const account = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
      const expiresAt = new Date(t.clock.now().getTime() + 3600_000).toISOString();
      const created = await call('post', `/organizations/${org}/system-accounts/${account.clientId}/secrets`, admin).send({ expiresAt });
      expect(created.status).toBe(201);
      expect(created.body.expiresAt).toBe(expiresAt);
      const form = (secret: string) => ({ grant_type: 'client_credentials', client_id: account.clientId, client_secret: secret });

      expect((await tokenRequest(t.http, org, form(created.body.value))).status).toBe(200);
      t.clock.advance(3601);
      const expired = await tokenRequest(t.http, org, form(created.body.value));
      expect(expired.status).toBe(401);
      expect(expired.headers['cache-control']).toBe('no-store');
      expect(expired.body).toEqual({ error: 'invalid_client', error_description: expect.stringMatching(/expired/i) });
      expect((await tokenRequest(t.http, org, form(account.secret))).status).toBe(200);
    });

    it.each<[string, Record<string, unknown>]>([
      ['in the past', { expiresAt: 'PAST' }],
      ['equal to now', { expiresAt: 'NOW' }],
      ['not a date', { expiresAt: 'tomorrow' }],
      ['a number', { expiresAt: 1767225600 }],
    ])('POST secrets with expiresAt %s is a 400 naming expiresAt', async (_case, body) => {
      const org = await newOrg();
      const account = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
      const now = t.clock.now().getTime();
      const resolved =
        body.expiresAt === 'PAST' ? new Date(now - 60_000).toISOString() : body.expiresAt === 'NOW' ? new Date(now).toISOString() : body.expiresAt;
      const response = await call('post', `/organizations/${org}/system-accounts/${account.clientId}/secrets`, admin).send({ expiresAt: resolved });
      expectScimError(response, 400, 'invalidValue', 'expiresAt');
      const list = await call('get', `/organizations/${org}/system-accounts/${account.clientId}/secrets`, admin);
      expect(list.body.totalResults).toBe(1);
    });

    it('POST secrets with an unknown attribute is a 400 naming it', async () => {
      const org = await newOrg();
      const account = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
      const response = await call('post', `/organizations/${org}/system-accounts/${account.clientId}/secrets`, admin).send({ value: 'chosen-by-me' });
      expectScimError(response, 400, 'invalidValue', 'value');
    });

    it('GET secrets lists metadata only (id, created, expiresAt, lastUsed); lastUsed is set after use', async () => {
      const org = await newOrg();
      const account = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
      const second = await call('post', `/organizations/${org}/system-accounts/${account.clientId}/secrets`, admin).send({});
      const path = `/organizations/${org}/system-accounts/${account.clientId}/secrets`;

      const before = await call('get', path, admin);
      expect(before.status).toBe(200);
      expectJson(before);
      const created = t.clock.now().toISOString();
      expect(before.body).toEqual({ schemas: [LIST_RESPONSE], totalResults: 2, itemsPerPage: 2, startIndex: 1, Resources: expect.any(Array) });
      for (const resource of before.body.Resources) {
        expect(resource).toEqual({ id: expect.any(String), created, expiresAt: expect.stringMatching(ISO_MS_UTC), lastUsed: null });
      }
      expect(before.body.Resources.map((r: { id: string }) => r.id)).toContain(second.body.id);
      const text = JSON.stringify(before.body);
      expect(text).not.toContain(account.secret);
      expect(text).not.toContain(second.body.value);

      t.clock.advance(10);
      await tokenBySecret(t.http, org, account.clientId, second.body.value);
      const after = await call('get', path, admin);
      const used = after.body.Resources.find((r: { id: string }) => r.id === second.body.id);
      const unused = after.body.Resources.find((r: { id: string }) => r.id !== second.body.id);
      expect(used.lastUsed).toMatch(ISO_MS_UTC);
      const lastUsed = new Date(used.lastUsed).getTime();
      expect(lastUsed).toBeLessThanOrEqual(t.clock.now().getTime());
      expect(lastUsed).toBeGreaterThan(t.clock.now().getTime() - 2000);
      expect(unused.lastUsed).toBeNull();
    });

    it('the stored hash is a keyed hash (HMAC-SHA-256 with the pepper), never the secret', async () => {
      const org = await newOrg();
      const account = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
      const { rows } = await t.db.query<{ hash: Buffer; row: string }>(
        'SELECT s.hash, row_to_json(s)::text AS row FROM client_secrets s JOIN system_accounts a ON a.id = s.account_id WHERE a.client_id = $1',
        [account.clientId],
      );
      expect(rows).toHaveLength(1);
      const [{ hash, row }] = rows;
      expect(Buffer.isBuffer(hash)).toBe(true);
      expect(hash.equals(Buffer.from(account.secret, 'utf8'))).toBe(false);
      expect(hash.toString('utf8')).not.toContain(account.secret);
      expect(hash.equals(createHash('sha256').update(account.secret).digest())).toBe(false);
      expect(hash.equals(createHmac('sha256', t.config.secretPepper).update(account.secret, 'utf8').digest())).toBe(true);
      expect(row).not.toContain(account.secret);
    });
  });

  it('GET certificates of a new account is an empty ListResponse', async () => {
    const org = await newOrg();
    const account = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
    const response = await call('get', `/organizations/${org}/system-accounts/${account.clientId}/certificates`, admin);
    expect(response.status).toBe(200);
    expectJson(response);
    expect(response.body).toEqual({ schemas: [LIST_RESPONSE], totalResults: 0, itemsPerPage: 0, startIndex: 1, Resources: [] });
  });

  it('every change is audited (actor, org, action, target, outcome) and no secret reaches the audit log or the logs', async () => {
    const org = newOrgId('audited');
    const createdOrg = await call('post', '/organizations', admin).send({ id: org, name: 'Audited' });
    expect(createdOrg.status).toBe(201);
    const created = await call('post', `/organizations/${org}/system-accounts`, admin).send({ suffix: 'audit', role: 'Issuance' });
    expect(created.status).toBe(201);
    const clientId = `${org}-audit`;
    const secret = await call('post', `/organizations/${org}/system-accounts/${clientId}/secrets`, admin).send({});
    expect(secret.status).toBe(201);
    const patched = await call('patch', `/organizations/${org}/system-accounts/${clientId}`, admin).send({ role: 'Help Desk' });
    expect(patched.status).toBe(200);
    await tokenBySecret(t.http, org, clientId, secret.body.value);
    // A failed attempt with a near-miss secret must not be logged either.
    const nearMiss = `${secret.body.value.slice(0, -1)}X`;
    expect((await tokenRequest(t.http, org, { grant_type: 'client_credentials', client_id: clientId, client_secret: nearMiss })).status).toBe(401);

    const { rows } = await t.db.query<{ action: string; actor: string; target: string | null; outcome: string; occurred_at: Date }>(
      'SELECT action, actor, target, outcome, occurred_at FROM audit_events WHERE org_id = $1 ORDER BY id',
      [org],
    );
    const expectEvent = (action: string, target: string) =>
      expect(rows).toContainEqual({ action, actor: 'platform-admin', target, outcome: 'success', occurred_at: expect.any(Date) });
    expectEvent('organization.create', org);
    expectEvent('system_account.create', clientId);
    expectEvent('client_secret.create', clientId);
    expectEvent('system_account.update', clientId);

    const secrets = [created.body.secret.value as string, secret.body.value as string, nearMiss, PLATFORM_ADMIN_SECRET];
    for (const value of secrets) {
      const inDetails = await t.db.query('SELECT id FROM audit_events WHERE position($1 in details::text) > 0', [value]);
      expect(inDetails.rows).toEqual([]);
      const anywhere = await t.db.query('SELECT id FROM audit_events a WHERE position($1 in row_to_json(a)::text) > 0', [value]);
      expect(anywhere.rows).toEqual([]);
    }
    const logs = t.logs.join('');
    expect(logs.length).toBeGreaterThan(0);
    for (const value of secrets) expect(logs).not.toContain(value);
  });
});

// Its own app, started after the suite's app is closed: one process holds the PKCS#11 module once.
describe('admin API bootstrap (DECISIONS 11)', () => {
  it('BOOTSTRAP_ORG_ID creates that organization and {org}-admin, which gets a token with BOOTSTRAP_CLIENT_SECRET', async () => {
    const bootSecret = 'boot-secret-0123456789-abcdefghij-KLMNOP';
    expect(bootSecret).toHaveLength(40);
    const boot = await createTestApp({ env: { BOOTSTRAP_ORG_ID: 'boot', BOOTSTRAP_CLIENT_SECRET: bootSecret } });
    try {
      const platformToken = await platformAdminToken(boot.http);
      const org = await boot.http.get('/admin/v1/organizations/boot').auth(platformToken, { type: 'bearer' });
      expect(org.status).toBe(200);
      expect(org.body).toMatchObject({ id: 'boot', settings: DEFAULT_SETTINGS });

      const account = await boot.http.get('/admin/v1/organizations/boot/system-accounts/boot-admin').auth(platformToken, { type: 'bearer' });
      expect(account.status).toBe(200);
      expect(account.body).toMatchObject({
        id: 'boot-admin',
        clientId: 'boot-admin',
        tokenUrl: `${AUTH_BASE_URL}/authentication/customer/boot/token`,
        role: 'Administration',
        organizationAdministrator: true,
        disabled: false,
      });

      const token = await tokenRequest(boot.http, 'boot', { grant_type: 'client_credentials', client_id: 'boot-admin', client_secret: bootSecret });
      expect(token.status).toBe(200);
      expect(token.body.token_type).toBe('Bearer');
      // As organization administrator it manages its own organization, and only that one.
      const own = await boot.http.get('/admin/v1/organizations/boot/system-accounts').auth(token.body.access_token, { type: 'bearer' });
      expect(own.status).toBe(200);
      expect(own.body.totalResults).toBe(1);
      const platform = await boot.http.get('/admin/v1/organizations/platform').auth(token.body.access_token, { type: 'bearer' });
      expect(platform.status).toBe(404);

      expect(boot.logs.join('')).not.toContain(bootSecret);
    } finally {
      await boot.close();
    }
  });
});
