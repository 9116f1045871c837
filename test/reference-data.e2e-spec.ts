import { TestApp, createOrganization, createSystemAccount, createTestApp, expectScimError, platformAdminToken, tokenBySecret } from '@app/testing';

/**
 * Reference data of credential management (CREDENTIAL-MANAGEMENT.md "Resources", "Reference data";
 * DECISIONS 5.2, 11): CredentialPolicy and WalletPolicy (global), Printer, Groups and DevicePolicy,
 * written through the admin API and read over SCIM, audited, 404 across organizations.
 */

const SCIM = 'application/scim+json';
const BASE = 'https://api.example.test';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';

describe('credential-management reference data', () => {
  let t: TestApp;
  let admin: string;
  const tokens: Record<string, string> = {};

  beforeAll(async () => {
    t = await createTestApp();
    admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, 'ref');
    await createOrganization(t.http, admin, 'ref2');
    for (const role of ['Administration', 'Issuance', 'Help Desk', 'Cardholder']) {
      const account = await createSystemAccount(t.http, admin, 'ref', { role });
      tokens[role] = await tokenBySecret(t.http, 'ref', account.clientId, account.secret);
    }
    const orgAdmin = await createSystemAccount(t.http, admin, 'ref2', { suffix: 'admin', role: 'Administration', organizationAdministrator: true });
    tokens.otherAdmin = await tokenBySecret(t.http, 'ref2', orgAdmin.clientId, orgAdmin.secret);
  });
  afterAll(() => t.close());

  const adminCall = (method: 'get' | 'post' | 'put' | 'patch' | 'delete', path: string, body?: unknown, token = admin) => {
    const request = t.http[method](`/admin/v1/organizations${path}`).auth(token, { type: 'bearer' });
    return body === undefined ? request : request.send(body as object);
  };
  const scim = (path: string, token = tokens.Administration) => t.http.get(path).auth(token, { type: 'bearer' }).set('Accept', SCIM);
  const scimSearch = (path: string, body: Record<string, unknown>, token = tokens.Administration) =>
    t.http
      .post(path)
      .auth(token, { type: 'bearer' })
      .set('Content-Type', SCIM)
      .send(JSON.stringify({ schemas: [SEARCH], ...body }));
  const auditCodes = async (target: string) =>
    (await t.db.query('SELECT code FROM audit_events WHERE target = $1 ORDER BY id', [target])).rows.map((r) => r.code);

  describe('CredentialPolicy and WalletPolicy (global)', () => {
    it('answer their defaults before any administrator writes them (version 0)', async () => {
      const credential = await scim('/aims/rs/scim/v2/CredentialPolicy/global', tokens['Help Desk']);
      expect(credential.status).toBe(200);
      expect(credential.headers.etag).toBe('W/"0"');
      expect(credential.body).toEqual({
        schemas: ['urn:vendor:scim:api:cms:1.0:CredentialPolicy'],
        id: 'global',
        certificateLifetimeDays: 365,
        keyAlgorithms: ['EC-P256', 'EC-P384', 'RSA-3072', 'RSA-4096'],
        oathDigits: 6,
        oathPeriod: 30,
        revokeOnTerminate: true,
        meta: { resourceType: 'CredentialPolicy', location: `${BASE}/aims/rs/scim/v2/CredentialPolicy/global`, version: '0' },
      });
      const wallet = await scim('/credential-management/customer/ref/walletpolicy/global', tokens.Issuance);
      expect(wallet.status).toBe(200);
      expect(wallet.body).toMatchObject({ id: 'global', maxDevicesPerWallet: 3, allowSelfService: true, meta: { version: '0' } });
    });

    it('an administrator replaces them (left-out attributes take their defaults); readers see the change at once; audited', async () => {
      const put = await adminCall('put', '/ref/credential-policy', { certificateLifetimeDays: 730, keyAlgorithms: ['EC-P256'] });
      expect(put.status).toBe(200);
      expect(put.body).toMatchObject({
        certificateLifetimeDays: 730,
        keyAlgorithms: ['EC-P256'],
        oathDigits: 6,
        meta: { version: '1', created: expect.any(String) },
      });
      const read = await scim('/aims/rs/scim/v2/CredentialPolicy/global');
      expect(read.body).toMatchObject({ certificateLifetimeDays: 730, keyAlgorithms: ['EC-P256'], meta: { version: '1' } });
      const again = await adminCall('put', '/ref/credential-policy', { oathDigits: 8 });
      expect(again.body).toMatchObject({ certificateLifetimeDays: 365, oathDigits: 8, meta: { version: '2' } });
      expect((await adminCall('get', '/ref/credential-policy')).body).toMatchObject({ oathDigits: 8, meta: { version: '2' } });
      const wallet = await adminCall('put', '/ref/wallet-policy', { maxDevicesPerWallet: 5, allowSelfService: false });
      expect(wallet.status).toBe(200);
      expect((await scim('/aims/rs/scim/v2/WalletPolicy/global')).body).toMatchObject({ maxDevicesPerWallet: 5, allowSelfService: false });
      const codes = (await t.db.query("SELECT code FROM audit_events WHERE org_id = 'ref' AND action LIKE '%_policy.replace' ORDER BY id")).rows.map(
        (r) => r.code,
      );
      expect(codes).toEqual([73301, 73301, 73302]);
    });

    it('bad values are 400 naming the attribute; a stale If-Match is 412; nothing changes', async () => {
      expectScimError(
        await adminCall('put', '/ref/wallet-policy', { maxDevicesPerWallet: 21 }),
        400,
        'invalidValue',
        /maxDevicesPerWallet: must be at most 20/,
      );
      expectScimError(
        await adminCall('put', '/ref/credential-policy', { keyAlgorithms: ['DSA'] }),
        400,
        'invalidValue',
        /keyAlgorithms.0: must be one of EC-P256/,
      );
      expectScimError(await adminCall('put', '/ref/credential-policy', { oathPeriod: 45 }), 400, 'invalidValue', /oathPeriod: must be 30 or 60/);
      expectScimError(await adminCall('put', '/ref/credential-policy', { lifetime: 1 }), 400, 'invalidValue', /"lifetime" is not part of this resource/);
      const stale = await adminCall('put', '/ref/wallet-policy', { maxDevicesPerWallet: 2 }).set('If-Match', 'W/"0"');
      expectScimError(stale, 412, undefined, /current version is 1/);
      expect((await scim('/aims/rs/scim/v2/WalletPolicy/global')).body).toMatchObject({ maxDevicesPerWallet: 5, meta: { version: '1' } });
    });

    it('only "global" exists; the permission and the organization are checked', async () => {
      expectScimError(await scim('/aims/rs/scim/v2/CredentialPolicy/other'), 404, undefined, /path parameter id/i);
      expectScimError(await scim('/aims/rs/scim/v2/CredentialPolicy/global', tokens.Cardholder), 403, undefined, /credentialPolicy.read/);
      expectScimError(await adminCall('get', '/ref/credential-policy', undefined, tokens.otherAdmin), 404, undefined, /ref/);
      expect((await scim('/aims/rs/scim/v2/CredentialPolicy/global', tokens.otherAdmin)).body.certificateLifetimeDays).toBe(365);
    });
  });

  describe('Printer', () => {
    it('an administrator adds, changes and removes printers; Device Management lists and reads them; names are unique in any case', async () => {
      const created = await adminCall('post', '/ref/printers', { name: 'Desk 1', model: 'Evolis Primacy 2', location: 'Berlin' });
      expect(created.status).toBe(201);
      const id = created.body.id;
      expect(created.headers.location).toBe(`${BASE}/aims/rs/scim/v2/Printer/${id}`);
      expect(created.body).toEqual({
        schemas: ['urn:vendor:scim:api:cms:1.0:Printer'],
        id: expect.stringMatching(UUID),
        name: 'Desk 1',
        model: 'Evolis Primacy 2',
        location: 'Berlin',
        status: 'READY',
        meta: {
          resourceType: 'Printer',
          created: expect.any(String),
          lastModified: expect.any(String),
          location: `${BASE}/aims/rs/scim/v2/Printer/${id}`,
          version: '1',
        },
      });
      expectScimError(
        await adminCall('post', '/ref/printers', { name: 'DESK 1' }),
        409,
        'uniqueness',
        'A printer named "DESK 1" already exists in this organization.',
      );
      await adminCall('post', '/ref/printers', { name: 'Desk 2', status: 'OFFLINE' });
      const list = await scim('/aims/rs/scim/v2/Printer', tokens.Issuance);
      expect(list.status).toBe(200);
      expect(list.body.Resources.map((p: { name: string }) => p.name)).toEqual(['Desk 1', 'Desk 2']);
      const ready = await scim(`/credential-management/customer/ref/printer?filter=${encodeURIComponent('status eq "READY"')}`, tokens.Issuance);
      expect(ready.body.Resources.map((p: { name: string }) => p.name)).toEqual(['Desk 1']);
      const changed = await adminCall('patch', `/ref/printers/${id}`, { status: 'OFFLINE', location: null });
      expect(changed.status).toBe(200);
      expect(changed.body).toMatchObject({ status: 'OFFLINE', meta: { version: '2' } });
      expect(changed.body.location).toBeUndefined();
      expectScimError(await adminCall('patch', `/ref/printers/${id}`, { status: 'ON_FIRE' }), 400, 'invalidValue', /status: must be READY or OFFLINE/);
      expect((await adminCall('delete', `/ref/printers/${id}`)).status).toBe(204);
      expectScimError(await scim(`/aims/rs/scim/v2/Printer/${id}`, tokens.Issuance), 404, undefined, `Printer ${id} does not exist.`);
      expect(await auditCodes(id)).toEqual([73201, 73202, 73203]);
    });

    it('Help Desk has no printer.read; another organization never sees them', async () => {
      const created = await adminCall('post', '/ref/printers', { name: 'Desk 9' });
      expectScimError(await scim('/aims/rs/scim/v2/Printer', tokens['Help Desk']), 403, undefined, /printer.read/);
      expectScimError(
        await scim(`/aims/rs/scim/v2/Printer/${created.body.id}`, tokens.otherAdmin),
        404,
        undefined,
        `Printer ${created.body.id} does not exist.`,
      );
      expectScimError(await adminCall('get', `/ref/printers/${created.body.id}`, undefined, tokens.otherAdmin), 404, undefined, /ref/);
      expectScimError(await adminCall('get', `/ref2/printers/${created.body.id}`), 404, undefined, `Printer ${created.body.id} does not exist.`);
    });
  });

  describe('Groups and DevicePolicy', () => {
    let alice: string;
    let bob: string;

    beforeAll(async () => {
      for (const userName of ['alice', 'bob']) {
        const response = await adminCall('post', '/ref/users', { userName, role: 'Cardholder' });
        expect(response.status).toBe(201);
        if (userName === 'alice') alice = response.body.id;
        else bob = response.body.id;
      }
    });

    it('concurrent creates of one name: exactly one 201 (groups, printers, device policies)', async () => {
      for (const [path, body] of [
        ['/ref/groups', { displayName: 'Race' }],
        ['/ref/printers', { name: 'Race' }],
        ['/ref/device-policies', { name: 'Race' }],
      ] as const) {
        const answers = await Promise.all(Array.from({ length: 6 }, () => adminCall('post', path, body)));
        expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
      }
    });

    it('a group is created with members; the users carry it; SCIM lists it with its members', async () => {
      const created = await adminCall('post', '/ref/groups', { displayName: 'Berlin', members: [alice] });
      expect(created.status).toBe(201);
      const id = created.body.id;
      expect(created.body).toEqual({
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group', 'urn:vendor:scim:api:cms:1.0:Group'],
        id: expect.stringMatching(UUID),
        displayName: 'Berlin',
        members: [{ value: alice, display: 'alice', $ref: `${BASE}/aims/rs/scim/v2/Users/${alice}`, type: 'User' }],
        meta: {
          resourceType: 'Group',
          created: expect.any(String),
          lastModified: expect.any(String),
          location: `${BASE}/aims/rs/scim/v2/Groups/${id}`,
          version: '1',
        },
      });
      const user = await scim(`/aims/rs/scim/v2/Users/${alice}`);
      expect(user.body.groups).toEqual([{ value: id, display: 'Berlin', $ref: `${BASE}/aims/rs/scim/v2/Groups/${id}`, type: 'direct' }]);
      const found = await scim(`/aims/rs/scim/v2/Groups?filter=${encodeURIComponent('displayName eq "Berlin"')}`, tokens['Help Desk']);
      expect(found.status).toBe(200);
      expect(found.body.totalResults).toBe(1);
      expect(found.body.Resources[0].members.map((m: { display: string }) => m.display)).toEqual(['alice']);
      expectScimError(
        await adminCall('post', '/ref/groups', { displayName: 'Berlin' }),
        409,
        'uniqueness',
        'A group named "Berlin" already exists in this organization.',
      );
      expectScimError(
        await adminCall('post', '/ref/groups', { displayName: 'Ghosts', members: ['7d444840-9dc0-11d1-b245-5ffdce74fad2'] }),
        400,
        'invalidValue',
        'Invalid group: members names 7d444840-9dc0-11d1-b245-5ffdce74fad2, which is not a user of organization "ref".',
      );
      expect((await adminCall('get', '/ref/groups?filter=displayName%20eq%20%22Ghosts%22')).body.totalResults).toBe(0);
    });

    it('renaming a group renames it on its members; replacing members moves users in and out; deleting it leaves users and policies', async () => {
      const group = (await adminCall('post', '/ref/groups', { displayName: 'Munich', members: [alice] })).body;
      const policy = await adminCall('post', '/ref/device-policies', { name: 'Badge', credentialTypes: ['PKI_CERTIFICATE', 'OATH_TOTP'], groups: [group.id] });
      expect(policy.status).toBe(201);
      expect(policy.body).toMatchObject({
        name: 'Badge',
        deviceTypes: [],
        credentialTypes: ['PKI_CERTIFICATE', 'OATH_TOTP'],
        groups: [{ value: group.id, display: 'Munich', $ref: `${BASE}/aims/rs/scim/v2/Groups/${group.id}` }],
        requiresApproval: true,
        activationRequired: false,
      });
      const renamed = await adminCall('patch', `/ref/groups/${group.id}`, { displayName: 'München', members: [bob] });
      expect(renamed.status).toBe(200);
      expect(renamed.body).toMatchObject({ displayName: 'München', members: [{ value: bob, display: 'bob' }], meta: { version: '2' } });
      const users = await t.db.query('SELECT user_name, groups FROM users WHERE id = ANY($1) ORDER BY user_name', [[alice, bob]]);
      expect(users.rows).toEqual([
        { user_name: 'alice', groups: ['Berlin'] },
        { user_name: 'bob', groups: ['München'] },
      ]);
      expect((await scim(`/aims/rs/scim/v2/DevicePolicy/${policy.body.id}`, tokens['Help Desk'])).body.groups).toEqual([
        { value: group.id, display: 'München', $ref: `${BASE}/aims/rs/scim/v2/Groups/${group.id}` },
      ]);
      expect((await adminCall('delete', `/ref/groups/${group.id}`)).status).toBe(204);
      expect((await t.db.query('SELECT groups FROM users WHERE id = $1', [bob])).rows[0].groups).toEqual([]);
      expect((await scim(`/aims/rs/scim/v2/DevicePolicy/${policy.body.id}`)).body.groups).toEqual([]);
      expectScimError(await scim(`/aims/rs/scim/v2/Groups/${group.id}`), 404, undefined, `Group ${group.id} does not exist.`);
      expect(await auditCodes(group.id)).toEqual([73001, 73002, 73003]);
    });

    it('device policies: .search on the documented attributes, names unique in any case, bad input 400, permissions', async () => {
      await adminCall('post', '/ref/device-policies', {
        name: 'Token only',
        credentialTypes: ['OATH_HOTP'],
        deviceTypes: ['YubiKey 5'],
        requiresApproval: false,
      });
      expectScimError(
        await adminCall('post', '/ref/device-policies', { name: 'TOKEN ONLY' }),
        409,
        'uniqueness',
        'A device policy named "TOKEN ONLY" already exists in this organization.',
      );
      expectScimError(
        await adminCall('post', '/ref/device-policies', { name: 'X', credentialTypes: [] }),
        400,
        'invalidValue',
        /credentialTypes: must name at least one/,
      );
      expectScimError(
        await adminCall('post', '/ref/device-policies', { name: 'Y', groups: ['7d444840-9dc0-11d1-b245-5ffdce74fad2'] }),
        400,
        'invalidValue',
        /groups names 7d444840-9dc0-11d1-b245-5ffdce74fad2, which is not a group of this organization/,
      );
      const hotp = await scimSearch(
        '/aims/rs/scim/v2/DevicePolicy/.search',
        { filter: 'credentialTypes.value eq "OATH_HOTP" and requiresApproval eq false' },
        tokens['Help Desk'],
      );
      expect(hotp.status).toBe(200);
      expect(hotp.body.Resources.map((p: { name: string }) => p.name)).toEqual(['Token only']);
      const byDevice = await scimSearch('/credential-management/customer/ref/devicepolicy/.search', {
        filter: 'deviceTypes[value sw "yubi"]',
        attributes: ['name'],
      });
      expect(byDevice.body.Resources).toEqual([{ schemas: ['urn:vendor:scim:api:cms:1.0:DevicePolicy'], id: expect.stringMatching(UUID), name: 'Token only' }]);
      expectScimError(await scimSearch('/aims/rs/scim/v2/DevicePolicy/.search', {}, tokens.Cardholder), 403, undefined, /devicePolicy.search/);
      const id = hotp.body.Resources[0].id;
      expectScimError(await scim(`/aims/rs/scim/v2/DevicePolicy/${id}`, tokens.otherAdmin), 404, undefined, `Device policy ${id} does not exist.`);
      const changed = await adminCall('patch', `/ref/device-policies/${id}`, { requiresApproval: true, description: 'Hardware tokens' });
      expect(changed.body).toMatchObject({ requiresApproval: true, description: 'Hardware tokens', meta: { version: '2' } });
      expect((await adminCall('delete', `/ref/device-policies/${id}`)).status).toBe(204);
      expect(await auditCodes(id)).toEqual([73101, 73102, 73103]);
    });
  });
});
