import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import {
  IssuedPerson,
  createAdminAndPlainAccounts,
  createIssuingOrganization,
  createOrganization,
  createPersonWithCard,
  createSystemAccount,
  createTestApp,
  platformAdminToken,
  signIn,
  TestApp,
  tokenBySecret,
} from './support';

/**
 * The management portal as the service serves it at /portal/ (DECISIONS 17), against a small build
 * written here (the real one is driven in the browser suites): which path answers what, cached how,
 * under which security headers; and the whoami and sign-out routes it calls.
 */
const INDEX = `<!doctype html><html lang="en"><head><meta name="csp-nonce" content="__CSP_NONCE__"><meta name="portal-session-org" content="__SESSION_ORG__"><title>Portal</title>
<script type="module" crossorigin src="/portal/assets/index-Ab12Cd34.js"></script></head><body><div id="root"></div></body></html>`;
const SCRIPT = `console.log(${JSON.stringify('x'.repeat(4096))});\n`;

function writeBuild(dir: string): void {
  mkdirSync(join(dir, 'assets'), { recursive: true });
  writeFileSync(join(dir, 'index.html'), INDEX);
  writeFileSync(join(dir, 'assets', 'index-Ab12Cd34.js'), SCRIPT);
  writeFileSync(join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
}

const nonceOf = (csp: string) => /'nonce-([^']+)'/.exec(csp)?.[1];

function expectPortalHeaders(headers: Record<string, string>): void {
  const csp = headers['content-security-policy'];
  const nonce = nonceOf(csp);
  expect(nonce).toMatch(/^[A-Za-z0-9+/]{22}==$/);
  expect(csp.split('; ')).toEqual([
    "default-src 'none'",
    "script-src 'self'",
    `style-src 'self' 'nonce-${nonce}'`,
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "manifest-src 'self'",
    "form-action 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ]);
  expect(headers['referrer-policy']).toBe('no-referrer');
  expect(headers['cross-origin-opener-policy']).toBe('same-origin');
  expect(headers['x-content-type-options']).toBe('nosniff');
}

describe('The management portal at /portal/', () => {
  let t: TestApp;
  const portalDir = join(process.env.TEST_RUN_DIR!, 'portal-serving-build');

  let jane: IssuedPerson;
  /** jane's session cookie, for the pages of her organization. */
  let session: string;

  beforeAll(async () => {
    writeBuild(portalDir);
    t = await createTestApp({ env: { PORTAL_DIR: portalDir } });
    const platform = await platformAdminToken(t.http);
    await createIssuingOrganization(t, platform, 'acme', {});
    jane = await createPersonWithCard(t, platform, 'acme', 'jane');
    session = (await signIn(t, { org: 'acme', userName: jane.userName, password: jane.password, totpSecret: jane.totpSecret })).cookie;
  }, 60_000);
  afterAll(() => t?.close());

  it('/portal redirects to /portal/, keeping the query', async () => {
    const answer = await t.bare.get('/portal?x=1').expect(308);
    expect(answer.headers.location).toBe('/portal/?x=1');
  });

  it('/portal/ is index.html: never cached, with a fresh CSP nonce that the page carries for its styles', async () => {
    const first = await t.bare.get('/portal/').expect(200);
    expect(first.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(first.headers['cache-control']).toBe('no-store');
    expectPortalHeaders(first.headers);
    const nonce = nonceOf(first.headers['content-security-policy']);
    expect(first.text).toContain(`<meta name="csp-nonce" content="${nonce}">`);
    expect(first.text).not.toContain('__CSP_NONCE__');
    // No session: the page says so (the start page asks for the organization).
    expect(first.text).toContain('<meta name="portal-session-org" content="">');
    const second = await t.bare.get('/portal/').expect(200);
    expect(nonceOf(second.headers['content-security-policy'])).not.toBe(nonce);
  });

  it.each(['/portal/acme', '/portal/acme/system-accounts', '/portal/acme/system-accounts/acme-billing?tab=secrets', '/portal/globex/audit'])(
    "a deep link (%s) reloads with a session: index.html, uncached, with the headers, naming the session's organization",
    async (path) => {
      const answer = await t.bare.get(path).set('Cookie', session).expect(200);
      expect(answer.text).toContain('<div id="root">');
      // Another organization's URL too: the portal shows its not-found page, knowing the session is in acme.
      expect(answer.text).toContain('<meta name="portal-session-org" content="acme">');
      expect(answer.headers['cache-control']).toBe('no-store');
      expectPortalHeaders(answer.headers);
    },
  );

  it.each(['/portal/acme', '/portal/acme/system-accounts/acme-billing?tab=secrets'])(
    "an organization's page without a session (%s) goes to that organization's login page, to come back to it",
    async (path) => {
      const answer = await t.bare.get(path).expect(303);
      const location = new URL(answer.headers.location, 'http://service');
      expect(location.pathname).toBe('/authentication/customer/acme/login');
      expect(location.searchParams.get('return_to')).toBe(path);
      expect(answer.headers['cache-control']).toBe('no-store');
      expectPortalHeaders(answer.headers);
      // An ended or unknown session is no session.
      await t.bare.get(path).set('Cookie', '__Host-Http-session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA').expect(303);
    },
  );

  it('/portal/index.html is the page too, never a file to download', async () => {
    const answer = await t.bare.get('/portal/index.html').expect(200);
    expect(answer.text).toContain('<div id="root">');
    expect(answer.headers['cache-control']).toBe('no-store');
  });

  it('a hashed asset is cached for a year, immutable, and sent gzip-compressed to those who accept it', async () => {
    const plain = await t.bare.get('/portal/assets/index-Ab12Cd34.js').set('Accept-Encoding', 'identity').expect(200);
    expect(plain.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.vary).toBe('Accept-Encoding');
    expect(plain.text).toBe(SCRIPT);
    expectPortalHeaders(plain.headers);
    const zipped = await t.bare
      .get('/portal/assets/index-Ab12Cd34.js')
      .set('Accept-Encoding', 'gzip, br')
      .buffer(true)
      .parse((response, callback) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => callback(null, Buffer.concat(chunks)));
      })
      .expect(200);
    expect(zipped.headers['content-encoding']).toBe('gzip');
    // supertest inflates the body; the bytes on the wire were the compressed ones.
    expect(Number(zipped.headers['content-length'])).toBe(gzipSync(SCRIPT, { level: 9 }).length);
    expect((zipped.body as Buffer).toString('utf8')).toBe(SCRIPT);
  });

  it('a file outside assets/ keeps its name across builds: revalidated, not cached for good', async () => {
    const answer = await t.bare.get('/portal/favicon.svg').expect(200);
    expect(answer.headers['content-type']).toBe('image/svg+xml');
    expect(answer.headers['cache-control']).toBe('no-cache');
  });

  it.each(['/portal/assets/index-Zz99.js', '/portal/assets/missing.css', '/portal/robots.txt', '/portal/acme/logo.png', '/portal/assets/../index.html.map'])(
    'an unknown asset path (%s) is 404, not the page',
    async (path) => {
      const answer = await t.bare.get(path).expect(404);
      expect(answer.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(answer.headers['cache-control']).toBe('no-store');
      expect(answer.text).not.toContain('<div id="root">');
      expectPortalHeaders(answer.headers);
    },
  );

  it("whoami with the session cookie names the person and the session's timeouts; sign-out ends the session at once", async () => {
    const own = await signIn(t, { org: 'acme', userName: jane.userName, password: jane.password, totpSecret: jane.totpSecret });
    const headers = { Cookie: own.cookie, 'Application-ID': 'com.credential-platform.portal', 'Application-Version': '1.0' };
    const whoami = await t.bare.get('/credential-management/customer/acme/whoami').set(headers).expect(200);
    expect(whoami.body).toMatchObject({ kind: 'user', name: 'jane', org: 'acme', organizationAdministrator: false });
    expect(whoami.body.session).toEqual({
      idleTimeoutSeconds: t.config.sessionIdleTimeoutS,
      idleExpiresAt: expect.any(String),
      absoluteExpiresAt: expect.any(String),
      absoluteExpiresInSeconds: expect.any(Number),
      authTime: expect.any(String),
      signedInSecondsAgo: expect.any(Number),
      recentSignInSeconds: 300,
    });
    expect(Math.abs(whoami.body.session.absoluteExpiresInSeconds - t.config.sessionAbsoluteTimeoutS)).toBeLessThanOrEqual(120);
    // Just signed in: the sign-in is recent, as adding or removing a factor needs (DECISIONS 14.6).
    expect(whoami.body.session.signedInSecondsAgo).toBeLessThan(60);
    // Sign-out changes state: it needs the service's own Origin (or Sec-Fetch-Site) besides the header.
    await t.bare.post('/credential-management/customer/acme/whoami/sign-out').set(headers).set('Origin', 'https://evil.example').expect(403);
    await t.bare.get('/credential-management/customer/acme/whoami').set(headers).expect(200);
    await t.bare.post('/credential-management/customer/acme/whoami/sign-out').set(headers).set('Origin', new URL(t.config.publicBaseUrl).origin).expect(204);
    await t.bare.get('/credential-management/customer/acme/whoami').set(headers).expect(401);
    await t.bare.get('/portal/acme/audit').set('Cookie', own.cookie).expect(303);
    const logout = await t.db.query("SELECT count(*)::int AS n FROM audit_events WHERE org_id = 'acme' AND actor = 'jane' AND action = 'sign_in.logout'");
    expect(logout.rows[0].n).toBeGreaterThanOrEqual(1);
  });

  it('needs no Application-ID: a browser navigating to it sends none', async () => {
    await t.bare.get('/portal/acme/audit').set('Cookie', session).expect(200);
    await t.bare.get('/portal/').expect(200);
  });
});

describe('The management portal when it is not built', () => {
  let t: TestApp;
  beforeAll(async () => {
    const empty = join(process.env.TEST_RUN_DIR!, 'portal-not-built');
    mkdirSync(empty, { recursive: true });
    t = await createTestApp({ env: { PORTAL_DIR: empty } });
  });
  afterAll(() => t?.close());

  it('answers 503 saying how to build it, and the rest of the service runs', async () => {
    const answer = await t.bare.get('/portal/acme').expect(503);
    expect(answer.text).toContain('npm start');
    expect(answer.headers['cache-control']).toBe('no-store');
    await t.bare.get('/health/live').expect(200);
  });
});

describe("The portal's whoami and sign-out (credential-management family)", () => {
  let t: TestApp;
  let accounts: Awaited<ReturnType<typeof createAdminAndPlainAccounts>>;
  beforeAll(async () => {
    t = await createTestApp();
    const platform = await platformAdminToken(t.http);
    await createOrganization(t.http, platform, 'acme');
    await createOrganization(t.http, platform, 'globex');
    accounts = await createAdminAndPlainAccounts(t.http, platform, 'acme');
  });
  afterAll(() => t?.close());

  it('says who the caller is, their role, permissions and administrator flags; no session for a bearer token', async () => {
    const admin = await t.http.get('/credential-management/customer/acme/whoami').auth(accounts.orgAdminToken, { type: 'bearer' }).expect(200);
    expect(admin.body).toEqual({
      kind: 'system_account',
      name: accounts.orgAdmin.clientId,
      org: 'acme',
      role: 'Administration',
      organizationAdministrator: true,
      platformAdministrator: false,
      scopes: expect.arrayContaining(['Scope.helpdesk']),
      permissions: expect.arrayContaining(['user.search', 'contentRequest.search']),
      deviceCreation: false,
      session: null,
    });
    const plain = await t.http.get('/credential-management/customer/acme/whoami').auth(accounts.plainToken, { type: 'bearer' }).expect(200);
    expect(plain.body).toMatchObject({ name: accounts.plain.clientId, role: 'Issuance', organizationAdministrator: false });
  });

  it("deviceCreation says whether POST /Device takes a device from the caller: device.create and the organization's automaticDeviceCreation", async () => {
    const platform = await platformAdminToken(t.http);
    const whoami = async (token: string) => (await t.http.get('/credential-management/customer/acme/whoami').auth(token, { type: 'bearer' }).expect(200)).body;
    const addCard = (token: string, CUID: string) =>
      t.http
        .post('/aims/rs/scim/v2/Device')
        .auth(token, { type: 'bearer' })
        .send({ schemas: ['urn:vendor:scim:api:cms:1.0:Device'], externalIds: [{ ATR: '3B8F8001', CUID }] });
    const helpDesk = await createSystemAccount(t.http, platform, 'acme', { role: 'Help Desk' });
    const helpDeskToken = await tokenBySecret(t.http, 'acme', helpDesk.clientId, helpDesk.secret);
    // Off (the default): false, and the server refuses.
    expect((await whoami(accounts.plainToken)).deviceCreation).toBe(false);
    expect((await addCard(accounts.plainToken, '7001')).status).toBe(403);
    const on = await t.http
      .patch('/admin/v1/organizations/acme')
      .auth(platform, { type: 'bearer' })
      .send({ settings: { automaticDeviceCreation: true } });
    expect(on.status).toBe(200);
    // On: true for a role with device.create (Issuance), and the server takes the card; false for one without (Help Desk).
    expect((await whoami(accounts.plainToken)).deviceCreation).toBe(true);
    expect((await addCard(accounts.plainToken, '7002')).status).toBe(201);
    expect((await whoami(helpDeskToken)).deviceCreation).toBe(false);
    expect((await addCard(helpDeskToken, '7003')).status).toBe(403);
  });

  it('401 without credentials, 403 for another organization, 400 without the Application-ID header', async () => {
    await t.http.get('/credential-management/customer/acme/whoami').expect(401);
    const other = await t.http.get('/credential-management/customer/globex/whoami').auth(accounts.orgAdminToken, { type: 'bearer' }).expect(403);
    expect(other.body.detail).toContain('globex');
    await t.bare.get('/credential-management/customer/acme/whoami').auth(accounts.orgAdminToken, { type: 'bearer' }).expect(400);
  });

  it('sign-out with a bearer token ends no session and changes nothing: the token still works', async () => {
    await t.http.post('/credential-management/customer/acme/whoami/sign-out').auth(accounts.plainToken, { type: 'bearer' }).expect(204);
    await t.http.get('/credential-management/customer/acme/whoami').auth(accounts.plainToken, { type: 'bearer' }).expect(200);
  });
});
