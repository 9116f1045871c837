import { createHash } from 'node:crypto';
import type { Response } from 'supertest';
import {
  CreatedAccount,
  TestApp,
  createOrganization,
  createSystemAccount,
  createTestApp,
  makeCertificate,
  platformAdminToken,
  signAssertion,
  tokenBySecret,
  tokenRequest,
  uploadCertificate,
} from '@app/testing';

/**
 * The public discovery surface (DECISIONS 1, 3.1, 12), RFC 7662 introspection (3.4), the token
 * response's headers, health and API docs, and the answers to unknown routes and oversized bodies.
 */

const SCIM_ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';
const AUTH = 'https://auth.example.test';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let sequence = 0;
function orgId(label: string): string {
  sequence += 1;
  return `id_${label}_${sequence}_${Date.now().toString(36)}`;
}

interface Client extends CreatedAccount {
  org: string;
}

async function newClient(t: TestApp, label: string, role = 'Issuance'): Promise<Client> {
  const admin = await platformAdminToken(t.http);
  const org = orgId(label);
  await createOrganization(t.http, admin, org);
  return { ...(await createSystemAccount(t.http, admin, org, { role })), org };
}

async function anotherAccount(t: TestApp, org: string, role = 'Help Desk'): Promise<Client> {
  const admin = await platformAdminToken(t.http);
  return { ...(await createSystemAccount(t.http, admin, org, { role })), org };
}

function token(t: TestApp, client: Client): Promise<string> {
  return tokenBySecret(t.http, client.org, client.clientId, client.secret);
}

function decodeClaims(jws: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(jws.split('.')[1], 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** RFC 6749 2.3.1: id and secret form-urlencoded, then Basic. */
function basic(clientId: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}

function introspect(t: TestApp, org: string, form: Record<string, string>, authorization?: string) {
  const request = t.http.post(`/authentication/customer/${org}/introspect`).type('form');
  return (authorization ? request.set('Authorization', authorization) : request).send(form);
}

function introspectAs(t: TestApp, caller: Client, accessToken: string) {
  return introspect(t, caller.org, { token: accessToken, client_id: caller.clientId, client_secret: caller.secret });
}

function expectNoStore(response: Response): void {
  expect(response.headers['cache-control']).toBe('no-store');
  expect(response.headers['pragma']).toBe('no-cache');
  expect(response.headers['content-type']).toBe('application/json; charset=UTF-8');
}

function expectInactive(response: Response): void {
  expect(response.status).toBe(200);
  expect(response.body).toEqual({ active: false });
  expectNoStore(response);
}

function expectOAuthError(response: Response, status: number, error: string): void {
  expect(response.status).toBe(status);
  expect(response.body).toEqual({ error, error_description: expect.any(String) });
  expectNoStore(response);
}

/** RFC 7638 thumbprint of an EC key: SHA-256 of the required members in lexicographic order. */
function ecThumbprint(jwk: { crv: string; x: string; y: string }): string {
  const canonical = JSON.stringify({ crv: jwk.crv, kty: 'EC', x: jwk.x, y: jwk.y });
  return createHash('sha256').update(canonical, 'utf8').digest('base64url');
}

describe('discovery, introspection and the public surface', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  describe('OpenID discovery (DECISIONS 3.1)', () => {
    it('answers the discovery document of an organization without a token', async () => {
      const client = await newClient(t, 'disco');
      const issuer = `${AUTH}/authentication/customer/${client.org}`;
      const response = await t.http.get(`/authentication/customer/${client.org}/.well-known/openid-configuration`);
      expect(response.status).toBe(200);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.body).toMatchObject({
        issuer,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/.well-known/jwks.json`,
        introspection_endpoint: `${issuer}/introspect`,
        revocation_endpoint: `${issuer}/revoke`,
        id_token_signing_alg_values_supported: ['ES256'],
      });
      expect(response.body.grant_types_supported).toEqual(expect.arrayContaining(['client_credentials']));
      expect(response.body.token_endpoint_auth_methods_supported).toEqual(
        expect.arrayContaining(['client_secret_post', 'client_secret_basic', 'private_key_jwt']),
      );
      // The token URL is the one the admin API reports for the account.
      expect(response.body.token_endpoint).toBe(client.tokenUrl);

      // The jwks_uri it names answers, without a token.
      const jwks = await t.http.get(new URL(response.body.jwks_uri).pathname);
      expect(jwks.status).toBe(200);
      expect(jwks.body.keys).toHaveLength(1);
    });

    it('answers the same way for an organization that does not exist (reveals nothing)', async () => {
      const client = await newClient(t, 'discoreal');
      const missing = orgId('nosuchorg');
      const real = await t.http.get(`/authentication/customer/${client.org}/.well-known/openid-configuration`);
      const unknown = await t.http.get(`/authentication/customer/${missing}/.well-known/openid-configuration`);
      expect(real.status).toBe(200);
      expect(unknown.status).toBe(200);
      expect(unknown.body.issuer).toBe(`${AUTH}/authentication/customer/${missing}`);
      expect(JSON.stringify(unknown.body)).toBe(JSON.stringify(real.body).split(client.org).join(missing));

      const realJwks = await t.http.get(`/authentication/customer/${client.org}/.well-known/jwks.json`);
      const unknownJwks = await t.http.get(`/authentication/customer/${missing}/.well-known/jwks.json`);
      expect(unknownJwks.status).toBe(200);
      expect(unknownJwks.body).toEqual(realJwks.body);
    });

    it('answers 404 with a SCIM error for an organization id that is not valid (hyphen)', async () => {
      for (const path of ['/authentication/customer/bad-org/.well-known/openid-configuration', '/authentication/customer/bad-org/.well-known/jwks.json']) {
        const response = await t.http.get(path);
        expect(response.status).toBe(404);
        expect(response.body).toEqual({ schemas: [SCIM_ERROR_SCHEMA], status: '404', detail: expect.any(String) });
      }
    });

    it('publishes one EC P-256 signing key, public members only, with the RFC 7638 thumbprint as kid', async () => {
      const client = await newClient(t, 'jwks');
      const response = await t.http.get(`/authentication/customer/${client.org}/.well-known/jwks.json`);
      expect(response.status).toBe(200);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.body).toEqual({
        keys: [
          {
            kty: 'EC',
            crv: 'P-256',
            x: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
            y: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
            kid: expect.any(String),
            alg: 'ES256',
            use: 'sig',
          },
        ],
      });
      const [key] = response.body.keys;
      expect(key).not.toHaveProperty('d');
      expect(key.kid).toBe(ecThumbprint(key));

      // The tokens name that kid.
      const accessToken = await token(t, client);
      expect(JSON.parse(Buffer.from(accessToken.split('.')[0], 'base64url').toString('utf8')).kid).toBe(key.kid);
    });
  });

  describe('introspection (RFC 7662)', () => {
    it('a live token of its own organization is active, with its claims (secret in the body)', async () => {
      const owner = await newClient(t, 'intro');
      const caller = await anotherAccount(t, owner.org);
      const accessToken = await token(t, owner);
      const claims = decodeClaims(accessToken);

      const response = await introspectAs(t, caller, accessToken);
      expect(response.status).toBe(200);
      expectNoStore(response);
      expect(response.body).toMatchObject({
        active: true,
        client_id: owner.clientId,
        sub: owner.clientId,
        iss: `${AUTH}/authentication/customer/${owner.org}`,
        jti: claims.jti,
        iat: claims.iat,
        exp: claims.exp,
        org: owner.org,
        role: 'Issuance',
        token_type: 'Bearer',
        scope: expect.any(String),
      });
      expect(response.body.jti).toMatch(UUID);
      expect(response.body.exp - response.body.iat).toBe(3600);
      const allowed = ['active', 'client_id', 'sub', 'aud', 'exp', 'iat', 'nbf', 'iss', 'jti', 'org', 'role', 'token_type', 'scope', 'username'];
      expect(Object.keys(response.body).filter((k) => !allowed.includes(k))).toEqual([]);
    });

    it('accepts HTTP Basic and a signed client assertion as client authentication', async () => {
      const owner = await newClient(t, 'introauth');
      const accessToken = await token(t, owner);

      const byBasic = await introspect(t, owner.org, { token: accessToken }, basic(owner.clientId, owner.secret));
      expect(byBasic.status).toBe(200);
      expect(byBasic.body).toMatchObject({ active: true, client_id: owner.clientId });

      const certificate = await makeCertificate({ keyType: 'EC-P256' });
      const admin = await platformAdminToken(t.http);
      expect((await uploadCertificate(t.http, admin, owner.org, owner.clientId, certificate.pem)).status).toBe(201);
      const assertion = await signAssertion(certificate, owner.clientId, owner.tokenUrl, { now: t.clock.now() });
      const byAssertion = await introspect(t, owner.org, {
        token: accessToken,
        client_assertion: assertion,
        client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      });
      expect(byAssertion.status).toBe(200);
      expect(byAssertion.body).toMatchObject({ active: true, client_id: owner.clientId });
    });

    it("another organization's token is inactive, at either organization's endpoint", async () => {
      const a = await newClient(t, 'introa');
      const b = await newClient(t, 'introb');
      const tokenB = await token(t, b);
      expectInactive(await introspectAs(t, a, tokenB));
      // The token is still fine for its own organization.
      expect((await introspectAs(t, b, tokenB)).body).toMatchObject({ active: true });
    });

    it('expired, revoked and garbage tokens are inactive', async () => {
      const client = await newClient(t, 'introdead');
      const revoked = await token(t, client);
      const revocation = await t.http
        .post(`/authentication/customer/${client.org}/revoke`)
        .type('form')
        .send({ token: revoked, client_id: client.clientId, client_secret: client.secret });
      expect(revocation.status).toBe(200);
      expectInactive(await introspectAs(t, client, revoked));

      expectInactive(await introspectAs(t, client, 'garbage'));
      expectInactive(await introspectAs(t, client, 'aaaa.bbbb.cccc'));

      const expiring = await token(t, client);
      expect((await t.http.get(`/authentication/customer/${client.org}/whoami`).set('Authorization', `Bearer ${expiring}`)).status).toBe(200);
      expect((await introspectAs(t, client, expiring)).body).toMatchObject({ active: true });
      t.clock.advance(3601);
      expectInactive(await introspectAs(t, client, expiring));
    });

    it('reads a token only in canonical compact form: padded, ~, +/ and spare-bit spellings are refused everywhere (DECISIONS 3.4)', async () => {
      const client = await newClient(t, 'canonical');
      // A token whose signature holds - or _, so that its +/ spelling differs from it.
      let accessToken = await token(t, client);
      while (!/[-_]/.test(accessToken.split('.')[2])) accessToken = await token(t, client);
      const [header, payload, signature] = accessToken.split('.');
      const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      // The last character of an unpadded encoding carries bits that decode to nothing (RFC 4648 3.5).
      const last = ALPHABET.indexOf(signature.slice(-1));
      const spareBit = `${signature.slice(0, -1)}${ALPHABET[last ^ 1]}`;
      expect(Buffer.from(spareBit, 'base64url')).toEqual(Buffer.from(signature, 'base64url'));
      const variants = {
        padded: `${accessToken}=`,
        paddedTwice: `${accessToken}==`,
        tilde: `${header}.${payload}.${signature.slice(0, 10)}~${signature.slice(10)}`,
        base64Alphabet: `${header}.${payload}.${signature.replace(/-/g, '+').replace(/_/g, '/')}`,
        spareBit: `${header}.${payload}.${spareBit}`,
      };
      const whoami = (bearer: string) => t.http.get(`/authentication/customer/${client.org}/whoami`).set('Authorization', `Bearer ${bearer}`);
      for (const [name, variant] of Object.entries(variants)) {
        const refused = await whoami(variant);
        expect({ name, status: refused.status, challenge: refused.headers['www-authenticate'] }).toEqual({
          name,
          status: 401,
          challenge:
            'Bearer realm="credential-platform", error="invalid_token", error_description="The access token is not a compact JWS in canonical form: ' +
            'three base64url segments of A-Z a-z 0-9 - _ without padding, each the exact encoding of its bytes."',
        });
        expect({ name, introspection: (await introspectAs(t, client, variant)).body }).toEqual({ name, introspection: { active: false } });
        // Revoking by a variant spelling revokes nothing: the token itself stays live.
        const revocation = await t.http
          .post(`/authentication/customer/${client.org}/revoke`)
          .type('form')
          .send({ token: variant, client_id: client.clientId, client_secret: client.secret });
        expect(revocation.status).toBe(200);
        expect({ name, status: (await whoami(accessToken)).status }).toEqual({ name, status: 200 });
      }
    });

    it('does not count as a use: a token only introspected still expires unused after 300 s', async () => {
      const client = await newClient(t, 'intronouse');
      const accessToken = await token(t, client);
      t.clock.advance(10);
      expect((await introspectAs(t, client, accessToken)).body).toMatchObject({ active: true });
      const { rows } = await t.db.query<{ first_used_at: Date | null }>('SELECT first_used_at FROM access_tokens WHERE jti = $1', [
        decodeClaims(accessToken).jti,
      ]);
      expect(rows).toHaveLength(1);
      expect(rows[0].first_used_at).toBeNull();

      t.clock.advance(291); // +301 s
      const whoami = await t.http.get(`/authentication/customer/${client.org}/whoami`).set('Authorization', `Bearer ${accessToken}`);
      expect(whoami.status).toBe(401);
      expect(whoami.headers['www-authenticate']).toMatch(
        /^Bearer realm="credential-platform", error="invalid_token", error_description="[^"]*not used within 300 seconds[^"]*"$/,
      );
      // And introspection agrees.
      expectInactive(await introspectAs(t, client, accessToken));
    });

    it('needs client authentication: none is 401 invalid_client, a wrong secret is 401 invalid_client', async () => {
      const client = await newClient(t, 'introunauth');
      const accessToken = await token(t, client);

      expectOAuthError(await introspect(t, client.org, { token: accessToken }), 401, 'invalid_client');
      expectOAuthError(
        await introspect(t, client.org, { token: accessToken, client_id: client.clientId, client_secret: `${client.secret}x` }),
        401,
        'invalid_client',
      );

      const wrongBasic = await introspect(t, client.org, { token: accessToken }, basic(client.clientId, `${client.secret}x`));
      expectOAuthError(wrongBasic, 401, 'invalid_client');
      expect(wrongBasic.headers['www-authenticate']).toMatch(/^Basic /);

      // A bearer token is not client authentication here.
      expectOAuthError(await introspect(t, client.org, { token: accessToken }, `Bearer ${accessToken}`), 401, 'invalid_client');
    });

    it('without the token parameter is 400 invalid_request', async () => {
      const client = await newClient(t, 'intronotoken');
      expectOAuthError(await introspect(t, client.org, { client_id: client.clientId, client_secret: client.secret }), 400, 'invalid_request');
    });
  });

  describe('headers', () => {
    it('the token response: JSON with charset, no-store, no-cache and exactly the four members', async () => {
      const client = await newClient(t, 'tokenhdr');
      const response = await tokenRequest(t.http, client.org, { grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.secret });
      expect(response.status).toBe(200);
      expectNoStore(response);
      expect(Object.keys(response.body).sort()).toEqual(['access_token', 'expires_in', 'id_token', 'token_type']);
      expect(response.body).toEqual({ access_token: expect.any(String), id_token: expect.any(String), token_type: 'Bearer', expires_in: 3600 });
      expect(response.headers['x-content-type-options']).toBe('nosniff');
      expect(response.headers['x-correlation-id']).toMatch(/\S/);
    });

    it('X-Content-Type-Options: nosniff and a distinct X-Correlation-ID on every answer', async () => {
      const client = await newClient(t, 'everyhdr');
      const accessToken = await token(t, client);
      const answers = await Promise.all([
        tokenRequest(t.http, client.org, { grant_type: 'client_credentials', client_id: client.clientId, client_secret: 'wrong' }),
        t.http.get(`/authentication/customer/${client.org}/whoami`).set('Authorization', `Bearer ${accessToken}`),
        t.http.get(`/authentication/customer/${client.org}/whoami`),
        t.http.get(`/authentication/customer/${client.org}/.well-known/openid-configuration`),
        t.http.get('/health/live'),
        t.http.get('/no/such/route').set('Authorization', `Bearer ${accessToken}`),
      ]);
      expect(answers.map((a) => a.status)).toEqual([401, 200, 401, 200, 200, 404]);
      for (const answer of answers) {
        expect(answer.headers['x-content-type-options']).toBe('nosniff');
        expect(answer.headers['x-correlation-id']).toMatch(/\S/);
      }
      expect(new Set(answers.map((a) => a.headers['x-correlation-id'])).size).toBe(answers.length);
    });
  });

  describe('health and API docs', () => {
    it('liveness and readiness answer without a token', async () => {
      const live = await t.http.get('/health/live');
      expect(live.status).toBe(200);
      const ready = await t.http.get('/health/ready');
      expect(ready.status).toBe(200);
      expect(ready.body).toEqual({ status: 'ok', checks: { database: 'ok', hsm: 'ok' } });
    });

    it('serves the API docs as HTML and the OpenAPI document listing the token path', async () => {
      const html = await t.http.get('/api-docs');
      expect(html.status).toBe(200);
      expect(html.headers['content-type']).toMatch(/^text\/html/);

      // @nestjs/swagger 12 serves the JSON document at `${path}-json`.
      const json = await t.http.get('/api-docs-json');
      expect(json.status).toBe(200);
      expect(json.headers['content-type']).toMatch(/^application\/json/);
      expect(json.body.openapi).toMatch(/^3\./);
      expect(Object.keys(json.body.paths)).toEqual(expect.arrayContaining(['/authentication/customer/{org}/token']));
      expect(json.body.paths['/authentication/customer/{org}/token']).toHaveProperty('post');
    });

    it('the docs carry a CSP that forbids framing and inline script, under which the Swagger UI still loads', async () => {
      const html = await t.http.get('/api-docs');
      const csp = html.headers['content-security-policy'] as string;
      expect(csp).toBe(
        "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      );
      expect(html.headers['x-content-type-options']).toBe('nosniff');
      // Under script-src 'self' every script is a same-origin file, and under nosniff each file
      // must come with its own media type, or the browser would not run or apply it.
      const scripts = [...html.text.matchAll(/<script\b([^>]*)>/g)].map((tag) => /\bsrc=["']([^"']+)["']/.exec(tag[1])?.[1]);
      expect(scripts.length).toBeGreaterThanOrEqual(3);
      expect(scripts).not.toContain(undefined);
      const styles = [...html.text.matchAll(/<link\b[^>]*rel=["']stylesheet["'][^>]*>/g)].map((tag) => /\bhref=["']([^"']+)["']/.exec(tag[0])![1]);
      expect(styles.length).toBeGreaterThanOrEqual(1);
      for (const [files, type] of [
        [scripts as string[], /^(application|text)\/javascript/],
        [styles, /^text\/css/],
      ] as const) {
        for (const file of files) {
          expect(file).not.toMatch(/^(https?:)?\/\//);
          const asset = await t.http.get(new URL(file, 'http://host/api-docs').pathname);
          expect({ file, status: asset.status, type: asset.headers['content-type'], csp: asset.headers['content-security-policy'] }).toEqual({
            file,
            status: 200,
            type: expect.stringMatching(type),
            csp,
          });
        }
      }
      expect((await t.http.get('/api-docs-json')).headers['content-security-policy']).toBe(csp);
    });
  });

  describe('errors', () => {
    it('a route that does not exist is a 404 SCIM error, with or without a token', async () => {
      const client = await newClient(t, 'notfound');
      const accessToken = await token(t, client);
      for (const request of [
        t.http.get('/no/such/route').set('Authorization', `Bearer ${accessToken}`),
        t.http.post('/aims/rs/scim/v2/NoSuchResource').set('Authorization', `Bearer ${accessToken}`).send({ a: 1 }),
        t.http.get('/no/such/route'),
      ]) {
        const response = await request;
        expect(response.status).toBe(404);
        expect(response.body).toEqual({ schemas: [SCIM_ERROR_SCHEMA], status: '404', detail: expect.any(String) });
      }
    });

    it('a 2 MiB body is refused with 413', async () => {
      const admin = await platformAdminToken(t.http);
      const big = JSON.stringify({ id: orgId('big'), name: 'x'.repeat(2 * 1024 * 1024) });
      const response = await t.http.post('/admin/v1/organizations').set('Authorization', `Bearer ${admin}`).set('Content-Type', 'application/json').send(big);
      expect(response.status).toBe(413);
      expect(response.body).toEqual({ schemas: [SCIM_ERROR_SCHEMA], status: '413', detail: expect.any(String) });

      const form = await tokenRequest(t.http, 'platform', {
        grant_type: 'client_credentials',
        client_id: 'platform-admin',
        client_secret: 'x'.repeat(2 * 1024 * 1024),
      });
      expect(form.status).toBe(413);
    });
  });
});
