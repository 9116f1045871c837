import { randomBytes } from 'node:crypto';
import {
  PLATFORM_ADMIN_SECRET,
  TcpProxy,
  TestApp,
  createOrganization,
  createSuiteDatabase,
  createTestApp,
  cookiePair,
  hiddenField,
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

  it("the login and authorization pages answer the outage as an HTML page with the pages' headers and Retry-After, never a SCIM body (DECISIONS 14.3)", async () => {
    const login = `/authentication/customer/${org}/login`;
    const form = await t.bare.get(login);
    expect(form.status).toBe(200);
    const formCookie = cookiePair(form.headers['set-cookie'], '__Host-Http-login-form')!;
    const session = `__Host-Http-session=${randomBytes(32).toString('base64url')}`;
    const origin = new URL(t.config.authBaseUrl).origin;
    const authorizeQuery = `response_type=code&client_id=${org}-nobody&redirect_uri=https%3A%2F%2Fapp.example.test%2Fcb&scope=openid`;

    proxy.cut();
    try {
      const answers = {
        'GET login': await t.bare.get(login).set('Cookie', session),
        'POST login': await t.bare
          .post(login)
          .set({ Cookie: formCookie, Origin: origin, 'Sec-Fetch-Site': 'same-origin' })
          .type('form')
          .send({ form_token: hiddenField(form.text, 'form_token')!, step: 'password', userName: 'someone', password: 'not the password' }),
        'GET authorize': await t.bare.get(`/authentication/customer/${org}/authorize?${authorizeQuery}`),
        'POST authorize': await t.bare.post(`/authentication/customer/${org}/authorize`).type('form').send(authorizeQuery),
        'GET end-session': await t.bare.get(`/authentication/customer/${org}/end-session`).set('Cookie', session),
      };
      for (const [name, answer] of Object.entries(answers)) {
        expect({
          name,
          status: answer.status,
          type: answer.headers['content-type'],
          retryAfter: answer.headers['retry-after'],
          cache: answer.headers['cache-control'],
          csp: answer.headers['content-security-policy'],
          frame: answer.headers['x-frame-options'],
          referrer: answer.headers['referrer-policy'],
        }).toEqual({
          name,
          status: 503,
          type: 'text/html; charset=utf-8',
          retryAfter: '2',
          cache: 'no-store',
          csp: "default-src 'none'; frame-ancestors 'none'; base-uri 'none'",
          frame: 'DENY',
          referrer: 'no-referrer',
        });
        expect(answer.text).toMatch(/^<!doctype html>/);
        expect(answer.text).toMatch(/<p role="alert">The database is temporarily unavailable; retry shortly.<\/p>/);
        expect(answer.text).not.toMatch(/urn:ietf:params:scim/);
      }
    } finally {
      proxy.restore();
    }
  });
});
