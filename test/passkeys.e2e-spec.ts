import { PurgeJob } from '@app/auth';
import {
  SoftPasskey,
  TestApp,
  cookiePair,
  createAdminAndPlainAccounts,
  createOrganization,
  createTestApp,
  errorText,
  flipByte,
  hiddenField,
  passkeyOptions,
  platformAdminToken,
  tokenBySecret,
} from '@app/testing';

/**
 * Passkeys (issue 33 item 2; DECISIONS 14.5) over HTTP, answered by a software authenticator built
 * with node:crypto (SoftPasskey): registered at the enrolment link's factor step as FIDO2 credentials
 * of the domain; the second step after the password; a passkey alone where the organization allows
 * it; every wrong answer (challenge, origin, RP id, user, a flipped byte, a counter that went
 * backwards, a revoked passkey) a clear message, audited, nothing written; the administrator's
 * "must enrol" mark.
 */

const PASSWORD = 'correct horse battery staple';
const ORIGIN = 'https://auth.example.test';
const RP_ID = 'auth.example.test';
const ORG = 'acme';

describe('Passkeys', () => {
  let t: TestApp;
  let admin: string;
  let accounts: Awaited<ReturnType<typeof createAdminAndPlainAccounts>>;
  /** Tokens minted now (the tests move the clock past a token's lifetime). */
  const tokenOf = (account: { clientId: string; secret: string }) => tokenBySecret(t.http, ORG, account.clientId, account.secret);
  const people: Record<string, { id: string; passkeys: SoftPasskey[] }> = {};

  beforeAll(async () => {
    t = await createTestApp();
    admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, ORG);
    accounts = await createAdminAndPlainAccounts(t.http, admin, ORG);
  }, 60_000);
  afterAll(() => t.close());
  // Each test's refusals count toward the lockout (DECISIONS 4): the next test starts past its window.
  beforeEach(async () => {
    t.clock.advance(t.config.authFailureWindowS + 1);
    admin = await platformAdminToken(t.http);
  });

  const newPasskey = () => new SoftPasskey(RP_ID, ORIGIN);
  const enrolPath = `/authentication/customer/${ORG}/enrol`;
  const loginPath = `/authentication/customer/${ORG}/login`;

  async function createPerson(userName: string, fields: Record<string, unknown> = {}): Promise<string> {
    const made = await t.http
      .post(`/admin/v1/organizations/${ORG}/users`)
      .auth(admin, { type: 'bearer' })
      .send({ userName, role: 'Cardholder', ...fields });
    expect(made.status).toBe(201);
    people[userName] = { id: made.body.id, passkeys: [] };
    return made.body.id;
  }
  const linkOf = async (userId: string) =>
    new URL((await t.http.post(`/admin/v1/organizations/${ORG}/users/${userId}/enrolment-link`).auth(admin, { type: 'bearer' })).body.url).pathname;

  /** A browser: its pre-session cookie, its form token, and a POST that sends both from the service's origin. */
  async function browser(path: string) {
    const page = await t.bare.get(path);
    const cookie = cookiePair(page.headers['set-cookie'], '__Host-Http-login-form')!;
    const formToken = hiddenField(page.text, 'form_token')!;
    const post = (to: string, fields: Record<string, string>, extra: Record<string, string> = {}) =>
      t.bare
        .post(to)
        .set({ Cookie: [cookie, extra.session].filter(Boolean).join('; '), Origin: ORIGIN })
        .type('form')
        .send({ form_token: formToken, ...fields });
    return { page, cookie, formToken, post };
  }

  /** The link's password step: the factor page (authenticator app or passkey). */
  async function factorStep(linkPath: string) {
    const b = await browser(linkPath);
    const link = linkPath.split('/').pop()!;
    const page = await b.post(enrolPath, { step: 'password', link, password: PASSWORD, confirmation: PASSWORD });
    expect(page.status).toBe(200);
    return { ...b, link, page };
  }
  /** Posts the passkey form of `page` with `answer`. */
  const registerWith = (b: Awaited<ReturnType<typeof factorStep>>, page: { text: string }, answer: unknown, name = 'Laptop', session?: string) =>
    b.post(
      enrolPath,
      {
        step: 'passkey',
        ...(hiddenField(page.text, 'link') ? { link: b.link } : {}),
        state: hiddenField(page.text, 'state')!,
        passkey_name: name,
        response: JSON.stringify(answer),
      },
      session ? { session } : {},
    );

  const credentialsOf = async (userId: string) =>
    (
      await t.db.query(
        `SELECT c.id, c.type, c.status, c.content_request_id, d.status AS device_status, d.owner_user_id, c.name, p.sign_count, p.transports,
                p.backup_eligible, p.backup_state, octet_length(p.public_key) > 0 AS has_key
           FROM credentials c JOIN wallets w ON w.id = c.wallet_id JOIN devices d ON d.id = c.device_id
           LEFT JOIN passkeys p ON p.credential_id = c.id WHERE w.owner_user_id = $1 ORDER BY c.created_at, c.name`,
        [userId],
      )
    ).rows;
  const passwordOf = async (userId: string) => (await t.db.query('SELECT password_hash FROM users WHERE id = $1', [userId])).rows[0].password_hash;
  const failures = async (reason: string) =>
    (await t.db.query(`SELECT details FROM audit_events WHERE action = 'sign_in.fail' AND details->>'reason' = $1`, [reason])).rows.length;
  /** The amr of the person's latest sign-in (audit ids are in order; the test clock gives sessions one time). */
  const amrOf = async (userId: string) =>
    (await t.db.query(`SELECT details->'amr' AS amr FROM audit_events WHERE action = 'sign_in.success' AND target = $1 ORDER BY id DESC LIMIT 1`, [userId]))
      .rows[0]?.amr;

  it('the factor step offers a passkey: options with attestation none, ES256 and RS256, a discoverable key, the RP id of AUTH_BASE_URL; the page may run only this service’s scripts, which it serves', async () => {
    const alice = await createPerson('alice');
    const { page } = await factorStep(await linkOf(alice));
    const options = passkeyOptions<Record<string, unknown> & { challenge: string }>(page.text, 'passkey-register');
    expect(options).toMatchObject({
      rp: { id: RP_ID, name: 'Organization acme' },
      user: { name: 'alice' },
      attestation: 'none',
      pubKeyCredParams: [
        { type: 'public-key', alg: -7 },
        { type: 'public-key', alg: -257 },
      ],
      authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: 'preferred' },
    });
    expect(options.challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(page.headers['content-security-policy']).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'",
    );
    expect(page.text).toContain('<script src="/authentication/webauthn/simplewebauthn-browser.js" defer></script>');
    expect(page.text).not.toMatch(/<script>|<script [^>]*>[^<]/);
    for (const path of ['/authentication/webauthn/simplewebauthn-browser.js', '/authentication/webauthn/passkey.js']) {
      const script = await t.bare.get(path);
      expect({ status: script.status, type: script.headers['content-type'] }).toEqual({ status: 200, type: 'text/javascript; charset=utf-8' });
    }
    expect((await t.bare.get('/authentication/webauthn/simplewebauthn-browser.js')).text).toContain('SimpleWebAuthnBrowser');
    const stored = await t.db.query(`SELECT user_id, purpose, used_at FROM webauthn_challenges WHERE challenge = $1`, [options.challenge]);
    expect(stored.rows).toEqual([{ user_id: alice, purpose: 'registration', used_at: null }]);
  });

  it('wrong answers at registration are each refused with a clear message; nothing enrolled, no password stored, the link still works', async () => {
    const alice = people.alice.id;
    const bob = await createPerson('bob');
    const b = await factorStep(await linkOf(alice));
    const key = newPasskey();
    let page = b.page;
    const tryAnswer = async (answer: unknown, expected: string) => {
      const answered = await registerWith(b, page, answer);
      expect(answered.status).toBe(200);
      expect(errorText(answered.text)).toBe(expected);
      expect(answered.headers['set-cookie']).toBeUndefined();
      page = answered;
    };
    const options = () => passkeyOptions(page.text, 'passkey-register');
    await tryAnswer(
      key.register(options(), { challenge: 'bm90LXRoZS1jaGFsbGVuZ2Utb2YtdGhpcy1zaWduLWlu' }),
      'The passkey answer did not match this sign-in; try again.',
    );
    await tryAnswer(
      key.register(options(), { origin: 'https://evil.example' }),
      'The passkey answer came from another address than this service’s. Open this page at the service’s own address and try again.',
    );
    await tryAnswer(
      key.register(options(), { rpId: 'evil.example' }),
      'The passkey answer was made for another site than this one. Use a passkey made for this service.',
    );
    // Bob's challenge (his own flow) in Alice's: another person's.
    const bobs = await factorStep(await linkOf(bob));
    await tryAnswer(key.register(passkeyOptions(bobs.page.text, 'passkey-register')), 'The passkey answer did not match this sign-in; try again.');
    // One flipped byte of the authenticator data's RP id hash.
    const flipped = key.register(options());
    flipped.response.attestationObject = flipByte(flipped.response.attestationObject, 40);
    const flippedAnswer = await registerWith(b, page, flipped);
    expect(errorText(flippedAnswer.text)).toMatch(/^The passkey (answer could not be read|answer was made for another site)/);
    page = flippedAnswer;
    await tryAnswer('not json', 'The passkey answer could not be read. Try again.');
    const unnamed = await registerWith(b, page, key.register(options()), '   ');
    expect(errorText(unnamed.text)).toBe('Give the passkey a name of 1 to 64 characters, so that you can tell it apart later.');
    expect(await credentialsOf(alice)).toEqual([]);
    expect(await passwordOf(alice)).toBeNull();
    expect(await failures('passkey_origin')).toBe(1);
    expect(await failures('passkey_rp_id')).toBeGreaterThanOrEqual(1);
    expect((await t.bare.get(await linkOf(alice))).status).toBe(200);
  });

  it('a right answer enrols a FIDO2 credential on a software authenticator in her wallet, sets the password, opens a session (amr pwd hwk); the same answer again is refused; a second passkey is added from the session', async () => {
    const alice = people.alice.id;
    const b = await factorStep(await linkOf(alice));
    const laptop = newPasskey();
    const answer = laptop.register(passkeyOptions(b.page.text, 'passkey-register'));
    const done = await registerWith(b, b.page, answer, 'Laptop');
    expect(done.status).toBe(200);
    expect(done.text).toContain('Your passkey &quot;Laptop&quot; was added. Add another one, or continue.');
    expect(done.text).toContain('<a href="/portal/acme/">Continue</a>');
    const session = cookiePair(done.headers['set-cookie'], '__Host-Http-session')!;
    expect(session).toBeDefined();
    expect(await amrOf(alice)).toEqual(['pwd', 'hwk']);
    expect(await passwordOf(alice)).toMatch(/^scrypt\$/);
    expect(await credentialsOf(alice)).toEqual([
      expect.objectContaining({
        type: 'FIDO2',
        status: 'ISSUED',
        content_request_id: null,
        device_status: 'ISSUED',
        owner_user_id: alice,
        name: 'Laptop',
        sign_count: '0',
        transports: ['internal'],
        backup_eligible: false,
        backup_state: false,
        has_key: true,
      }),
    ]);
    const events = await t.db.query(`SELECT action, details FROM audit_events WHERE actor = 'alice' AND outcome = 'success' ORDER BY id`);
    expect(events.rows.map((r) => r.action)).toEqual([
      'user.password.set',
      'device.create',
      'device.issue',
      'credential.issue',
      'user.enrolment.complete',
      'sign_in.success',
    ]);
    expect(events.rows[4].details).toMatchObject({ via: 'link', factor: 'FIDO2' });
    // The same answer again (its challenge is used): refused, nothing more.
    const again = await registerWith(b, b.page, answer);
    expect(again.text).toContain('This enrolment link has been used already');
    // A second passkey, from the session, on the page that said the first was added.
    const phone = newPasskey();
    const second = await registerWith(b, done, phone.register(passkeyOptions(done.text, 'passkey-register')), 'Phone', session);
    expect(second.status).toBe(200);
    expect(second.text).toContain('Your passkey &quot;Phone&quot; was added.');
    expect(second.headers['set-cookie']).toBeUndefined();
    expect((await credentialsOf(alice)).map((c) => c.name)).toEqual(['Laptop', 'Phone']);
    people.alice.passkeys.push(laptop, phone);
  });

  /** Through the password step to the second step's page. */
  async function secondStep(userName: string) {
    const b = await browser(loginPath);
    const page = await b.post(loginPath, { step: 'password', userName, password: PASSWORD });
    expect(page.status).toBe(200);
    return { ...b, page, stepToken: hiddenField(page.text, 'step_token')! };
  }
  const signInWith = (b: Awaited<ReturnType<typeof secondStep>>, answer: unknown) =>
    b.post(loginPath, { step: 'passkey', step_token: b.stepToken, response: JSON.stringify(answer) });

  it('signs in with a passkey as the second step (amr pwd hwk); wrong origin, RP id, challenge, a flipped signature byte and another person’s passkey are refused, each with its message', async () => {
    const alice = people.alice.id;
    const [laptop] = people.alice.passkeys;
    let b = await secondStep('alice');
    expect(b.page.text).toContain('<h1>Use your passkey</h1>');
    const options = passkeyOptions<{ challenge: string; allowCredentials: { id: string }[]; userVerification: string }>(b.page.text, 'passkey-sign-in');
    expect(options.allowCredentials.map((c) => c.id).sort()).toEqual(people.alice.passkeys.map((p) => p.credentialId).sort());
    const refusedWith = async (answer: unknown, message: string) => {
      const answered = await signInWith(b, answer);
      expect(answered.status).toBe(200);
      expect(errorText(answered.text)).toBe(message);
      expect(cookiePair(answered.headers['set-cookie'], '__Host-Http-session')).toBeUndefined();
      b = { ...b, page: answered };
    };
    const current = () => passkeyOptions(b.page.text, 'passkey-sign-in');
    await refusedWith(
      laptop.authenticate(current(), { origin: 'https://evil.example' }),
      'The passkey answer came from another address than this service’s. Open this page at the service’s own address and try again.',
    );
    await refusedWith(
      laptop.authenticate(current(), { rpId: 'evil.example' }),
      'The passkey answer was made for another site than this one. Use a passkey made for this service.',
    );
    await refusedWith(
      laptop.authenticate({ challenge: 'c29tZS1vdGhlci1jaGFsbGVuZ2UtdGhhdC13YXMtbmV2ZXItaXNzdWVk' }),
      'The passkey answer did not match this sign-in; try again.',
    );
    const flipped = laptop.authenticate(current());
    flipped.response.signature = flipByte(flipped.response.signature, -3);
    await refusedWith(flipped, 'The passkey’s signature did not verify. Try again with the same passkey.');
    const stranger = newPasskey();
    await refusedWith(stranger.authenticate(current()), 'This passkey is not registered. Use a passkey you added here, or sign in another way.');
    expect(await failures('passkey_signature')).toBe(1);
    const signedIn = await signInWith(b, laptop.authenticate(current()));
    expect(signedIn.status).toBe(200);
    expect(signedIn.text).toContain('You are signed in');
    expect(await amrOf(alice)).toEqual(['pwd', 'hwk']);
    const used = await t.db.query(
      `SELECT p.sign_count, c.last_used_at IS NOT NULL AS used FROM passkeys p JOIN credentials c ON c.id = p.credential_id WHERE c.name = 'Laptop'`,
    );
    expect(used.rows).toEqual([{ sign_count: String(laptop.counter), used: true }]);
  });

  it("another person's passkey in Alice's second step is refused as theirs", async () => {
    const bob = people.bob.id;
    const b = await factorStep(await linkOf(bob));
    const bobsKey = newPasskey();
    expect((await registerWith(b, b.page, bobsKey.register(passkeyOptions(b.page.text, 'passkey-register')), 'Bob key')).status).toBe(200);
    people.bob.passkeys.push(bobsKey);
    const alice = await secondStep('alice');
    const answered = await signInWith(alice, bobsKey.authenticate(passkeyOptions(alice.page.text, 'passkey-sign-in')));
    expect(errorText(answered.text)).toBe('This passkey belongs to another account. Use your own passkey.');
    expect(await failures('passkey_other_user')).toBe(1);
  });

  it('a signature counter that went backwards is refused as a cloned authenticator and audited; the counter stays', async () => {
    const [laptop] = people.alice.passkeys;
    const b = await secondStep('alice');
    const before = laptop.counter;
    const answered = await signInWith(b, laptop.authenticate(passkeyOptions(b.page.text, 'passkey-sign-in'), { counter: before - 1 }));
    expect(errorText(answered.text)).toBe(
      'This passkey answered with a signature counter lower than before, which a copied authenticator does, so it was refused. Ask an administrator.',
    );
    expect(await failures('passkey_cloned_authenticator')).toBe(1);
    expect((await t.db.query(`SELECT p.sign_count FROM passkeys p JOIN credentials c ON c.id = p.credential_id WHERE c.name = 'Laptop'`)).rows).toEqual([
      { sign_count: String(before) },
    ]);
  });

  it('a passkey alone: refused while the organization does not allow it; offered and accepted (amr hwk user) once it does; no user verification or another user handle refused', async () => {
    const alice = people.alice.id;
    const [laptop] = people.alice.passkeys;
    let b = await browser(loginPath);
    expect(b.page.text).not.toContain('data-passkey');
    expect(b.page.headers['content-security-policy']).not.toContain('script-src');
    const off = await b.post(loginPath, { step: 'passkey', response: JSON.stringify(laptop.authenticate({ challenge: 'AAAA' })) });
    expect(errorText(off.text)).toBe(
      'This organization does not allow signing in with a passkey alone. Sign in with your user name and password, then your passkey.',
    );
    const settings = await t.http
      .put(`/admin/v1/organizations/${ORG}/settings`)
      .auth(admin, { type: 'bearer' })
      .send({ automaticDeviceCreation: false, applicationIdPolicy: 'any', passwordlessSignIn: true });
    expect(settings.status).toBe(200);
    b = await browser(loginPath);
    const options = passkeyOptions<{ challenge: string; allowCredentials?: unknown[]; userVerification: string }>(b.page.text, 'passkey-sign-in');
    expect(options.userVerification).toBe('required');
    expect(options.allowCredentials ?? []).toEqual([]);
    let page = b.page;
    const alone = (answer: unknown) => b.post(loginPath, { step: 'passkey', response: JSON.stringify(answer) });
    const noUv = await alone(laptop.authenticate(passkeyOptions(page.text, 'passkey-sign-in'), { flags: 0x01 }));
    expect(errorText(noUv.text)).toBe('Your authenticator did not verify you (PIN, fingerprint or face). Try again and unlock it when it asks.');
    page = noUv;
    const otherHandle = await alone(laptop.authenticate(passkeyOptions(page.text, 'passkey-sign-in'), { userHandle: people.bob.passkeys[0].userHandle! }));
    expect(errorText(otherHandle.text)).toBe('This passkey belongs to another account. Use your own passkey.');
    page = otherHandle;
    const signedIn = await alone(laptop.authenticate(passkeyOptions(page.text, 'passkey-sign-in')));
    expect(signedIn.status).toBe(200);
    expect(signedIn.text).toContain('Signed in to Organization acme as <strong>alice</strong>');
    expect(await amrOf(alice)).toEqual(['hwk', 'user']);
  });

  it('a passkey the desk revoked (through its device) is refused, and no longer offered', async () => {
    const [, phone] = people.alice.passkeys;
    const [credential] = (await t.db.query(`SELECT c.device_id FROM passkeys p JOIN credentials c ON c.id = p.credential_id WHERE c.name = 'Phone'`)).rows;
    const revoked = await t.http
      .post(`/aims/rs/scim/v2/Device/${credential.device_id}/revoke`)
      .auth(await tokenOf(accounts.orgAdmin), { type: 'bearer' })
      .set('Content-Type', 'application/scim+json')
      .send(JSON.stringify({ reason: 'LOST' }));
    expect(revoked.status).toBe(200);
    const b = await secondStep('alice');
    const options = passkeyOptions<{ challenge: string; allowCredentials: { id: string }[] }>(b.page.text, 'passkey-sign-in');
    expect(options.allowCredentials.map((c) => c.id)).toEqual([people.alice.passkeys[0].credentialId]);
    const answered = await signInWith(b, phone.authenticate(options));
    expect(errorText(answered.text)).toBe('This passkey has been suspended or revoked. Sign in another way, or ask an administrator.');
    expect(await failures('passkey_passkey_not_issued')).toBe(1);
  });

  it('wrong passkey answers count toward the lockout as wrong codes do: past the limit the step answers the lockout without checking, and audits it', async () => {
    const [laptop] = people.alice.passkeys;
    let b = await secondStep('alice');
    for (let i = 0; i < t.config.authFailureLimit; i += 1) {
      const answered = await signInWith(b, laptop.authenticate(passkeyOptions(b.page.text, 'passkey-sign-in'), { origin: 'https://evil.example' }));
      b = { ...b, page: answered };
      if (errorText(answered.text).startsWith('Too many')) break;
    }
    const locked = await signInWith(b, laptop.authenticate(passkeyOptions(b.page.text, 'passkey-sign-in')));
    expect(errorText(locked.text)).toMatch(/^Too many failed sign-ins\. Try again in \d+ (seconds|minutes)\.$/);
    expect(locked.headers['retry-after']).toMatch(/^\d+$/);
    expect(cookiePair(locked.headers['set-cookie'], '__Host-Http-session')).toBeUndefined();
    const lockouts = await t.db.query(`SELECT count(*)::int AS n FROM audit_events WHERE action = 'sign_in.lockout'`);
    expect(lockouts.rows[0].n).toBeGreaterThan(0);
  });

  it('expired challenges are purged', async () => {
    t.clock.advance(600);
    const purged = await t.app.get(PurgeJob).runOnce();
    expect(purged.challenges).toBeGreaterThan(0);
    expect((await t.db.query('SELECT count(*)::int AS n FROM webauthn_challenges WHERE expires_at < $1', [t.clock.now()])).rows).toEqual([{ n: 0 }]);
  });

  it("an administrator's mark: after a right password a person without a factor enrols one before any session opens; then the mark is gone", async () => {
    const carol = await createPerson('carol', { password: PASSWORD });
    const noToken = await t.bare.post(`/admin/v1/organizations/${ORG}/users/${carol}/factors/required`);
    expect(noToken.status).toBe(401);
    const notAdministrator = await t.http
      .post(`/admin/v1/organizations/${ORG}/users/${carol}/factors/required`)
      .auth(await tokenOf(accounts.plain), { type: 'bearer' });
    expect(notAdministrator.status).toBe(403);
    expect((await t.db.query('SELECT must_enrol_second_factor FROM users WHERE id = $1', [carol])).rows).toEqual([{ must_enrol_second_factor: false }]);
    const marked = await t.http.post(`/admin/v1/organizations/${ORG}/users/${carol}/factors/required`).auth(admin, { type: 'bearer' });
    expect(marked.status).toBe(200);
    expect(marked.body).toEqual({ id: carol, userName: 'carol', mustEnrolSecondFactor: true });
    expect((await t.db.query(`SELECT details FROM audit_events WHERE action = 'user.factors.require' AND target = $1`, [carol])).rows).toEqual([
      { details: expect.objectContaining({ userName: 'carol', alreadyMarked: false }) },
    ]);
    const b = await browser(loginPath);
    const page = await b.post(loginPath, { step: 'password', userName: 'carol', password: PASSWORD });
    expect(page.status).toBe(200);
    expect(page.text).toContain('Your administrator asks you to add a second factor before you sign in.');
    expect(page.headers['set-cookie']).toBeUndefined();
    expect(await amrOf(carol)).toBeUndefined();
    const key = newPasskey();
    const done = await b.post(enrolPath, {
      step: 'passkey',
      state: hiddenField(page.text, 'state')!,
      passkey_name: 'Carol key',
      response: JSON.stringify(key.register(passkeyOptions(page.text, 'passkey-register'))),
    });
    expect(done.status).toBe(200);
    expect(cookiePair(done.headers['set-cookie'], '__Host-Http-session')).toBeDefined();
    expect(await amrOf(carol)).toEqual(['pwd', 'hwk']);
    expect((await t.db.query('SELECT must_enrol_second_factor FROM users WHERE id = $1', [carol])).rows).toEqual([{ must_enrol_second_factor: false }]);
    // Next time: the passkey as the second step, no factor step.
    const next = await secondStep('carol');
    expect(next.page.text).toContain('<h1>Use your passkey</h1>');
  });
});
