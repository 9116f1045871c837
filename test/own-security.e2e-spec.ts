import { createHash } from 'node:crypto';
import {
  SoftPasskey,
  TEST_APPLICATION_ID,
  TestApp,
  cookiePair,
  createOrganization,
  createSystemAccount,
  createTestApp,
  enrolThroughLink,
  hiddenField,
  nextTotpCode,
  offeredTotp,
  passkeyOptions,
  platformAdminToken,
  signIn,
  tokenBySecret,
} from '@app/testing';

/**
 * A person's own second factors and sessions (issue 33 item 2, the portal's Security page; DECISIONS
 * 14.6): listed, renamed, removed (never the last one while a second factor is required, only
 * shortly after a sign-in), a new one added through an add-factor ticket that works once, in the
 * browser session that asked for it only, and changes nothing else; sessions listed, one ended, all
 * others ended. Passkeys (DECISIONS 14.5) are added through the same ticket and factor step, listed,
 * renamed and removed one by one like apps, and count for the last-factor rule. Another person's
 * factor or session is not found; bad input is a 400 naming the field.
 */

const ORG = 'security';
const ORIGIN = 'https://auth.example.test';
const PASSWORD = 'correct horse battery staple';
const BASE = `/credential-management/customer/${ORG}/whoami`;

type Method = 'get' | 'post' | 'patch' | 'delete';

describe("A person's own factors and sessions", () => {
  let t: TestApp;
  let admin: string;
  let systemToken: string;
  /** Ada: enrolled through her link (one authenticator app), signed in. */
  const ada: { id: string; cookie: string; secret: string; secret2?: string } = { id: '', cookie: '', secret: '' };
  /** Bob: another person of the organization, with his own factor and session. */
  const bob = { id: '', cookie: '', secret: '' };

  async function person(userName: string, into: { id: string; cookie: string; secret: string }) {
    const created = await t.http.post(`/admin/v1/organizations/${ORG}/users`).auth(admin, { type: 'bearer' }).send({ userName, role: 'Cardholder' });
    expect(created.status).toBe(201);
    const link = await t.http.post(`/admin/v1/organizations/${ORG}/users/${created.body.id}/enrolment-link`).auth(admin, { type: 'bearer' });
    expect(link.status).toBe(201);
    Object.assign(into, { id: created.body.id }, await enrolThroughLink(t, link.body.url, PASSWORD));
  }

  beforeAll(async () => {
    t = await createTestApp();
    admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, ORG);
    await person('ada', ada);
    await person('bob', bob);
    const account = await createSystemAccount(t.http, admin, ORG, { role: 'Administration', organizationAdministrator: true });
    systemToken = await tokenBySecret(t.http, ORG, account.clientId, account.secret);
  }, 90_000);
  afterAll(() => t.close());

  /** A call of the portal with a session cookie: the API's headers and the service's Origin. */
  function call(method: Method, path: string, cookie: string) {
    return t.bare[method](`${BASE}${path}`)
      .set('Cookie', cookie)
      .set('Application-ID', TEST_APPLICATION_ID)
      .set('Application-Version', '1.0')
      .set('Origin', ORIGIN)
      .set('Sec-Fetch-Site', 'same-origin');
  }
  const factorsOf = async (cookie: string) => {
    const list = await call('get', '/factors', cookie);
    expect(list.status).toBe(200);
    return list.body.Resources as { id: string; name: string; type: string; removable: boolean; removalRefusal: string | null; lastUsed: string | null }[];
  };
  const credentialRows = async (userId: string) =>
    (
      await t.db.query(
        `SELECT c.id, c.status, c.name, d.status AS device_status FROM credentials c JOIN wallets w ON w.id = c.wallet_id
           JOIN devices d ON d.id = c.device_id WHERE w.owner_user_id = $1 ORDER BY c.created_at, c.id`,
        [userId],
      )
    ).rows;
  const auditOf = async (action: string, target: string) =>
    (await t.db.query('SELECT actor, details FROM audit_events WHERE action = $1 AND target = $2 ORDER BY id', [action, target])).rows;

  /** Signs the person in again at the login page: a new session, a recent sign-in. */
  const signInAgain = async (userName: string, secret: string, userAgent?: string) =>
    (await signIn(t, { org: ORG, userName, password: PASSWORD, totpSecret: secret, userAgent })).cookie;

  /** Opens an add-factor ticket in a browser holding `sessionCookie` (or none): the page and its pre-session cookie. */
  async function openTicket(url: string, sessionCookie?: string) {
    const page = await t.bare.get(new URL(url).pathname).set(sessionCookie ? { Cookie: sessionCookie } : {});
    return { page, formCookie: cookiePair(page.headers['set-cookie'], '__Host-Http-login-form')! };
  }
  function confirmTicket(url: string, opened: { page: { text: string }; formCookie: string }, sessionCookie: string, code: string) {
    return t.bare
      .post(`/authentication/customer/${ORG}/enrol`)
      .set({ Cookie: `${sessionCookie}; ${opened.formCookie}`, Origin: ORIGIN })
      .type('form')
      .send({
        form_token: hiddenField(opened.page.text, 'form_token')!,
        link: new URL(url).pathname.split('/').pop()!,
        step: 'totp',
        state: hiddenField(opened.page.text, 'state')!,
        code,
      });
  }

  describe('who may call', () => {
    it.each([
      ['get', '/factors'],
      ['patch', '/factors/0b6e6f1e-0000-4000-8000-000000000000'],
      ['delete', '/factors/0b6e6f1e-0000-4000-8000-000000000000'],
      ['post', '/factor-enrolments'],
      ['get', '/sessions'],
      ['delete', '/sessions'],
      ['delete', '/sessions/0b6e6f1e-0000-4000-8000-000000000000'],
    ] as const)('%s %s without a session or token is 401', async (method, path) => {
      const answer = await t.bare[method](`${BASE}${path}`).set('Application-ID', TEST_APPLICATION_ID).set('Application-Version', '1.0');
      expect(answer.status).toBe(401);
    });

    it('a system account has no factors or sessions: 403 saying so', async () => {
      const answer = await t.http.get(`${BASE}/factors`).auth(systemToken, { type: 'bearer' });
      expect(answer.status).toBe(403);
      expect(answer.body.detail).toMatch(/is a system account/);
      expect((await t.http.get(`${BASE}/sessions`).auth(systemToken, { type: 'bearer' })).status).toBe(403);
    });

    it("another organization's path is refused (the caller's organization only)", async () => {
      const answer = await t.bare
        .get(`/credential-management/customer/elsewhere/whoami/factors`)
        .set({ Cookie: ada.cookie, 'Application-ID': TEST_APPLICATION_ID, 'Application-Version': '1.0' });
      expect(answer.status).toBe(403);
    });
  });

  describe('factors', () => {
    it('lists the authenticator app enrolled through the link: its type, default name, dates, and that it is the last one', async () => {
      const [factor, ...rest] = await factorsOf(ada.cookie);
      expect(rest).toEqual([]);
      const [row] = await credentialRows(ada.id);
      expect(factor).toEqual({
        id: row.id,
        type: 'OATH_TOTP',
        name: 'Authenticator app',
        created: expect.any(String),
        lastUsed: null,
        status: 'ISSUED',
        onCard: false,
        removable: false,
        removalRefusal: expect.stringMatching(/last second factor.*Add another factor first/),
      });
    });

    it('a sign-in with its code records when it was last used', async () => {
      ada.cookie = await signInAgain('ada', ada.secret);
      const [factor] = await factorsOf(ada.cookie);
      expect(factor.lastUsed).toBe(t.clock.now().toISOString());
    });

    it('renames one (trimmed, 1-64 characters), audited; a bad name is a 400 naming the field, and nothing changes', async () => {
      const [factor] = await factorsOf(ada.cookie);
      const renamed = await call('patch', `/factors/${factor.id}`, ada.cookie).send({ name: '  Phone (work)  ' });
      expect(renamed.status).toBe(200);
      expect(renamed.body).toMatchObject({ id: factor.id, name: 'Phone (work)', removable: false });
      expect((await credentialRows(ada.id))[0].name).toBe('Phone (work)');
      expect(await auditOf('user.factor.rename', ada.id)).toEqual([
        { actor: 'ada', details: { credential: factor.id, type: 'OATH_TOTP', name: 'Phone (work)' } },
      ]);
      for (const body of [{ name: 'x'.repeat(65) }, { name: '   ' }, { name: 42 }, {}, { name: 'ok', extra: 1 }, { name: 'tab\there' }]) {
        const refused = await call('patch', `/factors/${factor.id}`, ada.cookie).send(body);
        expect(refused.status).toBe(400);
        expect(refused.body.detail).toMatch(/name|"extra"/);
      }
      const long = await call('patch', `/factors/${factor.id}`, ada.cookie).send({ name: 'x'.repeat(65) });
      expect(long.body.detail).toBe('Invalid request body: name: name must have at most 64 characters.');
      expect((await credentialRows(ada.id))[0].name).toBe('Phone (work)');
    });

    it("another person's factor, an unknown id and a malformed one: 404 each (the malformed one naming the parameter); nothing changes", async () => {
      const [bobs] = await factorsOf(bob.cookie);
      const rename = await call('patch', `/factors/${bobs.id}`, ada.cookie).send({ name: 'mine now' });
      expect(rename.status).toBe(404);
      expect(rename.body.detail).toBe(`You have no second factor ${bobs.id}.`);
      expect((await call('delete', `/factors/${bobs.id}`, ada.cookie)).status).toBe(404);
      expect((await call('delete', '/factors/0b6e6f1e-0000-4000-8000-000000000000', ada.cookie)).status).toBe(404);
      const malformed = await call('patch', '/factors/not-a-uuid', ada.cookie).send({ name: 'x' });
      expect(malformed.status).toBe(404);
      expect(malformed.body.detail).toMatch(/path parameter id must be/);
      expect((await credentialRows(bob.id))[0]).toMatchObject({ status: 'ISSUED', name: null, device_status: 'ISSUED' });
    });

    it('the last factor cannot be removed while a second factor is required: 409 saying so, nothing revoked', async () => {
      const [factor] = await factorsOf(ada.cookie);
      const refused = await call('delete', `/factors/${factor.id}`, ada.cookie);
      expect(refused.status).toBe(409);
      expect(refused.body.detail).toBe(
        'This is your last second factor, and your account needs one to sign in. Add another factor first, then remove this one.',
      );
      expect((await credentialRows(ada.id))[0]).toMatchObject({ status: 'ISSUED', device_status: 'ISSUED' });
    });

    it('where the organization lets cardholders sign in with a password alone, the last factor may be removed', async () => {
      const set = (passwordOnlySignIn: boolean) =>
        t.http
          .put(`/admin/v1/organizations/${ORG}/settings`)
          .auth(admin, { type: 'bearer' })
          .send({ automaticDeviceCreation: false, applicationIdPolicy: 'any', passwordOnlySignIn });
      expect((await set(true)).status).toBe(200);
      expect((await factorsOf(bob.cookie))[0]).toMatchObject({ removable: true, removalRefusal: null });
      expect((await set(false)).status).toBe(200);
      // Turning the setting off ended password-only sessions only; Bob's (password and code) lives on.
      expect((await factorsOf(bob.cookie))[0]).toMatchObject({ removable: false });
    });
  });

  describe('adding a factor', () => {
    let ticketUrl: string;

    it('a recent sign-in starts it: a one-time link to the factor step, shown once (no-store), stored hashed, bound to the session', async () => {
      const answer = await call('post', '/factor-enrolments', ada.cookie);
      expect(answer.status).toBe(201);
      expect(answer.headers['cache-control']).toBe('no-store');
      expect(answer.body).toEqual({
        url: expect.stringMatching(/^https:\/\/auth\.example\.test\/authentication\/customer\/security\/enrol\/[A-Za-z0-9_-]{43}$/),
        expiresAt: new Date(t.clock.now().getTime() + 600_000).toISOString(),
      });
      ticketUrl = answer.body.url;
      const token = new URL(ticketUrl).pathname.split('/').pop()!;
      const [stored] = (await t.db.query(`SELECT token_hash, purpose, session_id FROM enrolment_links WHERE user_id = $1 AND purpose = 'add_factor'`, [ada.id]))
        .rows;
      expect(stored.token_hash).toEqual(createHash('sha256').update(token).digest());
      const [session] = (await call('get', '/sessions', ada.cookie)).body.Resources.filter((s: { current: boolean }) => s.current);
      expect(stored.session_id).toBe(session.id);
      expect((await auditOf('user.enrolment_link.create', ada.id)).at(-1)).toMatchObject({
        actor: 'ada',
        details: { purpose: 'add_factor', session: session.id },
      });
    });

    it('the ticket opens nothing without its session: no cookie, another session of the same person, another person', async () => {
      const other = await signInAgainKeeping('ada');
      for (const cookie of [undefined, other, bob.cookie]) {
        const { page } = await openTicket(ticketUrl, cookie);
        expect(page.status).toBe(200);
        expect(page.text).toContain('only in the browser session that asked for it');
        expect(page.text).not.toContain('QR code of');
      }
    });

    it('in its session it opens the factor step at once (no password), and a right code adds the factor and returns to the Security page; nothing else changes', async () => {
      const before = (await t.db.query('SELECT password_hash FROM users WHERE id = $1', [ada.id])).rows[0];
      const sessionsBefore = (await call('get', '/sessions', ada.cookie)).body.totalResults;
      const opened = await openTicket(ticketUrl, ada.cookie);
      expect(opened.page.text).not.toContain('type="password"');
      expect(opened.page.text).toContain('Confirm and add');
      expect(opened.page.text).toContain(`href="/portal/${ORG}/security"`);
      const { secret } = offeredTotp(opened.page.text);
      const wrong = await confirmTicket(ticketUrl, opened, ada.cookie, '000000');
      expect(wrong.status).toBe(200);
      expect(wrong.text).toContain('That code is not right');
      const done = await confirmTicket(ticketUrl, opened, ada.cookie, nextTotpCode(t, secret));
      expect(done.status).toBe(303);
      expect(done.headers.location).toBe(`/portal/${ORG}/security`);
      expect(done.headers['set-cookie']).toBeUndefined();
      const rows = await credentialRows(ada.id);
      expect(rows.map((row) => row.status)).toEqual(['ISSUED', 'ISSUED']);
      expect((await t.db.query('SELECT password_hash FROM users WHERE id = $1', [ada.id])).rows[0]).toEqual(before);
      expect((await call('get', '/sessions', ada.cookie)).body.totalResults).toBe(sessionsBefore);
      expect(await auditOf('user.factor.add', ada.id)).toEqual([
        { actor: 'ada', details: expect.objectContaining({ credential: rows[1].id, type: 'OATH_TOTP' }) },
      ]);
      const factors = await factorsOf(ada.cookie);
      expect(factors.map((f) => [f.name, f.removable])).toEqual([
        ['Phone (work)', true],
        ['Authenticator app', true],
      ]);
      // The new app signs in.
      ada.secret2 = secret;
      expect(await signInAgain('ada', secret)).toMatch(/^__Host-Http-session=/);
    });

    it('the ticket works once', async () => {
      const { page } = await openTicket(ticketUrl, ada.cookie);
      expect(page.text).toContain('This enrolment link has been used already');
    });

    it('a bearer token cannot start it, and an old sign-in must sign in again: 403 saying so', async () => {
      const token = await t.http.post(`${BASE}/factor-enrolments`).auth(systemToken, { type: 'bearer' });
      expect(token.status).toBe(403);
      t.clock.advance(301);
      const old = await call('post', '/factor-enrolments', ada.cookie);
      expect(old.status).toBe(403);
      expect(old.body.detail).toBe(
        'To add a second factor you must have signed in within the last 5 minutes; sign in again (the login page with prompt=login) and try again.',
      );
      const [first] = await factorsOf(ada.cookie);
      const remove = await call('delete', `/factors/${first.id}`, ada.cookie);
      expect(remove.status).toBe(403);
      expect(remove.body.detail).toMatch(/^To remove a second factor you must have signed in within the last 5 minutes/);
      expect((await credentialRows(ada.id))[0].status).toBe('ISSUED');
    });
  });

  /** Another session of the person (a second browser), keeping `ada.cookie` as it is. */
  async function signInAgainKeeping(userName: 'ada'): Promise<string> {
    return signInAgain(userName, ada.secret, 'another browser');
  }

  describe('removing a factor', () => {
    it('with a recent sign-in, one of two is removed: its software authenticator and credential revoked, audited; the other is now the last', async () => {
      ada.cookie = await signInAgain('ada', ada.secret2!);
      const [first, second] = await factorsOf(ada.cookie);
      const removed = await call('delete', `/factors/${first.id}`, ada.cookie);
      expect(removed.status).toBe(204);
      const rows = await credentialRows(ada.id);
      expect(rows.map((row) => [row.status, row.device_status])).toEqual([
        ['REVOKED', 'REVOKED'],
        ['ISSUED', 'ISSUED'],
      ]);
      const [event] = await auditOf('user.factor.remove', ada.id);
      expect(event).toMatchObject({ actor: 'ada', details: { credential: first.id, type: 'OATH_TOTP', name: 'Phone (work)' } });
      expect((await auditOf('credential.revoke', first.id)).length).toBe(1);
      const left = await factorsOf(ada.cookie);
      expect(left.map((f) => [f.id, f.removable])).toEqual([[second.id, false]]);
      expect((await call('delete', `/factors/${first.id}`, ada.cookie)).status).toBe(404);
      expect((await call('delete', `/factors/${second.id}`, ada.cookie)).status).toBe(409);
    });
  });

  describe('sessions', () => {
    it('lists the live ones, this one marked; no cookie or hash', async () => {
      const other = await signInAgain('ada', ada.secret2!, 'Other browser/1.0');
      const list = await call('get', '/sessions', other);
      expect(list.status).toBe(200);
      const sessions = list.body.Resources as Record<string, unknown>[];
      expect(sessions.length).toBeGreaterThanOrEqual(2);
      expect(sessions.filter((s) => s.current)).toHaveLength(1);
      const current = sessions.find((s) => s.current)!;
      expect(current).toMatchObject({ userAgent: 'Other browser/1.0', amr: ['pwd', 'otp'], sourceAddress: expect.any(String) });
      expect(Object.keys(current).sort()).toEqual([
        'absoluteExpires',
        'amr',
        'authTime',
        'created',
        'current',
        'id',
        'idleExpires',
        'lastSeen',
        'sourceAddress',
        'userAgent',
      ]);
      ada.cookie = other;
    });

    it("ends another of one's sessions (sign_in.logout), not this one (409), not another person's, an unknown or a malformed one (404)", async () => {
      const older = await signInAgain('ada', ada.secret2!, 'Old browser/1.0');
      const list = (await call('get', '/sessions', ada.cookie)).body.Resources as { id: string; current: boolean; userAgent: string }[];
      const target = list.find((s) => s.userAgent === 'Old browser/1.0')!;
      const current = list.find((s) => s.current)!;
      const ended = await call('delete', `/sessions/${target.id}`, ada.cookie);
      expect(ended.status).toBe(204);
      expect((await call('get', '/factors', older)).status).toBe(401);
      expect((await auditOf('sign_in.logout', ada.id)).at(-1)).toMatchObject({ actor: 'ada', details: { session: target.id, reason: 'logout' } });
      const self = await call('delete', `/sessions/${current.id}`, ada.cookie);
      expect(self.status).toBe(409);
      expect(self.body.detail).toMatch(/sign out instead/);
      const bobsSession = ((await call('get', '/sessions', bob.cookie)).body.Resources as { id: string }[])[0];
      expect((await call('delete', `/sessions/${bobsSession.id}`, ada.cookie)).status).toBe(404);
      expect((await call('get', '/sessions', bob.cookie)).status).toBe(200);
      expect((await call('delete', '/sessions/0b6e6f1e-0000-4000-8000-000000000000', ada.cookie)).status).toBe(404);
      expect((await call('delete', '/sessions/nope', ada.cookie)).status).toBe(404);
    });

    it('signs out everywhere else: every other session ends, this one lives on', async () => {
      const others = [await signInAgain('ada', ada.secret2!, 'A'), await signInAgain('ada', ada.secret2!, 'B')];
      const answer = await call('delete', '/sessions', ada.cookie);
      expect(answer.status).toBe(200);
      expect(answer.body.endedSessions).toBeGreaterThanOrEqual(2);
      for (const cookie of others) expect((await call('get', '/sessions', cookie)).status).toBe(401);
      const left = (await call('get', '/sessions', ada.cookie)).body.Resources as { current: boolean }[];
      expect(left).toEqual([expect.objectContaining({ current: true })]);
      expect((await call('get', '/sessions', bob.cookie)).status).toBe(200);
    });
  });
  describe('passkeys', () => {
    const cy = { id: '', cookie: '', secret: '' };
    /** Registers a passkey named `name` through a new add-factor ticket of Cy's session: the answer of the enrol POST. */
    async function addPasskey(key: SoftPasskey, name: string) {
      // A second on the clock per factor, so that they list in the order they were added.
      t.clock.advance(1);
      const ticket = await call('post', '/factor-enrolments', cy.cookie);
      expect(ticket.status).toBe(201);
      const opened = await openTicket(ticket.body.url, cy.cookie);
      expect(opened.page.text).toContain('Create a passkey');
      const token = new URL(ticket.body.url).pathname.split('/').pop()!;
      const done = await t.bare
        .post(`/authentication/customer/${ORG}/enrol`)
        .set({ Cookie: `${cy.cookie}; ${opened.formCookie}`, Origin: ORIGIN })
        .type('form')
        .send({
          form_token: hiddenField(opened.page.text, 'form_token')!,
          link: token,
          step: 'passkey',
          state: hiddenField(opened.page.text, 'state')!,
          passkey_name: name,
          response: JSON.stringify(key.register(passkeyOptions(opened.page.text, 'passkey-register'))),
        });
      return { done, ticketUrl: ticket.body.url as string };
    }
    const rowsOf = async () =>
      (
        await t.db.query(
          `SELECT c.type, c.name, c.status, c.device_id FROM credentials c JOIN wallets w ON w.id = c.wallet_id
            WHERE w.owner_user_id = $1 ORDER BY c.created_at, c.id`,
          [cy.id],
        )
      ).rows;

    it('a passkey is added through the ticket: used once, audited user.factor.add, back to the Security page; listed with its name', async () => {
      await person('cy', cy);
      const key = new SoftPasskey('auth.example.test', ORIGIN);
      const { done, ticketUrl } = await addPasskey(key, 'Key A');
      expect(done.status).toBe(303);
      expect(done.headers.location).toBe(`/portal/${ORG}/security`);
      expect(done.headers['set-cookie']).toBeUndefined();
      expect((await openTicket(ticketUrl, cy.cookie)).page.text).toContain('This enrolment link has been used already');
      const [added] = await auditOf('user.factor.add', cy.id);
      expect(added).toMatchObject({ actor: 'cy', details: { type: 'FIDO2', name: 'Key A' } });
      expect((await addPasskey(new SoftPasskey('auth.example.test', ORIGIN), 'Key B')).done.status).toBe(303);
      const factors = await factorsOf(cy.cookie);
      expect(factors.map((f) => [f.type, f.name, f.removable])).toEqual([
        ['OATH_TOTP', 'Authenticator app', true],
        ['FIDO2', 'Key A', true],
        ['FIDO2', 'Key B', true],
      ]);
    });

    it('renames a passkey: its credential carries the name', async () => {
      const keyA = (await factorsOf(cy.cookie)).find((f) => f.name === 'Key A')!;
      const renamed = await call('patch', `/factors/${keyA.id}`, cy.cookie).send({ name: 'Laptop' });
      expect(renamed.status).toBe(200);
      expect(renamed.body).toMatchObject({ id: keyA.id, type: 'FIDO2', name: 'Laptop' });
      expect((await rowsOf()).map((row) => row.name)).toEqual([null, 'Laptop', 'Key B']);
    });

    it('removing one passkey revokes it alone (each on a device of its own); the last passkey is kept while a second factor is required', async () => {
      const [app, laptop, keyB] = await factorsOf(cy.cookie);
      expect((await call('delete', `/factors/${laptop.id}`, cy.cookie)).status).toBe(204);
      const rows = await rowsOf();
      expect(rows.map((row) => [row.name, row.status])).toEqual([
        [null, 'ISSUED'],
        ['Laptop', 'REVOKED'],
        ['Key B', 'ISSUED'],
      ]);
      expect(new Set(rows.map((row) => row.device_id)).size).toBe(3);
      expect((await call('delete', `/factors/${app.id}`, cy.cookie)).status).toBe(204);
      const left = await factorsOf(cy.cookie);
      expect(left.map((f) => [f.id, f.removable])).toEqual([[keyB.id, false]]);
      const last = await call('delete', `/factors/${keyB.id}`, cy.cookie);
      expect(last.status).toBe(409);
      expect(last.body.detail).toMatch(/last second factor/);
    });
  });
});
