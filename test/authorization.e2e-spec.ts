import { ALL_PERMISSIONS, Permission } from '@app/auth';
import {
  FakeClock,
  PermissionProbeModule,
  TestApp,
  createOrganization,
  createSystemAccount,
  createTestApp,
  expectedPermissions,
  platformAdminToken,
  probePath,
  tokenBySecret,
  scopeAssignmentFile,
} from '@app/testing';

const DEFAULT_ROLES: Record<string, string[]> = {
  Administration: ['Scope.device_management', 'Scope.helpdesk', 'Scope.configuration_operator'],
  'Help Desk': ['Scope.helpdesk'],
  Issuance: ['Scope.device_management'],
  Cardholder: ['Scope.device'],
};

/** Signs in one system account per role and returns its token. */
async function tokensByRole(t: TestApp, org: string, roles: string[]): Promise<Record<string, string>> {
  const admin = await platformAdminToken(t.http);
  await createOrganization(t.http, admin, org);
  const tokens: Record<string, string> = {};
  for (const role of roles) {
    const account = await createSystemAccount(t.http, admin, org, { role });
    tokens[role] = await tokenBySecret(t.http, org, account.clientId, account.secret);
  }
  return tokens;
}

async function checkTable(t: TestApp, token: string, role: string, allowed: Set<Permission>): Promise<void> {
  for (const permission of ALL_PERMISSIONS) {
    const response = await t.http.get(probePath(permission)).auth(token, { type: 'bearer' });
    if (allowed.has(permission)) {
      expect({ role, permission, status: response.status }).toEqual({ role, permission, status: 200 });
    } else {
      expect({ role, permission, status: response.status, scim: response.body.schemas }).toEqual({
        role,
        permission,
        status: 403,
        scim: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      });
      expect(response.body.detail).toContain(`needs the permission ${permission}`);
      expect(response.body.detail).toContain(`"${role}"`);
    }
  }
}

/** DECISIONS 5.2 as a table: every permission, for every default role and custom roles. */
describe('permissions by role (default scopeAssignment.properties)', () => {
  let t: TestApp;
  let tokens: Record<string, string>;
  beforeAll(async () => {
    t = await createTestApp({ imports: [PermissionProbeModule] });
    tokens = await tokensByRole(t, 'perm', [...Object.keys(DEFAULT_ROLES), 'Not In The File']);
  });
  afterAll(() => t.close());

  it.each(Object.keys(DEFAULT_ROLES))('role %s reaches exactly the permissions of its scopes', async (role) => {
    await checkTable(t, tokens[role], role, expectedPermissions(DEFAULT_ROLES[role]));
  });

  it('a role that is not in the file reaches nothing, and the 403 says so', async () => {
    await checkTable(t, tokens['Not In The File'], 'Not In The File', new Set());
    const response = await t.http.get(probePath(Permission.DeviceRead)).auth(tokens['Not In The File'], { type: 'bearer' });
    expect(response.body.detail).toMatch(/not in scopeAssignment.properties/);
  });

  it('whoami reports the role, its scopes and its permissions', async () => {
    const response = await t.http.get('/authentication/customer/perm/whoami').auth(tokens['Help Desk'], { type: 'bearer' });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      clientId: expect.stringMatching(/^perm-OSRV\d{9}$/),
      org: 'perm',
      role: 'Help Desk',
      scopes: ['Scope.helpdesk'],
      permissions: [...expectedPermissions(['Scope.helpdesk'])].sort(),
    });
  });

  it('the access token carries the scopes of its role', async () => {
    const claims = JSON.parse(Buffer.from(tokens.Administration.split('.')[1], 'base64url').toString());
    expect(claims.scope).toBe('Scope.device_management Scope.helpdesk Scope.configuration_operator');
  });

  it('GET /admin/v1/roles lists the loaded mapping for administrators only', async () => {
    const admin = await platformAdminToken(t.http);
    const response = await t.http.get('/admin/v1/roles').auth(admin, { type: 'bearer' });
    expect(response.status).toBe(200);
    expect(response.body.Resources).toEqual(
      Object.entries(DEFAULT_ROLES).map(([name, scopes]) => ({ name, scopes, permissions: [...expectedPermissions(scopes)].sort(), operatorDependent: false })),
    );
    // A ListResponse like every other list (DECISIONS 7), paged like them.
    const roleCount = Object.keys(DEFAULT_ROLES).length;
    expect(response.body).toMatchObject({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
      totalResults: roleCount,
      startIndex: 1,
      itemsPerPage: roleCount,
    });
    const second = await t.http.get('/admin/v1/roles?startIndex=2&count=1').auth(admin, { type: 'bearer' });
    expect(second.body).toMatchObject({ totalResults: roleCount, startIndex: 2, itemsPerPage: 1, Resources: [{ name: Object.keys(DEFAULT_ROLES)[1] }] });
    const refused = await t.http.get('/admin/v1/roles').auth(tokens.Issuance, { type: 'bearer' });
    expect(refused.status).toBe(403);
    expect((await t.http.get('/admin/v1/roles')).status).toBe(401);
  });

  it('a role change applies to a token already issued', async () => {
    const admin = await platformAdminToken(t.http);
    const account = await createSystemAccount(t.http, admin, 'perm', { role: 'Issuance' });
    const token = await tokenBySecret(t.http, 'perm', account.clientId, account.secret);
    expect((await t.http.get(probePath(Permission.DeviceCreate)).auth(token, { type: 'bearer' })).status).toBe(200);
    await t.http.patch(`/admin/v1/organizations/perm/system-accounts/${account.clientId}`).auth(admin, { type: 'bearer' }).send({ role: 'Help Desk' });
    expect((await t.http.get(probePath(Permission.DeviceCreate)).auth(token, { type: 'bearer' })).status).toBe(403);
    expect((await t.http.get(probePath(Permission.DeviceTerminate)).auth(token, { type: 'bearer' })).status).toBe(200);
  });
});

describe('custom roles, and a restart with a changed file', () => {
  const custom = { Desk: ['Scope.helpdesk'], Auditor: [] as string[], 'Config And Self': ['Scope.configuration_operator', 'Scope.device'] };

  it('custom roles reach exactly their scopes, a role with no scopes reaches nothing, and a restart with a changed file changes live tokens', async () => {
    const clock = new FakeClock();
    const first = await createTestApp({
      imports: [PermissionProbeModule],
      clock,
      env: { SCOPE_ASSIGNMENT_FILE: scopeAssignmentFile('custom-a.properties', custom, ['Desk']) },
    });
    let tokens: Record<string, string>;
    try {
      tokens = await tokensByRole(first, 'custom', Object.keys(custom));
      for (const [role, scopes] of Object.entries(custom)) await checkTable(first, tokens[role], role, expectedPermissions(scopes));
      const admin = await platformAdminToken(first.http);
      const roles = await first.http.get('/admin/v1/roles').auth(admin, { type: 'bearer' });
      expect(roles.body.Resources.find((r: { name: string }) => r.name === 'Desk')).toMatchObject({ operatorDependent: true });
    } finally {
      await first.close();
    }
    // Same database, same tokens; the file now gives Desk Device Management instead of Help Desk.
    const second = await createTestApp({
      imports: [PermissionProbeModule],
      clock,
      databaseUrl: first.databaseUrl,
      env: { SCOPE_ASSIGNMENT_FILE: scopeAssignmentFile('custom-b.properties', { ...custom, Desk: ['Scope.device_management'] }) },
    });
    try {
      await checkTable(second, tokens.Desk, 'Desk', expectedPermissions(['Scope.device_management']));
      expect((await second.http.get(probePath(Permission.DeviceTerminate)).auth(tokens.Desk, { type: 'bearer' })).status).toBe(403);
      expect((await second.http.get(probePath(Permission.DeviceCreate)).auth(tokens.Desk, { type: 'bearer' })).status).toBe(200);
    } finally {
      await second.close();
    }
  });
});
