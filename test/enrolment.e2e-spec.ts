import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  TestApp,
  cookiePair,
  createAdminAndPlainAccounts,
  createOrganization,
  createTestApp,
  errorText,
  hiddenField,
  platformAdminToken,
  totpCode,
} from '@app/testing';

/**
 * The first administrator and people's own second factor (issue 33 items 1 and 2; DECISIONS 11,
 * 14.4): the platform administrator person made at first start with a one-time enrolment link in
 * the bootstrap credentials file; the link's pages (choose a password, add an authenticator app from
 * a QR code, confirm one code) enrol an OATH_TOTP credential of the credential-management domain and
 * sign the person in; links are single use, expire, belong to one person, and a new one replaces the
 * older; nothing is written before the code is right.
 */

const PASSWORD = 'correct horse battery staple';
const ORIGIN = 'https://auth.example.test';

describe('Enrolment links and TOTP self-enrolment', () => {
  let t: TestApp;
  let dataDir: string;
  let platformAdmin: string;
  let firstLink: string;
  /** What the platform administrator's authenticator app holds once enrolled, and the code step that confirmed it. */
  let enrolled: { secret: string; step: number };

  beforeAll(async () => {
    dataDir = mkdtempSync(join(process.env.TEST_RUN_DIR!, 'enrolment-'));
    t = await createTestApp({ env: { PLATFORM_ADMIN_USER: 'admin', DATA_DIR: dataDir } });
    platformAdmin = await platformAdminToken(t.http);
    firstLink = /^enrolment_link=(.*)$/m.exec(readFileSync(join(dataDir, 'bootstrap-credentials'), 'utf8'))![1];
  }, 60_000);
  afterAll(() => t.close());

  const pathOf = (url: string) => new URL(url).pathname;
  const tokenOf = (url: string) => pathOf(url).split('/').pop()!;
  const person = async (org: string, userName: string) =>
    (await t.db.query('SELECT id, password_hash, platform_administrator FROM users WHERE org_id = $1 AND user_name = $2', [org, userName])).rows[0];
  const credentialsOf = async (userId: string) =>
    (
      await t.db.query(
        `SELECT c.id, c.type, c.status, c.device_id, c.content_request_id, c.oath_last_step, d.status AS device_status, d.owner_user_id,
                (SELECT count(*)::int FROM device_external_ids e WHERE e.device_id = d.id) AS external_ids
           FROM credentials c JOIN wallets w ON w.id = c.wallet_id JOIN devices d ON d.id = c.device_id WHERE w.owner_user_id = $1`,
        [userId],
      )
    ).rows;

  /** Opens the link as a browser: its pre-session cookie and form token. */
  async function openLink(url: string) {
    const page = await t.bare.get(pathOf(url));
    return { page, cookie: cookiePair(page.headers['set-cookie'], '__Host-Http-login-form')!, formToken: hiddenField(page.text, 'form_token')! };
  }
  const post = (
    org: string,
    form: { cookie: string; formToken: string },
    fields: Record<string, string>,
    headers: Record<string, string> = { Origin: ORIGIN },
  ) =>
    t.bare
      .post(`/authentication/customer/${org}/enrol`)
      .set({ Cookie: form.cookie, ...headers })
      .type('form')
      .send({ form_token: form.formToken, ...fields });

  /** Through the password step: the TOTP page, its state, and the secret the QR code's text alternative names. */
  async function passwordStep(org: string, url: string) {
    const form = await openLink(url);
    expect(form.page.status).toBe(200);
    const page = await post(org, form, { step: 'password', link: tokenOf(url), password: PASSWORD, confirmation: PASSWORD });
    expect(page.status).toBe(200);
    const uri = /aria-label="QR code of ([^"]+)"/.exec(page.text)![1].replace(/&amp;/g, '&');
    const secret = new URL(uri).searchParams.get('secret')!;
    return { form, page, uri, secret, state: hiddenField(page.text, 'state')! };
  }
  const codeNow = (secret: string) => totpCode(secret, Math.floor(t.clock.now().getTime() / 30_000));

  it('first start: the platform administrator person exists, and the owner-only credentials file holds their link (never the log or the table)', async () => {
    const admin = await person('platform', 'admin');
    expect(admin).toMatchObject({ password_hash: null, platform_administrator: true });
    expect(statSync(join(dataDir, 'bootstrap-credentials')).mode & 0o777).toBe(0o600);
    expect(firstLink).toMatch(/^https:\/\/auth\.example\.test\/authentication\/customer\/platform\/enrol\/[A-Za-z0-9_-]{43}$/);
    expect(t.logs.join('')).not.toContain(tokenOf(firstLink));
    const stored = await t.db.query('SELECT token_hash FROM enrolment_links WHERE user_id = $1', [admin.id]);
    expect(stored.rows).toEqual([{ token_hash: createHash('sha256').update(tokenOf(firstLink)).digest() }]);
    const audit = await t.db.query(`SELECT actor FROM audit_events WHERE action = 'user.enrolment_link.create' AND target = $1`, [admin.id]);
    expect(audit.rows).toEqual([{ actor: 'system' }]);
  });

  it('the link opens the password step, with the rule said at the field, under the login page headers', async () => {
    const { page } = await openLink(firstLink);
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toBe("default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'");
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.text).toContain('Welcome, admin');
    expect(page.text).toMatch(/<input type="password" id="password"[^>]*aria-describedby="password-rules"/);
    expect(page.text).toContain('<p id="password-rules" class="hint">At least 12 characters');
  });

  it('a password against the rules, or typed differently twice, is the form again with the reason; nothing changes', async () => {
    const form = await openLink(firstLink);
    const short = await post('platform', form, { step: 'password', link: tokenOf(firstLink), password: 'too short', confirmation: 'too short' });
    expect(short.status).toBe(200);
    expect(errorText(short.text)).toBe('Password must have at least 12 characters.');
    const different = await post('platform', form, { step: 'password', link: tokenOf(firstLink), password: PASSWORD, confirmation: `${PASSWORD}!` });
    expect(errorText(different.text)).toBe('The two passwords are not the same. Type the same password twice.');
    expect((await person('platform', 'admin')).password_hash).toBeNull();
  });

  it('a form from elsewhere (no form token, another origin) is refused with a 403 page, and nothing changes', async () => {
    const form = await openLink(firstLink);
    const crossSite = await post(
      'platform',
      form,
      { step: 'password', link: tokenOf(firstLink), password: PASSWORD, confirmation: PASSWORD },
      { Origin: 'https://evil.example' },
    );
    expect(crossSite.status).toBe(403);
    expect(crossSite.text).toContain('did not come from this page');
    const noToken = await post(
      'platform',
      { ...form, formToken: 'forged' },
      { step: 'password', link: tokenOf(firstLink), password: PASSWORD, confirmation: PASSWORD },
    );
    expect(noToken.status).toBe(403);
  });

  it('the authenticator step shows the QR code as an inline SVG whose text alternative is the otpauth URI, and the secret as text; still nothing is written', async () => {
    const admin = await person('platform', 'admin');
    const { page, uri, secret } = await passwordStep('platform', firstLink);
    expect(uri).toBe(`otpauth://totp/Platform%20administration:admin?secret=${secret}&issuer=Platform%20administration&algorithm=SHA1&digits=6&period=30`);
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(page.text).toMatch(/<svg class="qr" width="224" height="224" role="img" aria-label="QR code of otpauth:\/\/totp\//);
    expect(page.text).toContain(`<code class="secret">${secret}</code>`);
    expect(page.text).not.toContain('<img');
    expect((await person('platform', 'admin')).password_hash).toBeNull();
    expect(await credentialsOf(admin.id)).toEqual([]);
  });

  it('a wrong code is the same step again with the reason, audited as a failed sign-in; nothing enrolled, the link still works', async () => {
    const admin = await person('platform', 'admin');
    const { form, state, secret } = await passwordStep('platform', firstLink);
    const wrongCode = String((Number(codeNow(secret)) + 1) % 1_000_000).padStart(6, '0');
    const wrong = await post('platform', form, { step: 'totp', link: tokenOf(firstLink), state, code: wrongCode });
    expect(wrong.status).toBe(200);
    expect(errorText(wrong.text)).toBe('That code is not right. Check that the app shows this account, and type the code it shows now.');
    expect(wrong.text).toContain(`<code class="secret">${secret}</code>`);
    expect(await credentialsOf(admin.id)).toEqual([]);
    expect((await person('platform', 'admin')).password_hash).toBeNull();
    const failed = await t.db.query(`SELECT details FROM audit_events WHERE action = 'sign_in.fail' AND actor = 'admin'`);
    expect(failed.rows.map((r) => r.details)).toEqual([expect.objectContaining({ reason: 'wrong_code', step: 'enrolment' })]);
    expect((await openLink(firstLink)).page.text).toContain('Welcome, admin');
  });

  it("another person's link, a tampered state or another browser's cookie opens nothing", async () => {
    const { form, state, secret } = await passwordStep('platform', firstLink);
    const bob = await t.http
      .post('/admin/v1/organizations/platform/users')
      .auth(platformAdmin, { type: 'bearer' })
      .send({ userName: 'bob', role: 'Cardholder' });
    const bobsLink = await t.http.post(`/admin/v1/organizations/platform/users/${bob.body.id}/enrolment-link`).auth(platformAdmin, { type: 'bearer' });
    expect(bobsLink.status).toBe(201);
    const crossed = await post('platform', form, { step: 'totp', link: tokenOf(bobsLink.body.url), state, code: codeNow(secret) });
    expect(crossed.text).toContain('This step took too long or did not come from this page');
    expect(await credentialsOf(bob.body.id)).toEqual([]);
    expect((await person('platform', 'bob')).password_hash).toBeNull();
    const otherBrowser = await openLink(firstLink);
    const moved = await post('platform', otherBrowser, { step: 'totp', link: tokenOf(firstLink), state, code: codeNow(secret) });
    expect(moved.text).toContain('This step took too long or did not come from this page');
    const tampered = await post('platform', form, { step: 'totp', link: tokenOf(firstLink), state: `${state.slice(0, -4)}AAAA`, code: codeNow(secret) });
    expect(tampered.text).toContain('This step took too long or did not come from this page');
    expect(await credentialsOf((await person('platform', 'admin')).id)).toEqual([]);
  });

  it('the right code enrols an OATH_TOTP credential on a software authenticator, sets the password, and lands in the portal signed in; two at once: one wins', async () => {
    const admin = await person('platform', 'admin');
    const { form, state, secret } = await passwordStep('platform', firstLink);
    const code = codeNow(secret);
    enrolled = { secret, step: Math.floor(t.clock.now().getTime() / 30_000) };
    const [a, b] = await Promise.all([
      post('platform', form, { step: 'totp', link: tokenOf(firstLink), state, code }),
      post('platform', form, { step: 'totp', link: tokenOf(firstLink), state, code }),
    ]);
    const [won, lost] = a.status === 303 ? [a, b] : [b, a];
    expect(won.status).toBe(303);
    expect(won.headers.location).toBe('/portal/platform/');
    expect(won.headers['set-cookie']).toEqual([expect.stringMatching(/^__Host-Http-session=[A-Za-z0-9_-]{43}; Path=\/; Secure; HttpOnly; SameSite=Strict$/)]);
    expect(lost.status).toBe(200);
    expect(lost.text).toContain('This enrolment link has been used already');
    const credentials = await credentialsOf(admin.id);
    expect(credentials).toEqual([
      expect.objectContaining({
        type: 'OATH_TOTP',
        status: 'ISSUED',
        content_request_id: null,
        device_status: 'ISSUED',
        owner_user_id: admin.id,
        external_ids: 0,
      }),
    ]);
    expect((await person('platform', 'admin')).password_hash).toMatch(/^scrypt\$/);
    const sessions = await t.db.query('SELECT amr FROM sign_in_sessions WHERE user_id = $1 AND ended_at IS NULL', [admin.id]);
    expect(sessions.rows).toEqual([{ amr: ['pwd', 'otp'] }]);
    const events = await t.db.query(`SELECT action FROM audit_events WHERE actor = 'admin' AND outcome = 'success' ORDER BY id`);
    expect(events.rows.map((r) => r.action)).toEqual([
      'user.password.set',
      'device.create',
      'device.issue',
      'credential.issue',
      'user.enrolment.complete',
      'sign_in.success',
    ]);
    // The session is the portal's: the API answers the person as the platform administrator.
    const cookie = cookiePair(won.headers['set-cookie'], '__Host-Http-session')!;
    const orgs = await t.http.get('/admin/v1/organizations').set('Cookie', cookie);
    expect(orgs.status).toBe(200);
    // The link works once.
    expect((await openLink(firstLink)).page.text).toContain('This enrolment link has been used already');
  });

  it('then the person signs in at the login page with the password and a later code; the code that confirmed the enrolment is refused', async () => {
    const login = '/authentication/customer/platform/login';
    const passwordStep_ = async () => {
      const form = await t.bare.get(login);
      const cookie = cookiePair(form.headers['set-cookie'], '__Host-Http-login-form')!;
      const send = (fields: Record<string, string>) =>
        t.bare
          .post(login)
          .set({ Cookie: cookie, Origin: ORIGIN })
          .type('form')
          .send({ form_token: hiddenField(form.text, 'form_token')!, ...fields });
      const codePage = await send({ step: 'password', userName: 'admin', password: PASSWORD });
      return { send, stepToken: hiddenField(codePage.text, 'step_token')! };
    };
    const first = await passwordStep_();
    const reused = await first.send({ step: 'code', step_token: first.stepToken, code: totpCode(enrolled.secret, enrolled.step) });
    expect(reused.status).toBe(200);
    expect(errorText(reused.text)).toBe('The sign-in did not succeed. Check your user name, password and code, and try again.');
    t.clock.advance(30);
    const second = await passwordStep_();
    const signedIn = await second.send({ step: 'code', step_token: second.stepToken, code: totpCode(enrolled.secret, enrolled.step + 1) });
    expect(signedIn.status).toBe(200);
    expect(signedIn.text).toContain('You are signed in');
    expect(cookiePair(signedIn.headers['set-cookie'], '__Host-Http-session')).toBeDefined();
  });

  it('the desk revokes the self-enrolled authenticator like any device: its code signs nobody in any more', async () => {
    const admin = await person('platform', 'admin');
    const [credential] = await credentialsOf(admin.id);
    const revoked = await t.http
      .post(`/aims/rs/scim/v2/Device/${credential.device_id}/revoke`)
      .auth(platformAdmin, { type: 'bearer' })
      .set('Content-Type', 'application/scim+json')
      .send(JSON.stringify({ reason: 'LOST' }));
    expect(revoked.status).toBe(200);
    expect((await credentialsOf(admin.id))[0]).toMatchObject({ status: 'REVOKED', device_status: 'REVOKED' });
    const login = '/authentication/customer/platform/login';
    const form = await t.bare.get(login);
    const cookie = cookiePair(form.headers['set-cookie'], '__Host-Http-login-form')!;
    const answer = await t.bare
      .post(login)
      .set({ Cookie: cookie, Origin: ORIGIN })
      .type('form')
      .send({ form_token: hiddenField(form.text, 'form_token')!, step: 'password', userName: 'admin', password: PASSWORD });
    expect(errorText(answer.text)).toContain('holds no one-time code credential');
  });

  it('an administrator makes a new link (no-store, audited); the older link stops working; someone who may not is refused', async () => {
    const admin = await person('platform', 'admin');
    const made = await t.http.post(`/admin/v1/organizations/platform/users/${admin.id}/enrolment-link`).auth(platformAdmin, { type: 'bearer' });
    expect(made.status).toBe(201);
    expect(made.headers['cache-control']).toBe('no-store');
    expect(made.body).toEqual({
      id: admin.id,
      userName: 'admin',
      url: expect.stringMatching(/\/authentication\/customer\/platform\/enrol\/[A-Za-z0-9_-]{43}$/),
      expiresAt: expect.any(String),
    });
    const again = await t.http.post(`/admin/v1/organizations/platform/users/${admin.id}/enrolment-link`).auth(platformAdmin, { type: 'bearer' });
    expect((await openLink(made.body.url)).page.text).toContain('A newer enrolment link was made for you');
    expect((await openLink(again.body.url)).page.text).toContain('Welcome, admin');
    const open = await t.db.query('SELECT count(*)::int AS n FROM enrolment_links WHERE user_id = $1 AND used_at IS NULL AND replaced_at IS NULL', [admin.id]);
    expect(open.rows[0].n).toBe(1);
    // The database holds one open link per person, whoever writes.
    await expect(
      t.db.query(
        `INSERT INTO enrolment_links (id, org_id, user_id, token_hash, created_by, created_at, expires_at) VALUES (gen_random_uuid(), 'platform', $1, $2, 'test', now(), now() + interval '1 hour')`,
        [admin.id, Buffer.alloc(32, 1)],
      ),
    ).rejects.toThrow(/enrolment_links_open_key/);
    const audit = await t.db.query(`SELECT details FROM audit_events WHERE action = 'user.enrolment_link.create' AND target = $1 ORDER BY id`, [admin.id]);
    expect(audit.rows.at(-1).details).toMatchObject({ userName: 'admin', replaced: 1 });
    expect(JSON.stringify(audit.rows)).not.toContain(tokenOf(again.body.url));
    // An organization's administrator cannot reach the platform's people, and an operator is no administrator.
    await createOrganization(t.http, platformAdmin, 'other');
    const other = await createAdminAndPlainAccounts(t.http, platformAdmin, 'other');
    const foreign = await t.http.post(`/admin/v1/organizations/platform/users/${admin.id}/enrolment-link`).auth(other.orgAdminToken, { type: 'bearer' });
    expect(foreign.status).toBe(404);
    const plain = await t.http.post(`/admin/v1/organizations/other/users/${admin.id}/enrolment-link`).auth(other.plainToken, { type: 'bearer' });
    expect(plain.status).toBe(403);
  });

  it('an expired link says so; a tampered one or one used at another organization is not valid', async () => {
    await createOrganization(t.http, platformAdmin, 'expiry');
    const user = await t.http
      .post('/admin/v1/organizations/expiry/users')
      .auth(platformAdmin, { type: 'bearer' })
      .send({ userName: 'eve', role: 'Administration' });
    expect(user.status).toBe(201);
    const made = await t.http.post(`/admin/v1/organizations/expiry/users/${user.body.id}/enrolment-link`).auth(platformAdmin, { type: 'bearer' });
    expect(made.status).toBe(201);
    const tampered = made.body.url.replace(/.$/, (c: string) => (c === 'A' ? 'B' : 'A'));
    expect((await openLink(tampered)).page.text).toContain('This enrolment link is not valid');
    expect((await t.bare.get(pathOf(made.body.url).replace('/expiry/', '/platform/'))).text).toContain('This enrolment link is not valid');
    t.clock.advance(86_400 + 1);
    expect((await openLink(made.body.url)).page.text).toContain('This enrolment link has expired');
  });

  it("an administrator resets a person's factors: the authenticator revoked with its device, the sessions ended, a new link; audited, under the grant rules", async () => {
    // The expiry test moved the clock a day on: a fresh token.
    platformAdmin = await platformAdminToken(t.http);
    await createOrganization(t.http, platformAdmin, 'resets');
    const rita = await t.http.post('/admin/v1/organizations/resets/users').auth(platformAdmin, { type: 'bearer' }).send({ userName: 'rita' });
    const first = await t.http.post(`/admin/v1/organizations/resets/users/${rita.body.id}/enrolment-link`).auth(platformAdmin, { type: 'bearer' });
    const { form, state, secret } = await passwordStep('resets', first.body.url);
    const enrolled = await post('resets', form, { step: 'totp', link: tokenOf(first.body.url), state, code: codeNow(secret) });
    expect(enrolled.status).toBe(303);
    const [credential] = await credentialsOf(rita.body.id);
    expect(credential).toMatchObject({ status: 'ISSUED' });

    const accounts = await createAdminAndPlainAccounts(t.http, platformAdmin, 'resets');
    const byPlain = await t.http.post(`/admin/v1/organizations/resets/users/${rita.body.id}/factors/reset`).auth(accounts.plainToken, { type: 'bearer' });
    expect(byPlain.status).toBe(403);
    expect((await credentialsOf(rita.body.id))[0]).toMatchObject({ status: 'ISSUED' });

    const reset = await t.http.post(`/admin/v1/organizations/resets/users/${rita.body.id}/factors/reset`).auth(accounts.orgAdminToken, { type: 'bearer' });
    expect(reset.status).toBe(201);
    expect(reset.headers['cache-control']).toBe('no-store');
    expect(reset.body).toEqual({
      id: rita.body.id,
      userName: 'rita',
      url: expect.stringMatching(/\/authentication\/customer\/resets\/enrol\/[A-Za-z0-9_-]{43}$/),
      expiresAt: expect.any(String),
      revokedDevices: [credential.device_id],
      endedSessions: 1,
    });
    expect(await credentialsOf(rita.body.id)).toEqual([expect.objectContaining({ id: credential.id, status: 'REVOKED', device_status: 'REVOKED' })]);
    const live = await t.db.query('SELECT count(*)::int AS n FROM sign_in_sessions WHERE user_id = $1 AND ended_at IS NULL', [rita.body.id]);
    expect(live.rows[0].n).toBe(0);
    const audit = await t.db.query(`SELECT details FROM audit_events WHERE action = 'user.factors.reset' AND target = $1`, [rita.body.id]);
    expect(audit.rows).toEqual([{ details: { userName: 'rita', revokedDevices: [credential.device_id], endedSessions: 1 } }]);
    // The new link enrols a new authenticator; the revoked one stays revoked.
    const again = await passwordStep('resets', reset.body.url);
    const reenrolled = await post('resets', again.form, { step: 'totp', link: tokenOf(reset.body.url), state: again.state, code: codeNow(again.secret) });
    expect(reenrolled.status).toBe(303);
    expect((await credentialsOf(rita.body.id)).map((c) => c.status).sort()).toEqual(['ISSUED', 'REVOKED']);
  });
});
