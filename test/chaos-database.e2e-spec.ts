import { randomBytes } from 'node:crypto';
import {
  PLATFORM_ADMIN_SECRET,
  TcpProxy,
  TestApp,
  createOrganization,
  createSuiteDatabase,
  createTestApp,
  platformAdminToken,
  tokenRequest,
} from '@app/testing';

/**
 * Issue 15 item 2, on loopback: the service reaches its PostgreSQL through a TCP proxy that the
 * test cuts (every connection reset, new ones refused) and restores. While the database is away:
 * 503 with Retry-After in each family's format (OAuth on the token endpoint, SCIM elsewhere),
 * readiness red, one log line for the outage rather than one stack trace per request; when it is
 * back, the service answers again without a restart.
 */
describe('database outage (chaos, loopback)', () => {
  let t: TestApp;
  let proxy: TcpProxy;
  let admin: string;
  const org = `chaos_${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    const direct = new URL(await createSuiteDatabase());
    proxy = await TcpProxy.start(direct.hostname, Number(direct.port));
    const viaProxy = new URL(direct);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    t = await createTestApp({ databaseUrl: viaProxy.toString() });
    admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, org);
  });
  afterAll(async () => {
    proxy.restore();
    await t.close();
    await proxy.close();
  });

  const tokenGrant = () =>
    tokenRequest(t.http, 'platform', { grant_type: 'client_credentials', client_id: 'platform-admin', client_secret: PLATFORM_ADMIN_SECRET });

  it('answers 503 with Retry-After in the family format while the database is away, logs the outage once, and recovers without a restart', async () => {
    expect((await tokenGrant()).status).toBe(200);
    const logLinesBefore = t.logs.length;

    proxy.cut();
    const answers = [];
    for (let i = 0; i < 20; i++) {
      answers.push(
        await tokenGrant(),
        await t.http.get(`/admin/v1/organizations/${org}/system-accounts`).auth(admin, { type: 'bearer' }),
        await t.http.get(`/configuration/${org}/v2/DeliveryGateway/Push`).auth(admin, { type: 'bearer' }),
      );
    }
    const [oauth, adminList] = answers;
    expect({ status: oauth.status, retryAfter: oauth.headers['retry-after'], body: oauth.body }).toEqual({
      status: 503,
      retryAfter: '2',
      body: { error: 'temporarily_unavailable', error_description: 'The database is temporarily unavailable; retry shortly.' },
    });
    expect({ status: adminList.status, retryAfter: adminList.headers['retry-after'], body: adminList.body }).toEqual({
      status: 503,
      retryAfter: '2',
      body: { schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '503', detail: 'The database is temporarily unavailable; retry shortly.' },
    });
    // Every answer during the outage is a 503 (or a 401/403 decided from caches before any query), never a 500.
    expect(answers.filter((a) => a.status >= 500 && a.status !== 503).map((a) => `${a.status} ${JSON.stringify(a.body)}`)).toEqual([]);
    const ready = await t.bare.get('/health/ready');
    expect({ status: ready.status, retryAfter: ready.headers['retry-after'], database: ready.body.checks?.database }).toEqual({
      status: 503,
      retryAfter: '5',
      database: 'down',
    });
    const outageLines = t.logs.slice(logLinesBefore).filter((line) => line.includes('"level":50') || line.includes('unexpected error'));
    expect(outageLines.map((line) => JSON.parse(line).msg)).toEqual(['database unreachable; answering 503 until it returns']);

    proxy.restore();
    const deadline = Date.now() + 10_000;
    let recovered = await tokenGrant();
    while (recovered.status !== 200 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      recovered = await tokenGrant();
    }
    expect(recovered.status).toBe(200);
    expect((await t.http.get(`/admin/v1/organizations/${org}/system-accounts`).auth(admin, { type: 'bearer' })).status).toBe(200);
    expect((await t.bare.get('/health/ready')).status).toBe(200);
    expect(t.logs.slice(logLinesBefore).some((line) => line.includes('database reachable again'))).toBe(true);
  });
});
