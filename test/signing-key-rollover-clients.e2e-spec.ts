import { randomUUID } from 'node:crypto';
import * as client from 'openid-client';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { JwsService, SigningKeys } from '@app/auth';
import { TestApp, createOrganization, createSystemAccount, createTestApp, freePort, platformAdminToken } from '@app/testing';

/**
 * A token-signing key rollover, and the emergency withdrawal of a key (issue 32 item 4), as relying
 * parties see it (issue 26; DECISIONS 12.1), over real HTTP:
 * openid-client 6, unchanged, validates the id_token signature of each key against JWKS (its
 * non-repudiation checks), a resource server with jose's remote JWKS set fetches JWKS again when a
 * new `kid` appears and verifies access tokens of both keys, and token traffic running through the
 * activation sees no failed request. The publication delay is 1 s here; the FakeClock moves 2 s,
 * well inside openid-client's clock tolerance.
 */
describe('relying parties across a token-signing key rollover', () => {
  let t: TestApp;
  let base: string;
  let admin: string;
  let org: string;
  let account: { clientId: string; secret: string };
  let issuer: string;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ env: { AUTH_BASE_URL: base, PUBLIC_BASE_URL: base, JWKS_PUBLICATION_DELAY_S: '1' } });
    await t.app.listen(port, '127.0.0.1');
    admin = await platformAdminToken(t.http);
    org = `rollover_${Date.now().toString(36)}`;
    await createOrganization(t.http, admin, org);
    account = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
    issuer = `${base}/authentication/customer/${org}`;
  });
  afterAll(() => t.close());

  /** A relying party that checks the id_token's signature against the issuer's JWKS. */
  const relyingParty = () =>
    client.discovery(new URL(issuer), account.clientId, {}, client.ClientSecretPost(account.secret), {
      execute: [client.allowInsecureRequests, client.enableNonRepudiationChecks],
    });

  /**
   * A client credentials grant whose id_token openid-client checks against JWKS: genericGrantRequest
   * runs the non-repudiation check on an id_token; clientCredentialsGrant ignores the id_token.
   */
  const grant = async (config: client.Configuration) => client.genericGrantRequest(config, 'client_credentials', {});

  const whoami = async (accessToken: string) => (await fetch(`${issuer}/whoami`, { headers: { Authorization: `Bearer ${accessToken}` } })).status;

  /** Generates a next key and activates it once the publication delay has passed; answers its kid. */
  async function rollOver(): Promise<string> {
    const generated = await t.http.post('/admin/v1/signing-keys').auth(admin, { type: 'bearer' }).send({ algorithm: 'EC-P256' });
    expect(generated.status).toBe(201);
    t.clock.advance(2);
    const activated = await t.http.post(`/admin/v1/signing-keys/${generated.body.kid}/activate`).auth(admin, { type: 'bearer' }).send({});
    expect(activated.status).toBe(200);
    expect(activated.body).toMatchObject({ kid: generated.body.kid, state: 'active' });
    return generated.body.kid as string;
  }

  it('openid-client validates id_tokens of the old and the new key; a resource server refreshes JWKS and accepts access tokens of both', async () => {
    const resourceServerKeys = createRemoteJWKSet(new URL(`${issuer}/.well-known/jwks.json`), { cooldownDuration: 0 });
    const before = await grant(await relyingParty());
    const oldKid = decodeProtectedHeader(before.id_token!).kid;
    // The resource server caches JWKS as it is now: the old key alone.
    expect((await jwtVerify(before.access_token, resourceServerKeys, { issuer, typ: 'at+jwt' })).protectedHeader.kid).toBe(oldKid);

    const newKid = await rollOver();
    expect(newKid).not.toBe(oldKid);

    // openid-client verified the new id_token's signature with a key it found in JWKS by its kid.
    const after = await grant(await relyingParty());
    expect(decodeProtectedHeader(after.id_token!).kid).toBe(newKid);
    expect(after.claims()).toMatchObject({ iss: issuer, sub: account.clientId, aud: account.clientId });
    expect(decodeProtectedHeader(after.access_token).kid).toBe(newKid);

    // An unknown kid makes the resource server fetch JWKS again; the old key is still published.
    expect((await jwtVerify(after.access_token, resourceServerKeys, { issuer, typ: 'at+jwt' })).protectedHeader.kid).toBe(newKid);
    expect((await jwtVerify(before.access_token, resourceServerKeys, { issuer, typ: 'at+jwt' })).protectedHeader.kid).toBe(oldKid);
    expect(await whoami(before.access_token)).toBe(200);
    expect(await whoami(after.access_token)).toBe(200);
  });

  it('a rollover under token traffic: every token request and every use of a token succeeds', async () => {
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: account.clientId, client_secret: account.secret });
    const failures: string[] = [];
    const kids = new Set<string>();
    let rolledOver = false;
    let afterRollover = 0;
    // Bounded: four loops of token + use, each ending 10 rounds after the activation or at 200 rounds.
    const loop = async () => {
      for (let round = 0; round < 200 && afterRollover < 40; round++) {
        const answer = await fetch(`${issuer}/token`, { method: 'POST', body: form });
        if (answer.status !== 200) {
          failures.push(`token ${answer.status}`);
          continue;
        }
        const { access_token: accessToken } = (await answer.json()) as { access_token: string };
        kids.add(decodeProtectedHeader(accessToken).kid!);
        const used = await whoami(accessToken);
        if (used !== 200) failures.push(`whoami ${used}`);
        if (rolledOver) afterRollover++;
      }
    };
    const traffic = Promise.all([loop(), loop(), loop(), loop()]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const newKid = await rollOver();
    rolledOver = true;
    await traffic;
    expect(failures).toEqual([]);
    expect(afterRollover).toBeGreaterThanOrEqual(40);
    // Tokens were signed by the key before the rollover and by the new one after it.
    expect(kids.has(newKid)).toBe(true);
    expect(kids.size).toBeGreaterThanOrEqual(2);
  });

  it('a compromised-key drill (issue 32 item 4): after the withdrawal the relying parties, once they fetched JWKS again, and both instances refuse the key; new tokens verify', async () => {
    const other = await createTestApp({
      env: { AUTH_BASE_URL: base, PUBLIC_BASE_URL: base, JWKS_PUBLICATION_DELAY_S: '1' },
      databaseUrl: t.databaseUrl,
      clock: t.clock,
      shareHsmWith: t,
    });
    try {
      const instances = [t, other];
      const introspect = (app: TestApp, token: string) =>
        app.http.post(`/authentication/customer/${org}/introspect`).type('form').send({ token, client_id: account.clientId, client_secret: account.secret });
      const whoamiOn = (app: TestApp, token: string) => app.http.get(`/authentication/customer/${org}/whoami`).auth(token, { type: 'bearer' });
      const kidsOn = async (app: TestApp) =>
        ((await app.http.get(`/authentication/customer/${org}/.well-known/jwks.json`).expect(200)).body.keys as Array<{ kid: string }>).map((k) => k.kid);

      const before = await grant(await relyingParty());
      const compromisedKid = decodeProtectedHeader(before.access_token).kid!;
      // What a thief of the key could sign after the withdrawal: the key as it signs.
      const compromised = t.app.get(SigningKeys).active();
      expect(compromised.kid).toBe(compromisedKid);
      const cachedKeys = createRemoteJWKSet(new URL(`${issuer}/.well-known/jwks.json`), { cooldownDuration: 0 });
      expect((await jwtVerify(before.access_token, cachedKeys, { issuer, typ: 'at+jwt' })).protectedHeader.kid).toBe(compromisedKid);
      for (const app of instances) {
        expect((await whoamiOn(app, before.access_token)).status).toBe(200);
        expect((await introspect(app, before.access_token)).body).toMatchObject({ active: true });
      }

      // What the thief could do until the withdrawal: openid-client accepts an id_token it signed.
      const forge = async () => {
        const now = Math.floor(t.clock.now().getTime() / 1000);
        const claims = { iss: issuer, sub: account.clientId, aud: account.clientId, iat: now, exp: now + 600, org };
        const jws = t.app.get(JwsService);
        return {
          id_token: await jws.sign('JWT', claims, compromised),
          access_token: await jws.sign('at+jwt', { ...claims, aud: base, jti: randomUUID() }, compromised),
          token_type: 'Bearer',
          expires_in: 600,
        };
      };
      /** A relying party whose token endpoint answers `body` (a forged token response). */
      const answering = async (body: Record<string, unknown>) => {
        const config = await relyingParty();
        config[client.customFetch] = async (url, options) =>
          url.endsWith('/token') ? new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } }) : fetch(url, options);
        return config;
      };
      expect(decodeProtectedHeader((await grant(await answering(await forge()))).id_token!).kid).toBe(compromisedKid);

      const withdrawn = await t.http
        .post(`/admin/v1/signing-keys/${compromisedKid}/withdraw`)
        .auth(admin, { type: 'bearer' })
        .send({ reason: 'drill: HSM backup tape lost' });
      expect(withdrawn.status).toBe(200);
      expect(withdrawn.body).toMatchObject({
        kid: compromisedKid,
        state: 'retired',
        withdrawn: t.clock.now().toISOString(),
        withdrawReason: 'drill: HSM backup tape lost',
        notAfter: t.clock.now().toISOString(),
        replacedBy: { state: 'active', activated: t.clock.now().toISOString() },
      });
      const newKid = withdrawn.body.replacedBy.kid as string;
      expect(newKid).not.toBe(compromisedKid);

      // Both instances: out of JWKS (the other hears of it through the change feed), its access token refused.
      for (const app of instances) {
        expect(await eventually(async () => !(await kidsOn(app)).includes(compromisedKid))).toBe(true);
        expect(await kidsOn(app)).toContain(newKid);
        const refused = await whoamiOn(app, before.access_token);
        expect(refused.status).toBe(401);
        expect(refused.headers['www-authenticate']).toContain('error="invalid_token"');
        expect((await introspect(app, before.access_token)).body).toEqual({ active: false });
      }

      // jose, fetching JWKS again, finds no key for the withdrawn kid: its access token and a forged one are refused.
      const refetched = createRemoteJWKSet(new URL(`${issuer}/.well-known/jwks.json`), { cooldownDuration: 0 });
      await expect(jwtVerify(before.access_token, refetched, { issuer, typ: 'at+jwt' })).rejects.toMatchObject({ code: 'ERR_JWKS_NO_MATCHING_KEY' });
      const forged = await forge();
      await expect(jwtVerify(forged.access_token, refetched, { issuer, typ: 'at+jwt' })).rejects.toMatchObject({ code: 'ERR_JWKS_NO_MATCHING_KEY' });
      // openid-client, handed a token response with an id_token the withdrawn key signed, looks for its kid in JWKS and refuses it.
      await expect(grant(await answering(forged))).rejects.toThrow('error when selecting a JWT verification key, no applicable keys found');
      for (const app of instances) expect((await whoamiOn(app, forged.access_token)).status).toBe(401);

      // New tokens: signed by the new key at once, verified by openid-client and jose, accepted on both instances.
      const after = await grant(await relyingParty());
      expect(decodeProtectedHeader(after.id_token!).kid).toBe(newKid);
      expect(after.claims()).toMatchObject({ iss: issuer, sub: account.clientId, aud: account.clientId });
      expect(decodeProtectedHeader(after.access_token).kid).toBe(newKid);
      expect((await jwtVerify(after.access_token, refetched, { issuer, typ: 'at+jwt' })).protectedHeader.kid).toBe(newKid);
      for (const app of instances) expect((await whoamiOn(app, after.access_token)).status).toBe(200);

      const events = await t.db.query<{ code: number; action: string; target: string; details: Record<string, unknown> }>(
        "SELECT code, action, target, details FROM audit_events WHERE action LIKE 'signing_key.%' AND (target = $1 OR target = $2) ORDER BY id",
        [compromisedKid, newKid],
      );
      expect(events.rows.slice(-3)).toEqual([
        { code: 81007, action: 'signing_key.withdraw', target: compromisedKid, details: { reason: 'drill: HSM backup tape lost', replacedBy: newKid } },
        { code: 81001, action: 'signing_key.generate', target: newKid, details: expect.objectContaining({ algorithm: 'ES256' }) },
        { code: 81002, action: 'signing_key.activate', target: newKid, details: { replaces: compromisedKid, withdrawal: true } },
      ]);
    } finally {
      await other.close();
    }
  });

  /** The other instance hears of a change within milliseconds (the change feed); allow up to two seconds. */
  async function eventually(check: () => Promise<boolean>): Promise<boolean> {
    for (let i = 0; i < 40; i++) {
      if (await check()) return true;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return false;
  }
});
