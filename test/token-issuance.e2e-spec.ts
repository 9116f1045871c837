import { KeyObject, X509Certificate, randomUUID } from 'node:crypto';
import { SignJWT, decodeProtectedHeader } from 'jose';
import {
  CreatedAccount,
  TestApp,
  TestCertificate,
  createOrganization,
  createSystemAccount,
  createTestApp,
  makeCertificate,
  platformAdminToken,
  signAssertion,
  tokenRequest,
  uploadCertificate,
} from '@app/testing';
import { TokenRepository } from '../libs/auth/src/tokens/token.repository';

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const GENERIC = 'Client authentication failed.';

/** Token issuance by client_secret, HTTP Basic and signed assertion, and each refusal (DECISIONS 3.1-3.3). */
describe('token endpoint', () => {
  let t: TestApp;
  let admin: string;
  let acme: CreatedAccount;
  let acmeCert: TestCertificate;
  let other: CreatedAccount;
  let otherCert: TestCertificate;
  const issuer = 'https://auth.example.test/authentication/customer/acme';

  beforeAll(async () => {
    // The many refusals here must not trip the lockout, which has its own suite.
    t = await createTestApp({ env: { AUTH_FAILURE_LIMIT: '100000' } });
    admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, 'acme');
    await createOrganization(t.http, admin, 'globex');
    acme = await createSystemAccount(t.http, admin, 'acme', { suffix: 'svc', role: 'Issuance' });
    other = await createSystemAccount(t.http, admin, 'acme', { suffix: 'other', role: 'Issuance' });
    acmeCert = await makeCertificate({ keyType: 'EC-P256' });
    otherCert = await makeCertificate({ keyType: 'EC-P256' });
    expect((await uploadCertificate(t.http, admin, 'acme', acme.clientId, acmeCert.pem)).status).toBe(201);
    expect((await uploadCertificate(t.http, admin, 'acme', other.clientId, otherCert.pem)).status).toBe(201);
  });
  afterAll(() => t.close());

  const assertionForm = (assertion: string, extra: Record<string, string> = {}) => ({
    grant_type: 'client_credentials',
    client_assertion_type: ASSERTION_TYPE,
    client_assertion: assertion,
    ...extra,
  });
  const sign = (claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}, cert = acmeCert) =>
    signAssertion(cert, acme.clientId, acme.tokenUrl, { claims, header, now: t.clock.now() });

  function expectInvalidClient(response: { status: number; body: Record<string, unknown>; headers: Record<string, string> }, description: string | RegExp) {
    expect(response.status).toBe(401);
    expect(response.headers['content-type']).toBe('application/json; charset=UTF-8');
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.body.error).toBe('invalid_client');
    if (typeof description === 'string') expect(response.body.error_description).toBe(description);
    else expect(response.body.error_description).toMatch(description);
  }

  describe('issuance', () => {
    it('client_secret in the body: 200 with the token response and no-store headers', async () => {
      const response = await tokenRequest(t.http, 'acme', { grant_type: 'client_credentials', client_id: acme.clientId, client_secret: acme.secret });
      expect(response.status).toBe(200);
      expect(response.headers['content-type']).toBe('application/json; charset=UTF-8');
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.headers.pragma).toBe('no-cache');
      expect(Object.keys(response.body).sort()).toEqual(['access_token', 'expires_in', 'id_token', 'token_type']);
      expect(response.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
      expect(decodeProtectedHeader(response.body.access_token)).toMatchObject({ alg: 'ES256', typ: 'at+jwt' });
      expect(decodeProtectedHeader(response.body.id_token)).toMatchObject({ alg: 'ES256', typ: 'JWT' });
    });

    it('the scope parameter is ignored', async () => {
      const response = await tokenRequest(t.http, 'acme', {
        grant_type: 'client_credentials',
        client_id: acme.clientId,
        client_secret: acme.secret,
        scope: 'anything at all',
      });
      expect(response.status).toBe(200);
    });

    it('HTTP Basic: 200', async () => {
      const response = await t.http
        .post('/authentication/customer/acme/token')
        .auth(encodeURIComponent(acme.clientId), encodeURIComponent(acme.secret))
        .type('form')
        .send({ grant_type: 'client_credentials' });
      expect(response.status).toBe(200);
      expect(response.body.token_type).toBe('Bearer');
    });

    it('HTTP Basic with a wrong secret: 401 with a Basic challenge', async () => {
      const response = await t.http
        .post('/authentication/customer/acme/token')
        .auth(acme.clientId, 'wrong')
        .type('form')
        .send({ grant_type: 'client_credentials' });
      expectInvalidClient(response, GENERIC);
      expect(response.headers['www-authenticate']).toMatch(/^Basic /);
    });

    it('signed assertion with aud = Token URL, with aud = issuer, with aud as a one-element array, with client_id beside it, and without client_assertion_type', async () => {
      for (const form of [
        assertionForm(await sign()),
        assertionForm(await sign({ aud: issuer })),
        assertionForm(await sign({ aud: [acme.tokenUrl] })),
        assertionForm(await sign(), { client_id: acme.clientId }),
        { grant_type: 'client_credentials', client_assertion: await sign() },
      ]) {
        const response = await tokenRequest(t.http, 'acme', form);
        expect({ status: response.status, body: response.body }).toMatchObject({ status: 200, body: { token_type: 'Bearer' } });
      }
    });

    it('the assertion may name its certificate by kid or x5t#S256', async () => {
      for (const header of [{ kid: acmeCert.thumbprint }, { 'x5t#S256': acmeCert.thumbprint }]) {
        const response = await tokenRequest(t.http, 'acme', assertionForm(await sign({}, header)));
        expect(response.status).toBe(200);
      }
    });

    it('keys in the header (jwk, jku, x5u, x5c) are never trusted: only uploaded certificates verify', async () => {
      const intruder = await makeCertificate({ keyType: 'EC-P256' });
      const intruderCertificate = new X509Certificate(intruder.pem);
      const embedded = {
        jwk: intruderCertificate.publicKey.export({ format: 'jwk' }),
        x5c: [intruderCertificate.raw.toString('base64')],
        jku: 'https://intruder.example/jwks.json',
        x5u: 'https://intruder.example/cert.pem',
      };
      // Signed by the intruder's key, which the header offers in every form: refused as a bad signature.
      expectInvalidClient(await tokenRequest(t.http, 'acme', assertionForm(await sign({}, embedded, intruder))), GENERIC);
      // Signed by the uploaded certificate's key, the same header is ignored, not refused.
      expect((await tokenRequest(t.http, 'acme', assertionForm(await sign({}, embedded)))).status).toBe(200);
    });

    it('RSA and P-384 certificates sign with RS256, PS256 and ES384', async () => {
      const rsa = await makeCertificate({ keyType: 'RSA-2048' });
      const p384 = await makeCertificate({ keyType: 'EC-P384' });
      const account = await createSystemAccount(t.http, admin, 'acme', { role: 'Issuance' });
      expect((await uploadCertificate(t.http, admin, 'acme', account.clientId, rsa.pem)).status).toBe(201);
      expect((await uploadCertificate(t.http, admin, 'acme', account.clientId, p384.pem)).status).toBe(201);
      for (const [cert, alg] of [
        [rsa, 'RS256'],
        [rsa, 'PS256'],
        [p384, 'ES384'],
      ] as const) {
        // A WebCrypto key is bound to one algorithm; the same key as a KeyObject signs RS256 and PS256.
        const privateKey = KeyObject.from(cert.privateKey);
        const assertion = await new SignJWT({ iss: account.clientId, sub: account.clientId, aud: account.tokenUrl, jti: randomUUID() })
          .setProtectedHeader({ alg })
          .setIssuedAt(t.clock.nowSeconds())
          .setExpirationTime(t.clock.nowSeconds() + 300)
          .sign(privateKey);
        const response = await tokenRequest(t.http, 'acme', assertionForm(assertion));
        expect({ alg, status: response.status }).toEqual({ alg, status: 200 });
      }
    });
  });

  describe('refusals of client authentication (401 invalid_client)', () => {
    it('wrong secret, unknown Client ID, unknown org and org mismatch all get one identical description', async () => {
      const cases = [
        ['acme', acme.clientId, 'wrong-secret'],
        ['acme', 'acme-nosuchaccount', acme.secret],
        ['nosuchorg', 'nosuchorg-svc', acme.secret],
        ['globex', acme.clientId, acme.secret],
      ];
      for (const [org, clientId, secret] of cases) {
        const response = await tokenRequest(t.http, org, { grant_type: 'client_credentials', client_id: clientId, client_secret: secret });
        expectInvalidClient(response, GENERIC);
      }
    });

    it('expired secret: refused with a description that says so, once the secret matched', async () => {
      const account = await createSystemAccount(t.http, admin, 'acme', { role: 'Issuance' });
      const created = await t.http
        .post(`/admin/v1/organizations/acme/system-accounts/${account.clientId}/secrets`)
        .auth(admin, { type: 'bearer' })
        .send({ expiresAt: new Date(t.clock.now().getTime() + 60_000).toISOString() });
      expect(created.status).toBe(201);
      const form = { grant_type: 'client_credentials', client_id: account.clientId, client_secret: created.body.value };
      expect((await tokenRequest(t.http, 'acme', form)).status).toBe(200);
      t.clock.advance(120);
      expectInvalidClient(await tokenRequest(t.http, 'acme', form), /client secret expired/);
    });

    it('disabled account', async () => {
      const account = await createSystemAccount(t.http, admin, 'acme', { role: 'Issuance' });
      const patched = await t.http
        .patch(`/admin/v1/organizations/acme/system-accounts/${account.clientId}`)
        .auth(admin, { type: 'bearer' })
        .send({ disabled: true });
      expect(patched.status).toBe(200);
      const response = await tokenRequest(t.http, 'acme', { grant_type: 'client_credentials', client_id: account.clientId, client_secret: account.secret });
      expectInvalidClient(response, /disabled/);
    });

    it('certificate not valid yet, and expired', async () => {
      const account = await createSystemAccount(t.http, admin, 'acme', { role: 'Issuance' });
      const now = t.clock.now().getTime();
      const future = await makeCertificate({ notBefore: new Date(now + 3600_000), notAfter: new Date(now + 7200_000 * 24) });
      const shortLived = await makeCertificate({ notBefore: new Date(now - 3600_000), notAfter: new Date(now + 600_000) });
      expect((await uploadCertificate(t.http, admin, 'acme', account.clientId, future.pem)).status).toBe(201);
      expect((await uploadCertificate(t.http, admin, 'acme', account.clientId, shortLived.pem)).status).toBe(201);
      const notYet = await signAssertion(future, account.clientId, account.tokenUrl, { now: t.clock.now() });
      expectInvalidClient(await tokenRequest(t.http, 'acme', assertionForm(notYet)), /not valid before/);
      t.clock.advance(900);
      const expired = await signAssertion(shortLived, account.clientId, account.tokenUrl, { now: t.clock.now() });
      expectInvalidClient(await tokenRequest(t.http, 'acme', assertionForm(expired)), /certificate expired/);
    });

    it('a certificate of another account gets the generic description', async () => {
      const response = await tokenRequest(t.http, 'acme', assertionForm(await sign({}, {}, otherCert)));
      expectInvalidClient(response, GENERIC);
    });

    it('wrong aud, iss different from sub, sub of another account, client_id different from the assertion', async () => {
      expectInvalidClient(await tokenRequest(t.http, 'acme', assertionForm(await sign({ aud: 'https://elsewhere.example/token' }))), /aud must be/);
      expectInvalidClient(await tokenRequest(t.http, 'acme', assertionForm(await sign({ aud: [acme.tokenUrl, issuer] }))), /aud must be a single value/);
      expectInvalidClient(await tokenRequest(t.http, 'acme', assertionForm(await sign({ iss: other.clientId }))), /iss and sub/);
      expectInvalidClient(await tokenRequest(t.http, 'acme', assertionForm(await sign({ iss: other.clientId, sub: other.clientId }))), GENERIC);
      expectInvalidClient(await tokenRequest(t.http, 'acme', assertionForm(await sign(), { client_id: other.clientId })), /client_id must equal/);
    });

    it('lifetime and time claims: exp too far, exp - iat too long, expired, iat and nbf in the future, exp missing', async () => {
      const now = t.clock.nowSeconds();
      const refusals: [Record<string, unknown>, RegExp][] = [
        [{ iat: now + 3000, nbf: now, exp: now + 7300 }, /in the future|lifetime|more than 3600/],
        [{ iat: now, exp: now + 3601 }, /lifetime/],
        [{ iat: now - 600, nbf: now - 600, exp: now - 60 }, /expired/],
        [{ iat: now + 120, nbf: now, exp: now + 300 }, /iat is in the future/],
        [{ iat: now, nbf: now + 120, exp: now + 300 }, /not valid yet/],
        [{ exp: undefined }, /exp and iat/],
      ];
      for (const [claims, description] of refusals) {
        expectInvalidClient(await tokenRequest(t.http, 'acme', assertionForm(await sign(claims))), description);
      }
    });

    it('alg none, HMAC, an alg that does not fit the key, and a crit header are refused', async () => {
      const unsigned = (header: Record<string, unknown>) =>
        `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(
          JSON.stringify({
            iss: acme.clientId,
            sub: acme.clientId,
            aud: acme.tokenUrl,
            iat: t.clock.nowSeconds(),
            exp: t.clock.nowSeconds() + 60,
            jti: randomUUID(),
          }),
        ).toString('base64url')}.`;
      expectInvalidClient(await tokenRequest(t.http, 'acme', assertionForm(unsigned({ alg: 'none' }))), /alg "none" is not accepted/);
      const hmac = await new SignJWT({ iss: acme.clientId, sub: acme.clientId, aud: acme.tokenUrl, jti: randomUUID() })
        .setProtectedHeader({ alg: 'HS256' })
        .setIssuedAt(t.clock.nowSeconds())
        .setExpirationTime(t.clock.nowSeconds() + 60)
        .sign(Buffer.from(acme.secret));
      expectInvalidClient(await tokenRequest(t.http, 'acme', assertionForm(hmac)), /alg "HS256" is not accepted/);
      const wrongAlg = { ...acmeCert, alg: 'RS256' as const };
      await expect(signAssertion(wrongAlg, acme.clientId, acme.tokenUrl)).rejects.toThrow();
      const crit = await new SignJWT({
        iss: acme.clientId,
        sub: acme.clientId,
        aud: acme.tokenUrl,
        jti: randomUUID(),
        iat: t.clock.nowSeconds(),
        exp: t.clock.nowSeconds() + 60,
      })
        .setProtectedHeader({ alg: 'ES256', crit: ['b64'], b64: true })
        .sign(acmeCert.privateKey);
      expectInvalidClient(await tokenRequest(t.http, 'acme', assertionForm(crit)), /crit/);
    });

    it('short or malformed jti, an oversized assertion and a non-JWT', async () => {
      expectInvalidClient(await tokenRequest(t.http, 'acme', assertionForm(await sign({ jti: 'abc123' }))), /jti/);
      expectInvalidClient(await tokenRequest(t.http, 'acme', assertionForm(await sign({ jti: 'has spaces in it but long enough!' }))), /jti/);
      expectInvalidClient(await tokenRequest(t.http, 'acme', assertionForm(await sign({ padding: 'x'.repeat(9000) }))), /larger than 8192/);
      expectInvalidClient(await tokenRequest(t.http, 'acme', assertionForm('not-a-jwt')), /compact form/);
    });

    it('openid-client style jti (43 base64url characters) and a 32-hex-digit jti are accepted', async () => {
      for (const jti of [Buffer.alloc(32, 9).toString('base64url') + randomUUID().slice(0, 0), randomUUID().replace(/-/g, '')]) {
        const response = await tokenRequest(t.http, 'acme', assertionForm(await sign({ jti: jti + (jti.length === 43 ? '' : '') })));
        expect(response.status).toBe(200);
      }
    });

    it('a replayed jti is refused', async () => {
      const assertion = await sign();
      expect((await tokenRequest(t.http, 'acme', assertionForm(assertion))).status).toBe(200);
      expectInvalidClient(await tokenRequest(t.http, 'acme', assertionForm(assertion)), /jti was used before/);
    });

    it('two concurrent requests with the same jti: exactly one succeeds', async () => {
      const assertion = await sign();
      const responses = await Promise.all([0, 1, 2, 3].map(() => tokenRequest(t.http, 'acme', assertionForm(assertion))));
      expect(responses.map((r) => r.status).sort()).toEqual([200, 401, 401, 401]);
    });

    it('ten assertions, each sent twice at once: exactly one success per jti', async () => {
      const assertions = await Promise.all(Array.from({ length: 10 }, () => sign()));
      const responses = await Promise.all([...assertions, ...assertions].map((assertion) => tokenRequest(t.http, 'acme', assertionForm(assertion))));
      assertions.forEach((_, index) => {
        const pair = [responses[index], responses[index + assertions.length]];
        expect(pair.map((r) => r.status).sort()).toEqual([200, 401]);
        expect(pair.find((r) => r.status === 401)?.body.error_description).toMatch(/jti was used before/);
      });
    });

    it('the jti store answers each pair new exactly once, within one batched insert and across batches', async () => {
      const repository = t.app.get(TokenRepository);
      const { rows } = await t.db.query<{ id: string }>('SELECT id FROM system_accounts WHERE client_id = $1', [acme.clientId]);
      const prefix = randomUUID();
      const expiresAt = new Date(t.clock.now().getTime() + 60_000);
      // Called in one tick: the first four (jtis 0-3) go out one by one, the other twenty queue into
      // one insert that holds jtis 4 and 5 four times each and jtis 0-3 again. Which of two racing
      // inserts of a jti wins is PostgreSQL's to decide; that exactly one does is the rule.
      const jtis = Array.from({ length: 24 }, (_, index) => `${prefix}-${index % 6}`);
      const answers = await Promise.all(jtis.map((jti) => repository.rememberJti(rows[0].id, jti, expiresAt)));

      for (let k = 0; k < 6; k++) {
        expect(answers.filter((isNew, index) => isNew && index % 6 === k)).toHaveLength(1);
      }
      expect(await repository.rememberJti(rows[0].id, `${prefix}-5`, expiresAt)).toBe(false);
      const stored = await t.db.query<{ n: string }>('SELECT count(*) AS n FROM assertion_jtis WHERE jti LIKE $1', [`${prefix}-%`]);
      expect(Number(stored.rows[0].n)).toBe(6);
    });
  });

  describe('malformed requests (400)', () => {
    it('two authentication methods at once: invalid_request', async () => {
      const response = await tokenRequest(t.http, 'acme', assertionForm(await sign(), { client_secret: acme.secret, client_id: acme.clientId }));
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: 'invalid_request', error_description: expect.stringMatching(/exactly one client authentication method/) });
      const basicAndBody = await t.http
        .post('/authentication/customer/acme/token')
        .auth(acme.clientId, acme.secret)
        .type('form')
        .send({ grant_type: 'client_credentials', client_id: acme.clientId, client_secret: acme.secret });
      expect(basicAndBody.status).toBe(400);
      expect(basicAndBody.body.error).toBe('invalid_request');
    });

    it('wrong and missing grant type', async () => {
      // authorization_code was the example of an unsupported grant until DECISIONS 15 made it one; device_code still is.
      const wrong = await tokenRequest(t.http, 'acme', {
        grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
        client_id: acme.clientId,
        client_secret: acme.secret,
      });
      expect(wrong.status).toBe(400);
      expect(wrong.body.error).toBe('unsupported_grant_type');
      // A system account not set up for the authorization code flow may not use its grant (RFC 6749 5.2).
      const notSetUp = await tokenRequest(t.http, 'acme', { grant_type: 'authorization_code', client_id: acme.clientId, client_secret: acme.secret });
      expect(notSetUp.status).toBe(400);
      expect(notSetUp.body.error).toBe('unauthorized_client');
      const missing = await tokenRequest(t.http, 'acme', { client_id: acme.clientId, client_secret: acme.secret });
      expect(missing.status).toBe(400);
      expect(missing.body).toEqual({ error: 'invalid_request', error_description: 'The grant_type parameter is required.' });
    });

    it('wrong content types: JSON, text, broken JSON, no body', async () => {
      const json = await t.http
        .post('/authentication/customer/acme/token')
        .send({ grant_type: 'client_credentials', client_id: acme.clientId, client_secret: acme.secret });
      expect(json.status).toBe(400);
      expect(json.body).toEqual({
        error: 'invalid_request',
        error_description: expect.stringMatching(/application\/x-www-form-urlencoded, not application\/json/),
      });
      const broken = await t.http.post('/authentication/customer/acme/token').set('Content-Type', 'application/json').send('{"grant_type":');
      expect(broken.status).toBe(400);
      expect(broken.body.error).toBe('invalid_request');
      const none = await t.http.post('/authentication/customer/acme/token');
      expect(none.status).toBe(400);
      expect(none.body.error).toBe('invalid_request');
    });

    it('a parameter given twice', async () => {
      const response = await t.http
        .post('/authentication/customer/acme/token')
        .set('Content-Type', 'application/x-www-form-urlencoded')
        .send(`grant_type=client_credentials&client_id=${acme.clientId}&client_secret=${acme.secret}&client_secret=x`);
      expect(response.status).toBe(400);
      expect(response.body.error_description).toMatch(/client_secret is given more than once/);
    });

    it('an unknown client_assertion_type', async () => {
      const response = await tokenRequest(t.http, 'acme', assertionForm(await sign(), { client_assertion_type: 'urn:example:other' }));
      expect(response.status).toBe(400);
      expect(response.body.error).toBe('invalid_request');
    });
  });

  describe('positioning variant (DECISIONS 3.2)', () => {
    const form = () => ({ grant_type: 'client_credentials', client_id: acme.clientId, client_secret: acme.secret });

    it('under /oip with X-Request-ID equal to the organization: 200', async () => {
      const response = await t.http.post('/oip/authentication/customer/acme/token').set('X-Request-ID', 'acme').type('form').send(form());
      expect(response.status).toBe(200);
      expect(response.body.token_type).toBe('Bearer');
    });

    it('on an OIP_AUTH_HOSTS host name: 200', async () => {
      const response = await t.http
        .post('/authentication/customer/acme/token')
        .set('Host', 'oip.example.test')
        .set('X-Request-ID', 'acme')
        .type('form')
        .send(form());
      expect(response.status).toBe(200);
    });

    it('without or with a wrong X-Request-ID: 400 invalid_request', async () => {
      const missing = await t.http.post('/oip/authentication/customer/acme/token').type('form').send(form());
      expect(missing.status).toBe(400);
      expect(missing.body).toEqual({ error: 'invalid_request', error_description: expect.stringMatching(/X-Request-ID/) });
      const wrong = await t.http
        .post('/authentication/customer/acme/token')
        .set('Host', 'oip.example.test')
        .set('X-Request-ID', 'globex')
        .type('form')
        .send(form());
      expect(wrong.status).toBe(400);
      expect(wrong.body.error_description).toMatch(/X-Request-ID must equal/);
    });

    it('accepts an assertion whose aud is the positioning Token URL', async () => {
      const assertion = await signAssertion(acmeCert, acme.clientId, 'https://oip.example.test/authentication/customer/acme/token', { now: t.clock.now() });
      const response = await t.http.post('/oip/authentication/customer/acme/token').set('X-Request-ID', 'acme').type('form').send(assertionForm(assertion));
      expect(response.status).toBe(200);
    });
  });
});
