import { createHash } from 'node:crypto';
import { SignInSessions } from '@app/auth';
import {
  IssuedPerson,
  TEST_APPLICATION_ID,
  TestApp,
  createCardholder,
  createIssuingOrganization,
  createOrganization,
  createPersonWithCard,
  createTestApp,
  cookiePair,
  platformAdminToken,
  signIn,
  signOut,
} from '@app/testing';

/**
 * Session cookies on the APIs (issue 24 item 1; DECISIONS 11.1): a person's browser session
 * authenticates them on the admin and credential-management APIs as their token does, only with the
 * Application-ID header and a same-origin proof, never on /authentication/*.
 */

const ORG = 'cookies';
const ORIGIN = 'https://auth.example.test';
const EVIL = 'https://evil.example';
/** The session cookie expired with the attributes it was set with (DECISIONS 14.2). */
const EXPIRED = '__Host-Http-session=; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=0';

type Method = 'get' | 'post' | 'patch' | 'put' | 'delete';

describe('session cookies on the APIs', () => {
  let t: TestApp;
  let admin: string;
  let ada: IssuedPerson;
  let carl: IssuedPerson;
  let adaCookie: string;

  beforeAll(async () => {
    t = await createTestApp();
    admin = await platformAdminToken(t.http);
    await createIssuingOrganization(t, admin, ORG, {});
    await createOrganization(t.http, admin, 'elsewhere');
    ada = await createPersonWithCard(t, admin, ORG, 'ada');
    const promoted = await t.http
      .patch(`/admin/v1/organizations/${ORG}/users/${ada.id}`)
      .auth(admin, { type: 'bearer' })
      .send({ role: 'Administration', organizationAdministrator: true });
    expect(promoted.status).toBe(200);
    carl = await createPersonWithCard(t, admin, ORG, 'carl');
    adaCookie = (await signIn(t, { org: ORG, userName: 'ada', password: ada.password, totpSecret: ada.totpSecret })).cookie;
  }, 90_000);
  afterAll(() => t.close());

  /**
   * A browser's call with the session cookie: Application-ID and Application-Version (unless
   * `applicationHeaders` is false), and the given Origin and Sec-Fetch-Site (null leaves one out).
   */
  function call(method: Method, path: string, cookie: string, options: { origin?: string | null; site?: string | null; applicationHeaders?: boolean } = {}) {
    let request = t.bare[method](path).set('Cookie', cookie);
    if (options.applicationHeaders !== false) request = request.set('Application-ID', TEST_APPLICATION_ID).set('Application-Version', '1.0');
    const origin = options.origin === undefined ? ORIGIN : options.origin;
    if (origin !== null) request = request.set('Origin', origin);
    const site = options.site === undefined ? 'same-origin' : options.site;
    if (site !== null) request = request.set('Sec-Fetch-Site', site);
    return request;
  }

  const userCount = async (userName: string) => (await t.db.query('SELECT 1 FROM users WHERE org_id = $1 AND user_name = $2', [ORG, userName])).rowCount;

  describe('same origin', () => {
    it('a GET on the admin API answers as for the person’s token, with or without Origin', async () => {
      const list = await call('get', `/admin/v1/organizations/${ORG}/users`, adaCookie, { origin: null });
      expect(list.status).toBe(200);
      expect(list.body.Resources.map((u: { userName: string }) => u.userName)).toEqual(expect.arrayContaining(['ada', 'carl']));
      expect((await call('get', `/admin/v1/organizations/${ORG}`, adaCookie, { site: null })).status).toBe(200);
      // A safe method needs no proof of origin (an old browser, a typed URL).
      expect((await call('get', `/admin/v1/organizations/${ORG}`, adaCookie, { origin: null, site: null })).status).toBe(200);
      expect((await call('get', `/admin/v1/organizations/${ORG}`, adaCookie, { origin: null, site: 'none' })).status).toBe(200);
    });

    it('a POST changes state, audited with the person as actor; the same access policy refuses another organization (404)', async () => {
      const created = await call('post', `/admin/v1/organizations/${ORG}/system-accounts`, adaCookie).send({ suffix: 'fromportal', role: 'Issuance' });
      expect(created.status).toBe(201);
      expect(created.body.clientId).toBe(`${ORG}-fromportal`);
      const { rows } = await t.db.query("SELECT actor FROM audit_events WHERE org_id = $1 AND action = 'system_account.create' AND target = $2", [
        ORG,
        `${ORG}-fromportal`,
      ]);
      expect(rows).toEqual([{ actor: 'ada' }]);
      const other = await call('get', '/admin/v1/organizations/elsewhere/users', adaCookie);
      expect(other.status).toBe(404);
    });

    it('the credential-management API takes the cookie too, with the person’s permissions', async () => {
      const users = await call('get', '/aims/rs/scim/v2/Users', adaCookie);
      expect(users.status).toBe(200);
      expect(users.headers['content-type']).toContain('application/scim+json');
      const carlCookie = (await signIn(t, { org: ORG, userName: 'carl', password: carl.password, totpSecret: carl.totpSecret })).cookie;
      const self = await call('get', '/aims/rs/scim/v2/Self', carlCookie);
      expect(self.status).toBe(200);
      expect(self.body.userName).toBe('carl');
      // A cardholder is no administrator: 403 on the admin API, as with their token.
      const refused = await call('get', `/admin/v1/organizations/${ORG}/users`, carlCookie);
      expect(refused.status).toBe(403);
      expect(refused.body.detail).toMatch(/carl is not one/);
      // And its role reaches no operator entry point.
      expect((await call('get', '/aims/rs/scim/v2/Users', carlCookie)).status).toBe(403);
    });
  });

  describe('cross-site request forgery: refused with 403 saying why, nothing changes', () => {
    it('a POST from another Origin', async () => {
      const response = await call('post', `/admin/v1/organizations/${ORG}/users`, adaCookie, { origin: EVIL, site: 'cross-site' }).send({
        userName: 'forged1',
        role: 'Cardholder',
      });
      expect(response.status).toBe(403);
      expect(response.body.detail).toMatch(/session cookie/);
      expect(response.body.detail).toMatch(/https:\/\/evil\.example/);
      expect(await userCount('forged1')).toBe(0);
      // Recorded for the person the forged request targeted, where their administrators look.
      const { rows } = await t.db.query(
        "SELECT actor, code, outcome, target, details FROM audit_events WHERE org_id = $1 AND action = 'session.request_refused'",
        [ORG],
      );
      expect(rows).toEqual([
        {
          actor: 'ada',
          code: 74001,
          outcome: 'failure',
          target: `/admin/v1/organizations/${ORG}/users`,
          details: { method: 'POST', rule: expect.stringContaining('evil.example'), session: expect.any(String) },
        },
      ]);
    });

    it('a PATCH that Sec-Fetch-Site calls cross-site, even without Origin', async () => {
      const response = await call('patch', `/admin/v1/organizations/${ORG}/users/${carl.id}`, adaCookie, { origin: null, site: 'cross-site' }).send({
        disabled: true,
      });
      expect(response.status).toBe(403);
      expect(response.body.detail).toMatch(/Sec-Fetch-Site/);
      const { rows } = await t.db.query('SELECT disabled, version FROM users WHERE id = $1', [carl.id]);
      expect(rows[0].disabled).toBe(false);
    });

    it('a DELETE with neither Origin nor Sec-Fetch-Site', async () => {
      const response = await call('delete', `/admin/v1/organizations/${ORG}/users/${carl.id}`, adaCookie, { origin: null, site: null });
      expect(response.status).toBe(403);
      expect(response.body.detail).toMatch(/Origin|Sec-Fetch-Site/);
      expect((await t.db.query('SELECT 1 FROM users WHERE id = $1', [carl.id])).rowCount).toBe(1);
    });

    it('a same-site (sibling subdomain) POST, and a GET from another origin', async () => {
      const sibling = await call('post', `/admin/v1/organizations/${ORG}/users`, adaCookie, { origin: 'https://portal.example.test', site: 'same-site' }).send({
        userName: 'forged2',
        role: 'Cardholder',
      });
      expect(sibling.status).toBe(403);
      expect(await userCount('forged2')).toBe(0);
      const read = await call('get', `/admin/v1/organizations/${ORG}/users`, adaCookie, { origin: EVIL, site: 'cross-site' });
      expect(read.status).toBe(403);
    });

    it('a request without the Application-ID header the API requires', async () => {
      const response = await call('post', `/admin/v1/organizations/${ORG}/users`, adaCookie, { applicationHeaders: false }).send({
        userName: 'forged3',
        role: 'Cardholder',
      });
      expect(response.status).toBe(403);
      expect(response.body.detail).toMatch(/Application-ID/);
      expect(await userCount('forged3')).toBe(0);
    });

    it('a method that is not one of GET, HEAD, POST, PUT, PATCH, DELETE', async () => {
      const response = await t.bare
        .options(`/admin/v1/organizations/${ORG}/users`)
        .set('Cookie', adaCookie)
        .set('Origin', ORIGIN)
        .set('Sec-Fetch-Site', 'same-origin')
        .set('Application-ID', TEST_APPLICATION_ID)
        .set('Application-Version', '1.0');
      expect([403, 404]).toContain(response.status);
    });
  });

  describe('where the cookie is not a credential', () => {
    it('the token endpoint, whoami and introspection ignore it', async () => {
      const token = await t.bare
        .post(`/authentication/customer/${ORG}/token`)
        .set('Cookie', adaCookie)
        .set('Origin', ORIGIN)
        .set('Sec-Fetch-Site', 'same-origin')
        .type('form')
        .send({ grant_type: 'client_credentials' });
      const without = await t.bare.post(`/authentication/customer/${ORG}/token`).type('form').send({ grant_type: 'client_credentials' });
      expect(token.status).toBe(without.status);
      expect(token.body).toEqual(without.body);
      expect(token.body.access_token).toBeUndefined();
      const whoami = await t.bare.get(`/authentication/customer/${ORG}/whoami`).set('Cookie', adaCookie).set('Sec-Fetch-Site', 'same-origin');
      expect(whoami.status).toBe(401);
    });

    it('an Authorization header decides alone: a bad bearer token with a good cookie is 401', async () => {
      const response = await call('get', `/admin/v1/organizations/${ORG}/users`, adaCookie).set('Authorization', 'Bearer not.a.token');
      expect(response.status).toBe(401);
    });

    it('an unknown or malformed cookie is 401', async () => {
      const response = await call('get', `/admin/v1/organizations/${ORG}/users`, '__Host-Http-session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
      expect(response.status).toBe(401);
      expect(response.body.detail).toMatch(/session/);
    });
  });

  describe('sessions that end', () => {
    it('an ended session is 401 at once', async () => {
      const { cookie } = await signIn(t, { org: ORG, userName: 'ada', password: ada.password, totpSecret: ada.totpSecret });
      expect((await call('get', `/admin/v1/organizations/${ORG}`, cookie)).status).toBe(200);
      const hash = createHash('sha256').update(cookie.split('=')[1]).digest();
      const { rows } = await t.db.query('SELECT id FROM sign_in_sessions WHERE secret_hash = $1', [hash]);
      await t.app.get(SignInSessions).end(rows[0].id, { name: 'ada' });
      const ended = await call('get', `/admin/v1/organizations/${ORG}`, cookie);
      expect(ended.status).toBe(401);
      expect(ended.body.detail).toMatch(/sign in again/);
    });

    it("a disabled user's session is 401", async () => {
      const dora = await createPersonWithCard(t, admin, ORG, 'dora');
      const { cookie } = await signIn(t, { org: ORG, userName: 'dora', password: dora.password, totpSecret: dora.totpSecret });
      expect((await call('get', '/aims/rs/scim/v2/Self', cookie)).status).toBe(200);
      const disabled = await call('patch', `/admin/v1/organizations/${ORG}/users/${dora.id}`, adaCookie).send({ disabled: true });
      expect(disabled.status).toBe(200);
      expect((await call('get', '/aims/rs/scim/v2/Self', cookie)).status).toBe(401);
    });

    it('a session opened with a password alone stops counting once its person becomes an administrator (the sign-in factor rule)', async () => {
      await createOrganization(t.http, admin, 'pwdonly', { passwordOnlySignIn: true });
      const fay = await createCardholder(t, admin, 'pwdonly', 'fay', { password: 'correct horse battery staple' });
      const { cookie } = await signIn(t, { org: 'pwdonly', userName: 'fay', password: 'correct horse battery staple' });
      expect((await call('get', '/aims/rs/scim/v2/Self', cookie)).status).toBe(200);
      const promoted = await t.http
        .patch(`/admin/v1/organizations/pwdonly/users/${fay.id}`)
        .auth(admin, { type: 'bearer' })
        .send({ organizationAdministrator: true });
      expect(promoted.status).toBe(200);
      const refused = await call('get', '/admin/v1/organizations/pwdonly/users', cookie);
      expect(refused.status).toBe(401);
      expect(refused.body.detail).toMatch(/password alone/);
    });

    it("a demotion applies to the person's live session at once", async () => {
      const eve = await createPersonWithCard(t, admin, ORG, 'eve');
      await t.http
        .patch(`/admin/v1/organizations/${ORG}/users/${eve.id}`)
        .auth(admin, { type: 'bearer' })
        .send({ role: 'Administration', organizationAdministrator: true });
      const { cookie } = await signIn(t, { org: ORG, userName: 'eve', password: eve.password, totpSecret: eve.totpSecret });
      expect((await call('get', `/admin/v1/organizations/${ORG}/users`, cookie)).status).toBe(200);
      expect((await call('patch', `/admin/v1/organizations/${ORG}/users/${eve.id}`, adaCookie).send({ organizationAdministrator: false })).status).toBe(200);
      expect((await call('get', `/admin/v1/organizations/${ORG}/users`, cookie)).status).toBe(403);
    });
  });

  describe('every sign-out expires the session cookie (Max-Age=0, its name and attributes)', () => {
    const setCookies = (answer: { headers: Record<string, unknown> }) => {
      const all = answer.headers['set-cookie'];
      return all === undefined ? [] : Array.isArray(all) ? (all as string[]) : [String(all)];
    };
    const adaSignsIn = async () => (await signIn(t, { org: ORG, userName: 'ada', password: ada.password, totpSecret: ada.totpSecret })).cookie;

    it("the portal's sign-out", async () => {
      const cookie = await adaSignsIn();
      const out = await call('post', `/credential-management/customer/${ORG}/whoami/sign-out`, cookie);
      expect(out.status).toBe(204);
      expect(setCookies(out)).toEqual([EXPIRED]);
      expect((await call('get', `/credential-management/customer/${ORG}/whoami`, cookie)).status).toBe(401);
      // Refused (another origin): nothing ends, nothing is expired.
      const other = await adaSignsIn();
      const refused = await call('post', `/credential-management/customer/${ORG}/whoami/sign-out`, other, { origin: EVIL });
      expect(refused.status).toBe(403);
      expect(setCookies(refused)).toEqual([]);
    });

    it("the login page's sign-out", async () => {
      const cookie = await adaSignsIn();
      const out = await signOut(t, ORG, cookie);
      expect(out.status).toBe(200);
      expect(setCookies(out)).toContain(EXPIRED);
      expect((await call('get', `/credential-management/customer/${ORG}/whoami`, cookie)).status).toBe(401);
    });

    it('RP-initiated logout: the confirmed sign-out, and a cookie whose session had already ended', async () => {
      const cookie = await adaSignsIn();
      const endSession = `/authentication/customer/${ORG}/end-session`;
      const confirm = await t.bare.get(endSession).set('Cookie', cookie);
      expect(confirm.status).toBe(200);
      const fields = Object.fromEntries([...confirm.text.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1], m[2]]));
      expect(fields.confirm).toBe('yes');
      const formCookie = cookiePair(confirm.headers['set-cookie'], '__Host-Http-login-form');
      const out = await t.bare
        .post(endSession)
        .set({ Cookie: [cookie, formCookie].filter(Boolean).join('; '), Origin: ORIGIN, 'Sec-Fetch-Site': 'same-origin' })
        .type('form')
        .send(fields);
      expect(out.status).toBe(200);
      expect(out.text).toMatch(/You are signed out/);
      expect(setCookies(out)).toEqual([EXPIRED]);
      expect((await call('get', `/credential-management/customer/${ORG}/whoami`, cookie)).status).toBe(401);
      // The browser kept the ended session's cookie (it did not apply the answer): expired again.
      const again = await t.bare.get(endSession).set('Cookie', cookie);
      expect(again.status).toBe(200);
      expect(again.text).toMatch(/You are signed out/);
      expect(setCookies(again)).toEqual([EXPIRED]);
      // A live session of another organization is not this organization's to end, nor is its cookie.
      const elsewhere = await t.bare.get(`/authentication/customer/elsewhere/end-session`).set('Cookie', adaCookie);
      expect(elsewhere.status).toBe(200);
      expect(setCookies(elsewhere)).toEqual([]);
      expect((await call('get', `/admin/v1/organizations/${ORG}`, adaCookie)).status).toBe(200);
    });
  });

  describe('the idle timeout slides on use (#32 item 8)', () => {
    let short: TestApp;
    let cookie: string;
    beforeAll(async () => {
      short = await createTestApp({ env: { SESSION_IDLE_TIMEOUT_S: '60' }, shareHsmWith: t });
      const token = await platformAdminToken(short.http);
      await createOrganization(short.http, token, 'idle', { passwordOnlySignIn: true });
      await createCardholder(short, token, 'idle', 'ida', { password: 'correct horse battery staple' });
      cookie = (await signIn(short, { org: 'idle', userName: 'ida', password: 'correct horse battery staple' })).cookie;
    }, 60_000);
    afterAll(() => short.close());

    const self = () =>
      short.bare.get('/aims/rs/scim/v2/Self').set({ Cookie: cookie, 'Application-ID': TEST_APPLICATION_ID, 'Application-Version': '1.0', Origin: ORIGIN });

    it('at the 60 s minimum, a session used every 30 s lives on past 60 s; 60 s without use ends it', async () => {
      for (let step = 0; step < 6; step++) {
        short.clock.advance(30);
        expect({ after: (step + 1) * 30, status: (await self()).status }).toEqual({ after: (step + 1) * 30, status: 200 });
      }
      short.clock.advance(61);
      expect((await self()).status).toBe(401);
    });
  });
});
