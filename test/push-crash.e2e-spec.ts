import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import request from 'supertest';
import {
  FakeClock,
  FakeNotificationHub,
  PLATFORM_ADMIN_SECRET,
  TEST_APPLICATION_ID,
  configureHubGateway,
  createCardholder,
  createOrganization,
  createSuiteDatabase,
  createSystemAccount,
  eventually,
  freePort,
  insertAuthenticator,
  platformAdminToken,
  startService,
  stopAllServices,
  tokenBySecret,
  waitReady,
} from '@app/testing';

/**
 * A crash between claim and outcome (issue 25; DECISIONS 10.1), with a real service process killed
 * by SIGKILL: the hub has the request but never answers; the service dies; after a restart the
 * notification is sent again once its lease has run out, under the same idempotency key, so the hub
 * sees the second request as a repeat of the first; the row ends sent after two attempts.
 */
describe('push delivery survives kill -9', () => {
  let hub: FakeNotificationHub;
  let db: Client;
  afterAll(async () => {
    await stopAllServices();
    await db?.end();
    await hub?.close();
  });

  it('a notification claimed by a killed instance is sent after the restart, recognisable as a repeat', async () => {
    const dataDir = join(process.env.TEST_RUN_DIR!, `push-crash-${randomBytes(4).toString('hex')}`);
    mkdirSync(dataDir, { recursive: true });
    const databaseUrl = await createSuiteDatabase();
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = {
      NODE_ENV: 'test',
      PORT: String(port),
      HOST: '127.0.0.1',
      METRICS_PORT: String(await freePort()),
      DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      PUBLIC_BASE_URL: base,
      PKCS11_MODULE: process.env.TEST_PKCS11_MODULE!,
      PKCS11_TOKEN_LABEL: process.env.TEST_PKCS11_TOKEN_LABEL!,
      PKCS11_PIN: process.env.TEST_PKCS11_PIN!,
      SOFTHSM2_CONF: process.env.SOFTHSM2_CONF!,
      SECRET_PEPPER: 'push-crash-pepper-0123456789abcdef0123456789',
      DATA_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 5).toString('base64')}`,
      PLATFORM_ADMIN_SECRET,
      BOOTSTRAP_CA: 'false',
      PUSH_LOOPBACK_HUBS: 'true',
      PUSH_POLL_INTERVAL_MS: '100',
      PUSH_LEASE_S: '2',
      PUSH_SEND_TIMEOUT_MS: '1000',
    };
    hub = await FakeNotificationHub.start();
    db = new Client({ connectionString: databaseUrl });
    await db.connect();

    const first = startService(env);
    await waitReady(base, first);
    const http = request.agent(base).set('Application-ID', TEST_APPLICATION_ID).set('Application-Version', '1.0');
    const t = { http, db, clock: new FakeClock() };
    const admin = await platformAdminToken(http);
    await createOrganization(http, admin, 'pushcrash');
    const account = await createSystemAccount(http, admin, 'pushcrash', { role: 'Administration' });
    await configureHubGateway(t, await tokenBySecret(http, 'pushcrash', account.clientId, account.secret), 'pushcrash', hub);
    const { id: userId } = await createCardholder(t, admin, 'pushcrash', 'kira');
    const authenticator = await insertAuthenticator(t, 'pushcrash', userId, { pushHandle: 'kira-phone' });

    // The hub takes the first request and never answers it.
    hub.answerNext({ status: 201, hangMs: 600_000 });
    const id = randomUUID();
    await db.query(
      `INSERT INTO push_outbox (id, org_id, user_id, authenticator_id, template, template_values, cause, due_at, created_at, updated_at)
       VALUES ($1, 'pushcrash', $2, $3, 'credential', '{"message": "Your PKI credential was revoked."}', 'credential.revoke', now(), now(), now())`,
      [id, userId, authenticator],
    );
    const [held] = await hub.waitForSends(1);
    expect(held).toMatchObject({ key: id, handle: 'kira-phone', signatureValid: true });
    expect((await db.query('SELECT state, attempts FROM push_outbox WHERE id = $1', [id])).rows[0]).toEqual({ state: 'pending', attempts: 1 });

    first.process.kill('SIGKILL');
    await first.exited;
    const second = startService(env);
    await waitReady(base, second);

    const [, repeat] = await hub.waitForSends(2, 20_000);
    expect(repeat).toMatchObject({ key: id, handle: 'kira-phone', signatureValid: true, answered: 201 });
    // Not before the first claim's lease ran out.
    expect(repeat.at - held.at).toBeGreaterThanOrEqual(1900);
    await eventually(async () => (await db.query('SELECT state FROM push_outbox WHERE id = $1', [id])).rows[0].state === 'sent', 'sent after the restart');
    expect((await db.query('SELECT state, attempts, last_status FROM push_outbox WHERE id = $1', [id])).rows[0]).toEqual({
      state: 'sent',
      attempts: 2,
      last_status: 201,
    });
    // The same key twice: the hub (or the app, by notificationId) knows the second is a repeat.
    expect(hub.sends.map((send) => send.key)).toEqual([id, id]);
    expect(JSON.parse(repeat.body).data.notificationId).toBe(id);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(hub.sends).toHaveLength(2);
    expect(first.output() + second.output()).not.toContain(hub.key);
  }, 90_000);
});
