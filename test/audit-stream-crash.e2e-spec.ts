import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import request from 'supertest';
import { verifyWebhook } from '@app/audit';
import {
  PLATFORM_ADMIN_SECRET,
  SyslogReceiver,
  TEST_APPLICATION_ID,
  WebhookReceiver,
  createOrganization,
  createSuiteDatabase,
  createSystemAccount,
  eventually,
  freePort,
  platformAdminToken,
  selfSignedServerCertificate,
  startService,
  stopAllServices,
  tokenBySecret,
  waitReady,
} from '@app/testing';

/**
 * A kill -9 of the service while audit events are on the wire to a webhook that has taken them and
 * not answered (DECISIONS 11.4), with the real service as a process. After the restart the same
 * events are sent again once their lease has run out, under the same webhook-id, so the receiver
 * recognises the repeats; every event of the outbox reaches both receivers, once by id.
 */
describe('audit stream survives kill -9', () => {
  let webhook: WebhookReceiver;
  let syslog: SyslogReceiver;
  let db: Client;
  afterAll(async () => {
    await stopAllServices();
    await db?.end();
    await webhook?.down();
    await syslog?.down();
  });

  it('events in flight at the kill are delivered after the restart, as repeats of the same id; every event arrives', async () => {
    const dataDir = join(process.env.TEST_RUN_DIR!, `audit-stream-crash-${randomBytes(4).toString('hex')}`);
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
      SECRET_PEPPER: 'audit-crash-pepper-0123456789abcdef0123456789',
      DATA_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 6).toString('base64')}`,
      PLATFORM_ADMIN_SECRET,
      BOOTSTRAP_CA: 'false',
      AUDIT_STREAM_LOOPBACK: 'true',
      AUDIT_STREAM_POLL_INTERVAL_MS: '100',
      AUDIT_STREAM_LEASE_S: '4',
      AUDIT_STREAM_SEND_TIMEOUT_MS: '3000',
      AUDIT_STREAM_RETRY_BASE_MS: '200',
      AUDIT_STREAM_RETRY_MAX_MS: '500',
    };
    const server = selfSignedServerCertificate();
    webhook = await WebhookReceiver.start(server);
    syslog = await SyslogReceiver.start(server);
    db = new Client({ connectionString: databaseUrl });
    await db.connect();

    const first = startService(env);
    await waitReady(base, first);
    const http = request.agent(base).set('Application-ID', TEST_APPLICATION_ID).set('Application-Version', '1.0');
    const admin = await platformAdminToken(http);
    const hook = await http
      .post('/admin/v1/audit-destinations')
      .auth(admin, { type: 'bearer' })
      .send({ name: 'crash hook', type: 'webhook', url: webhook.url, caCertificate: server.cert });
    expect(hook.status).toBe(201);
    const sys = await http
      .post('/admin/v1/audit-destinations')
      .auth(admin, { type: 'bearer' })
      .send({ name: 'crash syslog', type: 'syslog', host: '127.0.0.1', port: syslog.port, caCertificate: server.cert });
    expect(sys.status).toBe(201);

    // The webhook takes every call from now on and answers none: the events are on the wire at the kill.
    webhook.hangNext = 1_000_000;
    await createOrganization(http, admin, 'streamcrash');
    const account = await createSystemAccount(http, admin, 'streamcrash', { role: 'Administration' });
    for (let i = 0; i < 3; i++) await tokenBySecret(http, 'streamcrash', account.clientId, account.secret);
    const hanging = () => webhook.calls.filter((c) => c.answered === 0);
    await eventually(async () => hanging().length >= 3, 'calls in flight', 10_000);
    const inFlight = [...new Set(hanging().map((c) => c.headers['webhook-id']!))];
    const { rows: held } = await db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM audit_outbox WHERE destination_id = $1 AND state = 'pending' AND attempts >= 1 AND event_id = ANY($2::bigint[])",
      [hook.body.id, inFlight],
    );
    expect(held[0].n).toBe(inFlight.length);

    first.process.kill('SIGKILL');
    await first.exited;
    webhook.hangNext = 0;
    const second = startService(env);
    await waitReady(base, second);
    for (let i = 0; i < 2; i++) await tokenBySecret(http, 'streamcrash', account.clientId, account.secret);

    const settled = async (id: string) =>
      (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM audit_outbox WHERE destination_id = $1 AND state <> 'delivered'", [id])).rows[0].n === 0;
    await eventually(async () => (await settled(hook.body.id)) && settled(sys.body.id), 'every delivery after the restart', 30_000);
    const outboxIds = async (id: string) =>
      (await db.query<{ id: string }>('SELECT event_id::text AS id FROM audit_outbox WHERE destination_id = $1 ORDER BY event_id', [id])).rows.map((r) => r.id);
    const hookIds = await outboxIds(hook.body.id);
    const sysIds = await outboxIds(sys.body.id);
    expect(hookIds.length).toBeGreaterThanOrEqual(8);

    // Every event once by id (the receiver deduplicates on webhook-id / the SD id), none unknown.
    expect([...new Set(webhook.acceptedIds())].sort()).toEqual([...hookIds].sort());
    expect([...new Set(syslog.ids())].sort()).toEqual([...sysIds].sort());
    // The ones on the wire at the kill came again, under the same id, signed, after the lease.
    for (const id of inFlight) {
      const calls = webhook.calls.filter((c) => c.headers['webhook-id'] === id);
      // Taken and unanswered before the kill (more than once if a send timed out first), answered once after it.
      expect(calls[0].answered).toBe(0);
      expect(calls.filter((c) => c.answered === 200)).toHaveLength(1);
      expect(calls.at(-1)!.answered).toBe(200);
      // The same event each time; a repeat may carry the chain digest the first lacked (the chainer linked it meanwhile).
      const event = (c: { body: string }) => ({ ...JSON.parse(c.body).data, chain: undefined });
      for (const c of calls) expect(event(c)).toEqual(event(calls[0]));
      expect(verifyWebhook(hook.body.secret, calls.at(-1)!.headers, calls.at(-1)!.body, Math.floor(Date.now() / 1000))).toBe(true);
    }
    expect(first.output() + second.output()).not.toContain(hook.body.secret);
  }, 90_000);
});
