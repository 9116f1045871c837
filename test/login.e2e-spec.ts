import { createHash } from 'node:crypto';
import { PurgeJob } from '@app/auth';
import {
  IssuedPerson,
  TestApp,
  cookiePair,
  createCardholder,
  createIssuingOrganization,
  createPersonWithCard,
  createTestApp,
  errorText,
  hiddenField,
  nextTotpCode,
  platformAdminToken,
  signIn,
  totpCode,
} from '@app/testing';

/**
 * The hosted login page and people's sessions (issue 23 items 1 and 2; DECISIONS 14): password then
 * the one-time code of the OATH TOTP credential SyncSession issued, sessions as server-side rows
 * named by a __Host- cookie, login CSRF, return_to, the lockout, sessions ending at once.
 */

const ORG = 'login';
const PASSWORD = 'correct horse battery staple';
const LOGIN = `/authentication/customer/${ORG}/login`;
const ORIGIN = 'https://auth.example.test';

describe('Hosted login page and sessions', () => {
  let t: TestApp;
  let admin: string;
  let jane: IssuedPerson;

  beforeAll(async () => {
    t = await createTestApp({ env: { AUTH_FAILURE_LIMIT: '5' } });
    admin = await platformAdminToken(t.http);
    await createIssuingOrganization(t, admin, ORG, {});
    jane = await createPersonWithCard(t, admin, ORG, 'jane', { password: PASSWORD });
  }, 60_000);
  afterAll(() => t.close());

  /** GET the form: its pre-session cookie and form token. */
  async function openForm(query = '') {
    const form = await t.bare.get(`${LOGIN}${query}`);
    expect(form.status).toBe(200);
    return { cookie: cookiePair(form.headers['set-cookie'], '__Host-Http-login-form')!, token: hiddenField(form.text, 'form_token')!, response: form };
  }
  const post = (form: { cookie: string; token: string }, fields: Record<string, string>, headers: Record<string, string> = { Origin: ORIGIN }) =>
    t.bare
      .post(LOGIN)
      .set({ Cookie: form.cookie, ...headers })
      .type('form')
      .send({ form_token: form.token, ...fields });
  const session = (cookie: string) => t.bare.get(LOGIN).set('Cookie', cookie);
  const storedSessions = async (userId: string) =>
    (await t.db.query('SELECT id, secret_hash, amr, ended_at, end_reason FROM sign_in_sessions WHERE user_id = $1 ORDER BY created_at', [userId])).rows;

  it('serves an accessible form with the security headers, and a pre-session cookie', async () => {
    const { response, cookie } = await openForm('?login_hint=jane');
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(response.headers['content-security-policy']).toContain("default-src 'none'");
    expect(response.headers['content-security-policy']).not.toMatch(/unsafe-inline|script-src/);
    expect(response.headers['x-frame-options']).toBe('DENY');
    expect(response.text).toContain('<html lang="en">');
    expect(response.text).toContain('<label for="userName">User name</label>');
    expect(response.text).toContain('<label for="password">Password</label>');
    expect(response.text).toMatch(/id="userName"[^>]*value="jane"/);
    expect(response.text).not.toContain('<script');
    expect(response.headers['set-cookie'][0]).toMatch(/^__Host-Http-login-form=[A-Za-z0-9_-]{22}; Path=\/; Secure; HttpOnly; SameSite=Strict$/);
    expect(cookie).toBeDefined();
    const css = await t.bare.get('/authentication/login.css');
    expect(css.status).toBe(200);
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
  });

  it('signs in with password and one-time code: a new session, only its hash stored, the cookie attributes, 303 to a safe return_to', async () => {
    const returnTo = `/authentication/customer/${ORG}/authorize?client_id=${ORG}-app&state=xyz`;
    const form = await openForm(`?return_to=${encodeURIComponent(returnTo)}`);
    const first = await post(form, { step: 'password', userName: 'jane', password: PASSWORD, return_to: returnTo });
    expect(first.status).toBe(200);
    expect(first.text).toContain('<label for="code">One-time code</label>');
    expect(first.headers['set-cookie']).toBeUndefined();
    const stepToken = hiddenField(first.text, 'step_token')!;
    const done = await post(form, { step: 'code', step_token: stepToken, code: nextTotpCode(t, jane.totpSecret!), return_to: returnTo });
    expect(done.status).toBe(303);
    expect(done.headers.location).toBe(returnTo);
    const setCookie = (done.headers['set-cookie'] as unknown as string[]).find((c) => c.startsWith('__Host-Http-session='))!;
    expect(setCookie).toMatch(/^__Host-Http-session=[A-Za-z0-9_-]{43}; Path=\/; Secure; HttpOnly; SameSite=Strict$/);
    expect(setCookie).not.toMatch(/Domain/i);
    const value = setCookie.split(';')[0].split('=')[1];
    const rows = await storedSessions(jane.id);
    const row = rows[rows.length - 1];
    expect(row.secret_hash).toEqual(createHash('sha256').update(value).digest());
    expect(row.amr).toEqual(['pwd', 'otp']);
    expect(JSON.stringify(rows)).not.toContain(value);
    // The live session: the page shows who is signed in, and a GET with return_to goes straight there.
    const signedIn = await session(`__Host-Http-session=${value}`);
    expect(signedIn.status).toBe(200);
    expect(signedIn.text).toContain('Signed in to');
    expect(signedIn.text).toContain('<strong>jane</strong>');
    const straight = await t.bare.get(`${LOGIN}?return_to=${encodeURIComponent(returnTo)}`).set('Cookie', `__Host-Http-session=${value}`);
    expect(straight.status).toBe(303);
    expect(straight.headers.location).toBe(returnTo);
    // prompt=login shows the form even with a live session.
    const forced = await t.bare.get(`${LOGIN}?prompt=login&return_to=${encodeURIComponent(returnTo)}`).set('Cookie', `__Host-Http-session=${value}`);
    expect(forced.status).toBe(200);
    expect(forced.text).toContain('name="password"');
    // Signing in again at this browser replaces its session: a new one, and the earlier one ends.
    const again = await post({ ...form, cookie: `${form.cookie}; __Host-Http-session=${value}` }, { step: 'password', userName: 'jane', password: PASSWORD });
    const renewed = await post(
      { ...form, cookie: `${form.cookie}; __Host-Http-session=${value}` },
      { step: 'code', step_token: hiddenField(again.text, 'step_token')!, code: nextTotpCode(t, jane.totpSecret!) },
    );
    const replacement = cookiePair(renewed.headers['set-cookie'], '__Host-Http-session')!;
    expect(replacement).not.toBe(`__Host-Http-session=${value}`);
    expect((await session(`__Host-Http-session=${value}`)).text).toContain('name="password"');
    expect((await session(replacement)).text).toContain('<strong>jane</strong>');
    const audit = (await t.db.query("SELECT code, actor, details FROM audit_events WHERE action = 'sign_in.success' AND target = $1", [jane.id])).rows;
    expect(audit.at(-1)).toMatchObject({ code: 82000, actor: 'jane', details: { amr: ['pwd', 'otp'], session: expect.any(String) } });
    expect(JSON.stringify(audit)).not.toContain(value);
  });

  it('gives a new session id at every sign-in, and the signIn helper drives the same form', async () => {
    const a = await signIn(t, { org: ORG, userName: 'jane', password: PASSWORD, totpSecret: jane.totpSecret });
    const b = await signIn(t, { org: ORG, userName: 'jane', password: PASSWORD, totpSecret: jane.totpSecret, returnTo: '/portal/' });
    expect(a.cookie).not.toBe(b.cookie);
    expect(a.location).toBe('');
    expect(b.location).toBe('/portal/');
    expect((await session(a.cookie)).text).toContain('<strong>jane</strong>');
  });

  it.each([
    ['another scheme', 'https://evil.example/portal/'],
    ['a protocol-relative URL', '//evil.example/portal/'],
    ['a backslash', '/\\evil.example'],
    ['another organization', '/authentication/customer/other/authorize?client_id=x'],
    ['a path that normalizes elsewhere', '/portal/../admin/v1/organizations'],
  ])('never redirects to %s: the signed-in page instead', async (_name, returnTo) => {
    const { cookie, location } = await signIn(t, { org: ORG, userName: 'jane', password: PASSWORD, totpSecret: jane.totpSecret, returnTo });
    expect(cookie).toMatch(/^__Host-Http-session=/);
    expect(location).toBe('');
  });

  it('refuses a wrong password, an unknown user and a wrong code with one generic message', async () => {
    const form = await openForm();
    const wrong = await post(form, { step: 'password', userName: 'jane', password: 'not the password at all' });
    const unknown = await post(form, { step: 'password', userName: 'nobody', password: PASSWORD });
    // The form again with its error: a page, 200, and no session.
    expect([wrong.status, unknown.status]).toEqual([200, 200]);
    expect(cookiePair(wrong.headers['set-cookie'], '__Host-Http-session')).toBeUndefined();
    expect(errorText(wrong.text)).toBe(errorText(unknown.text));
    expect(wrong.text).toContain('aria-describedby="login-error"');
    expect(wrong.text).toContain('role="alert"');
    const first = await post(form, { step: 'password', userName: 'jane', password: PASSWORD });
    const badCode = await post(form, { step: 'code', step_token: hiddenField(first.text, 'step_token')!, code: '000000' });
    expect(badCode.status).toBe(200);
    expect(errorText(badCode.text)).toBe(errorText(wrong.text));
    expect(badCode.headers['set-cookie']).toBeUndefined();
  });

  it('locks a userName out from an address after repeated failures, audited, whether it exists or not', async () => {
    // A new counting window: the failures of the tests before do not count.
    t.clock.advance(301);
    const form = await openForm();
    for (const userName of ['locky', 'jane']) {
      for (let attempt = 0; attempt < 5; attempt++) {
        const failed = await post(form, { step: 'password', userName, password: 'wrong password, again' });
        expect(errorText(failed.text)).toContain('The sign-in did not succeed');
      }
      const locked = await post(form, { step: 'password', userName, password: PASSWORD });
      expect(errorText(locked.text)).toMatch(/^Too many failed sign-ins\. Try again in \d+ (seconds?|minutes)\.$/);
      expect(locked.headers['retry-after']).toMatch(/^\d+$/);
      expect(cookiePair(locked.headers['set-cookie'], '__Host-Http-session')).toBeUndefined();
    }
    const events = (await t.db.query("SELECT code, target, details FROM audit_events WHERE action = 'sign_in.lockout' ORDER BY occurred_at, id")).rows;
    // 'locky' names no user: recorded by its shape, length and keyed hash (DECISIONS 11), the same for each try.
    const locky = expect.stringMatching(/^<unknown: 5 chars, #[0-9a-f]{16}>$/);
    expect(events.map((e) => [e.code, e.target])).toEqual([
      [82002, locky],
      [82002, 'jane'],
    ]);
    const failures = (await t.db.query("SELECT count(*)::int AS n FROM audit_events WHERE action = 'sign_in.fail' AND actor = $1", [events[0].target])).rows[0];
    expect(failures.n).toBe(5);
    // The counters end with their window.
    t.clock.advance(301);
    expect((await post(form, { step: 'password', userName: 'jane', password: PASSWORD })).text).toContain('name="step_token"');
  });

  it('refuses login CSRF: a cross-site POST, a foreign Origin, a missing or foreign form token', async () => {
    const form = await openForm();
    const other = await openForm();
    const fields = { step: 'password', userName: 'jane', password: PASSWORD };
    const refusals = [
      await post(form, fields, { Origin: ORIGIN, 'Sec-Fetch-Site': 'cross-site' }),
      await post(form, fields, { Origin: 'https://evil.example' }),
      await post({ cookie: form.cookie, token: other.token }, fields),
      await post({ cookie: '', token: form.token }, fields),
      await t.bare.post(LOGIN).set('Cookie', form.cookie).type('form').send(fields),
    ];
    expect(refusals.map((r) => r.status)).toEqual([403, 403, 403, 403, 403]);
    for (const refused of refusals) expect(cookiePair(refused.headers['set-cookie'], '__Host-Http-session')).toBeUndefined();
  });

  it('accepts each one-time code once, even when two sign-ins send it at the same time', async () => {
    const person = await createPersonWithCard(t, admin, ORG, 'race', { password: PASSWORD });
    const forms = [await openForm(), await openForm()];
    const steps = await Promise.all(forms.map((form) => post(form, { step: 'password', userName: 'race', password: PASSWORD })));
    const code = totpCode(person.totpSecret!, Math.floor(t.clock.now().getTime() / 30_000));
    const answers = await Promise.all(forms.map((form, i) => post(form, { step: 'code', step_token: hiddenField(steps[i].text, 'step_token')!, code })));
    const signedIn = answers.map((a) => cookiePair(a.headers['set-cookie'], '__Host-Http-session') !== undefined);
    expect(signedIn.sort()).toEqual([false, true]);
    expect(answers.map((a) => a.text.includes('role="alert"')).sort()).toEqual([false, true]);
    // Replayed later: refused too.
    const again = await openForm();
    const step = await post(again, { step: 'password', userName: 'race', password: PASSWORD });
    const replay = await post(again, { step: 'code', step_token: hiddenField(step.text, 'step_token')!, code });
    expect(cookiePair(replay.headers['set-cookie'], '__Host-Http-session')).toBeUndefined();
    expect(errorText(replay.text)).toContain('The sign-in did not succeed');
  });

  it('ends the sessions of a user who is disabled, at once; re-enabling does not bring them back', async () => {
    const person = await createPersonWithCard(t, admin, ORG, 'leaver', { password: PASSWORD });
    const { cookie } = await signIn(t, { org: ORG, userName: 'leaver', password: PASSWORD, totpSecret: person.totpSecret });
    expect((await session(cookie)).text).toContain('<strong>leaver</strong>');
    const disabled = await t.http.patch(`/admin/v1/organizations/${ORG}/users/${person.id}`).auth(admin, { type: 'bearer' }).send({ disabled: true });
    expect(disabled.status).toBe(200);
    expect((await session(cookie)).text).toContain('name="password"');
    await t.http.patch(`/admin/v1/organizations/${ORG}/users/${person.id}`).auth(admin, { type: 'bearer' }).send({ disabled: false });
    expect((await session(cookie)).text).toContain('name="password"');
    expect((await storedSessions(person.id)).map((r) => r.end_reason)).toEqual(['user_disabled']);
  });

  it('ends the sessions of a user who is deleted, at once', async () => {
    const person = await createPersonWithCard(t, admin, ORG, 'gone', { password: PASSWORD });
    const { cookie } = await signIn(t, { org: ORG, userName: 'gone', password: PASSWORD, totpSecret: person.totpSecret });
    expect((await session(cookie)).text).toContain('<strong>gone</strong>');
    const deleted = await t.http.delete(`/admin/v1/organizations/${ORG}/users/${person.id}?force=true`).auth(admin, { type: 'bearer' });
    expect(deleted.status).toBe(204);
    expect((await session(cookie)).text).toContain('name="password"');
    expect(await storedSessions(person.id)).toEqual([]);
  });

  it('ends the idle session after the idle timeout, and any session after the absolute one', async () => {
    const { cookie } = await signIn(t, { org: ORG, userName: 'jane', password: PASSWORD, totpSecret: jane.totpSecret });
    t.clock.advance(14 * 60);
    expect((await session(cookie)).text).toContain('<strong>jane</strong>');
    t.clock.advance(14 * 60);
    expect((await session(cookie)).text).toContain('<strong>jane</strong>');
    t.clock.advance(16 * 60);
    expect((await session(cookie)).text).toContain('name="password"');
    // Used every ten minutes, a session still ends eight hours after sign-in.
    const busy = await signIn(t, { org: ORG, userName: 'jane', password: PASSWORD, totpSecret: jane.totpSecret });
    for (let minutes = 10; minutes < 8 * 60; minutes += 10) {
      t.clock.advance(10 * 60);
      expect((await session(busy.cookie)).text).toContain('<strong>jane</strong>');
    }
    t.clock.advance(10 * 60);
    expect((await session(busy.cookie)).text).toContain('name="password"');
    // The rows stay as the record for 30 days past their absolute expiry, then the purge removes them.
    const count = async () => (await t.db.query('SELECT count(*)::int AS n FROM sign_in_sessions WHERE user_id = $1', [jane.id])).rows[0].n;
    const before = await count();
    expect((await t.app.get(PurgeJob).runOnce()).sessions).toBe(0);
    t.clock.advance(30 * 24 * 3600 + 1);
    expect((await t.app.get(PurgeJob).runOnce()).sessions).toBeGreaterThanOrEqual(before);
    expect(await count()).toBe(0);
  });

  it('signs out: the session ends, the cookie is cleared, and the sign-out is audited', async () => {
    const { cookie } = await signIn(t, { org: ORG, userName: 'jane', password: PASSWORD, totpSecret: jane.totpSecret });
    const page = await session(cookie);
    const formCookie = cookiePair(page.headers['set-cookie'], '__Host-Http-login-form')!;
    // A sign-out forged by another site changes nothing.
    const forged = await t.bare
      .post(`/authentication/customer/${ORG}/logout`)
      .set({ Cookie: `${cookie}; ${formCookie}`, Origin: 'https://evil.example' })
      .type('form')
      .send({ form_token: hiddenField(page.text, 'form_token')! });
    expect(forged.status).toBe(403);
    expect(forged.headers['set-cookie']).toBeUndefined();
    expect((await session(cookie)).text).toContain('<strong>jane</strong>');
    const out = await t.bare
      .post(`/authentication/customer/${ORG}/logout`)
      .set({ Cookie: `${cookie}; ${formCookie}`, Origin: ORIGIN })
      .type('form')
      .send({ form_token: hiddenField(page.text, 'form_token')! });
    expect(out.status).toBe(200);
    expect(out.headers['set-cookie']).toContain('__Host-Http-session=; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=0');
    expect((await session(cookie)).text).toContain('name="password"');
    const [event] = (await t.db.query("SELECT code, actor FROM audit_events WHERE action = 'sign_in.logout' ORDER BY occurred_at DESC, id DESC LIMIT 1")).rows;
    expect(event).toEqual({ code: 82003, actor: 'jane' });
  });

  it('a cardholder without an OATH credential signs in with the password alone only where the organization allows it', async () => {
    admin = await platformAdminToken(t.http);
    await createCardholder(t, admin, ORG, 'plain', { password: PASSWORD });
    const form = await openForm();
    const refused = await post(form, { step: 'password', userName: 'plain', password: PASSWORD });
    expect(cookiePair(refused.headers['set-cookie'], '__Host-Http-session')).toBeUndefined();
    expect(errorText(refused.text)).toContain('one-time code or a smart card');
    const settings = await t.http.get(`/admin/v1/organizations/${ORG}`).auth(admin, { type: 'bearer' });
    await t.http
      .put(`/admin/v1/organizations/${ORG}/settings`)
      .auth(admin, { type: 'bearer' })
      .send({ ...settings.body.settings, passwordOnlySignIn: true });
    const { cookie } = await signIn(t, { org: ORG, userName: 'plain', password: PASSWORD });
    expect((await session(cookie)).text).toContain('<strong>plain</strong>');
    const [row] = (await t.db.query("SELECT s.amr FROM sign_in_sessions s JOIN users u ON u.id = s.user_id WHERE u.user_name = 'plain'")).rows;
    expect(row.amr).toEqual(['pwd']);
  });

  it('turning passwordOnlySignIn off ends the sessions opened with a password alone, at once, and no others', async () => {
    admin = await platformAdminToken(t.http);
    const settings = (await t.http.get(`/admin/v1/organizations/${ORG}`).auth(admin, { type: 'bearer' })).body.settings;
    const put = (passwordOnlySignIn: boolean) =>
      t.http
        .put(`/admin/v1/organizations/${ORG}/settings`)
        .auth(admin, { type: 'bearer' })
        .send({ ...settings, passwordOnlySignIn });
    expect((await put(true)).status).toBe(200);
    const plain = (await createCardholder(t, admin, ORG, 'pwdonly', { password: PASSWORD })).id;
    const passwordOnly = await signIn(t, { org: ORG, userName: 'pwdonly', password: PASSWORD });
    const withCode = await signIn(t, { org: ORG, userName: 'jane', password: PASSWORD, totpSecret: jane.totpSecret });
    expect((await session(passwordOnly.cookie)).text).toContain('<strong>pwdonly</strong>');
    // A settings change that keeps password-only sign-in allowed ends nothing.
    expect((await put(true)).status).toBe(200);
    expect((await session(passwordOnly.cookie)).text).toContain('<strong>pwdonly</strong>');

    const turnedOff = await put(false);
    expect(turnedOff.status).toBe(200);
    expect(turnedOff.body.passwordOnlySignIn).toBe(false);
    expect((await session(passwordOnly.cookie)).text).toContain('name="password"');
    expect((await session(withCode.cookie)).text).toContain('<strong>jane</strong>');
    const rows = await storedSessions(plain);
    expect(rows.map((r) => [r.amr, r.end_reason])).toEqual([[['pwd'], 'sign_in_policy']]);
    const [event] = (
      await t.db.query("SELECT code, actor, details FROM audit_events WHERE action = 'session.end' AND target = $1 ORDER BY occurred_at DESC, id DESC", [plain])
    ).rows;
    expect(event).toEqual({
      code: 82004,
      actor: expect.any(String),
      details: { reason: 'sign_in_policy', setting: 'passwordOnlySignIn', sessions: [rows[0].id] },
    });
    // And the password alone no longer signs the person in.
    const form = await openForm();
    const refused = await post(form, { step: 'password', userName: 'pwdonly', password: PASSWORD });
    expect(cookiePair(refused.headers['set-cookie'], '__Host-Http-session')).toBeUndefined();
    expect(errorText(refused.text)).toContain('one-time code or a smart card');
  });

  describe('sessions: the person, the administrator, a password change', () => {
    let person: IssuedPerson;
    beforeAll(async () => {
      admin = await platformAdminToken(t.http);
      person = await createPersonWithCard(t, admin, ORG, 'many', { password: PASSWORD });
    });
    const adminCall = (method: 'get' | 'delete', path: string, token = admin) =>
      t.http[method](`/admin/v1/organizations/${ORG}/users/${person.id}/sessions${path}`).auth(token, { type: 'bearer' });

    it("the person sees their sessions on the signed-in page and ends another one, never somebody else's", async () => {
      const laptop = await signIn(t, { org: ORG, userName: 'many', password: PASSWORD, totpSecret: person.totpSecret, userAgent: 'laptop' });
      const phone = await signIn(t, { org: ORG, userName: 'many', password: PASSWORD, totpSecret: person.totpSecret, userAgent: 'phone' });
      const page = await session(laptop.cookie);
      const ends = [...page.text.matchAll(/action="(\/authentication\/customer\/login\/sessions\/[0-9a-f-]+\/end)"/g)].map((m) => m[1]);
      expect(ends).toHaveLength(1);
      const formCookie = cookiePair(page.headers['set-cookie'], '__Host-Http-login-form')!;
      const endWith = (cookie: string, path: string, token = hiddenField(page.text, 'form_token')!) =>
        t.bare
          .post(path)
          .set({ Cookie: `${cookie}; ${formCookie}`, Origin: ORIGIN })
          .type('form')
          .send({ form_token: token });
      // Jane's session id, ended with many's cookie: as unknown as one that never existed.
      const janesCookie = (await signIn(t, { org: ORG, userName: 'jane', password: PASSWORD, totpSecret: jane.totpSecret })).cookie;
      const [janes] = (await t.db.query('SELECT id FROM sign_in_sessions WHERE user_id = $1 AND ended_at IS NULL ORDER BY created_at DESC LIMIT 1', [jane.id]))
        .rows;
      const foreign = await endWith(laptop.cookie, `/authentication/customer/${ORG}/sessions/${janes.id}/end`);
      expect(foreign.text).toContain('That session had already ended.');
      expect((await session(janesCookie)).text).toContain('<strong>jane</strong>');
      const crossSite = await endWith(laptop.cookie, ends[0], 'forged');
      expect(crossSite.status).toBe(403);
      expect((await session(phone.cookie)).text).toContain('<strong>many</strong>');
      const ended = await endWith(laptop.cookie, ends[0]);
      expect(ended.status).toBe(200);
      expect(ended.text).toContain('The session has ended.');
      expect((await session(phone.cookie)).text).toContain('name="password"');
      expect((await session(laptop.cookie)).text).toContain('<strong>many</strong>');
    });

    it("an administrator lists a user's live sessions and ends one, or all of them", async () => {
      const a = await signIn(t, { org: ORG, userName: 'many', password: PASSWORD, totpSecret: person.totpSecret });
      const b = await signIn(t, { org: ORG, userName: 'many', password: PASSWORD, totpSecret: person.totpSecret });
      const listed = await adminCall('get', '');
      expect(listed.status).toBe(200);
      expect(listed.body.Resources.length).toBeGreaterThanOrEqual(2);
      expect(listed.body.Resources[0]).toEqual({
        id: expect.any(String),
        amr: ['pwd', 'otp'],
        authTime: expect.any(String),
        lastSeen: expect.any(String),
        idleExpires: expect.any(String),
        absoluteExpires: expect.any(String),
        sourceAddress: expect.any(String),
        userAgent: 'sign-in test helper',
      });
      expect(JSON.stringify(listed.body)).not.toContain(b.cookie.split('=')[1]);
      const newest = listed.body.Resources[0].id;
      expect((await adminCall('delete', `/${newest}`)).status).toBe(204);
      expect((await adminCall('delete', `/${newest}`)).status).toBe(404);
      expect((await session(b.cookie)).text).toContain('name="password"');
      expect((await session(a.cookie)).text).toContain('<strong>many</strong>');
      expect((await adminCall('delete', '')).status).toBe(204);
      expect((await session(a.cookie)).text).toContain('name="password"');
      expect((await adminCall('get', '')).body.Resources).toEqual([]);
      const events = (await t.db.query("SELECT code, details FROM audit_events WHERE action = 'session.end' AND target = $1", [person.id])).rows;
      expect(events.map((e) => e.details.reason)).toEqual(['administrator', 'administrator']);
      expect(events[0].code).toBe(82004);
      expect((await t.http.get(`/admin/v1/organizations/${ORG}/users/${person.id}/sessions`)).status).toBe(401);
      expect(
        (await t.http.get(`/admin/v1/organizations/${ORG}/users/00000000-0000-4000-8000-000000000000/sessions`).auth(admin, { type: 'bearer' })).status,
      ).toBe(404);
    });

    it('a new password ends every session of the person', async () => {
      const { cookie } = await signIn(t, { org: ORG, userName: 'many', password: PASSWORD, totpSecret: person.totpSecret });
      const changed = await t.http
        .put(`/admin/v1/organizations/${ORG}/users/${person.id}/password`)
        .auth(admin, { type: 'bearer' })
        .send({ password: 'another horse battery staple' });
      expect(changed.status).toBeLessThan(300);
      expect((await session(cookie)).text).toContain('name="password"');
      const [row] = (await t.db.query('SELECT end_reason FROM sign_in_sessions WHERE user_id = $1 ORDER BY created_at DESC LIMIT 1', [person.id])).rows;
      expect(row.end_reason).toBe('password_changed');
    });
  });

  it('holds across instances: a code used at one is refused at the other, and a session ended at one is ended at the other', async () => {
    const other = await createTestApp({ databaseUrl: t.databaseUrl, shareHsmWith: t, clock: t.clock });
    try {
      admin = await platformAdminToken(t.http);
      const person = await createPersonWithCard(t, admin, ORG, 'twice', { password: PASSWORD });
      const start = async (app: TestApp) => {
        const form = await app.bare.get(LOGIN);
        const cookie = cookiePair(form.headers['set-cookie'], '__Host-Http-login-form')!;
        const token = hiddenField(form.text, 'form_token')!;
        const send = (fields: Record<string, string>) =>
          app.bare
            .post(LOGIN)
            .set({ Cookie: cookie, Origin: ORIGIN })
            .type('form')
            .send({ form_token: token, ...fields });
        const step = await send({ step: 'password', userName: 'twice', password: PASSWORD });
        return (code: string) => send({ step: 'code', step_token: hiddenField(step.text, 'step_token')!, code });
      };
      const code = nextTotpCode(t, person.totpSecret!);
      const here = await start(t);
      const there = await start(other);
      const first = await here(code);
      const cookie = cookiePair(first.headers['set-cookie'], '__Host-Http-session')!;
      expect(cookie).toBeDefined();
      const replayed = await there(code);
      expect(cookiePair(replayed.headers['set-cookie'], '__Host-Http-session')).toBeUndefined();
      // The session opened here is live there; signed out there, it is over here at once.
      const page = await other.bare.get(LOGIN).set('Cookie', cookie);
      expect(page.text).toContain('<strong>twice</strong>');
      const formCookie = cookiePair(page.headers['set-cookie'], '__Host-Http-login-form')!;
      const out = await other.bare
        .post(`/authentication/customer/${ORG}/logout`)
        .set({ Cookie: `${cookie}; ${formCookie}`, Origin: ORIGIN })
        .type('form')
        .send({ form_token: hiddenField(page.text, 'form_token')! });
      expect(out.status).toBe(200);
      expect((await session(cookie)).text).toContain('name="password"');
    } finally {
      await other.close();
    }
  });
});
