import { randomUUID } from 'node:crypto';
import {
  TestApp,
  createOrganization,
  createSystemAccount,
  createTestApp,
  expectScimError,
  platformAdminToken,
  tokenBySecret,
  tokenRequest,
} from '@app/testing';

/**
 * Wallet, Stats, Self and EnrollmentData (CREDENTIAL-MANAGEMENT.md "Resources", "Self"; DECISIONS
 * 5.2): what a help desk and a cardholder do with what exists today, the devices of a wallet.
 */

const SCIM = 'application/scim+json';
const BASE = 'https://api.example.test';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';
const PASSWORD = 'correct horse battery staple';
/** The smallest PNG and JPEG headers: what the magic-byte check reads. */
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(32, 1)]).toString('base64');
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(32, 2)]).toString('base64');

describe('Wallet, Stats, Self and EnrollmentData', () => {
  let t: TestApp;
  let admin: string;
  const tokens: Record<string, string> = {};
  let cuid = 0;

  beforeAll(async () => {
    t = await createTestApp();
    admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, 'wal');
    await createOrganization(t.http, admin, 'wal2');
    for (const role of ['Administration', 'Issuance', 'Help Desk', 'Cardholder']) {
      const account = await createSystemAccount(t.http, admin, 'wal', { role });
      tokens[role] = await tokenBySecret(t.http, 'wal', account.clientId, account.secret);
    }
    const other = await createSystemAccount(t.http, admin, 'wal2', { role: 'Administration' });
    tokens.other = await tokenBySecret(t.http, 'wal2', other.clientId, other.secret);
  });
  afterAll(() => t.close());

  const get = (path: string, token = tokens['Help Desk']) => t.http.get(path).auth(token, { type: 'bearer' }).set('Accept', SCIM);
  const post = (path: string, body: unknown, token = tokens['Help Desk']) =>
    t.http.post(path).auth(token, { type: 'bearer' }).set('Content-Type', SCIM).send(JSON.stringify(body));
  const patch = (path: string, body: unknown, token = tokens['Help Desk']) =>
    t.http.patch(path).auth(token, { type: 'bearer' }).set('Content-Type', SCIM).send(JSON.stringify(body));

  async function cardholder(userName: string, org = 'wal'): Promise<{ id: string; wallet: string }> {
    const created = await t.http
      .post(`/admin/v1/organizations/${org}/users`)
      .auth(admin, { type: 'bearer' })
      .send({ userName, role: 'Cardholder', password: PASSWORD });
    expect(created.status).toBe(201);
    const user = await get(`/aims/rs/scim/v2/Users/${created.body.id}`, org === 'wal' ? tokens['Help Desk'] : tokens.other);
    return { id: created.body.id, wallet: user.body.wallet.value };
  }

  async function device(owner: string | null, status: string, reason = 'NONE', org = 'wal'): Promise<string> {
    const id = randomUUID();
    await t.db.query('INSERT INTO devices (id, org_id, status, reason, owner_user_id, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, now(), now())', [
      id,
      org,
      status,
      reason,
      owner,
    ]);
    await t.db.query('INSERT INTO device_external_ids (device_id, org_id, position, atr, cuid) VALUES ($1, $2, 1, $3, $4)', [
      id,
      org,
      '3B00',
      String(900000 + ++cuid),
    ]);
    return id;
  }

  const statusOf = async (id: string) => (await t.db.query('SELECT status, reason FROM devices WHERE id = $1', [id])).rows[0];

  describe('Wallet', () => {
    it('shows its owner and devices; .search finds it by owner; PATCH changes notes only', async () => {
      const user = await cardholder('wanda');
      const card = await device(user.id, 'ISSUED');
      const wallet = await get(`/aims/rs/scim/v2/Wallet/${user.wallet}`);
      expect(wallet.status).toBe(200);
      expect(wallet.body).toEqual({
        schemas: ['urn:vendor:scim:api:cms:1.0:Wallet'],
        id: user.wallet,
        owner: { value: user.id, display: 'wanda', $ref: `${BASE}/aims/rs/scim/v2/Users/${user.id}`, type: 'User' },
        status: 'ACTIVE',
        devices: [{ value: card, display: 'ISSUED', $ref: `${BASE}/aims/rs/scim/v2/Device/${card}`, type: 'Device' }],
        credentials: [],
        meta: {
          resourceType: 'Wallet',
          created: expect.any(String),
          lastModified: expect.any(String),
          location: `${BASE}/aims/rs/scim/v2/Wallet/${user.wallet}`,
          version: '1',
        },
      });
      const found = await post('/aims/rs/scim/v2/Wallet/.search', { schemas: [SEARCH], filter: 'owner.display eq "WANDA" and status eq "ACTIVE"' });
      expect(found.status).toBe(200);
      expect(found.body.Resources.map((w: { id: string }) => w.id)).toEqual([user.wallet]);
      const noted = await patch(`/aims/rs/scim/v2/Wallet/${user.wallet}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'replace', path: 'notes', value: 'Badge at the front desk' }],
      });
      expect(noted.status).toBe(200);
      expect(noted.body).toMatchObject({ notes: 'Badge at the front desk', meta: { version: '2' } });
      expectScimError(
        await patch(`/aims/rs/scim/v2/Wallet/${user.wallet}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'status', value: 'SUSPENDED' }] }),
        400,
        'mutability',
        /Only notes can be changed with PATCH; status is read-only here/,
      );
      expectScimError(
        await patch(`/aims/rs/scim/v2/Wallet/${user.wallet}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'notes', value: 'x'.repeat(4001) }] }),
        400,
        'invalidValue',
        /notes must be a string of at most 4000 characters/,
      );
      const removed = await patch(`/aims/rs/scim/v2/Wallet/${user.wallet}`, { schemas: [PATCH_OP], Operations: [{ op: 'remove', path: 'notes' }] });
      expect(removed.body.notes).toBeUndefined();
      expect((await t.db.query("SELECT code FROM audit_events WHERE target = $1 AND action = 'wallet.update'", [user.wallet])).rows).toEqual([
        { code: 50003 },
        { code: 50003 },
      ]);
    });

    it('suspend puts every ISSUED device on hold; resume brings back those, not a card suspended on its own', async () => {
      const user = await cardholder('sam');
      const first = await device(user.id, 'ISSUED');
      const second = await device(user.id, 'ISSUED');
      const lost = await device(user.id, 'ON_HOLD', 'LOST');
      expectScimError(
        await post(`/aims/rs/scim/v2/Wallet/${user.wallet}/suspend`, {}),
        400,
        'invalidValue',
        /reason: is required: one of LOST, STOLEN, DAMAGED, FORGOTTEN/,
      );
      const suspended = await t.http
        .post(`/aims/rs/scim/v2/Wallet/${user.wallet}/suspend`)
        .auth(tokens['Help Desk'], { type: 'bearer' })
        .type('form')
        .send({ reason: 'STOLEN' });
      expect(suspended.status).toBe(200);
      expect(suspended.body.status).toBe('SUSPENDED');
      expect(await statusOf(first)).toEqual({ status: 'ON_HOLD', reason: 'STOLEN' });
      expect(await statusOf(second)).toEqual({ status: 'ON_HOLD', reason: 'STOLEN' });
      expectScimError(
        await post(`/aims/rs/scim/v2/Wallet/${user.wallet}/suspend`, { reason: 'LOST' }),
        409,
        undefined,
        `Wallet ${user.wallet} is SUSPENDED; suspend applies only to an ACTIVE wallet.`,
      );
      const resumed = await post(`/aims/rs/scim/v2/Wallet/${user.wallet}/resume`, {});
      expect(resumed.status).toBe(200);
      expect(resumed.body.status).toBe('ACTIVE');
      expect(await statusOf(first)).toEqual({ status: 'ISSUED', reason: 'NONE' });
      expect(await statusOf(second)).toEqual({ status: 'ISSUED', reason: 'NONE' });
      expect(await statusOf(lost)).toEqual({ status: 'ON_HOLD', reason: 'LOST' });
      expectScimError(await post(`/aims/rs/scim/v2/Wallet/${user.wallet}/resume`, {}), 409, undefined, /is ACTIVE; resume applies only to a SUSPENDED wallet/);
      const codes = (await t.db.query('SELECT code FROM audit_events WHERE target = ANY($1) ORDER BY id', [[user.wallet, first]])).rows.map((r) => r.code);
      expect(codes).toEqual([10009, 50001, 10010, 50002]);
    });

    it('permissions and tenancy: Issuance reads, the Cardholder role does not, another organization gets 404', async () => {
      const user = await cardholder('tina');
      expect((await get(`/aims/rs/scim/v2/Wallet/${user.wallet}`, tokens.Issuance)).status).toBe(200);
      expectScimError(await get(`/aims/rs/scim/v2/Wallet/${user.wallet}`, tokens.Cardholder), 403, undefined, /wallet.read/);
      expectScimError(await post(`/aims/rs/scim/v2/Wallet/${user.wallet}/suspend`, { reason: 'LOST' }, tokens.Cardholder), 403, undefined, /wallet.action/);
      expectScimError(await get(`/aims/rs/scim/v2/Wallet/${user.wallet}`, tokens.other), 404, undefined, `Wallet ${user.wallet} does not exist.`);
      expectScimError(
        await post(`/aims/rs/scim/v2/Wallet/${user.wallet}/suspend`, { reason: 'LOST' }, tokens.other),
        404,
        undefined,
        `Wallet ${user.wallet} does not exist.`,
      );
      expect((await t.db.query('SELECT status FROM wallets WHERE id = $1', [user.wallet])).rows[0].status).toBe('ACTIVE');
    });
  });

  describe('Stats', () => {
    it('counts every status, zeros included, for the caller organization only', async () => {
      await createOrganization(t.http, admin, 'stats');
      const account = await createSystemAccount(t.http, admin, 'stats', { role: 'Administration' });
      const token = await tokenBySecret(t.http, 'stats', account.clientId, account.secret);
      const empty = await get('/aims/rs/scim/v2/Stats', token);
      expect(empty.status).toBe(200);
      expect(empty.body).toEqual({
        schemas: ['urn:vendor:scim:api:cms:1.0:Stats'],
        devices: { AVAILABLE: 0, ASSIGNED: 0, PRODUCED: 0, ISSUED: 0, ON_HOLD: 0, REVOKED: 0, TERMINATED: 0 },
        credentials: { ISSUED: 0, ON_HOLD: 0, REVOKED: 0 },
        users: { cardholders: 0, operators: 0 },
        contentRequests: { requested: 0, approved: 0, completed: 0, failed: 0, denied: 0, cancelled: 0, expired: 0 },
        meta: { resourceType: 'Stats', location: `${BASE}/aims/rs/scim/v2/Stats` },
      });
      const holder = await t.http.post('/admin/v1/organizations/stats/users').auth(admin, { type: 'bearer' }).send({ userName: 'c1', role: 'Cardholder' });
      await t.http
        .post('/admin/v1/organizations/stats/users')
        .auth(admin, { type: 'bearer' })
        .send({ userName: 'o1', role: 'Help Desk', userType: 'operator' });
      await device(null, 'AVAILABLE', 'NONE', 'stats');
      await device(holder.body.id, 'ISSUED', 'NONE', 'stats');
      await device(holder.body.id, 'ISSUED', 'NONE', 'stats');
      const counted = await get('/credential-management/customer/stats/stats', token);
      expect(counted.body.devices).toEqual({ AVAILABLE: 1, ASSIGNED: 0, PRODUCED: 0, ISSUED: 2, ON_HOLD: 0, REVOKED: 0, TERMINATED: 0 });
      expect(counted.body.users).toEqual({ cardholders: 1, operators: 1 });
      expectScimError(await get('/aims/rs/scim/v2/Stats', tokens.Cardholder), 403, undefined, /stats.read/);
    });
  });

  describe('Self', () => {
    let me: { id: string; wallet: string };
    let myToken: string;
    let mine: string;
    let theirs: string;

    beforeAll(async () => {
      me = await cardholder('carla');
      const other = await cardholder('otto');
      mine = await device(me.id, 'ISSUED');
      theirs = await device(other.id, 'ISSUED');
      const grant = await tokenRequest(t.http, 'wal', { grant_type: 'password', username: 'carla', password: PASSWORD });
      expect(grant.status).toBe(200);
      myToken = grant.body.access_token;
    });

    it("answers the caller's user, devices and wallet on every path form", async () => {
      const self = await get('/aims/rs/scim/v2/Self', myToken);
      expect(self.status).toBe(200);
      expect(self.body).toMatchObject({ id: me.id, userName: 'carla', wallet: { value: me.wallet } });
      const devices = await get('/credential-management/customer/wal/self/device', myToken);
      expect(devices.status).toBe(200);
      expect(devices.body.Resources.map((d: { id: string }) => d.id)).toEqual([mine]);
      const wallet = await get('/aims/rs/scm/v2/Self/Wallet', myToken);
      expect(wallet.body).toMatchObject({ id: me.wallet, devices: [{ value: mine }] });
    });

    it("suspends the caller's own device with a reason and resumes it while the wallet policy allows; another user's device is 404", async () => {
      expectScimError(await post(`/aims/rs/scim/v2/Self/Device/${mine}/suspend`, {}, myToken), 400, 'invalidValue', /say why the device is suspended/);
      const suspended = await post(`/aims/rs/scim/v2/Self/Device/${mine}/suspend`, { reason: 'LOST' }, myToken);
      expect(suspended.status).toBe(200);
      expect(suspended.body.status).toEqual({ status: 'ON_HOLD', reason: 'LOST' });
      expectScimError(
        await post(`/aims/rs/scim/v2/Self/Device/${theirs}/suspend`, { reason: 'LOST' }, myToken),
        404,
        undefined,
        `Device ${theirs} does not exist.`,
      );
      expect(await statusOf(theirs)).toEqual({ status: 'ISSUED', reason: 'NONE' });
      expect((await t.http.put('/admin/v1/organizations/wal/wallet-policy').auth(admin, { type: 'bearer' }).send({ allowSelfService: false })).status).toBe(
        200,
      );
      expectScimError(await post(`/aims/rs/scim/v2/Self/Device/${mine}/resume`, {}, myToken), 403, undefined, /allowSelfService is false/);
      expect((await t.http.put('/admin/v1/organizations/wal/wallet-policy').auth(admin, { type: 'bearer' }).send({ allowSelfService: true })).status).toBe(200);
      const resumed = await post(`/aims/rs/scim/v2/Self/Device/${mine}/resume`, {}, myToken);
      expect(resumed.status).toBe(200);
      expect(resumed.body.status).toEqual({ status: 'ISSUED', reason: 'NONE' });
    });

    it('the four entry points the interface marks not implemented answer 501; a system account has no self; operators cannot use /Self', async () => {
      for (const path of [
        '/aims/rs/scim/v2/Self/Device',
        `/aims/rs/scim/v2/Self/Device/${mine}/Credential`,
        '/aims/rs/scim/v2/Self/DeviceFlow',
        `/aims/rs/scim/v2/Self/DeviceFlow/${mine}`,
      ]) {
        expectScimError(await post(path, {}, myToken), 501, undefined, /is not implemented by this platform/);
      }
      expectScimError(await get('/aims/rs/scim/v2/Self', tokens.Cardholder), 403, undefined, /is a system account. Use a user's token/);
      expectScimError(await get('/aims/rs/scim/v2/Self', tokens['Help Desk']), 403, undefined, /self.read/);
      expectScimError(await get('/aims/rs/scim/v2/Users', myToken), 403, undefined, /operator.list/);
    });
  });

  describe('EnrollmentData', () => {
    it('replaces the attributes of a user (photo checked by its magic bytes); audited by name only', async () => {
      const user = await cardholder('erin');
      const path = `/aims/rs/scim/v2/Users/${user.id}/EnrollmentData`;
      const first = await post(
        path,
        {
          attributes: [
            { name: 'employeeId', value: '4711' },
            { name: 'photo', value: PNG },
          ],
        },
        tokens.Issuance,
      );
      expect(first.status).toBe(200);
      expect(first.body).toEqual({
        schemas: ['urn:vendor:scim:api:cms:1.0:EnrollmentData'],
        id: user.id,
        attributes: [
          { name: 'employeeId', value: '4711' },
          { name: 'photo', value: PNG },
        ],
        meta: { resourceType: 'EnrollmentData', created: expect.any(String), lastModified: expect.any(String), location: `${BASE}${path}`, version: '1' },
      });
      const second = await post(
        `/credential-management/customer/wal/users/${user.id}/enrollmentdata`,
        { attributes: [{ name: 'Photo', value: JPEG }] },
        tokens.Issuance,
      );
      expect(second.status).toBe(200);
      expect(second.body).toMatchObject({ attributes: [{ name: 'Photo', value: JPEG }], meta: { version: '2' } });
      const audit = await t.db.query("SELECT code, details FROM audit_events WHERE target = $1 AND action = 'user.enrollment_data.replace' ORDER BY id", [
        user.id,
      ]);
      expect(audit.rows.map((r) => r.code)).toEqual([40004, 40004]);
      expect(audit.rows[0].details).toMatchObject({ names: ['employeeId', 'photo'] });
      expect(JSON.stringify(audit.rows)).not.toContain('4711');
    });

    it('refuses bad attributes with a 400 naming them and keeps what was stored', async () => {
      const user = await cardholder('ezra');
      const path = `/aims/rs/scim/v2/Users/${user.id}/EnrollmentData`;
      const send = (attributes: unknown) => post(path, { attributes }, tokens.Issuance);
      expect((await send([{ name: 'employeeId', value: '1' }])).status).toBe(200);
      expectScimError(
        await send([{ name: 'photo', value: Buffer.from('GIF89a-not-allowed').toString('base64') }]),
        400,
        'invalidValue',
        /neither a JPEG nor a PNG/,
      );
      expectScimError(await send([{ name: 'photo', value: 'not base64!' }]), 400, 'invalidValue', /must be base64/);
      const big = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff]), Buffer.alloc(512 * 1024)]).toString('base64');
      expectScimError(await send([{ name: 'photo', value: big }]), 400, 'invalidValue', /larger than 512 KiB/);
      expectScimError(await send([{ name: 'bad name', value: 'x' }]), 400, 'invalidValue', /attributes.0.name: must be 1-64 characters/);
      expectScimError(await send(Array.from({ length: 51 }, (_, i) => ({ name: `a${i}`, value: 'x' }))), 400, 'invalidValue', /at most 50 attributes/);
      expectScimError(
        await send([
          { name: 'a', value: 'x' },
          { name: 'A', value: 'y' },
        ]),
        400,
        'invalidValue',
        /must not name an attribute twice/,
      );
      expectScimError(await send([{ name: 'a', value: 7 }]), 400, 'invalidValue', /attributes.0.value: must be a string/);
      expect((await t.db.query('SELECT attributes FROM enrollment_data WHERE user_id = $1', [user.id])).rows[0].attributes).toEqual([
        { name: 'employeeId', value: '1' },
      ]);
      expectScimError(await post(path, { attributes: [] }, tokens['Help Desk']), 403, undefined, /user.enrollmentData.write/);
      expectScimError(await post(path, { attributes: [] }, tokens.other), 404, undefined, `User "${user.id}" does not exist in organization "wal2".`);
    });
  });
});
