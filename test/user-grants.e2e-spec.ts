import { randomUUID } from 'node:crypto';
import { TestApp, TestCertificate, createOrganization, createTestApp, makeCertificate, platformAdminToken, signAssertion, tokenRequest } from '@app/testing';

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const PASSWORD = 'correct horse battery staple';

/** Operators and cardholders at the token endpoint (DECISIONS 3.5): jwt-bearer and password grants. */
describe('user grants', () => {
  let t: TestApp;
  let admin: string;
  let address = 0;
  const tokenUrl = 'https://auth.example.test/authentication/customer/users/token';

  beforeAll(async () => {
    t = await createTestApp({ env: { AUTH_FAILURE_LIMIT: '3', TRUSTED_PROXIES: '127.0.0.1,::1,::ffff:127.0.0.1' } });
    admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, 'users');
    await createOrganization(t.http, admin, 'nopassword', { passwordGrant: false });
  });
  afterAll(() => t.close());

  /** Each test gets its own source address, so lockout counters of one do not touch another. */
  const from = () => `198.51.100.${++address}`;

  async function createUser(body: Record<string, unknown>, org = 'users'): Promise<string> {
    const response = await t.http.post(`/admin/v1/organizations/${org}/users`).auth(admin, { type: 'bearer' }).send(body);
    expect(response.status).toBe(201);
    return response.body.id as string;
  }

  async function operatorWithCertificate(userName: string, role = 'Issuance'): Promise<{ id: string; certificate: TestCertificate }> {
    const id = await createUser({ userName, role, userType: 'operator', groups: ['east'] });
    const certificate = await makeCertificate({ keyType: 'EC-P256' });
    const enrolled = await t.http
      .post(`/admin/v1/organizations/users/users/${id}/certificates`)
      .auth(admin, { type: 'bearer' })
      .set('Content-Type', 'application/x-pem-file')
      .send(certificate.pem);
    expect(enrolled.status).toBe(201);
    return { id, certificate };
  }

  const assertionGrant = (assertion: string, address: string, extra: Record<string, string> = {}) =>
    tokenRequest(t.http, 'users', { grant_type: JWT_BEARER, assertion, ...extra }).set('X-Forwarded-For', address);
  const passwordGrant = (username: string, password: string, address: string, org = 'users') =>
    tokenRequest(t.http, org, { grant_type: 'password', username, password }).set('X-Forwarded-For', address);

  describe('jwt-bearer (operators)', () => {
    it('an assertion signed by the enrolled certificate gets a token that carries the user and the role', async () => {
      const { certificate } = await operatorWithCertificate('alice.op');
      const response = await assertionGrant(await signAssertion(certificate, 'alice.op', tokenUrl, { now: t.clock.now() }), from());
      expect(response.status).toBe(200);
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
      const whoami = await t.http.get('/authentication/customer/users/whoami').auth(response.body.access_token, { type: 'bearer' });
      expect(whoami.status).toBe(200);
      expect(whoami.body).toMatchObject({ userName: 'alice.op', org: 'users', role: 'Issuance', scopes: ['Scope.device_management'] });
      const claims = JSON.parse(Buffer.from(response.body.access_token.split('.')[1], 'base64url').toString());
      expect(claims).toMatchObject({ sub: 'alice.op', org: 'users', role: 'Issuance', scope: 'Scope.device_management' });
      expect(claims.client_id).toBeUndefined();
    });

    it("a key that is not the enrolled certificate's, and an unknown user, get one identical invalid_grant", async () => {
      await operatorWithCertificate('bob.op');
      const stranger = await makeCertificate();
      const address = from();
      const wrongKey = await assertionGrant(await signAssertion(stranger, 'bob.op', tokenUrl, { now: t.clock.now() }), address);
      const unknown = await assertionGrant(await signAssertion(stranger, 'nobody.op', tokenUrl, { now: t.clock.now() }), from());
      for (const response of [wrongKey, unknown]) {
        expect(response.status).toBe(400);
        expect(response.body).toEqual({ error: 'invalid_grant', error_description: 'The assertion was not accepted.' });
      }
    });

    it('an operator with no enrolled certificate is told to enroll one', async () => {
      await createUser({ userName: 'carol.op', role: 'Help Desk', userType: 'operator' });
      const response = await assertionGrant(await signAssertion(await makeCertificate(), 'carol.op', tokenUrl, { now: t.clock.now() }), from());
      expect(response.status).toBe(400);
      expect(response.body.error).toBe('invalid_grant');
      expect(response.body.error_description).toMatch(/no enrolled certificate; an administrator must enroll one/);
    });

    it('the checks of DECISIONS 3.3 apply: aud, replayed jti, lifetime', async () => {
      const { certificate } = await operatorWithCertificate('dave.op');
      const address = from();
      const wrongAud = await assertionGrant(await signAssertion(certificate, 'dave.op', 'https://elsewhere/token', { now: t.clock.now() }), address);
      expect(wrongAud.body).toEqual({ error: 'invalid_grant', error_description: expect.stringMatching(/aud must be/) });
      const assertion = await signAssertion(certificate, 'dave.op', tokenUrl, { now: t.clock.now(), claims: { jti: randomUUID() } });
      expect((await assertionGrant(assertion, from())).status).toBe(200);
      const replay = await assertionGrant(assertion, from());
      expect(replay.body).toEqual({ error: 'invalid_grant', error_description: expect.stringMatching(/jti was used before/) });
      const tooLong = await assertionGrant(
        await signAssertion(certificate, 'dave.op', tokenUrl, { now: t.clock.now(), claims: { exp: t.clock.nowSeconds() + 7200 } }),
        from(),
      );
      expect(tooLong.body.error_description).toMatch(/lifetime|more than 3600/);
    });

    it('a disabled operator is refused, and its live token stops working', async () => {
      const { id, certificate } = await operatorWithCertificate('erin.op');
      const issued = await assertionGrant(await signAssertion(certificate, 'erin.op', tokenUrl, { now: t.clock.now() }), from());
      expect(issued.status).toBe(200);
      expect((await t.http.patch(`/admin/v1/organizations/users/users/${id}`).auth(admin, { type: 'bearer' }).send({ disabled: true })).status).toBe(200);
      const refused = await assertionGrant(await signAssertion(certificate, 'erin.op', tokenUrl, { now: t.clock.now() }), from());
      expect(refused.body).toEqual({ error: 'invalid_grant', error_description: 'The user is disabled.' });
      const whoami = await t.http.get('/authentication/customer/users/whoami').auth(issued.body.access_token, { type: 'bearer' });
      expect(whoami.status).toBe(401);
      expect(whoami.headers['www-authenticate']).toContain('The user of this token is disabled.');
    });

    it('client authentication is refused on a user grant; a missing assertion is invalid_request', async () => {
      const withSecret = await tokenRequest(t.http, 'users', { grant_type: JWT_BEARER, assertion: 'x.y.z', client_secret: 'x', client_id: 'users-x' });
      expect(withSecret.status).toBe(400);
      expect(withSecret.body.error).toBe('invalid_request');
      const missing = await tokenRequest(t.http, 'users', { grant_type: JWT_BEARER });
      expect(missing.body).toEqual({ error: 'invalid_request', error_description: expect.stringMatching(/needs the assertion parameter/) });
    });
  });

  describe('password (cardholders)', () => {
    it('the right password gets a token for the cardholder', async () => {
      await createUser({ userName: 'frank', role: 'Cardholder', password: PASSWORD });
      const response = await passwordGrant('frank', PASSWORD, from());
      expect(response.status).toBe(200);
      const whoami = await t.http.get('/authentication/customer/users/whoami').auth(response.body.access_token, { type: 'bearer' });
      expect(whoami.body).toMatchObject({ userName: 'frank', role: 'Cardholder', scopes: ['Scope.device'] });
    });

    it('a wrong password, an unknown user and an operator get one identical invalid_grant', async () => {
      await createUser({ userName: 'grace', role: 'Cardholder', password: PASSWORD });
      await createUser({ userName: 'heidi.op', role: 'Issuance', userType: 'operator' });
      for (const [username, password] of [
        ['grace', 'wrong password here'],
        ['nobody', PASSWORD],
        ['heidi.op', PASSWORD],
      ]) {
        const response = await passwordGrant(username, password, from());
        expect({ username, status: response.status, body: response.body }).toEqual({
          username,
          status: 400,
          body: { error: 'invalid_grant', error_description: 'The user name or password is wrong.' },
        });
      }
    });

    it('a disabled cardholder is refused once the password matched', async () => {
      const id = await createUser({ userName: 'ivan', role: 'Cardholder', password: PASSWORD });
      await t.http.patch(`/admin/v1/organizations/users/users/${id}`).auth(admin, { type: 'bearer' }).send({ disabled: true });
      const response = await passwordGrant('ivan', PASSWORD, from());
      expect(response.body).toEqual({ error: 'invalid_grant', error_description: 'The user is disabled.' });
    });

    it('an organization that switched the password grant off refuses it', async () => {
      await createUser({ userName: 'judy', role: 'Cardholder', password: PASSWORD }, 'nopassword');
      const response = await passwordGrant('judy', PASSWORD, from(), 'nopassword');
      expect(response.status).toBe(400);
      expect(response.body.error).toBe('unauthorized_client');
    });

    it('an unknown user in that organization gets the same unauthorized_client, before any password check or failure count', async () => {
      await createUser({ userName: 'judy2', role: 'Cardholder', password: PASSWORD }, 'nopassword');
      const [knownFrom, unknownFrom] = [from(), from()];
      const known = await passwordGrant('judy2', 'wrong password here', knownFrom, 'nopassword');
      const unknown = await passwordGrant('no.such.judy', 'wrong password here', unknownFrom, 'nopassword');
      expect(unknown.status).toBe(400);
      expect(unknown.body).toEqual(known.body);
      expect(unknown.body.error).toBe('unauthorized_client');
      // Neither was a password check: no failure is counted for either address.
      const counted = await t.db.query(`SELECT count(*)::int AS n FROM auth_failures WHERE key LIKE ANY($1)`, [[`%${knownFrom}`, `%${unknownFrom}`]]);
      expect(counted.rows[0].n).toBe(0);
    });

    it('a cardholder whose role grants operator scopes, even with the right password, is told to sign in with a certificate', async () => {
      for (const role of ['Issuance', 'Help Desk', 'Administration']) {
        const userName = `pw.${role.replace(' ', '').toLowerCase()}`;
        await createUser({ userName, role, password: PASSWORD });
        const refused = await passwordGrant(userName, PASSWORD, from());
        expect({ role, status: refused.status, body: refused.body }).toEqual({
          role,
          status: 400,
          body: { error: 'invalid_grant', error_description: expect.stringMatching(/^Operators sign in with their certificate \(jwt-bearer\)/) },
        });
        // The description names the rule only once the password matched (DECISIONS 3.1).
        const wrong = await passwordGrant(userName, 'wrong password here', from());
        expect(wrong.body).toEqual({ error: 'invalid_grant', error_description: 'The user name or password is wrong.' });
      }
    });

    it('an operator holding a password is refused the password grant too', async () => {
      await createUser({ userName: 'pw.source', role: 'Cardholder', password: PASSWORD });
      const id = await createUser({ userName: 'oscar.op', role: 'Help Desk', userType: 'operator' });
      // The admin API gives operators no password; one may still hold one (for a hosted login's two factors).
      await t.db.query(`UPDATE users SET password_hash = (SELECT password_hash FROM users WHERE user_name = 'pw.source') WHERE id = $1`, [id]);
      const refused = await passwordGrant('oscar.op', PASSWORD, from());
      expect(refused.status).toBe(400);
      expect(refused.body.error).toBe('invalid_grant');
      expect(refused.body.error_description).toMatch(/^Operators sign in with their certificate \(jwt-bearer\)/);
    });

    it("a promotion ends the user's live tokens (they were got with the old role's factors); a demotion applies to them at once", async () => {
      const id = await createUser({ userName: 'pat.promoted', role: 'Cardholder', password: PASSWORD });
      const token = (await passwordGrant('pat.promoted', PASSWORD, from())).body.access_token as string;
      const whoami = () => t.http.get('/authentication/customer/users/whoami').auth(token, { type: 'bearer' });
      expect((await whoami()).status).toBe(200);
      const promoted = await t.http.patch(`/admin/v1/organizations/users/users/${id}`).auth(admin, { type: 'bearer' }).send({ role: 'Issuance' });
      expect(promoted.status).toBe(200);
      // The one-factor token must not carry the operator scope it could never have been issued with.
      const refused = await whoami();
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toMatch(/invalid_token.*revoked/);
      const audit = await t.db.query("SELECT details FROM audit_events WHERE action = 'user.update' AND target = $1 ORDER BY id DESC LIMIT 1", [id]);
      expect(audit.rows[0].details).toMatchObject({ role: 'Issuance', revokedTokens: 1 });

      // A demotion: the operator's certificate token keeps working, with the lesser role at once.
      const { id: operatorId, certificate } = await operatorWithCertificate('dora.demoted', 'Administration');
      const operatorToken = (await assertionGrant(await signAssertion(certificate, 'dora.demoted', tokenUrl, { now: t.clock.now() }), from())).body
        .access_token as string;
      const demoted = await t.http.patch(`/admin/v1/organizations/users/users/${operatorId}`).auth(admin, { type: 'bearer' }).send({ role: 'Help Desk' });
      expect(demoted.status).toBe(200);
      const after = await t.http.get('/authentication/customer/users/whoami').auth(operatorToken, { type: 'bearer' });
      expect(after.status).toBe(200);
      expect(after.body).toMatchObject({ userName: 'dora.demoted', role: 'Help Desk', scopes: ['Scope.helpdesk'] });
    });

    it('a cardholder whose role has no scope at all may still use the password grant', async () => {
      await createUser({ userName: 'pw.norole', role: 'Not In The File', password: PASSWORD });
      expect((await passwordGrant('pw.norole', PASSWORD, from())).status).toBe(200);
    });

    it('missing username or password is invalid_request', async () => {
      const response = await tokenRequest(t.http, 'users', { grant_type: 'password', username: 'frank' });
      expect(response.body).toEqual({ error: 'invalid_request', error_description: expect.stringMatching(/username and password/) });
    });

    it('the lockout applies per userName and address, as for clients', async () => {
      await createUser({ userName: 'mallory.target', role: 'Cardholder', password: PASSWORD });
      const attacker = from();
      for (let i = 0; i < 3; i++) expect((await passwordGrant('mallory.target', 'wrong password!', attacker)).status).toBe(400);
      const blocked = await passwordGrant('mallory.target', PASSWORD, attacker);
      expect(blocked.status).toBe(429);
      expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
      expect((await passwordGrant('mallory.target', PASSWORD, from())).status).toBe(200);
    });

    it('an unknown userName is locked out after the limit just like a known one (DECISIONS 4)', async () => {
      await createUser({ userName: 'known.target', role: 'Cardholder', password: PASSWORD });
      const attacker = from();
      const answers: Record<string, unknown>[] = [];
      for (const username of ['known.target', 'no.such.target']) {
        for (let i = 0; i < 3; i++) expect((await passwordGrant(username, 'wrong password!', attacker)).status).toBe(400);
        const fourth = await passwordGrant(username, 'wrong password!', attacker);
        answers.push({ status: fourth.status, retryAfter: Number(fourth.headers['retry-after']) > 0, body: fourth.body });
      }
      expect(answers[0]).toMatchObject({ status: 429, retryAfter: true });
      expect(answers[1]).toEqual(answers[0]);
    });
  });
});
