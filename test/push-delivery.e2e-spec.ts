import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { PersonNotification, PushNotifications, PushSender } from '@app/delivery-gateway';
import { Metrics } from '@app/observability';
import { Database } from '@app/persistence';
import {
  FakeNotificationHub,
  TestApp,
  configureHubGateway,
  createCardholder,
  createOrganization,
  createSystemAccount,
  createTestApp,
  eventually,
  expectScimError,
  insertAuthenticator,
  platformAdminToken,
  tokenBySecret,
} from '@app/testing';

/**
 * Push delivery (issue 25 item 2; DECISIONS 10.1) against a fake notification hub: the signed REST
 * send to the gateway of the authenticator's operating system, retries with backoff and Retry-After
 * (timed with the fake clock), the dead letter, the stale handle, the circuit breaker that keeps a
 * broken hub from slowing another, the administrators' view and the metrics, and a connection
 * string that never reaches the logs.
 */
describe('Push delivery', () => {
  let t: TestApp;
  let admin: string;
  const hubs: FakeNotificationHub[] = [];
  const tokens: Record<string, string> = {};

  beforeAll(async () => {
    t = await createTestApp({
      env: {
        PUSH_MAX_ATTEMPTS: '3',
        PUSH_BREAKER_FAILURES: '3',
        PUSH_BREAKER_COOLDOWN_MS: '30000',
        PUSH_SEND_TIMEOUT_MS: '1000',
        PUSH_LEASE_S: '5',
        PUSH_RETRY_BASE_MS: '1000',
        PUSH_RETRY_MAX_MS: '60000',
      },
    });
    admin = await platformAdminToken(t.http);
  });
  afterAll(async () => {
    await t.close();
    await Promise.all(hubs.map((hub) => hub.close()));
  });

  async function hub(): Promise<FakeNotificationHub> {
    const started = await FakeNotificationHub.start();
    hubs.push(started);
    return started;
  }

  /** An organization with a configuration operator's token. */
  async function organization(org: string): Promise<string> {
    // Tests move the clock by minutes: a fresh platform token for each organization.
    admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, org);
    const account = await createSystemAccount(t.http, admin, org, { role: 'Administration' });
    tokens[org] = await tokenBySecret(t.http, org, account.clientId, account.secret);
    return tokens[org];
  }

  const notify = (notification: PersonNotification) => t.app.get(Database).transaction((tx) => t.app.get(PushNotifications).enqueue(notification, tx));
  const credential = (org: string, userId: string, event = 'revoked'): PersonNotification => ({
    org,
    userId,
    template: 'credential',
    values: { event },
    cause: `credential.${event}`,
  });
  const rowsOf = async (userId: string) =>
    (await t.db.query('SELECT * FROM push_outbox WHERE user_id = $1 ORDER BY created_at, authenticator_id', [userId])).rows;
  const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const metric = async (name: string) => (await t.app.get(Metrics).registry.getSingleMetric(name)!.get()).values;

  it('sends each notification to the hub of the gateway bound for its operating system: signed, formatted, with its idempotency key', async () => {
    const token = await organization('pd_send');
    const android = await hub();
    const apple = await hub();
    const gcm = await configureHubGateway(t, token, 'pd_send', android);
    const apns = await configureHubGateway(t, token, 'pd_send', apple, { type: 'CLOUD_APNS_PUSH', hubPath: 'ios-hub', ttl: '600' });
    const { id: userId } = await createCardholder(t, admin, 'pd_send', 'paula');
    const pixel = await insertAuthenticator(t, 'pd_send', userId, { operatingSystem: 'Android', pushHandle: 'fcm-token-of-pixel' });
    const iphone = await insertAuthenticator(t, 'pd_send', userId, { operatingSystem: 'iOS13', pushHandle: 'apns-token-of-iphone' });

    expect(await notify(credential('pd_send', userId))).toBe(2);
    const [toAndroid] = await android.waitForSends(1);
    const [toApple] = await apple.waitForSends(1);
    const rows = await rowsOf(userId);
    const rowOf = (authenticator: string) => rows.find((row) => row.authenticator_id === authenticator)!;

    expect(toAndroid).toMatchObject({
      hub: 'wallet-hub',
      signatureValid: true,
      answered: 201,
      format: 'gcm',
      handle: 'fcm-token-of-pixel',
      key: rowOf(pixel).id,
    });
    expect(toAndroid.headers['content-type']).toBe('application/json;charset=utf-8');
    expect(String(toAndroid.headers.authorization)).toMatch(
      /^SharedAccessSignature sr=http%3a%2f%2f127\.0\.0\.1%3a\d+%2fwallet-hub&sig=[^&]+&se=\d+&skn=DefaultFullSharedAccessSignature$/,
    );
    expect(JSON.parse(toAndroid.body)).toEqual({
      notification: { title: 'Credential', body: 'Your credential is revoked' },
      data: { event: 'revoked', notificationId: rowOf(pixel).id, template: 'credential' },
      time_to_live: 3600,
    });
    expect(toApple).toMatchObject({ hub: 'ios-hub', signatureValid: true, format: 'apple', handle: 'apns-token-of-iphone', key: rowOf(iphone).id });
    expect(Date.parse(String(toApple.headers['servicebusnotification-apns-expiry']))).toBe(t.clock.now().getTime() + 600_000);
    expect(JSON.parse(toApple.body).aps).toEqual({ alert: { title: 'Credential', body: 'Your credential is revoked' } });

    await eventually(async () => (await rowsOf(userId)).every((row) => row.state === 'sent'), 'both rows sent');
    for (const row of await rowsOf(userId)) expect(row).toMatchObject({ attempts: 1, last_status: 201, last_error: null, sent_at: t.clock.now() });
    expect((await rowsOf(userId)).map((row) => row.gateway_id).sort()).toEqual([gcm, apns].sort());
    // Nothing is sent twice.
    await settle(300);
    expect(android.sends).toHaveLength(1);
    expect(apple.sends).toHaveLength(1);
    expect(await metric('push_notifications_sent_total')).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ labels: { org: 'pd_send', gateway: gcm }, value: 1 }),
        expect.objectContaining({ labels: { org: 'pd_send', gateway: apns }, value: 1 }),
      ]),
    );
    const histogram = await metric('push_send_duration_seconds');
    expect(histogram.find((v) => (v as { metricName?: string }).metricName === 'push_send_duration_seconds_count' && v.labels.gateway === gcm)?.value).toBe(1);
  });

  it('a signature made with another key is refused by the hub (401): the notification fails without a retry', async () => {
    const token = await organization('pd_key');
    const fake = await hub();
    await configureHubGateway(t, token, 'pd_key', fake, { connectionString: fake.connectionString(Buffer.alloc(32, 1).toString('base64')) });
    const { id: userId } = await createCardholder(t, admin, 'pd_key', 'kim');
    await insertAuthenticator(t, 'pd_key', userId);
    await notify(credential('pd_key', userId));
    const [send] = await fake.waitForSends(1);
    expect(send).toMatchObject({ signatureValid: false, answered: 401 });
    await eventually(async () => (await rowsOf(userId))[0].state === 'failed', 'the row failed');
    expect((await rowsOf(userId))[0]).toMatchObject({ attempts: 1, last_status: 401, last_error: 'the hub refused it with 401; not retried' });
    t.clock.advance(3600);
    await settle(300);
    expect(fake.sends).toHaveLength(1);
  });

  it('retries a 500 after exponential backoff with jitter and a 429 after its Retry-After, then delivers under the same key', async () => {
    const token = await organization('pd_retry');
    const fake = await hub();
    const gateway = await configureHubGateway(t, token, 'pd_retry', fake);
    const { id: userId } = await createCardholder(t, admin, 'pd_retry', 'rita');
    await insertAuthenticator(t, 'pd_retry', userId);
    fake.answerNext({ status: 500 }, { status: 429, retryAfter: '7' });
    const start = t.clock.now().getTime();

    await notify(credential('pd_retry', userId));
    await fake.waitForSends(1);
    await eventually(async () => (await rowsOf(userId))[0].last_status === 500, 'the 500 written');
    const [afterFirst] = await rowsOf(userId);
    expect(afterFirst).toMatchObject({ state: 'pending', attempts: 1, last_error: 'the hub answered 500' });
    // Attempt 1 failed: the next one between half and all of PUSH_RETRY_BASE_MS later.
    expect(afterFirst.due_at.getTime() - start).toBeGreaterThanOrEqual(500);
    expect(afterFirst.due_at.getTime() - start).toBeLessThanOrEqual(1000);
    await settle(300);
    expect(fake.sends).toHaveLength(1);

    t.clock.advance(1);
    await fake.waitForSends(2);
    await eventually(async () => (await rowsOf(userId))[0].last_status === 429, 'the 429 written');
    // Retry-After: 7 wins over the backoff: due exactly seven seconds after the answer.
    expect((await rowsOf(userId))[0].due_at.getTime()).toBe(t.clock.now().getTime() + 7000);
    t.clock.advance(6);
    await settle(300);
    expect(fake.sends).toHaveLength(2);

    t.clock.advance(1);
    await fake.waitForSends(3);
    await eventually(async () => (await rowsOf(userId))[0].state === 'sent', 'sent at the third attempt');
    expect((await rowsOf(userId))[0]).toMatchObject({ attempts: 3, last_status: 201 });
    expect(new Set(fake.sends.map((send) => send.key))).toEqual(new Set([(await rowsOf(userId))[0].id]));
    const labels = { org: 'pd_retry', gateway };
    expect((await metric('push_notifications_retried_total')).find((v) => v.labels.gateway === gateway)).toMatchObject({ labels, value: 2 });
    expect((await metric('push_notifications_failed_total')).filter((v) => v.labels.gateway === gateway).map((v) => [v.labels.reason, v.value])).toEqual([
      ['server', 1],
      ['throttled', 1],
    ]);
  });

  it('dead-letters a notification after PUSH_MAX_ATTEMPTS failed attempts, audited as 93001', async () => {
    const token = await organization('pd_dead');
    const fake = await hub();
    const gateway = await configureHubGateway(t, token, 'pd_dead', fake);
    const { id: userId } = await createCardholder(t, admin, 'pd_dead', 'dora');
    await insertAuthenticator(t, 'pd_dead', userId);
    fake.answerAlways({ status: 503 });
    await notify(credential('pd_dead', userId));
    for (const attempt of [1, 2, 3]) {
      await fake.waitForSends(attempt);
      await eventually(async () => (await rowsOf(userId))[0].last_status === 503 && (await rowsOf(userId))[0].attempts === attempt, `attempt ${attempt}`);
      t.clock.advance(60);
    }
    await eventually(async () => (await rowsOf(userId))[0].state === 'deadLettered', 'dead-lettered');
    const [row] = await rowsOf(userId);
    expect(row).toMatchObject({ attempts: 3, last_status: 503, last_error: 'dead-lettered after 3 attempts; last: the hub answered 503' });
    t.clock.advance(3600);
    await settle(300);
    expect(fake.sends).toHaveLength(3);
    admin = await platformAdminToken(t.http);
    const events = await t.http.get('/admin/v1/organizations/pd_dead/audit-events?code=93001').auth(admin, { type: 'bearer' });
    expect(events.status).toBe(200);
    const [event] = events.body.Resources;
    expect(event).toMatchObject({ action: 'pushNotification.deadLetter', code: 93001, target: row.id, outcome: 'failure', actor: 'system' });
    expect(event.details).toEqual({ gateway, attempts: 3, lastStatus: 503, cause: 'the hub answered 503' });
    expect((await metric('push_notifications_dead_lettered_total')).find((v) => v.labels.gateway === gateway)?.value).toBe(1);
  });

  it('a handle the hub calls gone (410) marks the authenticator stale: shown on it, audited, and it gets nothing more', async () => {
    const token = await organization('pd_gone');
    const fake = await hub();
    await configureHubGateway(t, token, 'pd_gone', fake);
    const { id: userId } = await createCardholder(t, admin, 'pd_gone', 'gina');
    const old = await insertAuthenticator(t, 'pd_gone', userId, { pushHandle: 'expired-handle' });
    fake.answerNext({ status: 410 });
    await notify(credential('pd_gone', userId));
    await fake.waitForSends(1);
    await eventually(async () => (await rowsOf(userId))[0].state === 'failed', 'the row failed');
    expect((await rowsOf(userId))[0]).toMatchObject({
      attempts: 1,
      last_status: 410,
      last_error: 'the hub called the push handle gone; the authenticator is now stale',
    });

    const read = await t.http
      .get(`/aims/rs/scim/v2/Users/${userId}/Authenticators/${old}`)
      .auth(token, { type: 'bearer' })
      .set('Accept', 'application/scim+json');
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: old, status: 'stale', staleSince: t.clock.now().toISOString() });
    const events = await t.http.get('/admin/v1/organizations/pd_gone/audit-events?code=93002').auth(admin, { type: 'bearer' });
    expect(JSON.stringify(events.body)).toContain(old);
    expect(JSON.stringify(events.body)).not.toContain('expired-handle');

    expect(await notify(credential('pd_gone', userId))).toBe(0);
    const fresh = await insertAuthenticator(t, 'pd_gone', userId, { pushHandle: 'new-handle' });
    expect(await notify(credential('pd_gone', userId))).toBe(1);
    await fake.waitForSends(2);
    expect(fake.sends[1]).toMatchObject({ handle: 'new-handle', answered: 201 });
    expect((await rowsOf(userId)).filter((row) => row.authenticator_id === fresh)).toHaveLength(1);
  });

  it('follows no redirect: a hub answering 307 towards another loopback port is a failure not retried, and that port receives nothing', async () => {
    const token = await organization('pd_redirect');
    const fake = await hub();
    const target = createServer((request, response) => {
      targetRequests.push({ method: request.method, headers: request.headers });
      response.writeHead(201).end();
    });
    const targetRequests: { method?: string; headers: Record<string, unknown> }[] = [];
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    try {
      const port = (target.address() as AddressInfo).port;
      fake.answerAlways({ status: 307, location: `http://127.0.0.1:${port}/collect` });
      const gateway = await configureHubGateway(t, token, 'pd_redirect', fake);
      const { id: userId } = await createCardholder(t, admin, 'pd_redirect', 'rita');
      await insertAuthenticator(t, 'pd_redirect', userId, { pushHandle: 'handle-of-rita' });
      await notify(credential('pd_redirect', userId));
      await fake.waitForSends(1);
      await eventually(async () => (await rowsOf(userId))[0].state !== 'pending', 'settled');
      await settle(200);
      expect(targetRequests).toEqual([]);
      expect(fake.sends).toHaveLength(1);
      const view = await t.http.get(`/configuration/pd_redirect/v2/DeliveryGateway/Notifications?userId=${userId}`).auth(token, { type: 'bearer' });
      expect(view.status).toBe(200);
      expect(view.body.Resources).toEqual([
        expect.objectContaining({
          gateway: { value: gateway },
          state: 'failed',
          attempts: 1,
          lastStatus: 307,
          lastError: 'redirect_refused: the hub answered 307, a redirect, which is not followed; not retried',
        }),
      ]);
    } finally {
      target.closeAllConnections();
      await new Promise((resolve) => target.close(resolve));
    }
  });

  it("the administrators' view shows a hub that cannot be reached as a coarse class, never the network's error", async () => {
    const token = await organization('pd_unreachable');
    const closed = await hub();
    const gateway = await configureHubGateway(t, token, 'pd_unreachable', closed);
    await closed.close();
    const { id: userId } = await createCardholder(t, admin, 'pd_unreachable', 'uwe');
    await insertAuthenticator(t, 'pd_unreachable', userId);
    await notify(credential('pd_unreachable', userId));
    await eventually(async () => (await rowsOf(userId))[0].last_error !== null, 'one attempt written');
    const view = await t.http.get(`/configuration/pd_unreachable/v2/DeliveryGateway/Notifications?userId=${userId}`).auth(token, { type: 'bearer' });
    expect(view.status).toBe(200);
    expect(view.body.Resources).toEqual([
      expect.objectContaining({
        gateway: { value: gateway },
        state: 'pending',
        attempts: 1,
        lastStatus: null,
        lastError: 'connection_failed: the hub could not be reached',
      }),
    ]);
    expect(JSON.stringify(view.body)).not.toMatch(/ECONN|127\.0\.0\.1|fetch failed/);
  });

  it('discards a notification no gateway can carry, saying why', async () => {
    await organization('pd_none');
    const { id: userId } = await createCardholder(t, admin, 'pd_none', 'nina');
    await insertAuthenticator(t, 'pd_none', userId, { operatingSystem: 'WINDOWS11' });
    await notify(credential('pd_none', userId));
    await eventually(async () => (await rowsOf(userId))[0].state === 'discarded', 'discarded');
    expect((await rowsOf(userId))[0].last_error).toBe(
      'no gateway with a hub and a connection string, bound by an authenticator policy of the organization, supports WINDOWS11',
    );
  });

  it('circuit breaker: a hub that stops answering does not slow another organization, opens after 3 failures, and is probed once after the cool-down', async () => {
    const brokenToken = await organization('pd_broken');
    const healthyToken = await organization('pd_healthy');
    const broken = await hub();
    const healthy = await hub();
    const brokenGateway = await configureHubGateway(t, brokenToken, 'pd_broken', broken);
    await configureHubGateway(t, healthyToken, 'pd_healthy', healthy);
    const { id: stuck } = await createCardholder(t, admin, 'pd_broken', 'bert');
    const { id: fine } = await createCardholder(t, admin, 'pd_healthy', 'hanna');
    for (let i = 0; i < 3; i++) {
      await insertAuthenticator(t, 'pd_broken', stuck);
      await insertAuthenticator(t, 'pd_healthy', fine);
    }
    broken.answerAlways({ status: 201, hangMs: 5000 });

    const started = performance.now();
    await notify(credential('pd_broken', stuck));
    await broken.waitForSends(3);
    await notify(credential('pd_healthy', fine));
    await eventually(async () => (await rowsOf(fine)).every((row) => row.state === 'sent'), 'the healthy hub served');
    // Served while the broken hub still holds its three sends (they time out after 1000 ms).
    expect(performance.now() - started).toBeLessThan(900);
    expect((await rowsOf(stuck)).every((row) => row.state === 'pending' && row.last_status === null)).toBe(true);

    await eventually(async () => (await rowsOf(stuck)).every((row) => row.last_error === 'timeout: no answer within 1000 ms'), 'three timeouts');
    expect((await metric('push_gateway_circuit_open')).find((v) => v.labels.gateway === brokenGateway)?.value).toBe(1);
    // Open: new notifications for that gateway are held back without spending an attempt.
    await notify(credential('pd_broken', stuck, 'suspended'));
    await eventually(
      async () => (await rowsOf(stuck)).filter((row) => row.cause === 'credential.suspended').every((row) => row.due_at > t.clock.now()),
      'deferred',
    );
    await settle(300);
    expect(broken.sends).toHaveLength(3);
    expect((await rowsOf(stuck)).filter((row) => row.cause === 'credential.suspended').map((row) => row.attempts)).toEqual([0, 0, 0]);

    // After the cool-down, one probe goes first; its success closes the circuit and the rest follow.
    broken.answerAlways({ status: 201, hangMs: 300 });
    t.clock.advance(30);
    await broken.waitForSends(4);
    await settle(150);
    expect(broken.sends).toHaveLength(4);
    await eventually(async () => (await rowsOf(stuck)).every((row) => row.state === 'sent'), 'all sent after the probe', 15_000);
    expect(broken.sends).toHaveLength(9);
    expect((await metric('push_gateway_circuit_open')).find((v) => v.labels.gateway === brokenGateway)?.value).toBe(0);
  });

  describe('administrators read delivery state', () => {
    const path = (org: string, rest = '') => `/configuration/${org}/v2/DeliveryGateway/Notifications${rest}`;

    it('per notification, newest first, paged and filtered; permission, tenant and bad queries refused clearly', async () => {
      const token = await organization('pd_view');
      const fake = await hub();
      const gateway = await configureHubGateway(t, token, 'pd_view', fake);
      const { id: userId } = await createCardholder(t, admin, 'pd_view', 'vera');
      const authenticator = await insertAuthenticator(t, 'pd_view', userId);
      await notify(credential('pd_view', userId, 'suspended'));
      t.clock.advance(1);
      await notify(credential('pd_view', userId, 'revoked'));
      await eventually(async () => (await rowsOf(userId)).every((row) => row.state === 'sent'), 'sent');
      const [first, second] = await rowsOf(userId);

      const list = await t.http.get(path('pd_view', '?count=1')).auth(token, { type: 'bearer' });
      expect(list.status).toBe(200);
      expect(list.headers['content-type']).toMatch(/^application\/scim\+json/);
      expect(list.body).toEqual({
        schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
        totalResults: 2,
        itemsPerPage: 1,
        startIndex: 1,
        Resources: [
          {
            schemas: ['urn:vendor:scim:api:idp:2.0:PushNotification'],
            id: second.id,
            template: 'credential',
            cause: 'credential.revoked',
            user: { value: userId },
            authenticator: { value: authenticator },
            gateway: { value: gateway },
            state: 'sent',
            attempts: 1,
            nextAttemptAt: null,
            lastStatus: 201,
            lastError: null,
            sentAt: second.sent_at.toISOString(),
            meta: {
              resourceType: 'PushNotification',
              created: second.created_at.toISOString(),
              lastModified: second.updated_at.toISOString(),
              location: `https://api.example.test${path('pd_view', `/${second.id}`)}`,
            },
          },
        ],
      });
      const page2 = await t.http.get(path('pd_view', '?count=1&startIndex=2')).auth(token, { type: 'bearer' });
      expect(page2.body.Resources.map((r: { id: string }) => r.id)).toEqual([first.id]);
      const filtered = await t.http.get(path('pd_view', `?state=pending&userId=${userId}`)).auth(token, { type: 'bearer' });
      expect(filtered.body.totalResults).toBe(0);
      const one = await t.http.get(path('pd_view', `/${first.id}`)).auth(token, { type: 'bearer' });
      expect(one.status).toBe(200);
      expect(one.body).toMatchObject({ id: first.id, cause: 'credential.suspended', state: 'sent' });

      expect((await t.http.get(path('pd_view'))).status).toBe(401);
      const helpDesk = await createSystemAccount(t.http, admin, 'pd_view', { role: 'Help Desk' });
      const helpDeskToken = await tokenBySecret(t.http, 'pd_view', helpDesk.clientId, helpDesk.secret);
      expect((await t.http.get(path('pd_view')).auth(helpDeskToken, { type: 'bearer' })).status).toBe(403);
      expect((await t.http.get(path('pd_send')).auth(token, { type: 'bearer' })).status).toBe(403);
      expectScimError(
        await t.http.get(path('pd_view', '?state=lost')).auth(token, { type: 'bearer' }),
        400,
        'invalidValue',
        'Query parameter state must be one of pending, sent, failed, deadLettered, discarded; got "lost".',
      );
      expectScimError(
        await t.http.get(path('pd_view', '?userId=vera')).auth(token, { type: 'bearer' }),
        400,
        'invalidValue',
        `Query parameter userId must be a user's id (a UUID), got "vera".`,
      );
      expectScimError(
        await t.http.get(path('pd_view', '?status=sent')).auth(token, { type: 'bearer' }),
        400,
        'invalidValue',
        'Unknown query parameter status; this list takes startIndex, count, userId, state.',
      );
      expectScimError(
        await t.http.get(path('pd_view', '/7d444840-9dc0-11d1-b245-5ffdce74fad2')).auth(token, { type: 'bearer' }),
        404,
        undefined,
        'Push notification "7d444840-9dc0-11d1-b245-5ffdce74fad2" does not exist in organization "pd_view".',
      );
      // Another organization's notification is not there for this tenant.
      const other = (await t.db.query("SELECT id FROM push_outbox WHERE org_id = 'pd_send' LIMIT 1")).rows[0].id;
      expect((await t.http.get(path('pd_view', `/${other}`)).auth(token, { type: 'bearer' })).status).toBe(404);
    });
  });

  it('settled notifications are deleted after PUSH_RETENTION_DAYS; pending ones stay', async () => {
    await organization('pd_purge');
    const { id: userId } = await createCardholder(t, admin, 'pd_purge', 'pia');
    await insertAuthenticator(t, 'pd_purge', userId);
    const insert = (state: string, settledDaysAgo: number) =>
      t.db.query(
        `INSERT INTO push_outbox (id, org_id, user_id, template, template_values, cause, state, due_at, created_at, updated_at)
         VALUES (gen_random_uuid(), 'pd_purge', $1, 'credential', '{}', 'test.purge', $2, $3, $3, $3) RETURNING id`,
        [userId, state, new Date(t.clock.now().getTime() + (state === 'pending' ? 3_600_000 : -settledDaysAgo * 86_400_000))],
      );
    const old = (await insert('sent', 31)).rows[0].id;
    const recent = (await insert('deadLettered', 29)).rows[0].id;
    const pending = (await insert('pending', 0)).rows[0].id;
    expect(await t.app.get(PushSender).purgeOnce()).toBeGreaterThanOrEqual(1);
    const left = (await t.db.query("SELECT id FROM push_outbox WHERE org_id = 'pd_purge'")).rows.map((row) => row.id);
    expect(left.sort()).toEqual([recent, pending].sort());
    expect(left).not.toContain(old);
  });

  it('no connection string, key or push handle ever reaches the logs', () => {
    const logs = t.logs.join('\n');
    expect(hubs.length).toBeGreaterThan(5);
    for (const fake of hubs) {
      expect(logs).not.toContain(fake.key);
      expect(logs).not.toContain(fake.connectionString());
    }
    expect(logs).not.toContain('fcm-token-of-pixel');
    expect(logs).not.toContain('SharedAccessSignature');
  });
});
