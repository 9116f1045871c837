import { createPublicKey, generateKeyPairSync, sign as signBytes, verify as verifyBytes, type JsonWebKey } from 'node:crypto';
import type { Response } from 'supertest';
import { PurgeJob } from '@app/auth';
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
 * Access tokens in use (DECISIONS 3.4, interface "States: access token"): lifetime, the unused-token
 * timeout, revocation, signature and type checks, the token format, restarts and the purge job.
 * Time moves only through the FakeClock.
 */

const SCIM_ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const REALM = 'Bearer realm="credential-platform"';

let sequence = 0;
/** A unique organization id per test (no hyphen, DECISIONS 2). */
function orgId(label: string): string {
  sequence += 1;
  return `tl_${label}_${sequence}_${Date.now().toString(36)}`;
}

interface Client extends CreatedAccount {
  org: string;
}

/** A new organization with one system account; a fresh platform-admin token each time (the clock moves). */
async function newClient(t: TestApp, label: string, role = 'Issuance'): Promise<Client> {
  const admin = await platformAdminToken(t.http);
  const org = orgId(label);
  await createOrganization(t.http, admin, org);
  const account = await createSystemAccount(t.http, admin, org, { role });
  return { ...account, org };
}

async function anotherAccount(t: TestApp, org: string, role = 'Issuance'): Promise<Client> {
  const admin = await platformAdminToken(t.http);
  return { ...(await createSystemAccount(t.http, admin, org, { role })), org };
}

function token(t: TestApp, client: Client): Promise<string> {
  return tokenBySecret(t.http, client.org, client.clientId, client.secret);
}

function whoami(t: TestApp, org: string, accessToken?: string) {
  const request = t.http.get(`/authentication/customer/${org}/whoami`);
  return accessToken === undefined ? request : request.set('Authorization', `Bearer ${accessToken}`);
}

function expectWhoami(response: Response, client: Client, role = 'Issuance'): void {
  expect(response.status).toBe(200);
  expect(response.body).toMatchObject({ clientId: client.clientId, org: client.org, role });
}

/**
 * 401 with `WWW-Authenticate: Bearer realm="credential-platform", error="invalid_token",
 * error_description="..."` naming the failed rule, and the SCIM error body (DECISIONS 3.4, 7).
 */
function expectInvalidToken(response: Response, rule: RegExp): void {
  expect(response.status).toBe(401);
  const challenge = response.headers['www-authenticate'] as string;
  expect(challenge).toMatch(/^Bearer realm="credential-platform", error="invalid_token", error_description="[^"\\]+"$/);
  const description = /error_description="([^"]*)"/.exec(challenge)![1];
  expect(description).toMatch(rule);
  expect(response.headers['content-type']).toMatch(/^application\/(scim\+)?json/);
  expect(response.body).toEqual({ schemas: [SCIM_ERROR_SCHEMA], status: '401', detail: expect.stringMatching(rule) });
}

function decodeSegment(segment: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(segment, 'base64url').toString('utf8')) as Record<string, unknown>;
}

function decodeJws(jws: string): { header: Record<string, unknown>; claims: Record<string, unknown>; signingInput: Buffer; signature: Buffer } {
  const parts = jws.split('.');
  expect(parts).toHaveLength(3);
  return {
    header: decodeSegment(parts[0]),
    claims: decodeSegment(parts[1]),
    signingInput: Buffer.from(`${parts[0]}.${parts[1]}`, 'ascii'),
    signature: Buffer.from(parts[2], 'base64url'),
  };
}

function encodeJws(header: Record<string, unknown>, claims: Record<string, unknown>, sign: (input: Buffer) => Buffer | string): string {
  const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  const signature = sign(Buffer.from(input, 'ascii'));
  return `${input}.${typeof signature === 'string' ? signature : signature.toString('base64url')}`;
}

async function tokenRow(t: TestApp, jti: string) {
  const { rows } = await t.db.query<{ org_id: string; issued_at: Date; expires_at: Date; first_used_at: Date | null; revoked_at: Date | null }>(
    'SELECT org_id, issued_at, expires_at, first_used_at, revoked_at FROM access_tokens WHERE jti = $1',
    [jti],
  );
  return rows[0];
}

function jtiOf(accessToken: string): string {
  return decodeJws(accessToken).claims.jti as string;
}

function revoke(t: TestApp, client: Client, form: Record<string, string>) {
  return t.http
    .post(`/authentication/customer/${client.org}/revoke`)
    .type('form')
    .send({ client_id: client.clientId, client_secret: client.secret, ...form });
}

describe('access tokens in use (DECISIONS 3.4)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  describe('lifetime', () => {
    it('a fresh token works, answers whoami and records its first use', async () => {
      const client = await newClient(t, 'fresh');
      const accessToken = await token(t, client);
      const jti = jtiOf(accessToken);
      const issued = await tokenRow(t, jti);
      expect(issued).toBeDefined();
      expect(issued.org_id).toBe(client.org);
      expect(issued.first_used_at).toBeNull();
      expect(issued.revoked_at).toBeNull();
      expect(issued.expires_at.getTime() - issued.issued_at.getTime()).toBe(3600 * 1000);

      const firstUse = t.clock.now();
      const response = await whoami(t, client.org, accessToken);
      expectWhoami(response, client);

      const used = await tokenRow(t, jti);
      expect(used.first_used_at).not.toBeNull();
      expect(used.first_used_at!.getTime()).toBe(firstUse.getTime());

      // Later uses keep the first one.
      t.clock.advance(5);
      expectWhoami(await whoami(t, client.org, accessToken), client);
      expect((await tokenRow(t, jti)).first_used_at!.getTime()).toBe(firstUse.getTime());
    });

    it('expires after expires_in seconds, even when in use', async () => {
      const client = await newClient(t, 'expiry');
      const response = await tokenRequest(t.http, client.org, { grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.secret });
      expect(response.status).toBe(200);
      expect(response.body.expires_in).toBe(3600);
      const accessToken = response.body.access_token as string;

      t.clock.advance(10);
      expectWhoami(await whoami(t, client.org, accessToken), client);
      t.clock.advance(3589); // +3599 s: still inside the lifetime
      expectWhoami(await whoami(t, client.org, accessToken), client);
      t.clock.advance(2); // +3601 s
      expectInvalidToken(await whoami(t, client.org, accessToken), /expired/i);
    });

    it('a token not used within 300 seconds of creation is expired', async () => {
      const client = await newClient(t, 'unused');
      const accessToken = await token(t, client);
      t.clock.advance(301);
      const response = await whoami(t, client.org, accessToken);
      expectInvalidToken(response, /not used within 300 seconds/);
      // The rule does not flip back: it stays refused.
      t.clock.advance(10);
      expectInvalidToken(await whoami(t, client.org, accessToken), /not used within 300 seconds/);
    });

    it('a token first used at +299 s stays valid afterwards (+1000 s)', async () => {
      const client = await newClient(t, 'used299');
      const accessToken = await token(t, client);
      t.clock.advance(299);
      expectWhoami(await whoami(t, client.org, accessToken), client);
      t.clock.advance(701);
      expectWhoami(await whoami(t, client.org, accessToken), client);
    });
  });

  describe('revocation (RFC 7009)', () => {
    it('revoking its own token answers 200 {} and the token is then refused as revoked', async () => {
      const client = await newClient(t, 'revoke');
      const accessToken = await token(t, client);
      expectWhoami(await whoami(t, client.org, accessToken), client);

      const response = await revoke(t, client, { token: accessToken });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({});
      expect(response.headers['cache-control']).toBe('no-store');

      expectInvalidToken(await whoami(t, client.org, accessToken), /revoked/i);
      expect((await tokenRow(t, jtiOf(accessToken))).revoked_at).not.toBeNull();

      // Revoking again is still 200 (RFC 7009 2.2).
      const again = await revoke(t, client, { token: accessToken, token_type_hint: 'access_token' });
      expect(again.status).toBe(200);
      expect(again.body).toEqual({});
    });

    it("revoking another client's token answers 200 and has no effect", async () => {
      const owner = await newClient(t, 'revokeown');
      const sameOrg = await anotherAccount(t, owner.org);
      const otherOrg = await newClient(t, 'revokeoth');
      const accessToken = await token(t, owner);

      const bySameOrg = await revoke(t, sameOrg, { token: accessToken });
      expect(bySameOrg.status).toBe(200);
      expect(bySameOrg.body).toEqual({});
      const byOtherOrg = await revoke(t, otherOrg, { token: accessToken });
      expect(byOtherOrg.status).toBe(200);
      expect(byOtherOrg.body).toEqual({});

      expectWhoami(await whoami(t, owner.org, accessToken), owner);
      expect((await tokenRow(t, jtiOf(accessToken))).revoked_at).toBeNull();
    });

    it('revocation without the token parameter is 400 invalid_request', async () => {
      const client = await newClient(t, 'revokebad');
      const response = await revoke(t, client, {});
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
      expect(response.headers['content-type']).toBe('application/json; charset=UTF-8');
    });
  });

  describe('tokens the guard refuses', () => {
    it('a token with our header and claims but signed by another key is refused (signature)', async () => {
      const client = await newClient(t, 'forged');
      const genuine = decodeJws(await token(t, client));
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const forged = encodeJws(genuine.header, genuine.claims, (input) => signBytes('sha256', input, { key: privateKey, dsaEncoding: 'ieee-p1363' }));
      expect(decodeJws(forged).header).toEqual({ alg: 'ES256', typ: 'at+jwt', kid: genuine.header.kid });
      expectInvalidToken(await whoami(t, client.org, forged), /signature/i);
    });

    it('a genuine token whose claims were changed is refused (signature)', async () => {
      const client = await newClient(t, 'tampered');
      const accessToken = await token(t, client);
      const [header, , signature] = accessToken.split('.');
      const claims = { ...decodeJws(accessToken).claims, role: 'Administration' };
      const tampered = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
      expectInvalidToken(await whoami(t, client.org, tampered), /signature/i);
    });

    it('an unsigned (alg none) token is refused', async () => {
      const client = await newClient(t, 'algnone');
      const genuine = decodeJws(await token(t, client));
      const unsigned = encodeJws({ alg: 'none', typ: 'at+jwt' }, genuine.claims, () => '');
      expectInvalidToken(await whoami(t, client.org, unsigned), /./);
    });

    it('an id_token used as a bearer token is refused (typ)', async () => {
      const client = await newClient(t, 'idtoken');
      const response = await tokenRequest(t.http, client.org, { grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.secret });
      expect(response.status).toBe(200);
      expectInvalidToken(await whoami(t, client.org, response.body.id_token), /typ|not an access token/i);
    });

    it('garbage is refused', async () => {
      const client = await newClient(t, 'garbage');
      expectInvalidToken(await whoami(t, client.org, 'not-a-token'), /./);
      expectInvalidToken(await whoami(t, client.org, 'aaaa.bbbb.cccc'), /./);
    });

    it('no Authorization header: 401 with a bare Bearer challenge', async () => {
      const client = await newClient(t, 'noauth');
      const response = await whoami(t, client.org);
      expect(response.status).toBe(401);
      expect(response.headers['www-authenticate']).toBe(REALM);
      expect(response.body).toEqual({ schemas: [SCIM_ERROR_SCHEMA], status: '401', detail: expect.any(String) });
    });

    it("a token of organization A is refused on organization B's whoami", async () => {
      const a = await newClient(t, 'orga');
      const b = await newClient(t, 'orgb');
      const tokenA = await token(t, a);
      expectInvalidToken(await whoami(t, b.org, tokenA), /organization/i);
      // The refusal did not spoil the token for its own organization.
      expectWhoami(await whoami(t, a.org, tokenA), a);
    });

    it('disabling the system account makes its live token fail (disabled)', async () => {
      const client = await newClient(t, 'disable');
      const accessToken = await token(t, client);
      expectWhoami(await whoami(t, client.org, accessToken), client);

      const admin = await platformAdminToken(t.http);
      const patch = await t.http
        .patch(`/admin/v1/organizations/${client.org}/system-accounts/${client.clientId}`)
        .set('Authorization', `Bearer ${admin}`)
        .send({ disabled: true });
      expect(patch.status).toBe(200);

      expectInvalidToken(await whoami(t, client.org, accessToken), /disabled/i);
    });
  });

  describe('token format (RFC 9068, OpenID Connect)', () => {
    it('the access token is an ES256 at+jwt JWS with the documented claims, verifiable with the JWKS key', async () => {
      const client = await newClient(t, 'format');
      const issuedAt = Math.floor(t.clock.now().getTime() / 1000);
      const response = await tokenRequest(t.http, client.org, { grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.secret });
      expect(response.status).toBe(200);

      const jwks = await t.http.get(`/authentication/customer/${client.org}/.well-known/jwks.json`);
      expect(jwks.status).toBe(200);
      expect(jwks.body.keys).toHaveLength(1);
      const jwk = jwks.body.keys[0] as JsonWebKey & { kid: string };
      const publicKey = createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y } as JsonWebKey, format: 'jwk' });

      const access = decodeJws(response.body.access_token);
      expect(access.header).toEqual({ alg: 'ES256', typ: 'at+jwt', kid: jwk.kid });
      expect(verifyBytes('sha256', access.signingInput, { key: publicKey, dsaEncoding: 'ieee-p1363' }, access.signature)).toBe(true);
      expect(access.claims).toEqual({
        iss: `https://auth.example.test/authentication/customer/${client.org}`,
        sub: client.clientId,
        aud: 'https://api.example.test',
        client_id: client.clientId,
        org: client.org,
        role: 'Issuance',
        scope: expect.any(String),
        jti: expect.stringMatching(UUID),
        iat: issuedAt,
        exp: issuedAt + response.body.expires_in,
      });

      const id = decodeJws(response.body.id_token);
      expect(id.header).toEqual({ alg: 'ES256', typ: 'JWT', kid: jwk.kid });
      expect(verifyBytes('sha256', id.signingInput, { key: publicKey, dsaEncoding: 'ieee-p1363' }, id.signature)).toBe(true);
      expect(id.claims).toEqual({
        iss: `https://auth.example.test/authentication/customer/${client.org}`,
        sub: client.clientId,
        aud: client.clientId,
        org: client.org,
        iat: issuedAt,
        exp: issuedAt + response.body.expires_in,
      });
    });
  });

  describe('purge job', () => {
    it('deletes expired access_tokens and assertion_jtis rows and keeps live ones', async () => {
      const client = await newClient(t, 'purge');
      const certificate = await makeCertificate({ keyType: 'EC-P256' });
      const admin = await platformAdminToken(t.http);
      const upload = await uploadCertificate(t.http, admin, client.org, client.clientId, certificate.pem);
      expect(upload.status).toBe(201);
      const byAssertion = async () => {
        const assertion = await signAssertion(certificate, client.clientId, client.tokenUrl, { now: t.clock.now() });
        const response = await tokenRequest(t.http, client.org, {
          grant_type: 'client_credentials',
          client_assertion: assertion,
          client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
        });
        expect(response.status).toBe(200);
        return response.body.access_token as string;
      };
      const countTokens = async () =>
        Number((await t.db.query<{ n: string }>('SELECT count(*) AS n FROM access_tokens WHERE org_id = $1', [client.org])).rows[0].n);
      const countJtis = async () =>
        Number(
          (
            await t.db.query<{ n: string }>('SELECT count(*) AS n FROM assertion_jtis j JOIN system_accounts a ON a.id = j.account_id WHERE a.client_id = $1', [
              client.clientId,
            ])
          ).rows[0].n,
        );

      const oldBySecret = await token(t, client);
      const oldByAssertion = await byAssertion();
      expect(await countTokens()).toBe(2);
      expect(await countJtis()).toBe(1);

      t.clock.advance(3700);
      const liveBySecret = await token(t, client);
      const liveByAssertion = await byAssertion();
      expect(await countTokens()).toBe(4);
      expect(await countJtis()).toBe(2);

      const purged = await t.app.get(PurgeJob).runOnce();
      expect(purged.tokens).toBeGreaterThanOrEqual(2);
      expect(purged.jtis).toBeGreaterThanOrEqual(1);

      expect(await countTokens()).toBe(2);
      expect(await countJtis()).toBe(1);
      expect(await tokenRow(t, jtiOf(oldBySecret))).toBeUndefined();
      expect(await tokenRow(t, jtiOf(oldByAssertion))).toBeUndefined();
      expect(await tokenRow(t, jtiOf(liveBySecret))).toBeDefined();
      expect(await tokenRow(t, jtiOf(liveByAssertion))).toBeDefined();

      // The live tokens still work after the purge; the purged one is still refused.
      expectWhoami(await whoami(t, client.org, liveBySecret), client);
      expectWhoami(await whoami(t, client.org, liveByAssertion), client);
      expectInvalidToken(await whoami(t, client.org, oldBySecret), /expired/i);

      // A second run finds nothing more of this organization to delete.
      await t.app.get(PurgeJob).runOnce();
      expect(await countTokens()).toBe(2);
      expect(await countJtis()).toBe(1);
    });
  });
});

describe('access tokens across a restart', () => {
  it('a token issued before a restart on the same database still works afterwards', async () => {
    const first = await createTestApp();
    let firstOpen = true;
    let second: TestApp | undefined;
    try {
      const client = await newClient(first, 'restart');
      const used = await token(first, client);
      expectWhoami(await whoami(first, client.org, used), client);
      const revoked = await token(first, client);
      expect((await revoke(first, client, { token: revoked })).status).toBe(200);
      const unusedYet = await token(first, client);
      await first.close();
      firstOpen = false;

      second = await createTestApp({ databaseUrl: first.databaseUrl, clock: first.clock });
      second.clock.advance(30);
      expectWhoami(await whoami(second, client.org, used), client);
      expectWhoami(await whoami(second, client.org, unusedYet), client);
      expectInvalidToken(await whoami(second, client.org, revoked), /revoked/i);
    } finally {
      if (firstOpen) await first.close();
      await second?.close();
    }
  });
});

// One application per process at a time (the PKCS#11 module has one owner), hence separate suites.
describe('access token configuration', () => {
  it('TOKEN_UNUSED_TIMEOUT_S and ACCESS_TOKEN_LIFETIME_S come from the configuration', async () => {
    const custom = await createTestApp({ env: { TOKEN_UNUSED_TIMEOUT_S: '60', ACCESS_TOKEN_LIFETIME_S: '600' } });
    try {
      const client = await newClient(custom, 'config');
      const issue = () => tokenRequest(custom.http, client.org, { grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.secret });

      const first = await issue();
      expect(first.status).toBe(200);
      expect(first.body.expires_in).toBe(600);
      const claims = decodeJws(first.body.access_token).claims;
      expect((claims.exp as number) - (claims.iat as number)).toBe(600);
      const second = await issue();
      expect(second.status).toBe(200);

      custom.clock.advance(59);
      expectWhoami(await whoami(custom, client.org, second.body.access_token), client);
      custom.clock.advance(2); // +61 s
      expectInvalidToken(await whoami(custom, client.org, first.body.access_token), /not used within 60 seconds/);
      custom.clock.advance(538); // +599 s
      expectWhoami(await whoami(custom, client.org, second.body.access_token), client);
      custom.clock.advance(2); // +601 s
      expectInvalidToken(await whoami(custom, client.org, second.body.access_token), /expired/i);
    } finally {
      await custom.close();
    }
  });
});
