import { DataCipher } from '@app/common';
import { AppConfig } from '@app/config';
import { Database } from '@app/persistence';
import { PushNotifications } from '@app/delivery-gateway';
import {
  FakeNotificationHub,
  TestApp,
  configureHubGateway,
  createCardholder,
  createOrganization,
  createSystemAccount,
  createTestApp,
  eventually,
  insertAuthenticator,
  platformAdminToken,
  tokenBySecret,
} from '@app/testing';

/**
 * The outbox half of the PushNotifications port (DECISIONS 10.1): one row per live authenticator of
 * the person, written in the caller's transaction, so it commits and rolls back with the change that
 * causes it.
 */
describe('Push outbox', () => {
  let t: TestApp;
  let notifications: PushNotifications;
  let db: Database;
  const ORG = 'outbox';

  beforeAll(async () => {
    t = await createTestApp();
    const admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, ORG);
    notifications = t.app.get(PushNotifications);
    db = t.app.get(Database);
  });
  afterAll(() => t.close());

  const rowsOf = async (userId: string) =>
    (await t.db.query('SELECT authenticator_id, template, template_values, cause, attempts FROM push_outbox WHERE user_id = $1 ORDER BY created_at', [userId]))
      .rows;

  it('writes one row per authenticator in the caller transaction, and none when it rolls back', async () => {
    const admin = await platformAdminToken(t.http);
    const { id: userId } = await createCardholder(t, admin, ORG, 'olga');
    const phone = await insertAuthenticator(t, ORG, userId, { operatingSystem: 'Android' });
    const tablet = await insertAuthenticator(t, ORG, userId, { operatingSystem: 'iOS13' });
    const notification = { org: ORG, userId, template: 'credential' as const, values: { event: 'revoked' }, cause: 'credential.revoked' };

    await expect(
      db.transaction(async (tx) => {
        expect(await notifications.enqueue(notification, tx)).toBe(2);
        // Inside the transaction the rows exist; outside it nobody sees them yet.
        expect((await db.query('SELECT count(*)::int AS n FROM push_outbox WHERE user_id = $1', [userId], tx))[0]).toEqual({ n: 2 });
        expect(await rowsOf(userId)).toEqual([]);
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(await rowsOf(userId)).toEqual([]);

    const queued = await db.transaction((tx) => notifications.enqueue(notification, tx));
    expect(queued).toBe(2);
    const rows = await rowsOf(userId);
    expect(rows.map((row) => row.authenticator_id).sort()).toEqual([phone, tablet].sort());
    for (const row of rows) expect(row).toMatchObject({ template: 'credential', template_values: { event: 'revoked' }, cause: 'credential.revoked' });
  });

  it('queues nothing for a person without authenticators, nor for a stale authenticator', async () => {
    const admin = await platformAdminToken(t.http);
    const { id: userId } = await createCardholder(t, admin, ORG, 'oscar');
    const notification = { org: ORG, userId, template: 'challenge' as const, values: { bindingMessage: 'A1' }, cause: 'ciba.request' };
    expect(await db.transaction((tx) => notifications.enqueue(notification, tx))).toBe(0);
    const stale = await insertAuthenticator(t, ORG, userId);
    await t.db.query('UPDATE authenticators SET stale_since = now() WHERE id = $1', [stale]);
    expect(await db.transaction((tx) => notifications.enqueue(notification, tx))).toBe(0);
    const live = await insertAuthenticator(t, ORG, userId);
    expect(await db.transaction((tx) => notifications.enqueue(notification, tx))).toBe(1);
    expect((await rowsOf(userId)).map((row) => row.authenticator_id)).toEqual([live]);
  });
});

/** DECISIONS 10.2: with PUSH_LOOPBACK_HUBS=false (the default), no gateway can aim the service at its own machine. */
describe('Push delivery to a loopback endpoint, not allowed', () => {
  let t: TestApp;
  let hub: FakeNotificationHub;
  beforeAll(async () => {
    t = await createTestApp({ env: { PUSH_LOOPBACK_HUBS: 'false' } });
    hub = await FakeNotificationHub.start();
  });
  afterAll(async () => {
    await t.close();
    await hub.close();
  });

  it('refuses the gateway at create, naming the setting; one stored earlier sends nothing there and waits for another attempt, saying why', async () => {
    const admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, 'noloop');
    const account = await createSystemAccount(t.http, admin, 'noloop', { role: 'Administration' });
    const token = await tokenBySecret(t.http, 'noloop', account.clientId, account.secret);
    await expect(configureHubGateway(t, token, 'noloop', hub)).rejects.toThrow(
      /create gateway failed: 400 .*connectionString: Endpoint names a loopback address, which only PUSH_LOOPBACK_HUBS=true allows/,
    );
    // Stored before the rule (here: created towards a public name, then pointed at the fake hub as the service seals it).
    const gateway = await configureHubGateway(t, token, 'noloop', hub, { connectionString: hub.connectionString().replace('127.0.0.1', 'ns.example.net') });
    const sealed = new DataCipher(t.app.get(AppConfig).dataEncryptionKeys).seal(
      hub.connectionString(),
      `push-delivery-gateway:noloop:${gateway}:connectionString`,
    );
    await t.db.query('UPDATE push_delivery_gateways SET connection_string_key_id = $1, connection_string_sealed = $2 WHERE id = $3', [
      sealed.keyId,
      sealed.sealed,
      gateway,
    ]);
    const { id: userId } = await createCardholder(t, admin, 'noloop', 'lou');
    await insertAuthenticator(t, 'noloop', userId);
    const db = t.app.get(Database);
    await db.transaction((tx) =>
      t.app.get(PushNotifications).enqueue({ org: 'noloop', userId, template: 'credential', values: {}, cause: 'test.loopback' }, tx),
    );
    await eventually(async () => (await t.db.query('SELECT attempts FROM push_outbox WHERE user_id = $1', [userId])).rows[0].attempts === 1, 'one attempt');
    await eventually(async () => (await t.db.query('SELECT last_error FROM push_outbox WHERE user_id = $1', [userId])).rows[0].last_error !== null, 'written');
    expect((await t.db.query('SELECT state, gateway_id, last_error FROM push_outbox WHERE user_id = $1', [userId])).rows[0]).toEqual({
      state: 'pending',
      gateway_id: gateway,
      last_error: 'address_not_allowed: the endpoint is not a public address (loopback only with PUSH_LOOPBACK_HUBS=true); nothing was sent',
    });
    expect(hub.sends).toEqual([]);
  });
});
