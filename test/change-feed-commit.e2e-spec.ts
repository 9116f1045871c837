import type { Notification } from 'pg';
import { OwnedDevices, RequestedDevices } from '@app/device';
import { Change, ChangeFeed, Database, Transaction } from '@app/persistence';
import { TestApp, createAdminAndPlainAccounts, createOrganization, createTestApp, platformAdminToken, tokenRequest } from '@app/testing';

/**
 * A change made in a transaction is published with its COMMIT (ChangeFeed.publishOnCommit, one
 * round trip for the notices and the COMMIT): other instances, here a plain LISTEN connection,
 * hear of it only when it commits; this instance's subscribers once it has committed. Every writer
 * publishes this way: no failure between a commit and a later notice can leave other instances
 * serving what changed.
 */
describe('change feed: notices carried by the COMMIT', () => {
  let t: TestApp;
  let heard: string[];
  const listener = (message: Notification) => heard.push(message.payload ?? '');

  beforeAll(async () => {
    t = await createTestApp();
    t.db.on('notification', listener);
    await t.db.query('LISTEN platform_changes');
  });
  afterAll(async () => {
    t.db.off('notification', listener);
    await t.close();
  });
  beforeEach(() => (heard = []));

  const settle = () => new Promise((resolve) => setTimeout(resolve, 200));

  it('a committed transaction sends its notices; this instance hears of them after the commit, not before', async () => {
    const db = t.app.get(Database);
    const changes = t.app.get(ChangeFeed);
    const local: string[] = [];
    changes.subscribe((change: Change) => change.topic === 'device' && local.push(change.id));
    await db.transaction(async (tx) => {
      changes.publishOnCommit(tx, 'device', ['acme/one', "o'brien/two"]);
      await settle();
      expect(heard).toEqual([]);
      expect(local).toEqual([]);
    });
    await settle();
    expect(heard).toEqual(['device:acme/one', "device:o'brien/two"]);
    // Told once after the commit, and again when the instance's own LISTEN connection hears the notices.
    expect([...new Set(local)]).toEqual(['acme/one', "o'brien/two"]);
  });

  it('a rolled-back transaction sends nothing and tells nobody', async () => {
    const db = t.app.get(Database);
    const changes = t.app.get(ChangeFeed);
    const local: string[] = [];
    changes.subscribe((change: Change) => change.topic === 'device' && local.push(change.id));
    await expect(
      db.transaction(async (tx) => {
        changes.publishOnCommit(tx, 'device', ['acme/rolled-back']);
        throw new Error('the work failed');
      }),
    ).rejects.toThrow('the work failed');
    await settle();
    expect(heard).toEqual([]);
    expect(local).toEqual([]);
  });

  it('a change of more rows than a select list holds (1,664) commits and sends every notice', async () => {
    const db = t.app.get(Database);
    const changes = t.app.get(ChangeFeed);
    const ids = Array.from({ length: 2000 }, (_, i) => `acme/${i}`);
    await db.transaction(async (tx) => changes.publishOnCommit(tx, 'subject', ids));
    for (let waited = 0; heard.length < ids.length && waited < 5000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(heard).toEqual(ids.map((id) => `subject:${id}`));
  });

  describe('writers through HTTP', () => {
    let accounts: Awaited<ReturnType<typeof createAdminAndPlainAccounts>>;
    beforeAll(async () => {
      const admin = await platformAdminToken(t.http);
      await createOrganization(t.http, admin, 'feedwriters', { automaticDeviceCreation: true });
      accounts = await createAdminAndPlainAccounts(t.http, admin, 'feedwriters');
      await settle(); // the set-up's own notices arrive before the tests' beforeEach forgets them
    });

    it('a failed client authentication publishes its lockout keys with the counted failure', async () => {
      const failed = await tokenRequest(t.http, 'feedwriters', {
        grant_type: 'client_credentials',
        client_id: accounts.plain.clientId,
        client_secret: 'wrong',
      });
      expect(failed.status).toBe(401);
      await settle();
      expect(heard).toEqual([`lockout:pair:${accounts.plain.clientId}|127.0.0.1`, 'lockout:addr:127.0.0.1']);
      const counted = await t.db.query('SELECT key, failures FROM auth_failures WHERE key = ANY($1) ORDER BY key', [
        heard.map((notice) => notice.slice('lockout:'.length)),
      ]);
      expect(counted.rows).toEqual([
        { key: 'addr:127.0.0.1', failures: 1 },
        { key: `pair:${accounts.plain.clientId}|127.0.0.1`, failures: 1 },
      ]);
    });

    it('a revocation publishes the token with its commit; revoking a token of another client publishes nothing', async () => {
      const revoke = (token: string, as: { clientId: string; secret: string }) =>
        t.http.post('/authentication/customer/feedwriters/revoke').type('form').send({ token, client_id: as.clientId, client_secret: as.secret });
      expect((await revoke(accounts.orgAdminToken, accounts.plain)).status).toBe(200);
      await settle();
      expect(heard).toEqual([]);
      expect((await revoke(accounts.plainToken, accounts.plain)).status).toBe(200);
      await settle();
      const jti = JSON.parse(Buffer.from(accounts.plainToken.split('.')[1], 'base64url').toString()).jti as string;
      expect(heard).toEqual([`token:${jti}`]);
      const row = await t.db.query('SELECT revoked_at IS NOT NULL AS revoked FROM access_tokens WHERE jti = $1', [jti]);
      expect(row.rows).toEqual([{ revoked: true }]);
    });

    it('a device moved through the ports other libraries use (bind, unbind, completion, wallet suspend) publishes its change with the commit', async () => {
      const device = await t.http
        .post('/aims/rs/scim/v2/Device')
        .auth(accounts.orgAdminToken, { type: 'bearer' })
        .set('Content-Type', 'application/scim+json')
        .send({ schemas: ['urn:vendor:scim:api:cms:1.0:Device'], externalIds: [{ ATR: '3B8F8001', CUID: '47110001' }] });
      expect(device.status).toBe(201);
      const user = await t.http
        .post('/admin/v1/organizations/feedwriters/users')
        .auth(accounts.orgAdminToken, { type: 'bearer' })
        .send({ userName: 'feed.holder', role: 'Cardholder' });
      expect(user.status).toBe(201);
      await settle(); // the set-up's own notices, before heardAfter listens
      const db = t.app.get(Database);
      const requested = t.app.get(RequestedDevices);
      const actor = { name: 'test' };
      const org = 'feedwriters';
      const id = device.body.id as string;
      const key = `device:${org}/${id}`;
      const heardAfter = async (move: (tx: Transaction) => Promise<unknown>) => {
        heard = [];
        await db.transaction(move);
        await settle();
        return heard;
      };
      const bind = async (tx: Transaction) => requested.bind(org, (await requested.lock(org, id, tx))!, user.body.id, actor, tx, 'test');
      expect(await heardAfter(bind)).toEqual([key]);
      expect(await heardAfter((tx) => requested.unbind(org, id, actor, tx, 'test'))).toEqual([key]);
      expect(await heardAfter(bind)).toEqual([key]);
      expect(await heardAfter(async (tx) => requested.complete(org, (await requested.lock(org, id, tx))!, 'completeIssuance', actor, tx, 'test'))).toEqual([
        key,
      ]);
      const owned = t.app.get(OwnedDevices);
      expect(await heardAfter(async (tx) => expect(await owned.suspendAllOf(org, user.body.id, 'LOST', actor, tx)).toEqual([id]))).toEqual([key]);
      // Nothing ISSUED is left: a second wallet suspend moves nothing and publishes nothing.
      expect(await heardAfter(async (tx) => expect(await owned.suspendAllOf(org, user.body.id, 'LOST', actor, tx)).toEqual([]))).toEqual([]);
    });
  });
});
