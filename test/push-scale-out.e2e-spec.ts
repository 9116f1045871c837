import { randomUUID } from 'node:crypto';
import { Metrics } from '@app/observability';
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
 * Two instances over one database (DECISIONS 10.1): both senders claim from the same outbox with
 * FOR UPDATE SKIP LOCKED, so every notification reaches the hub exactly once, and both share the work.
 */
describe('Push delivery across two instances', () => {
  let a: TestApp;
  let b: TestApp;
  let hub: FakeNotificationHub;
  const ORG = 'pushscale';

  beforeAll(async () => {
    // A small batch, so that both instances get a share of the claims.
    const env = { PUSH_BATCH_SIZE: '10', PUSH_CONCURRENCY: '20' };
    a = await createTestApp({ env });
    b = await createTestApp({ env, databaseUrl: a.databaseUrl, clock: a.clock, shareHsmWith: a });
    hub = await FakeNotificationHub.start();
  });
  afterAll(async () => {
    await b.close();
    await a.close();
    await hub.close();
  });

  it('400 notifications written at once: each sent once, both instances sending', async () => {
    const admin = await platformAdminToken(a.http);
    await createOrganization(a.http, admin, ORG);
    const account = await createSystemAccount(a.http, admin, ORG, { role: 'Administration' });
    const token = await tokenBySecret(a.http, ORG, account.clientId, account.secret);
    await configureHubGateway(a, token, ORG, hub);
    const people: string[] = [];
    for (let i = 0; i < 20; i++) {
      const { id } = await createCardholder(a, admin, ORG, `scale${i}`);
      people.push(id);
      await insertAuthenticator(a, ORG, id);
    }
    // 20 notifications for each of 20 people, committed in one transaction: both senders see them at
    // once (one through its own commit signal, the other by polling).
    await a.db.query('BEGIN');
    for (const userId of people) {
      for (let n = 0; n < 20; n++) {
        await a.db.query(
          `INSERT INTO push_outbox (id, org_id, user_id, authenticator_id, template, template_values, cause, due_at, created_at, updated_at)
           SELECT $1, org_id, user_id, id, 'credential', '{}'::jsonb, 'test.scaleOut', $3, $3, $3 FROM authenticators WHERE user_id = $2`,
          [randomUUID(), userId, a.clock.now()],
        );
      }
    }
    await a.db.query('COMMIT');

    await eventually(
      async () => Number((await a.db.query("SELECT count(*) AS n FROM push_outbox WHERE org_id = $1 AND state = 'sent'", [ORG])).rows[0].n) === 400,
      'all 400 sent',
      30_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hub.sends).toHaveLength(400);
    expect(new Set(hub.sends.map((send) => send.key)).size).toBe(400);
    expect(hub.sends.every((send) => send.signatureValid && send.answered === 201)).toBe(true);
    const attempts = (await a.db.query('SELECT DISTINCT attempts FROM push_outbox WHERE org_id = $1', [ORG])).rows.map((row) => row.attempts);
    expect(attempts).toEqual([1]);
    // Each instance counts what it sent in its own metrics registry: together 400, each some.
    const sentBy = async (t: TestApp) => (await t.app.get(Metrics).registry.getSingleMetric('push_notifications_sent_total')!.get()).values[0]?.value ?? 0;
    const [byA, byB] = [await sentBy(a), await sentBy(b)];
    expect(byA + byB).toBe(400);
    expect(Math.min(byA, byB)).toBeGreaterThan(0);
  });
});
