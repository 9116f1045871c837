import { randomUUID } from 'node:crypto';
import { UserService } from '@app/accounts';
import {
  TestApp,
  TestCertificate,
  adminCall,
  createOrganization,
  createTestApp,
  makeCertificate,
  platformAdminToken,
  signAssertion,
  tokenRequest,
} from '@app/testing';

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const PASSWORD = 'correct horse battery staple';

/**
 * People administer (issue 23 item 4, DECISIONS 3.5 and 11): a user can be their organization's
 * administrator and one person the platform administrator; the admin API then takes the person's
 * token as it takes an administrator system account's, with the same access policy and audit.
 */
describe('people administer', () => {
  let t: TestApp;
  let platformAdmin: string;

  beforeAll(async () => {
    t = await createTestApp();
    platformAdmin = await platformAdminToken(t.http);
    await createOrganization(t.http, platformAdmin, 'acme');
    await createOrganization(t.http, platformAdmin, 'globex');
  });
  afterAll(() => t.close());

  const tokenUrl = (org: string) => `https://auth.example.test/authentication/customer/${org}/token`;

  async function createUser(org: string, body: Record<string, unknown>, token = platformAdmin): Promise<string> {
    const response = await adminCall(t.http, 'post', `/organizations/${org}/users`, token).send(body);
    if (response.status !== 201) throw new Error(`create user failed: ${response.status} ${JSON.stringify(response.body)}`);
    return response.body.id as string;
  }

  /** An operator with an enrolled certificate, as every operator signs in today (jwt-bearer, DECISIONS 3.5). */
  async function operator(org: string, userName: string, extra: Record<string, unknown> = {}): Promise<{ id: string; certificate: TestCertificate }> {
    const id = await createUser(org, { userName, role: 'Administration', userType: 'operator', ...extra });
    const certificate = await makeCertificate();
    const enrolled = await adminCall(t.http, 'post', `/organizations/${org}/users/${id}/certificates`, platformAdmin)
      .set('Content-Type', 'application/x-pem-file')
      .send(certificate.pem);
    expect(enrolled.status).toBe(201);
    return { id, certificate };
  }

  async function signIn(org: string, userName: string, certificate: TestCertificate): Promise<string> {
    const assertion = await signAssertion(certificate, userName, tokenUrl(org), { now: t.clock.now() });
    const response = await tokenRequest(t.http, org, { grant_type: JWT_BEARER, assertion });
    if (response.status !== 200) throw new Error(`sign-in failed: ${response.status} ${JSON.stringify(response.body)}`);
    return response.body.access_token as string;
  }

  async function auditActors(org: string, action: string): Promise<string[]> {
    const { rows } = await t.db.query<{ actor: string }>('SELECT actor FROM audit_events WHERE org_id = $1 AND action = $2 ORDER BY id', [org, action]);
    return rows.map((row) => row.actor);
  }

  describe('an organization administrator person', () => {
    let ada: string;
    let adaId: string;

    beforeAll(async () => {
      const created = await operator('acme', 'ada', { organizationAdministrator: true });
      adaId = created.id;
      ada = await signIn('acme', 'ada', created.certificate);
    });

    it('is shown with the flag, and manages its organization through /admin/v1 with their token; the audit names them', async () => {
      const shown = await adminCall(t.http, 'get', `/organizations/acme/users/${adaId}`, platformAdmin);
      expect(shown.body).toMatchObject({ userName: 'ada', organizationAdministrator: true, platformAdministrator: false });

      const org = await adminCall(t.http, 'get', '/organizations/acme', ada);
      expect(org.status).toBe(200);
      expect(org.body.id).toBe('acme');
      const account = await adminCall(t.http, 'post', '/organizations/acme/system-accounts', ada).send({ suffix: 'byada', role: 'Issuance' });
      expect(account.status).toBe(201);
      expect(account.body.clientId).toBe('acme-byada');
      const user = await adminCall(t.http, 'post', '/organizations/acme/users', ada).send({ userName: 'made.by.ada', role: 'Cardholder' });
      expect(user.status).toBe(201);
      const list = await adminCall(t.http, 'get', '/organizations/acme/users', ada);
      expect(list.status).toBe(200);
      expect(list.body.Resources.map((u: { userName: string }) => u.userName)).toEqual(expect.arrayContaining(['ada', 'made.by.ada']));

      expect(await auditActors('acme', 'system_account.create')).toContain('ada');
      expect(await auditActors('acme', 'user.create')).toContain('ada');
      const audit = await adminCall(t.http, 'get', '/organizations/acme/audit-events?actor=ada', ada);
      expect(audit.status).toBe(200);
      expect(audit.body.Resources.map((e: { action: string }) => e.action)).toEqual(expect.arrayContaining(['system_account.create', 'user.create']));
    });

    it('gets 404 for another organization, as an administrator system account does, and the refusal is recorded', async () => {
      for (const path of ['/organizations/globex', '/organizations/globex/users', '/organizations/globex/system-accounts']) {
        const response = await adminCall(t.http, 'get', path, ada);
        expect(response.status).toBe(404);
        expect(response.body.detail).toBe('Organization "globex" does not exist.');
      }
      expect((await adminCall(t.http, 'post', '/organizations/globex/users', ada).send({ userName: 'sneak', role: 'Cardholder' })).status).toBe(404);
      const { rows } = await t.db.query("SELECT 1 FROM users WHERE org_id = 'globex' AND user_name = 'sneak'");
      expect(rows).toHaveLength(0);
      expect(await auditActors('acme', 'admin.access_denied')).toContain('ada');
    });

    it('cannot manage organizations: that is the platform administrator', async () => {
      const response = await adminCall(t.http, 'post', '/organizations', ada).send({ id: 'adas_own', name: 'Ada' });
      expect(response.status).toBe(403);
      expect(response.body.detail).toMatch(/Only the platform administrator manages organizations/);
    });

    it('cannot change their own administrator flag (DECISIONS 5.3 own-role-or-groups)', async () => {
      const own = await adminCall(t.http, 'patch', `/organizations/acme/users/${adaId}`, ada).send({ organizationAdministrator: false });
      expect(own.status).toBe(403);
      expect(own.body.detail).toMatch(/own-role-or-groups/);
      const { rows } = await t.db.query<{ organization_administrator: boolean }>('SELECT organization_administrator FROM users WHERE id = $1', [adaId]);
      expect(rows[0].organization_administrator).toBe(true);
      expect((await adminCall(t.http, 'get', '/organizations/acme/users', ada)).status).toBe(200);
    });
  });

  it('a person without the flag gets 403 saying why, whatever their role', async () => {
    const { certificate } = await operator('acme', 'bob');
    const bob = await signIn('acme', 'bob', certificate);
    const response = await adminCall(t.http, 'get', '/organizations/acme/users', bob);
    expect(response.status).toBe(403);
    expect(response.body.detail).toMatch(/bob is not one/);
    expect(response.body.detail).toMatch(/organizationAdministrator: true/);
  });

  it("a promotion revokes the person's live tokens (they sign in again); a demotion applies to live tokens at once (DECISIONS 3.4)", async () => {
    const { id, certificate } = await operator('acme', 'cleo');
    const before = await signIn('acme', 'cleo', certificate);
    expect((await t.http.get('/authentication/customer/acme/whoami').auth(before, { type: 'bearer' })).status).toBe(200);

    const promoted = await adminCall(t.http, 'patch', `/organizations/acme/users/${id}`, platformAdmin).send({ organizationAdministrator: true });
    expect(promoted.status).toBe(200);
    expect(promoted.body.organizationAdministrator).toBe(true);
    const stale = await adminCall(t.http, 'get', '/organizations/acme/users', before);
    expect(stale.status).toBe(401);
    expect(stale.headers['www-authenticate']).toContain('revoked');

    const after = await signIn('acme', 'cleo', certificate);
    expect((await adminCall(t.http, 'get', '/organizations/acme/users', after)).status).toBe(200);
    const demoted = await adminCall(t.http, 'patch', `/organizations/acme/users/${id}`, platformAdmin).send({ organizationAdministrator: false });
    expect(demoted.status).toBe(200);
    expect((await adminCall(t.http, 'get', '/organizations/acme/users', after)).status).toBe(403);
    const { rows } = await t.db.query("SELECT details FROM audit_events WHERE org_id = 'acme' AND action = 'user.update' AND target = $1 ORDER BY id", [id]);
    expect(rows.map((row) => row.details)).toEqual([
      expect.objectContaining({ organizationAdministrator: true, revokedTokens: 1 }),
      expect.objectContaining({ organizationAdministrator: false }),
    ]);
  });

  it('an administrator signs in with their certificate, never with a password alone', async () => {
    await createUser('acme', { userName: 'dora', role: 'Cardholder', password: PASSWORD, organizationAdministrator: true });
    const response = await tokenRequest(t.http, 'acme', { grant_type: 'password', username: 'dora', password: PASSWORD });
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('invalid_grant');
    expect(response.body.error_description).toMatch(/administrator/);
  });

  describe('the platform administrator person', () => {
    let rootId: string;
    let root: string;

    beforeAll(async () => {
      const created = await operator('platform', 'root');
      rootId = created.id;
      const designated = await adminCall(t.http, 'patch', `/organizations/platform/users/${rootId}`, platformAdmin).send({ platformAdministrator: true });
      expect(designated.status).toBe(200);
      expect(designated.body.platformAdministrator).toBe(true);
      root = await signIn('platform', 'root', created.certificate);
    });

    it('creates organizations and acts in any of them, audited as the person', async () => {
      const created = await adminCall(t.http, 'post', '/organizations', root).send({ id: 'initech', name: 'Initech' });
      expect(created.status).toBe(201);
      const account = await adminCall(t.http, 'post', '/organizations/initech/system-accounts', root).send({
        suffix: 'admin',
        role: 'Administration',
        organizationAdministrator: true,
      });
      expect(account.status).toBe(201);
      expect(await auditActors('initech', 'organization.create')).toEqual(['root']);
      expect(await auditActors('initech', 'system_account.create')).toEqual(['root']);
    });

    it('is one person: a second is refused with 409 (a partial unique index decides), and only in the platform organization', async () => {
      const { id: secondId } = await operator('platform', 'root2');
      const second = await adminCall(t.http, 'patch', `/organizations/platform/users/${secondId}`, platformAdmin).send({ platformAdministrator: true });
      expect(second.status).toBe(409);
      expect(second.body.scimType).toBe('uniqueness');
      expect(second.body.detail).toMatch(/"root" is the platform administrator/);
      const elsewhere = await adminCall(t.http, 'post', '/organizations/acme/users', platformAdmin).send({
        userName: 'wannabe',
        role: 'Administration',
        userType: 'operator',
        platformAdministrator: true,
      });
      expect(elsewhere.status).toBe(400);
      expect(elsewhere.body.detail).toMatch(/platform organization/);
      // The database itself holds the rule, whoever writes.
      await expect(t.db.query('UPDATE users SET platform_administrator = true WHERE id = $1', [secondId])).rejects.toThrow(/users_one_platform_administrator/);
      const { rows } = await t.db.query('SELECT user_name FROM users WHERE platform_administrator');
      expect(rows).toEqual([{ user_name: 'root' }]);
    });

    it('only the platform administrator designates it: an organization administrator is refused (DECISIONS 5.3)', async () => {
      const admin = await operator('platform', 'platform.orgadmin', { organizationAdministrator: true });
      const token = await signIn('platform', 'platform.orgadmin', admin.certificate);
      const { id: candidate } = await operator('platform', 'candidate');
      const designate = await adminCall(t.http, 'patch', `/organizations/platform/users/${candidate}`, token).send({ platformAdministrator: true });
      expect(designate.status).toBe(403);
      expect(designate.body.detail).toMatch(/platform-administrator/);
      const disable = await adminCall(t.http, 'patch', `/organizations/platform/users/${rootId}`, token).send({ disabled: true });
      expect(disable.status).toBe(403);
      expect(disable.body.detail).toMatch(/platform-administrator/);
      const own = await adminCall(t.http, 'patch', `/organizations/platform/users/${rootId}`, root).send({ platformAdministrator: false });
      expect(own.status).toBe(403);
      expect(own.body.detail).toMatch(/own-role-or-groups/);
    });

    it('the command line hands the role to another person in one transaction, revoking their live tokens', async () => {
      const next = await operator('platform', 'next.root');
      const nextToken = await signIn('platform', 'next.root', next.certificate);
      const users = t.app.get(UserService);
      const designated = await users.designatePlatformAdministrator(next.id, { name: 'cli' });
      expect(designated).toMatchObject({ user_name: 'next.root', platform_administrator: true });
      const { rows } = await t.db.query('SELECT user_name FROM users WHERE platform_administrator');
      expect(rows).toEqual([{ user_name: 'next.root' }]);
      expect((await adminCall(t.http, 'post', '/organizations', root).send({ id: 'too_late', name: 'x' })).status).toBe(403);
      expect((await t.http.get('/authentication/customer/platform/whoami').auth(nextToken, { type: 'bearer' })).status).toBe(401);
      const fresh = await signIn('platform', 'next.root', next.certificate);
      expect((await adminCall(t.http, 'post', '/organizations', fresh).send({ id: 'hooli', name: 'Hooli' })).status).toBe(201);
      expect(await auditActors('platform', 'user.update')).toEqual(expect.arrayContaining(['cli']));
      await expect(users.designatePlatformAdministrator(randomUUID(), { name: 'cli' })).rejects.toThrow(/does not exist/);
    });
  });
});
