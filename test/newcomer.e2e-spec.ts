import { TestApp, cookiePair, createTestApp, hiddenField } from '@app/testing';

/**
 * The newcomer's traps (issue 33 item 3): the root answers a browser and an API client, a form sent
 * from another host name than the service's says exactly that (and the log records it), and the
 * embedded default answers at 127.0.0.1 as at localhost.
 */
describe("The newcomer's first requests", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('/ sends a browser to the portal, and answers an API client with where things are', async () => {
    const browser = await t.bare.get('/').set('Accept', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8');
    expect(browser.status).toBe(303);
    expect(browser.headers.location).toBe('/portal/');
    const client = await t.bare.get('/').set('Accept', 'application/json');
    expect(client.status).toBe(200);
    expect(client.body).toEqual({
      service: 'credential-platform',
      portal: 'https://api.example.test/portal/',
      apiDocs: 'https://api.example.test/api-docs',
      openApi: 'https://api.example.test/api-docs-json',
      discovery: 'https://auth.example.test/authentication/customer/{org}/.well-known/openid-configuration',
      health: { live: 'https://api.example.test/health/live', ready: 'https://api.example.test/health/ready' },
    });
    // Each address it names answers.
    for (const url of [client.body.openApi, client.body.health.live, client.body.health.ready]) {
      expect((await t.bare.get(new URL(url).pathname)).status).toBe(200);
    }
    expect((await t.bare.get('/')).status).toBe(200);
  });

  async function loginPost(app: TestApp, origin: string) {
    const form = await app.bare.get('/authentication/customer/platform/login');
    return app.bare
      .post('/authentication/customer/platform/login')
      .set({ Cookie: cookiePair(form.headers['set-cookie'], '__Host-Http-login-form')!, Origin: origin, 'Sec-Fetch-Site': 'same-origin' })
      .type('form')
      .send({ form_token: hiddenField(form.text, 'form_token')!, step: 'password', userName: 'nobody', password: 'correct horse battery staple' });
  }

  it('a form from the service opened at another host name says so, and the log records it, instead of "expired"', async () => {
    const refused = await loginPost(t, 'http://127.0.0.1:8080');
    expect(refused.status).toBe(403);
    expect(refused.text).toContain(
      'This page was opened at http://127.0.0.1:8080, but this service&#39;s address is https://auth.example.test, so the form was refused. Open https://auth.example.test and sign in there.',
    );
    expect(refused.text).not.toContain('has expired');
    const logged = t.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.origin === 'http://127.0.0.1:8080');
    expect(logged).toEqual([
      expect.objectContaining({ level: 40, authBaseUrl: 'https://auth.example.test', msg: expect.stringContaining('another host name') }),
    ]);
    // A cross-site form is still the plain refusal.
    const crossSite = await t.bare
      .post('/authentication/customer/platform/login')
      .set({ Origin: 'https://evil.example', 'Sec-Fetch-Site': 'cross-site' })
      .type('form')
      .send({ step: 'password', userName: 'nobody', password: 'x' });
    expect(crossSite.status).toBe(403);
    expect(crossSite.text).toContain('This sign-in form has expired or did not come from this page');
  });

  it('the embedded default (no PUBLIC_BASE_URL or AUTH_BASE_URL) takes the form at 127.0.0.1 and [::1] as at localhost', async () => {
    const embedded = await createTestApp({
      env: { PUBLIC_BASE_URL: undefined as unknown as string, AUTH_BASE_URL: undefined as unknown as string },
      shareHsmWith: t,
    });
    try {
      expect(embedded.config.authBaseUrl).toBe('http://localhost:0');
      for (const origin of ['http://localhost:0', 'http://127.0.0.1:0', 'http://[::1]:0']) {
        const answer = await loginPost(embedded, origin);
        // Checked as a sign-in (an unknown person: the one failure message), not refused as a forged form.
        expect({ origin, status: answer.status }).toEqual({ origin, status: 200 });
        expect(answer.text).toContain('The sign-in did not succeed');
      }
      expect((await loginPost(embedded, 'http://192.0.2.1:0')).status).toBe(403);
    } finally {
      await embedded.close();
    }
  });
});
