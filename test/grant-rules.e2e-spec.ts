import {
  TestApp,
  createOrganization,
  createSystemAccount,
  createTestApp,
  expectScimError,
  makeCertificate,
  platformAdminToken,
  scopeAssignmentFile,
  signAssertion,
  tokenBySecret,
  tokenRequest,
} from '@app/testing';

/**
 * What a caller may grant (DECISIONS 5.3; issue "Security findings" item 1): an Operator Dependent
 * operator could make itself Administration, join another group, and create an Administration user
 * in a group it does not hold. Every refusal is a 403 naming the rule, changes nothing, and is
 * recorded as `authorization.grant_denied` (70006).
 */

const ORG = 'grants';
const USERS = '/aims/rs/scim/v2/Users';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const PERMISSION = 'urn:vendor:scim:api:cms:1.0:UserPermission';
const ALL_OPERATOR_SCOPES = ['Scope.device_management', 'Scope.helpdesk', 'Scope.configuration_operator'];

describe('Grant rules (DECISIONS 5.3)', () => {
  let t: TestApp;
  let admin: string;
  /** Dependent Operator (DM+HD+CO, Operator Dependent) in group G1. */
  let dependent: { id: string; token: string };
  /** Configuration only (CO): may manage users, holds neither DM nor HD. */
  let configurator: { id: string; token: string };
  const ids: Record<string, string> = {};

  const createUser = async (body: Record<string, unknown>) => {
    const response = await t.http.post(`/admin/v1/organizations/${ORG}/users`).auth(admin, { type: 'bearer' }).send(body);
    expect(response.status).toBe(201);
    return response.body.id as string;
  };

  /** An operator signs in with the certificate enrolled for it (DECISIONS 3.5). */
  const operatorToken = async (userName: string, id: string) => {
    const certificate = await makeCertificate();
    const enrolled = await t.http
      .post(`/admin/v1/organizations/${ORG}/users/${id}/certificates`)
      .auth(admin, { type: 'bearer' })
      .set('Content-Type', 'application/x-pem-file')
      .send(certificate.pem);
    expect(enrolled.status).toBe(201);
    const grant = await tokenRequest(t.http, ORG, {
      grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
      assertion: await signAssertion(certificate, userName, `https://auth.example.test/authentication/customer/${ORG}/token`, { now: t.clock.now() }),
    });
    expect(grant.status).toBe(200);
    return grant.body.access_token as string;
  };

  const patch = (token: string, id: string, operations: Record<string, unknown>[]) =>
    t.http
      .patch(`${USERS}/${id}`)
      .auth(token, { type: 'bearer' })
      .set('Content-Type', 'application/scim+json')
      .send({ schemas: [PATCH_OP], Operations: operations });

  const userRow = async (id: string) => (await t.db.query('SELECT role, groups, disabled FROM users WHERE id = $1', [id])).rows[0];

  const denials = async () =>
    (
      await t.db.query(
        "SELECT actor, target, outcome, code, details FROM audit_events WHERE action = 'authorization.grant_denied' AND org_id = $1 ORDER BY id",
        [ORG],
      )
    ).rows;

  beforeAll(async () => {
    const file = scopeAssignmentFile(
      'grant-rules.properties',
      {
        Administration: ALL_OPERATOR_SCOPES,
        'Dependent Operator': ALL_OPERATOR_SCOPES,
        Configurator: ['Scope.configuration_operator'],
        'Help Desk': ['Scope.helpdesk'],
        Issuance: ['Scope.device_management'],
        Cardholder: ['Scope.device'],
      },
      ['Dependent Operator'],
    );
    t = await createTestApp({ env: { SCOPE_ASSIGNMENT_FILE: file } });
    admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, ORG);
    ids.dependent = await createUser({ userName: 'dee.dependent', role: 'Dependent Operator', userType: 'operator', groups: ['G1'] });
    ids.configurator = await createUser({ userName: 'cora.config', role: 'Configurator', userType: 'operator', groups: [] });
    ids.bob = await createUser({ userName: 'bob', role: 'Cardholder', groups: ['G2'] });
    ids.carl = await createUser({ userName: 'carl', role: 'Cardholder', groups: ['G1'] });
    ids.ada = await createUser({ userName: 'ada.admin', role: 'Administration', userType: 'operator', groups: ['G1'] });
    dependent = { id: ids.dependent, token: await operatorToken('dee.dependent', ids.dependent) };
    configurator = { id: ids.configurator, token: await operatorToken('cora.config', ids.configurator) };
  });
  afterAll(() => t.close());

  describe('an Operator Dependent operator (the finding)', () => {
    it('cannot make itself Administration: 403 naming the rule, role unchanged, bob still out of reach, the refusal audited', async () => {
      expect((await t.http.get(`${USERS}/${ids.bob}`).auth(dependent.token, { type: 'bearer' })).status).toBe(404);
      const response = await patch(dependent.token, dependent.id, [{ op: 'replace', path: 'roles', value: [{ value: 'Administration' }] }]);
      expectScimError(response, 403, undefined, /Nobody changes their own role, groups or administrator flag.*DECISIONS 5\.3, rule "own-role-or-groups"/);
      expect(await userRow(dependent.id)).toMatchObject({ role: 'Dependent Operator', groups: ['G1'] });
      expect((await t.http.get(`${USERS}/${ids.bob}`).auth(dependent.token, { type: 'bearer' })).status).toBe(404);
      expect((await denials()).at(-1)).toEqual({
        actor: 'dee.dependent',
        target: dependent.id,
        outcome: 'failure',
        code: 70006,
        details: { rule: 'own-role-or-groups', role: 'Administration' },
      });
    });

    it('cannot add itself to another group through the UserPermission extension', async () => {
      const response = await patch(dependent.token, dependent.id, [{ op: 'replace', path: `${PERMISSION}:groups`, value: ['G1', 'G2'] }]);
      expectScimError(response, 403, undefined, /rule "own-role-or-groups"/);
      expect(await userRow(dependent.id)).toMatchObject({ groups: ['G1'] });
      expect((await t.http.get(`${USERS}/${ids.bob}`).auth(dependent.token, { type: 'bearer' })).status).toBe(404);
    });

    it('cannot create an Administration user with a password, in its own group or in another', async () => {
      for (const groups of [['G1'], ['G2']]) {
        const response = await t.http
          .post(USERS)
          .auth(dependent.token, { type: 'bearer' })
          .set('Content-Type', 'application/scim+json')
          .send({
            schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
            userName: `mallory.${groups[0]}`,
            password: 'a-long-enough-password',
            roles: [{ value: 'Administration' }],
            [PERMISSION]: { groups },
          });
        expectScimError(response, 403, undefined, /The role "Administration" grants scopes .*reaches beyond your groups.*rule "role-beyond-own"/);
      }
      expect((await t.db.query("SELECT count(*)::int AS n FROM users WHERE user_name LIKE 'mallory.%'")).rows[0].n).toBe(0);
    });

    it('creates users only inside its own groups, and gives Operator Dependent roles it holds', async () => {
      const create = (userName: string, groups: string[], role = 'Cardholder') =>
        t.http
          .post(USERS)
          .auth(dependent.token, { type: 'bearer' })
          .set('Content-Type', 'application/scim+json')
          .send({
            schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
            userName,
            ...(role === 'Cardholder' ? {} : { userType: 'operator' }),
            roles: [{ value: role }],
            [PERMISSION]: { groups },
          });
      expectScimError(await create('gina', ['G2']), 403, undefined, /add or remove only your own groups \(G1\), not G2.*rule "group-not-own"/);
      expectScimError(await create('nora', []), 403, undefined, /a user you create must be in one of your groups \(G1\).*rule "group-not-own"/);
      expect((await create('gil', ['G1'])).status).toBe(201);
      const colleague = await create('dora.op', ['G1'], 'Dependent Operator');
      expect(colleague.status).toBe(201);
      expect(colleague.body[PERMISSION]).toMatchObject({ groups: ['G1'] });
    });

    it("changes a reachable user's groups only by its own, and cannot move them into another group", async () => {
      expectScimError(await patch(dependent.token, ids.carl, [{ op: 'add', path: `${PERMISSION}:groups`, value: ['G2'] }]), 403, undefined, /not G2/);
      expect(await userRow(ids.carl)).toMatchObject({ groups: ['G1'] });
      const renamed = await patch(dependent.token, ids.carl, [{ op: 'replace', path: 'displayName', value: 'Carl C.' }]);
      expect(renamed.status).toBe(200);
      expect(renamed.body.displayName).toBe('Carl C.');
    });

    it('cannot disable, re-password, demote or delete a user whose role is above its own', async () => {
      const above = /This account has the role "Administration", which grants scopes your role "Dependent Operator" does not hold.*rule "account-above-own"/;
      expectScimError(await patch(dependent.token, ids.ada, [{ op: 'replace', path: 'active', value: false }]), 403, undefined, above);
      expectScimError(await patch(dependent.token, ids.ada, [{ op: 'replace', path: 'roles', value: [{ value: 'Cardholder' }] }]), 403, undefined, above);
      expectScimError(await t.http.delete(`${USERS}/${ids.ada}`).auth(dependent.token, { type: 'bearer' }), 403, undefined, above);
      expect(await userRow(ids.ada)).toEqual({ role: 'Administration', groups: ['G1'], disabled: false });
      expect((await denials()).at(-1)).toMatchObject({
        actor: 'dee.dependent',
        target: ids.ada,
        details: { rule: 'account-above-own', targetRole: 'Administration' },
      });
    });
  });

  describe('a Configuration Operator without the other operator scopes', () => {
    it('gives only roles within its own: Issuance and Help Desk are refused, Configurator and Cardholder are not', async () => {
      const create = (userName: string, role: string) =>
        t.http
          .post(USERS)
          .auth(configurator.token, { type: 'bearer' })
          .set('Content-Type', 'application/scim+json')
          .send({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName, userType: 'operator', roles: [{ value: role }] });
      expectScimError(
        await create('ivy.issuance', 'Issuance'),
        403,
        undefined,
        /The role "Issuance" grants scopes your role "Configurator" does not hold.*rule "role-beyond-own"/,
      );
      expectScimError(await create('hal.helpdesk', 'Help Desk'), 403, undefined, /rule "role-beyond-own"/);
      expectScimError(await create('uma.unknown', 'Not In The Mapping'), 403, undefined, /rule "role-beyond-own"/);
      expect((await create('cid.config', 'Configurator')).status).toBe(201);
      const cardholder = await t.http
        .post(USERS)
        .auth(configurator.token, { type: 'bearer' })
        .set('Content-Type', 'application/scim+json')
        .send({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: 'cath' });
      expect(cardholder.status).toBe(201);
      // Promoting a cardholder it created to a role beyond its own is the same refusal.
      expectScimError(
        await patch(configurator.token, cardholder.body.id, [{ op: 'replace', path: 'roles', value: [{ value: 'Issuance' }] }]),
        403,
        undefined,
        /rule "role-beyond-own"/,
      );
    });
  });

  describe('the administration API', () => {
    let helpDeskAdmin: { clientId: string; token: string };

    beforeAll(async () => {
      const account = await createSystemAccount(t.http, admin, ORG, { suffix: 'hdadmin', role: 'Help Desk', organizationAdministrator: true });
      helpDeskAdmin = { clientId: account.clientId, token: await tokenBySecret(t.http, ORG, account.clientId, account.secret) };
    });

    const call = (method: 'post' | 'patch' | 'delete', path: string, body?: Record<string, unknown>) => {
      const request = t.http[method](`/admin/v1/organizations/${ORG}${path}`).auth(helpDeskAdmin.token, { type: 'bearer' });
      return body === undefined ? request : request.send(body);
    };

    it('an organization administrator with a Help Desk role creates neither users nor system accounts above it', async () => {
      expectScimError(
        await call('post', '/users', { userName: 'root.user', role: 'Administration', userType: 'operator' }),
        403,
        undefined,
        /rule "role-beyond-own"/,
      );
      expectScimError(await call('post', '/system-accounts', { suffix: 'robot', role: 'Issuance' }), 403, undefined, /rule "role-beyond-own"/);
      expect((await t.db.query("SELECT count(*)::int AS n FROM system_accounts WHERE client_id = 'grants-robot'")).rows[0].n).toBe(0);
      expect((await call('post', '/users', { userName: 'helen.hd', role: 'Help Desk', userType: 'operator' })).status).toBe(201);
      expect((await call('post', '/system-accounts', { suffix: 'hdrobot', role: 'Help Desk' })).status).toBe(201);
    });

    it('cannot change its own role or administrator flag', async () => {
      expectScimError(
        await call('patch', `/system-accounts/${helpDeskAdmin.clientId}`, { role: 'Administration' }),
        403,
        undefined,
        /rule "own-role-or-groups"/,
      );
      expectScimError(
        await call('patch', `/system-accounts/${helpDeskAdmin.clientId}`, { organizationAdministrator: false }),
        403,
        undefined,
        /rule "own-role-or-groups"/,
      );
      const described = await call('patch', `/system-accounts/${helpDeskAdmin.clientId}`, { description: 'help desk administrator' });
      expect(described.status).toBe(200);
      expect(described.body).toMatchObject({ role: 'Help Desk', organizationAdministrator: true });
    });

    it('cannot take over an account above it: no new secret, certificate, change, password or delete', async () => {
      const robot = await createSystemAccount(t.http, admin, ORG, { suffix: 'bigrobot', role: 'Administration' });
      const above = /This account has the role "Administration".*rule "account-above-own"/;
      const secret = await call('post', `/system-accounts/${robot.clientId}/secrets`, {});
      expectScimError(secret, 403, undefined, above);
      expect(secret.body.value).toBeUndefined();
      expectScimError(await call('patch', `/system-accounts/${robot.clientId}`, { disabled: true }), 403, undefined, above);
      expectScimError(await call('delete', `/system-accounts/${robot.clientId}`), 403, undefined, above);
      expectScimError(await call('delete', `/users/${ids.ada}`), 403, undefined, above);
      const issuer = await createUser({ userName: 'ivan.issuer', role: 'Issuance', groups: [] });
      const password = await t.http
        .put(`/admin/v1/organizations/${ORG}/users/${issuer}/password`)
        .auth(helpDeskAdmin.token, { type: 'bearer' })
        .send({ password: 'a-long-enough-password' });
      expectScimError(password, 403, undefined, /This account has the role "Issuance".*rule "account-above-own"/);
      expect((await t.db.query('SELECT password_hash FROM users WHERE id = $1', [issuer])).rows[0].password_hash).toBeNull();
      const certificate = await makeCertificate();
      const enrolled = await t.http
        .post(`/admin/v1/organizations/${ORG}/users/${ids.ada}/certificates`)
        .auth(helpDeskAdmin.token, { type: 'bearer' })
        .set('Content-Type', 'application/x-pem-file')
        .send(certificate.pem);
      expectScimError(enrolled, 403, undefined, above);
      const rows = (await t.db.query('SELECT count(*)::int AS n FROM user_certificates WHERE user_id = $1', [ids.ada])).rows[0];
      expect(rows.n).toBe(0);
      // The account still signs in with its one secret: nothing was added or changed.
      expect(await tokenBySecret(t.http, ORG, robot.clientId, robot.secret)).toEqual(expect.any(String));
    });

    it('the audit log shows every refusal with the administrator as actor, readable through the admin API', async () => {
      const events = await t.http.get(`/admin/v1/organizations/${ORG}/audit-events?code=70006&count=100`).auth(admin, { type: 'bearer' });
      expect(events.status).toBe(200);
      const byAdmin = events.body.Resources.filter((event: { actor: string }) => event.actor === helpDeskAdmin.clientId);
      expect(byAdmin.map((event: { details: { rule: string } }) => event.details.rule).sort()).toEqual([
        'account-above-own',
        'account-above-own',
        'account-above-own',
        'account-above-own',
        'account-above-own',
        'account-above-own',
        'own-role-or-groups',
        'own-role-or-groups',
        'role-beyond-own',
        'role-beyond-own',
      ]);
      expect(byAdmin.every((event: { outcome: string; action: string }) => event.outcome === 'failure' && event.action === 'authorization.grant_denied')).toBe(
        true,
      );
    });
  });

  it('the platform administrator and an Administration organization administrator keep every power they had', async () => {
    const created = await t.http
      .post(`/admin/v1/organizations/${ORG}/system-accounts`)
      .auth(admin, { type: 'bearer' })
      .send({ suffix: 'orgadmin', role: 'Administration', organizationAdministrator: true });
    expect(created.status).toBe(201);
    const orgAdmin = await tokenBySecret(t.http, ORG, created.body.clientId, created.body.secret.value);
    const promoted = await t.http
      .patch(`/admin/v1/organizations/${ORG}/users/${ids.carl}`)
      .auth(orgAdmin, { type: 'bearer' })
      .send({ role: 'Administration', groups: ['G1', 'G2'] });
    expect(promoted.status).toBe(200);
    expect(promoted.body).toMatchObject({ role: 'Administration', groups: ['G1', 'G2'] });
  });
});
