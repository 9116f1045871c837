import { randomBytes } from 'node:crypto';
import { verifyWebhook } from '@app/audit';
import { Metrics } from '@app/observability';
import {
  SyslogReceiver,
  TestApp,
  WebhookReceiver,
  adminCall,
  createAdminAndPlainAccounts,
  createOrganization,
  createTestApp,
  eventually,
  platformAdminToken,
  selfSignedServerCertificate,
  tokenBySecret,
} from '@app/testing';

/**
 * The audit event stream (issue 36 item 2, DECISIONS 11.4), against a TLS syslog receiver (RFC 5425
 * frames, RFC 5424 messages) and an HTTPS webhook receiver made by this test with a self-signed
 * certificate the destinations trust through caCertificate. The service's clock is a FakeClock: the
 * test moves it to make retries due, so an outage spans several attempts without waiting for them.
 */
describe('audit event stream (DECISIONS 11.4)', () => {
  let t: TestApp;
  let admin: string;
  let server: { cert: string; key: string };
  let syslog: SyslogReceiver;
  let webhook: WebhookReceiver;
  let org: string;
  let orgAdminToken: string;
  let plainToken: string;
  let orgAdminClient: { clientId: string; secret: string };
  let plainClient: { clientId: string; secret: string };

  beforeAll(async () => {
    t = await createTestApp({
      env: { AUDIT_STREAM_RETRY_BASE_MS: '1000', AUDIT_STREAM_RETRY_MAX_MS: '2000', AUDIT_STREAM_MAX_AGE_S: '600', AUDIT_STREAM_SEND_TIMEOUT_MS: '2000' },
    });
    admin = await platformAdminToken(t.http);
    server = selfSignedServerCertificate();
    syslog = await SyslogReceiver.start(server);
    webhook = await WebhookReceiver.start(server);
    org = `stream_${randomBytes(3).toString('hex')}`;
    await createOrganization(t.http, admin, org);
    const accounts = await createAdminAndPlainAccounts(t.http, admin, org);
    orgAdminToken = accounts.orgAdminToken;
    plainToken = accounts.plainToken;
    orgAdminClient = accounts.orgAdmin;
    plainClient = accounts.plain;
  });
  afterAll(async () => {
    await t?.close();
    await syslog?.down();
    await webhook?.down();
  });

  const call = (method: 'get' | 'post' | 'patch' | 'delete', path: string, token = orgAdminToken) => adminCall(t.http, method, path, token);
  const base = () => `/organizations/${org}/audit-destinations`;

  async function createWebhook(name: string, path = base(), token = orgAdminToken) {
    const response = await call('post', path, token).send({ name, type: 'webhook', url: webhook.url, caCertificate: server.cert });
    expect(response.status).toBe(201);
    return response.body as { id: string; secret: string };
  }

  async function createSyslog(name: string) {
    const response = await call('post', base()).send({ name, type: 'syslog', host: '127.0.0.1', port: syslog.port, caCertificate: server.cert });
    expect(response.status).toBe(201);
    return response.body as { id: string };
  }

  /** Ids of the events queued for a destination. */
  async function queued(destinationId: string): Promise<string[]> {
    const { rows } = await t.db.query<{ id: string }>('SELECT event_id::text AS id FROM audit_outbox WHERE destination_id = $1 ORDER BY event_id', [
      destinationId,
    ]);
    return rows.map((row) => row.id);
  }

  async function allDelivered(destinationId: string): Promise<boolean> {
    const { rows } = await t.db.query<{ n: number }>("SELECT count(*)::int AS n FROM audit_outbox WHERE destination_id = $1 AND state <> 'delivered'", [
      destinationId,
    ]);
    return rows[0].n === 0;
  }

  /** Makes the retries due: the sender compares due times with the service's (fake) clock. */
  async function moveClockUntil(check: () => Promise<boolean>, what: string, stepS = 3): Promise<void> {
    await eventually(
      async () => {
        t.clock.advance(stepS);
        await new Promise((resolve) => setTimeout(resolve, 150));
        return check();
      },
      what,
      30_000,
    );
  }

  const sorted = (ids: string[]) => [...ids].sort((a, b) => Number(a) - Number(b));

  it('a webhook gets every event of its organization, signed; the secret is answered once; a tampered body or a wrong secret fails verification', async () => {
    const created = await call('post', base()).send({ name: 'SIEM hook', type: 'webhook', url: webhook.url, caCertificate: server.cert });
    expect(created.status).toBe(201);
    expect(created.headers['cache-control']).toBe('no-store');
    expect(created.headers.etag).toBe('W/"1"');
    expect(created.headers.location).toBe(`https://api.example.test/admin/v1/organizations/${org}/audit-destinations/${created.body.id}`);
    expect(created.body).toMatchObject({
      name: 'SIEM hook',
      type: 'webhook',
      url: webhook.url,
      enabled: true,
      meta: { resourceType: 'AuditDestination', version: '1' },
    });
    const secret = created.body.secret as string;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    // Never again, and never stored in clear.
    const read = await call('get', `${base()}/${created.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body.secret).toBeUndefined();
    const list = await call('get', base());
    expect(JSON.stringify(list.body)).not.toContain(secret);
    const stored = await t.db.query('SELECT row_to_json(d)::text AS row FROM audit_destinations d WHERE id = $1', [created.body.id]);
    expect(stored.rows[0].row).not.toContain(secret.slice(6, 30));

    // Events of the organization: the destination's own creation, and tokens issued on the hot path.
    await tokenBySecret(t.http, org, orgAdminClient.clientId, orgAdminClient.secret);
    await eventually(async () => (await queued(created.body.id)).length >= 2 && allDelivered(created.body.id), 'the webhook deliveries');
    const ids = await queued(created.body.id);
    const calls = webhook.calls.filter((c) => ids.includes(c.headers['webhook-id']!));
    expect(sorted(calls.map((c) => c.headers['webhook-id']!))).toEqual(ids);
    const nowS = Math.floor(Date.now() / 1000);
    for (const c of calls) {
      expect(c.headers['content-type']).toBe('application/json');
      expect(verifyWebhook(secret, c.headers, c.body, nowS)).toBe(true);
      const body = JSON.parse(c.body);
      expect(body).toMatchObject({ type: 'audit.event', data: { id: c.headers['webhook-id'], org } });
      expect(body.timestamp).toBe(body.data.occurred);
    }
    const first = JSON.parse(calls[0].body).data;
    expect(first).toMatchObject({ action: 'audit_destination.create', code: 75001, target: created.body.id, outcome: 'success' });
    expect(calls.map((c) => JSON.parse(c.body).data.action)).toContain('token.issue');

    // The receiver's check: the same headers over another body, or with another secret, fail.
    const tampered = calls[0].body.replace('"outcome":"success"', '"outcome":"failure"');
    expect(tampered).not.toBe(calls[0].body);
    expect(verifyWebhook(secret, calls[0].headers, tampered, nowS)).toBe(false);
    expect(verifyWebhook(`whsec_${randomBytes(32).toString('base64')}`, calls[0].headers, calls[0].body, nowS)).toBe(false);
    expect(verifyWebhook(secret, { ...calls[0].headers, 'webhook-id': '1' }, calls[0].body, nowS)).toBe(false);
    // A replay long after its timestamp is refused too.
    expect(verifyWebhook(secret, calls[0].headers, calls[0].body, nowS + 3600)).toBe(false);

    // The chain digest rides along once the chainer has linked the event.
    await call('patch', `${base()}/${created.body.id}`).send({ name: 'SIEM hook (renamed)' });
    await eventually(async () => webhook.calls.some((c) => JSON.parse(c.body).data.action === 'audit_destination.update'), 'the update event');
    const digests = await t.db.query<{ id: string; digest: string | null }>('SELECT id::text AS id, digest FROM audit_events WHERE id = ANY($1::bigint[])', [
      ids,
    ]);
    for (const c of calls) {
      const chain = JSON.parse(c.body).data.chain as { digest: string } | null;
      if (chain) expect(chain.digest).toBe(digests.rows.find((r) => r.id === c.headers['webhook-id'])!.digest);
    }

    // Metrics per destination.
    const metrics = await t.app.get(Metrics).registry.metrics();
    expect(metrics).toMatch(new RegExp(`audit_stream_delivered_total\\{org="${org}",destination="${created.body.id}"\\} [1-9]`));
    expect(metrics).toContain(`audit_stream_lag_seconds_count{org="${org}",destination="${created.body.id}"}`);
    expect((await call('delete', `${base()}/${created.body.id}`)).status).toBe(204);
  });

  it('a syslog receiver gets RFC 5424 messages in RFC 5425 frames over TLS', async () => {
    const destination = await createSyslog('SIEM syslog');
    await tokenBySecret(t.http, org, orgAdminClient.clientId, orgAdminClient.secret);
    await eventually(async () => (await queued(destination.id)).length >= 2 && allDelivered(destination.id), 'the syslog deliveries');
    const ids = await queued(destination.id);
    const messages = syslog.messages.filter((m) => ids.includes(m.event.id));
    expect(sorted(messages.map((m) => m.event.id))).toEqual(ids);
    const created = messages.find((m) => m.event.action === 'audit_destination.create')!;
    // facility 13 (log audit) * 8 + severity 5 (notice) for a success.
    expect(created).toMatchObject({ pri: 109, version: 1, appName: 'credential-platform', msgId: 'audit_destination.create', hadBom: true });
    expect(created.timestamp).toBe(created.event.occurred);
    expect(created.structuredData['audit@32473']).toMatchObject({ id: created.event.id, org, code: '75001', outcome: 'success' });
    expect(messages.find((m) => m.event.action === 'token.issue')).toBeDefined();
    expect((await call('delete', `${base()}/${destination.id}`)).status).toBe(204);
  });

  it('every event arrives once, by id, across an outage of both receivers that spans several retries; the view shows coarse errors', async () => {
    const hook = await createWebhook('outage hook');
    const sys = await createSyslog('outage syslog');
    await eventually(async () => (await allDelivered(hook.id)) && allDelivered(sys.id), 'the creation events');
    await webhook.down();
    await syslog.down();
    for (let i = 0; i < 5; i++) await tokenBySecret(t.http, org, orgAdminClient.clientId, orgAdminClient.secret);
    // Several attempts fail while the receivers are down.
    await moveClockUntil(async () => {
      const { rows } = await t.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM audit_outbox WHERE destination_id = ANY($1::bigint[]) AND state = 'pending' AND attempts >= 3",
        [[hook.id, sys.id]],
      );
      return rows[0].n >= 10;
    }, 'three failed attempts of every delivery');
    const view = await call('get', `${base()}/${hook.id}/deliveries?state=pending`);
    expect(view.status).toBe(200);
    expect(view.body.totalResults).toBeGreaterThanOrEqual(5);
    expect(view.body.Resources[0]).toMatchObject({ state: 'pending', lastError: 'connection_failed: the destination could not be reached' });
    expect(view.body.Resources[0].attempts).toBeGreaterThanOrEqual(3);
    expect(JSON.stringify(view.body)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|connect /);
    const metrics = await t.app.get(Metrics).registry.metrics();
    expect(metrics).toContain(`audit_stream_failed_total{org="${org}",destination="${hook.id}",reason="connection_failed"}`);

    await webhook.up();
    await syslog.up();
    await moveClockUntil(async () => (await allDelivered(hook.id)) && allDelivered(sys.id), 'every delivery after the outage');
    const hookIds = await queued(hook.id);
    const sysIds = await queued(sys.id);
    expect(hookIds.length).toBeGreaterThanOrEqual(7);
    // The webhook also has its own creation event, from before the syslog destination existed.
    expect(sysIds).toEqual(hookIds.slice(1));
    const received = webhook.acceptedIds().filter((id) => hookIds.includes(id));
    expect(sorted(received)).toEqual(hookIds);
    expect(sorted(syslog.ids().filter((id) => sysIds.includes(id)))).toEqual(sysIds);
    for (const id of [hook.id, sys.id]) expect((await call('delete', `${base()}/${id}`)).status).toBe(204);
  }, 60_000);

  it('an event whose transaction rolled back is delivered nowhere; the outbox row was written in that transaction', async () => {
    const hook = await createWebhook('rollback hook');
    await eventually(() => allDelivered(hook.id), 'the creation event');
    const client = t.db;
    await client.query('BEGIN');
    const { rows } = await client.query<{ id: string }>(
      `INSERT INTO audit_events (occurred_at, org_id, actor, action, code, outcome, details) VALUES ($1, $2, 'test', 'token.issue', 80001, 'success', '{"rolledBack": true}')
       RETURNING id::text AS id`,
      [t.clock.now(), org],
    );
    const rolledBack = rows[0].id;
    expect(
      (await client.query('SELECT count(*)::int AS n FROM audit_outbox WHERE event_id = $1 AND destination_id = $2', [rolledBack, hook.id])).rows[0].n,
    ).toBe(1);
    await client.query('ROLLBACK');
    // A committed event after it arrives; the rolled-back one never does.
    await tokenBySecret(t.http, org, orgAdminClient.clientId, orgAdminClient.secret);
    await eventually(async () => (await queued(hook.id)).length >= 2 && allDelivered(hook.id), 'the committed event');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(webhook.calls.map((c) => c.headers['webhook-id'])).not.toContain(rolledBack);
    expect(webhook.calls.some((c) => c.body.includes('rolledBack'))).toBe(false);
    expect((await client.query('SELECT count(*)::int AS n FROM audit_outbox WHERE event_id = $1', [rolledBack])).rows[0].n).toBe(0);
    expect((await call('delete', `${base()}/${hook.id}`)).status).toBe(204);
  });

  it("a platform destination receives every organization's events; an organization destination only its own", async () => {
    const platformHook = await createWebhook('platform hook', '/audit-destinations', admin);
    const otherOrg = `stream_other_${randomBytes(3).toString('hex')}`;
    await createOrganization(t.http, admin, otherOrg);
    const orgHook = await createWebhook('own org hook');
    await tokenBySecret(t.http, org, orgAdminClient.clientId, orgAdminClient.secret);
    await eventually(async () => (await allDelivered(platformHook.id)) && allDelivered(orgHook.id), 'the deliveries');
    const orgs = async (id: string) =>
      (
        await t.db.query<{ org: string | null }>(
          'SELECT DISTINCT e.org_id AS org FROM audit_outbox o JOIN audit_events e ON e.id = o.event_id WHERE o.destination_id = $1',
          [id],
        )
      ).rows.map((r) => r.org);
    expect(await orgs(platformHook.id)).toEqual(expect.arrayContaining([org, otherOrg]));
    expect(await orgs(orgHook.id)).toEqual([org]);
    // The organization administrator neither sees nor reaches the platform's destinations.
    expect((await call('get', '/audit-destinations')).status).toBe(403);
    expect((await call('get', `${base()}/${platformHook.id}`)).status).toBe(404);
    expect((await call('delete', `/audit-destinations/${platformHook.id}`, admin)).status).toBe(204);
    expect((await call('delete', `${base()}/${orgHook.id}`)).status).toBe(204);
  });

  it('a test send answers delivered or the coarse class; a dead letter (by age) shows in the view and is redriven', async () => {
    const hook = await createWebhook('dead letter hook');
    const sent = await call('post', `${base()}/${hook.id}/test`);
    expect(sent.status).toBe(200);
    expect(sent.body).toEqual({ delivered: true, result: 'delivered', detail: null });
    const testCall = webhook.calls.find((c) => JSON.parse(c.body).type === 'audit.test')!;
    expect(JSON.parse(testCall.body)).toMatchObject({ type: 'audit.test', data: { action: 'audit_destination.test', id: expect.stringMatching(/^test-/) } });
    expect(verifyWebhook(hook.secret, testCall.headers, testCall.body, Math.floor(Date.now() / 1000))).toBe(true);
    await eventually(() => allDelivered(hook.id), 'the first events');

    webhook.status = 503;
    const failedTest = await call('post', `${base()}/${hook.id}/test`);
    expect(failedTest.body).toEqual({ delivered: false, result: 'http_503', detail: 'http_503: the webhook answered 503, not 2xx' });
    await tokenBySecret(t.http, org, orgAdminClient.clientId, orgAdminClient.secret);
    await eventually(async () => {
      const { rows } = await t.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM audit_outbox WHERE destination_id = $1 AND state = 'pending' AND attempts >= 1",
        [hook.id],
      );
      return rows[0].n >= 1;
    }, 'a failed attempt');
    // Older than AUDIT_STREAM_MAX_AGE_S (600 s) at the next attempt: dead-lettered.
    t.clock.advance(601);
    await eventually(async () => {
      const { rows } = await t.db.query<{ n: number }>("SELECT count(*)::int AS n FROM audit_outbox WHERE destination_id = $1 AND state = 'pending'", [
        hook.id,
      ]);
      return rows[0].n === 0;
    }, 'the dead letters');
    const dead = await call('get', `${base()}/${hook.id}/deliveries?state=deadLettered&count=1`);
    expect(dead.status).toBe(200);
    expect(dead.body.itemsPerPage).toBe(1);
    const letter = dead.body.Resources[0];
    expect(letter).toMatchObject({ state: 'deadLettered', nextAttemptAt: null });
    expect(letter.lastError).toMatch(/^dead-lettered after older than AUDIT_STREAM_MAX_AGE_S \(600 s\); last: http_503: the webhook answered 503, not 2xx$/);
    expect(await t.app.get(Metrics).registry.metrics()).toMatch(
      new RegExp(`audit_stream_dead_lettered_total\\{org="${org}",destination="${hook.id}"\\} [1-9]`),
    );

    webhook.status = 200;
    expect((await call('post', `${base()}/${hook.id}/deliveries/${letter.eventId}/redrive`)).status).toBe(204);
    await eventually(async () => webhook.acceptedIds().includes(letter.eventId), 'the redriven delivery');
    await eventually(
      async () =>
        (await t.db.query('SELECT state FROM audit_outbox WHERE destination_id = $1 AND event_id = $2', [hook.id, letter.eventId])).rows[0].state ===
        'delivered',
      'delivered',
    );
    // Only a dead letter is redriven.
    const again = await call('post', `${base()}/${hook.id}/deliveries/${letter.eventId}/redrive`);
    expect(again.status).toBe(409);
    expect(again.body.detail).toMatch(/is delivered, not deadLettered/);
    const events = await t.db.query(
      "SELECT action, outcome, details FROM audit_events WHERE org_id = $1 AND action IN ('audit_destination.test', 'audit_destination.redrive') ORDER BY id",
      [org],
    );
    expect(events.rows.map((r) => [r.action, r.outcome])).toEqual([
      ['audit_destination.test', 'success'],
      ['audit_destination.test', 'failure'],
      ['audit_destination.redrive', 'success'],
    ]);
    expect((await call('delete', `${base()}/${hook.id}`)).status).toBe(204);
  });

  it('a rotation of DATA_ENCRYPTION_KEYS seals the webhook secret and the client key again at start; the webhook keeps its secret', async () => {
    const hook = await createWebhook('rotation hook');
    const client = selfSignedServerCertificate('client');
    const mtls = await call('post', base()).send({
      name: 'rotation mtls',
      type: 'syslog',
      host: 'siem.invalid',
      enabled: false,
      clientCertificate: client.cert,
      clientKey: client.key,
    });
    expect(mtls.status).toBe(201);
    const before = await t.db.query('SELECT secret_sealed, client_key_sealed FROM audit_destinations WHERE id = ANY($1::bigint[]) ORDER BY id', [
      [hook.id, mtls.body.id],
    ]);
    const rotated = await createTestApp({
      databaseUrl: t.databaseUrl,
      shareHsmWith: t,
      clock: t.clock,
      env: { DATA_ENCRYPTION_KEYS: `k2:${Buffer.alloc(32, 9).toString('base64')},k1:${Buffer.alloc(32, 7).toString('base64')}` },
    });
    try {
      const after = await t.db.query(
        'SELECT secret_key_id, secret_sealed, client_key_key_id, client_key_sealed FROM audit_destinations WHERE id = ANY($1::bigint[]) ORDER BY id',
        [[hook.id, mtls.body.id]],
      );
      expect(after.rows.map((r) => [r.secret_key_id, r.client_key_key_id])).toEqual([
        ['k2', null],
        [null, 'k2'],
      ]);
      expect(after.rows[0].secret_sealed.equals(before.rows[0].secret_sealed)).toBe(false);
      expect(after.rows[1].client_key_sealed.equals(before.rows[1].client_key_sealed)).toBe(false);
      // The instance with the new key signs with the same secret.
      const sent = await adminCall(rotated.http, 'post', `${base()}/${hook.id}/test`, orgAdminToken);
      expect(sent.body).toEqual({ delivered: true, result: 'delivered', detail: null });
      const testCall = webhook.calls.filter((c) => JSON.parse(c.body).type === 'audit.test').at(-1)!;
      expect(verifyWebhook(hook.secret, testCall.headers, testCall.body, Math.floor(Date.now() / 1000))).toBe(true);
      expect(rotated.logs.join('')).not.toContain(hook.secret);
    } finally {
      await rotated.close();
    }
    for (const id of [hook.id, mtls.body.id]) expect((await call('delete', `${base()}/${id}`)).status).toBe(204);
  });

  describe('bad input: a clear 4xx naming what is wrong, never a 500', () => {
    let syslogId: string;
    beforeAll(async () => {
      syslogId = (await createSyslog('bad input syslog')).id;
    });

    it.each([
      ['not an object', [1], 400, /must be a JSON object/],
      ['an unknown attribute', { name: 'x', type: 'webhook', url: 'https://siem.invalid/a', secret: 'mine' }, 400, /"secret" is not part of this resource/],
      ['a wrong type', { name: 'x', type: 'kafka', host: 'siem.invalid' }, 400, /type: must be syslog or webhook/],
      ['no name', { type: 'webhook', url: 'https://siem.invalid/a' }, 400, /name/],
      ['a webhook over http', { name: 'x', type: 'webhook', url: 'http://siem.invalid/a' }, 400, /url must use https/],
      ['a webhook URL with a password', { name: 'x', type: 'webhook', url: 'https://u:p@siem.invalid/a' }, 400, /user name or password/],
      ['a webhook with host', { name: 'x', type: 'webhook', url: 'https://siem.invalid/a', host: 'siem.invalid' }, 400, /takes url, not host or port/],
      ['a webhook without url', { name: 'x', type: 'webhook' }, 400, /needs url/],
      ['a syslog without host', { name: 'x', type: 'syslog' }, 400, /needs host/],
      ['a syslog with url', { name: 'x', type: 'syslog', host: 'siem.invalid', url: 'https://siem.invalid' }, 400, /takes host and port, not url/],
      ['a port out of range', { name: 'x', type: 'syslog', host: 'siem.invalid', port: 70000 }, 400, /port/],
      ['a host with a path', { name: 'x', type: 'syslog', host: 'siem.invalid/x' }, 400, /host must be a DNS name or an IP address/],
      ['a private address', { name: 'x', type: 'syslog', host: '10.1.2.3' }, 400, /private, link-local/],
      ['a metadata address', { name: 'x', type: 'webhook', url: 'https://169.254.169.254/latest' }, 400, /private, link-local/],
      [
        'a CA that is no certificate',
        { name: 'x', type: 'syslog', host: 'siem.invalid', caCertificate: 'hello' },
        400,
        /caCertificate must hold at least one PEM certificate/,
      ],
      [
        'a client certificate without key',
        { name: 'x', type: 'syslog', host: 'siem.invalid', clientCertificate: '-----BEGIN CERTIFICATE-----' },
        400,
        /give both or neither/,
      ],
    ])('create with %s: %i', async (_what, body, status, detail) => {
      const response = await call('post', base()).send(body);
      expect({ status: response.status, detail: response.body.detail }).toEqual({ status, detail: expect.stringMatching(detail) });
    });

    it("a client key that is not the certificate's, a duplicate name, and the checks of the other routes", async () => {
      const other = selfSignedServerCertificate('other');
      const mismatch = await call('post', base()).send({
        name: 'x',
        type: 'syslog',
        host: 'siem.invalid',
        clientCertificate: server.cert,
        clientKey: other.key,
      });
      expect({ status: mismatch.status, detail: mismatch.body.detail }).toEqual({
        status: 400,
        detail: 'Invalid request body: clientKey is not the private key of clientCertificate.',
      });
      const notAKey = await call('post', base()).send({ name: 'x', type: 'syslog', host: 'siem.invalid', clientCertificate: server.cert, clientKey: 'nope' });
      expect(notAKey.status).toBe(400);
      const duplicate = await call('post', base()).send({ name: 'bad input syslog', type: 'syslog', host: 'siem.invalid' });
      expect({ status: duplicate.status, detail: duplicate.body.detail }).toEqual({
        status: 409,
        detail: `Organization "${org}" already has an audit destination named "bad input syslog".`,
      });
      // A client certificate with its key is accepted, and the key is never answered.
      const withKey = await call('post', base()).send({
        name: 'mtls',
        type: 'syslog',
        host: 'siem.invalid',
        clientCertificate: other.cert,
        clientKey: other.key,
      });
      expect(withKey.status).toBe(201);
      expect(JSON.stringify(withKey.body)).not.toContain('PRIVATE KEY');
      const row = await t.db.query('SELECT row_to_json(d)::text AS row FROM audit_destinations d WHERE id = $1', [withKey.body.id]);
      expect(row.rows[0].row).not.toContain('PRIVATE KEY');
      expect((await call('delete', `${base()}/${withKey.body.id}`)).status).toBe(204);

      const patch = (body: unknown, headers: Record<string, string> = {}) =>
        call('patch', `${base()}/${syslogId}`)
          .set(headers)
          .send(body as object);
      expect((await patch({ url: 'https://siem.invalid' })).body.detail).toMatch(/takes host and port, not url/);
      expect((await patch({ type: 'webhook' })).status).toBe(400);
      expect((await patch({ enabled: 'yes' })).status).toBe(400);
      expect((await patch({ clientCertificate: server.cert })).body.detail).toMatch(/change together/);
      expect((await patch({ host: '192.168.1.1' })).body.detail).toMatch(/private/);
      expect((await patch({ enabled: false }, { 'If-Match': 'W/"99"' })).status).toBe(412);
      expect((await patch({ enabled: false }, { 'If-Match': 'garbage' })).status).toBe(400);
      const disabled = await patch({ enabled: false }, { 'If-Match': 'W/"1"' });
      expect(disabled.status).toBe(200);
      expect(disabled.headers.etag).toBe('W/"2"');
      expect((await call('delete', `${base()}/${syslogId}`).set('If-Match', 'W/"1"')).status).toBe(412);

      expect((await call('get', `${base()}/987654321`)).status).toBe(404);
      const malformed = await call('get', `${base()}/abc`);
      expect({ status: malformed.status, detail: malformed.body.detail }).toEqual({
        status: 404,
        detail: expect.stringMatching(/path parameter id must be a number/),
      });
      expect((await call('get', `${base()}/${syslogId}/deliveries?state=lost`)).body.detail).toMatch(/state must be one of pending, delivered, deadLettered/);
      expect((await call('get', `${base()}/${syslogId}/deliveries?since=1`)).body.detail).toMatch(/Unknown query parameter since/);
      expect((await call('get', `${base()}/${syslogId}/deliveries?count=x`)).status).toBe(400);
      expect((await call('post', `${base()}/${syslogId}/deliveries/1/redrive`)).status).toBe(404);
      expect((await call('post', `${base()}/${syslogId}/deliveries/x/redrive`)).status).toBe(404);
      expect((await call('post', `${base()}/987654321/test`)).status).toBe(404);
    });

    it('access: no token 401, a plain account 403, another organization 404', async () => {
      // Fresh tokens: the clock moved past the unused-token timeout in the tests above.
      admin = await platformAdminToken(t.http);
      plainToken = await tokenBySecret(t.http, org, plainClient.clientId, plainClient.secret);
      orgAdminToken = await tokenBySecret(t.http, org, orgAdminClient.clientId, orgAdminClient.secret);
      expect((await t.http.get(`/admin/v1${base()}`)).status).toBe(401);
      expect((await call('get', base(), plainToken)).status).toBe(403);
      expect((await call('post', base(), plainToken).send({ name: 'x', type: 'syslog', host: 'siem.invalid' })).status).toBe(403);
      const other = `stream_x_${randomBytes(3).toString('hex')}`;
      await createOrganization(t.http, admin, other);
      expect((await call('get', `/organizations/${other}/audit-destinations`)).status).toBe(404);
      expect((await call('get', base(), admin)).status).toBe(200);
    });
  });
});

describe('audit event stream: a loopback destination without AUDIT_STREAM_LOOPBACK', () => {
  let t: TestApp;
  afterAll(() => t?.close());

  it('is refused with a 400 naming the setting', async () => {
    t = await createTestApp({ env: { AUDIT_STREAM_LOOPBACK: 'false' } });
    const admin = await platformAdminToken(t.http);
    for (const body of [
      { name: 'a', type: 'syslog', host: '127.0.0.1', port: 6514 },
      { name: 'b', type: 'syslog', host: 'localhost' },
      { name: 'c', type: 'webhook', url: 'https://127.1/hook' },
      { name: 'd', type: 'webhook', url: 'https://[::1]:8443/hook' },
    ]) {
      const response = await adminCall(t.http, 'post', '/audit-destinations', admin).send(body);
      expect({ status: response.status, detail: response.body.detail }).toEqual({
        status: 400,
        detail: expect.stringContaining('only AUDIT_STREAM_LOOPBACK=true allows'),
      });
    }
  });
});
