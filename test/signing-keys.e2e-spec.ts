import { createHash, createPublicKey, verify } from 'node:crypto';
import {
  CreatedAccount,
  TestApp,
  createOrganization,
  createSystemAccount,
  createTestApp,
  expectScimError,
  platformAdminToken,
  tokenBySecret,
} from '@app/testing';
import { KeyStore } from '@app/hsm';
import { ChangeFeed } from '@app/persistence';

/**
 * Token-signing key rollover (issue 26, part 1; issue 34 items 1 and 2; DECISIONS 12.1): a next key
 * is published in JWKS before it signs, activation waits for the publication delay, the key it
 * replaces stays published until the last token it signed has expired (plus a skew), no instance
 * signs with a retired key, even without its change feed, and the bearer guard and introspection
 * accept every published key.
 */

const PUBLICATION_DELAY_S = 60;
const KEYS = '/admin/v1/signing-keys';
/** A key's last token expiry is reserved this far ahead of its tokens (SigningKeys RESERVE_AHEAD_S). */
const RESERVE_AHEAD_S = 10;
/** A retired key stays published this long after its last token's expiry (SigningKeys RETIRED_KEY_SKEW_S). */
const RETIRED_KEY_SKEW_S = 30;

interface Jwk {
  kid: string;
  kty: string;
  alg: string;
  use: string;
  crv?: string;
  x?: string;
  y?: string;
  n?: string;
  e?: string;
}

function header(jws: string): { alg: string; kid: string; typ: string } {
  return JSON.parse(Buffer.from(jws.split('.')[0], 'base64url').toString('utf8')) as { alg: string; kid: string; typ: string };
}

/** RFC 7638: SHA-256 over the required members in lexicographic order. */
function thumbprint(jwk: Jwk): string {
  const members = jwk.kty === 'EC' ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y } : { e: jwk.e, kty: jwk.kty, n: jwk.n };
  return createHash('sha256').update(JSON.stringify(members)).digest('base64url');
}

function expiryOf(jws: string): number {
  return (JSON.parse(Buffer.from(jws.split('.')[1], 'base64url').toString('utf8')) as { exp: number }).exp * 1000;
}

function verifiesWith(jws: string, jwk: Jwk): boolean {
  const [h, p, s] = jws.split('.');
  const key = createPublicKey({ key: { ...jwk }, format: 'jwk' });
  return verify('sha256', Buffer.from(`${h}.${p}`), jwk.kty === 'EC' ? { key, dsaEncoding: 'ieee-p1363' } : key, Buffer.from(s, 'base64url'));
}

describe('token-signing key rollover (DECISIONS 12.1)', () => {
  let t: TestApp;
  let client: CreatedAccount & { org: string };
  let sequence = 0;

  const admin = () => platformAdminToken(t.http);
  const jwks = async (org = client.org) => {
    const response = await t.http.get(`/authentication/customer/${org}/.well-known/jwks.json`).expect(200);
    return response.body.keys as Jwk[];
  };
  const clientToken = () => tokenBySecret(t.http, client.org, client.clientId, client.secret);
  const whoami = (token: string) => t.http.get(`/authentication/customer/${client.org}/whoami`).auth(token, { type: 'bearer' });
  const introspect = (token: string) =>
    t.http.post(`/authentication/customer/${client.org}/introspect`).type('form').send({ token, client_id: client.clientId, client_secret: client.secret });
  const generate = async (body: Record<string, unknown>) =>
    t.http
      .post(KEYS)
      .auth(await admin(), { type: 'bearer' })
      .send(body);
  const activate = async (kid: string, body: Record<string, unknown> = {}) =>
    t.http
      .post(`${KEYS}/${kid}/activate`)
      .auth(await admin(), { type: 'bearer' })
      .send(body);
  const retire = async (kid: string) =>
    t.http
      .post(`${KEYS}/${kid}/retire`)
      .auth(await admin(), { type: 'bearer' })
      .send({});
  const list = async () =>
    (
      await t.http
        .get(KEYS)
        .auth(await admin(), { type: 'bearer' })
        .expect(200)
    ).body.Resources as Array<Record<string, unknown>>;

  beforeAll(async () => {
    t = await createTestApp({ env: { JWKS_PUBLICATION_DELAY_S: String(PUBLICATION_DELAY_S) } });
    const token = await admin();
    const org = `keys_${Date.now().toString(36)}`;
    await createOrganization(t.http, token, org);
    client = { ...(await createSystemAccount(t.http, token, org, { role: 'Issuance' })), org };
  });
  afterAll(() => t.close());

  it('the first start publishes JWT_KEY alone and registers it as the active key', async () => {
    const keys = await jwks();
    expect(keys).toHaveLength(1);
    expect(keys[0].kid).toBe(thumbprint(keys[0]));
    expect(header(await clientToken()).kid).toBe(keys[0].kid);
    expect(await list()).toEqual([expect.objectContaining({ kid: keys[0].kid, state: 'active', algorithm: keys[0].alg, hsmLabel: 'JWT_KEY' })]);
  });

  it('a rollover: next key published first, activation after the publication delay, the old key published until its tokens expire', async () => {
    const [old] = await jwks();
    const oldToken = await clientToken();
    expect((await whoami(oldToken)).status).toBe(200);

    const generated = await generate({ algorithm: 'EC-P256' });
    expect(generated.status).toBe(201);
    const next = generated.body as { kid: string; state: string; algorithm: string; activatableAt: string; hsmLabel: string };
    expect(next).toMatchObject({ state: 'next', algorithm: 'ES256', hsmLabel: expect.stringMatching(/^JWT_KEY\/[0-9a-f]{16}$/) });
    expect(new Date(next.activatableAt).getTime()).toBe(t.clock.now().getTime() + PUBLICATION_DELAY_S * 1000);

    // Published at once, not signing yet.
    const published = await jwks();
    expect(published.map((k) => k.kid).sort()).toEqual([old.kid, next.kid].sort());
    const newJwk = published.find((k) => k.kid === next.kid)!;
    expect(newJwk.kid).toBe(thumbprint(newJwk));
    expect(header(await clientToken()).kid).toBe(old.kid);

    // Before the delay: refused, nothing changed.
    t.clock.advance(PUBLICATION_DELAY_S - 1);
    const early = await activate(next.kid);
    expectScimError(early, 409, undefined, `cannot sign before ${next.activatableAt}`);
    const lastOldToken = await clientToken();
    expect(header(lastOldToken).kid).toBe(old.kid);
    expect((await whoami(lastOldToken)).status).toBe(200);

    t.clock.advance(1);
    const activated = await activate(next.kid);
    expect(activated.status).toBe(200);
    expect(activated.body).toMatchObject({ kid: next.kid, state: 'active' });

    const newToken = await clientToken();
    expect(header(newToken)).toMatchObject({ kid: next.kid, alg: 'ES256' });
    expect(verifiesWith(newToken, newJwk)).toBe(true);
    expect((await whoami(newToken)).status).toBe(200);

    // The old key's token keeps working, on the bearer guard and on introspection.
    expect((await whoami(oldToken)).status).toBe(200);
    expect((await introspect(oldToken)).body).toMatchObject({ active: true });
    expect((await introspect(newToken)).body).toMatchObject({ active: true });

    // Published until its last token (3600 s here) has expired, plus the skew: not for a fixed day.
    const states = Object.fromEntries((await list()).map((k) => [k.kid, k]));
    expect(states[next.kid]).toMatchObject({ state: 'active' });
    expect(states[old.kid]).toMatchObject({ state: 'retired' });
    const notAfter = new Date(states[old.kid].notAfter as string).getTime();
    expect(notAfter).toBeGreaterThanOrEqual(expiryOf(lastOldToken) + RETIRED_KEY_SKEW_S * 1000);
    expect(notAfter).toBeLessThanOrEqual(expiryOf(lastOldToken) + (RESERVE_AHEAD_S + RETIRED_KEY_SKEW_S) * 1000);
    expect((await jwks()).map((k) => k.kid).sort()).toEqual([old.kid, next.kid].sort());

    // Retiring the only active key is refused.
    expectScimError(await retire(next.kid), 409, undefined, 'the active key');

    t.clock.set(new Date(notAfter - 1000));
    expect((await jwks()).map((k) => k.kid)).toContain(old.kid);
    t.clock.set(new Date(notAfter));
    expect((await jwks()).map((k) => k.kid)).toEqual([next.kid]);
    expect((await whoami(oldToken)).status).toBe(401);

    const events = await t.db.query<{ code: number; action: string; target: string }>(
      "SELECT code, action, target FROM audit_events WHERE action LIKE 'signing_key.%' ORDER BY id",
    );
    expect(events.rows).toEqual([
      { code: 81004, action: 'signing_key.register', target: old.kid },
      { code: 81001, action: 'signing_key.generate', target: next.kid },
      { code: 81003, action: 'signing_key.retire', target: old.kid },
      { code: 81002, action: 'signing_key.activate', target: next.kid },
    ]);
  });

  it('an RSA-3072 next key signs RS256 once active, and a next key can be withdrawn', async () => {
    const rsa = await generate({ algorithm: 'RSA-3072' });
    expect(rsa.status).toBe(201);
    expect(rsa.body).toMatchObject({ state: 'next', algorithm: 'RS256' });
    const withdrawn = await generate({ algorithm: 'EC-P256' });
    expect((await jwks()).map((k) => k.kid)).toEqual(expect.arrayContaining([rsa.body.kid, withdrawn.body.kid]));

    const retired = await retire(withdrawn.body.kid);
    expect(retired.status).toBe(200);
    expect(retired.body).toMatchObject({ kid: withdrawn.body.kid, state: 'retired' });
    // It signed nothing: gone from JWKS at once, and it can never become active.
    expect((await jwks()).map((k) => k.kid)).not.toContain(withdrawn.body.kid);
    expectScimError(await activate(withdrawn.body.kid), 409, undefined, 'is retired');

    t.clock.advance(PUBLICATION_DELAY_S);
    expect((await activate(rsa.body.kid)).status).toBe(200);
    const token = await clientToken();
    expect(header(token)).toMatchObject({ kid: rsa.body.kid, alg: 'RS256' });
    const rsaJwk = (await jwks()).find((k) => k.kid === rsa.body.kid)!;
    expect(rsaJwk).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
    expect(verifiesWith(token, rsaJwk)).toBe(true);
    expect((await whoami(token)).status).toBe(200);
    expect((await introspect(token)).body).toMatchObject({ active: true });
  });

  it("a retired key's HSM object is destroyed on request once it is no longer published; JWT_KEY and published keys stay", async () => {
    const rows = await list();
    const destroy = async (kid: string) => t.http.delete(`${KEYS}/${kid}`).auth(await admin(), { type: 'bearer' });
    const jwtKey = rows.find((k) => k.hsmLabel === 'JWT_KEY')!;
    const active = rows.find((k) => k.state === 'active')!;
    const stillPublished = rows.find((k) => k.state === 'retired' && k.hsmLabel !== 'JWT_KEY' && new Date(k.notAfter as string) > t.clock.now())!;
    const unpublished = rows.find((k) => k.state === 'retired' && new Date(k.notAfter as string) <= t.clock.now() && k.hsmLabel !== 'JWT_KEY')!;

    expectScimError(await destroy(active.kid as string), 409, undefined, 'only a retired key');
    expectScimError(await destroy(stillPublished.kid as string), 409, undefined, `published in JWKS until ${stillPublished.notAfter as string}`);
    expectScimError(await destroy(jwtKey.kid as string), 409, undefined, 'JWT_KEY_LABEL');
    expectScimError(await destroy('x'.repeat(43)), 404, undefined, 'No token-signing key has kid');
    expect(await t.app.get(KeyStore).findKeyPair(unpublished.hsmLabel as string)).toBeDefined();

    const destroyed = await destroy(unpublished.kid as string);
    expect(destroyed.status).toBe(204);
    expect((await list()).map((k) => k.kid)).not.toContain(unpublished.kid);
    expect(await t.app.get(KeyStore).findKeyPair(unpublished.hsmLabel as string)).toBeUndefined();
    expectScimError(await destroy(unpublished.kid as string), 404, undefined, 'No token-signing key has kid');
    const events = await t.db.query<{ code: number; target: string }>("SELECT code, target FROM audit_events WHERE action = 'signing_key.destroy'");
    expect(events.rows).toEqual([{ code: 81006, target: unpublished.kid }]);
  });

  it('activation at a stated time: refused before the publication delay, then the key signs from that time', async () => {
    const [before] = (await list()).filter((k) => k.state === 'active');
    const next = (await generate({ algorithm: 'EC-P256' })).body as { kid: string; activatableAt: string };
    const tooEarly = new Date(new Date(next.activatableAt).getTime() - 1000).toISOString();
    expectScimError(await activate(next.kid, { at: tooEarly }), 409, undefined, `cannot sign before ${next.activatableAt}`);
    expectScimError(await activate(next.kid, { at: 'tomorrow' }), 400, 'invalidValue', 'at:');

    const at = new Date(new Date(next.activatableAt).getTime() + 10_000).toISOString();
    const scheduled = await activate(next.kid, { at });
    expect(scheduled.status).toBe(200);
    expect(scheduled.body).toMatchObject({ kid: next.kid, state: 'next', activateAt: at });

    // Past the publication delay, before the stated time: the old key still signs.
    t.clock.advance(PUBLICATION_DELAY_S + 9);
    expect(header(await clientToken()).kid).toBe(before.kid);
    t.clock.advance(1);
    let kid = '';
    for (let i = 0; i < 40 && kid !== next.kid; i++) {
      kid = header(await clientToken()).kid;
      if (kid !== next.kid) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(kid).toBe(next.kid);
    const states = Object.fromEntries((await list()).map((k) => [k.kid, k]));
    expect(states[next.kid]).toMatchObject({ state: 'active', activated: at });
    expect(states[before.kid as string]).toMatchObject({ state: 'retired' });
    const events = await t.db.query<{ action: string; actor: string; target: string }>(
      "SELECT action, actor, target FROM audit_events WHERE action IN ('signing_key.schedule', 'signing_key.activate', 'signing_key.retire') AND (target = $1 OR actor = 'system') ORDER BY id",
      [next.kid],
    );
    expect(events.rows).toEqual([
      { action: 'signing_key.schedule', actor: 'platform-admin', target: next.kid },
      { action: 'signing_key.retire', actor: 'system', target: before.kid },
      { action: 'signing_key.activate', actor: 'system', target: next.kid },
    ]);
  });

  it('emergency withdrawal of a next key and of a retired key still published: out of JWKS at once, audited; a second withdrawal changes nothing', async () => {
    const withdraw = async (kid: string, body: Record<string, unknown> = { reason: 'believed compromised' }) =>
      t.http
        .post(`${KEYS}/${kid}/withdraw`)
        .auth(await admin(), { type: 'bearer' })
        .send(body);
    const next = (await generate({ algorithm: 'EC-P256' })).body as { kid: string };
    const active = (await list()).find((k) => k.state === 'active')!;
    const stillPublished = (await list()).find((k) => k.state === 'retired' && new Date(k.notAfter as string) > t.clock.now())!;
    expect(stillPublished).toBeDefined();
    expect((await jwks()).map((k) => k.kid)).toEqual(expect.arrayContaining([next.kid, stillPublished.kid as string]));

    const nextWithdrawn = await withdraw(next.kid);
    expect(nextWithdrawn.status).toBe(200);
    expect(nextWithdrawn.body).toMatchObject({
      kid: next.kid,
      state: 'retired',
      withdrawReason: 'believed compromised',
      notAfter: t.clock.now().toISOString(),
    });
    expect(nextWithdrawn.body.replacedBy).toBeUndefined();
    const retiredWithdrawn = await withdraw(stillPublished.kid as string, { reason: 'HSM backup lost' });
    expect(retiredWithdrawn.status).toBe(200);
    expect(retiredWithdrawn.body).toMatchObject({
      kid: stillPublished.kid,
      state: 'retired',
      withdrawn: t.clock.now().toISOString(),
      notAfter: t.clock.now().toISOString(),
    });
    const published = (await jwks()).map((k) => k.kid);
    expect(published).toContain(active.kid);
    expect(published).not.toContain(next.kid);
    expect(published).not.toContain(retiredWithdrawn.body.kid);
    expectScimError(await activate(next.kid), 409, undefined, 'is retired');

    // Again: answered as it is, nothing recorded twice.
    const again = await withdraw(next.kid, { reason: 'twice' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ kid: next.kid, withdrawReason: 'believed compromised' });
    const events = await t.db.query<{ code: number; target: string; actor: string; details: Record<string, unknown> }>(
      "SELECT code, target, actor, details FROM audit_events WHERE action = 'signing_key.withdraw' ORDER BY id",
    );
    expect(events.rows).toEqual([
      { code: 81007, target: next.kid, actor: 'platform-admin', details: { reason: 'believed compromised' } },
      { code: 81007, target: stillPublished.kid, actor: 'platform-admin', details: { reason: 'HSM backup lost' } },
    ]);
    expect(header(await clientToken()).kid).toBe(active.kid);

    // A withdrawn key's HSM object can be destroyed at once.
    const destroyed = await t.http.delete(`${KEYS}/${stillPublished.kid as string}`).auth(await admin(), { type: 'bearer' });
    expect(destroyed.status).toBe(204);
    expect(await t.app.get(KeyStore).findKeyPair(stillPublished.hsmLabel as string)).toBeUndefined();
  });

  describe('bad input', () => {
    it('an unknown kid is 404, on activate, retire and withdraw', async () => {
      const unknown = 'x'.repeat(43);
      expectScimError(await activate(unknown), 404, undefined, `No token-signing key has kid ${unknown}`);
      expectScimError(await retire(unknown), 404, undefined, `No token-signing key has kid ${unknown}`);
      const withdrawn = await t.http
        .post(`${KEYS}/${unknown}/withdraw`)
        .auth(await admin(), { type: 'bearer' })
        .send({ reason: 'compromised' });
      expectScimError(withdrawn, 404, undefined, `No token-signing key has kid ${unknown}`);
      expectScimError(await activate('not-a-kid'), 404, undefined, 'the path parameter kid must be a key id');
    });

    it('an algorithm other than EC-P256 or RSA-3072 is 400, and nothing is generated', async () => {
      const before = await list();
      for (const body of [{ algorithm: 'EC-P384' }, { algorithm: 'HS256' }, {}, { algorithm: 'EC-P256', extra: true }]) {
        expectScimError(await generate(body), 400, 'invalidValue', /algorithm|extra/);
      }
      expect(await list()).toEqual(before);
    });

    it('a withdrawal without a reason, or with another member, is 400, and nothing changes', async () => {
      const before = await list();
      const active = before.find((k) => k.state === 'active')!;
      for (const body of [{}, { reason: '' }, { reason: '   ' }, { reason: 'x'.repeat(501) }, { reason: 42 }, { reason: 'ok', now: true }]) {
        const response = await t.http
          .post(`${KEYS}/${active.kid as string}/withdraw`)
          .auth(await admin(), { type: 'bearer' })
          .send(body);
        expectScimError(response, 400, 'invalidValue', /reason|now/);
      }
      expect(await list()).toEqual(before);
    });

    it('an organization administrator is refused with 403', async () => {
      sequence += 1;
      const orgAdmin = await createSystemAccount(t.http, await admin(), client.org, {
        suffix: `admin${sequence}`,
        role: 'Administration',
        organizationAdministrator: true,
      });
      const token = await tokenBySecret(t.http, client.org, orgAdmin.clientId, orgAdmin.secret);
      expectScimError(await t.http.get(KEYS).auth(token, { type: 'bearer' }), 403, undefined, /platform administrator/i);
      expectScimError(await t.http.post(KEYS).auth(token, { type: 'bearer' }).send({ algorithm: 'EC-P256' }), 403, undefined, /platform administrator/i);
      const active = (await list()).find((k) => k.state === 'active')!;
      expectScimError(
        await t.http
          .post(`${KEYS}/${active.kid as string}/withdraw`)
          .auth(token, { type: 'bearer' })
          .send({ reason: 'compromised' }),
        403,
        undefined,
        /platform administrator/i,
      );
      expect((await list()).find((k) => k.kid === active.kid)).toMatchObject({ state: 'active' });
    });
  });
});

describe('a retired key with short-lived tokens (issue 34 item 1; DECISIONS 12.1)', () => {
  let t: TestApp;
  let client: CreatedAccount & { org: string };
  const LIFETIME_S = 60;

  beforeAll(async () => {
    t = await createTestApp({ env: { JWKS_PUBLICATION_DELAY_S: String(PUBLICATION_DELAY_S), ACCESS_TOKEN_LIFETIME_S: String(LIFETIME_S) } });
    const org = `keys60_${Date.now().toString(36)}`;
    await createOrganization(t.http, await platformAdminToken(t.http), org);
    client = { ...(await createSystemAccount(t.http, await platformAdminToken(t.http), org, { role: 'Issuance' })), org };
  });
  afterAll(() => t.close());

  const kids = async () =>
    ((await t.http.get(`/authentication/customer/${client.org}/.well-known/jwks.json`).expect(200)).body.keys as Jwk[]).map((k) => k.kid);
  const whoami = (token: string) => t.http.get(`/authentication/customer/${client.org}/whoami`).auth(token, { type: 'bearer' });
  const introspect = (token: string) =>
    t.http.post(`/authentication/customer/${client.org}/introspect`).type('form').send({ token, client_id: client.clientId, client_secret: client.secret });

  it('with a 60 s token lifetime, the retired key leaves JWKS within a minute of its last token expiry, and its token is refused after', async () => {
    const admin = await platformAdminToken(t.http);
    const [old] = await kids();
    const next = (await t.http.post(KEYS).auth(admin, { type: 'bearer' }).send({ algorithm: 'EC-P256' }).expect(201)).body as { kid: string };
    t.clock.advance(PUBLICATION_DELAY_S);
    const last = await tokenBySecret(t.http, client.org, client.clientId, client.secret);
    expect(header(last).kid).toBe(old);
    expect(expiryOf(last)).toBe(Math.floor(t.clock.now().getTime() / 1000) * 1000 + LIFETIME_S * 1000);
    expect((await whoami(last)).status).toBe(200);
    await t.http
      .post(`${KEYS}/${next.kid}/activate`)
      .auth(await platformAdminToken(t.http), { type: 'bearer' })
      .send({})
      .expect(200);
    expect(header(await tokenBySecret(t.http, client.org, client.clientId, client.secret)).kid).toBe(next.kid);

    const rows = (
      await t.http
        .get(KEYS)
        .auth(await platformAdminToken(t.http), { type: 'bearer' })
        .expect(200)
    ).body.Resources as Array<{
      kid: string;
      notAfter: string;
      lastTokenExpires: string;
    }>;
    const retired = rows.find((k) => k.kid === old)!;
    const notAfter = new Date(retired.notAfter).getTime();
    expect(new Date(retired.lastTokenExpires).getTime()).toBeGreaterThanOrEqual(expiryOf(last));
    expect(notAfter - expiryOf(last)).toBeGreaterThanOrEqual(RETIRED_KEY_SKEW_S * 1000);
    expect(notAfter - expiryOf(last)).toBeLessThanOrEqual(60_000);

    // Still published, and its token valid, until the token expires.
    t.clock.set(new Date(expiryOf(last) - 1000));
    expect((await kids()).sort()).toEqual([old, next.kid].sort());
    expect((await whoami(last)).status).toBe(200);
    expect((await introspect(last)).body).toMatchObject({ active: true });
    t.clock.set(new Date(notAfter - 1));
    expect(await kids()).toContain(old);
    t.clock.set(new Date(notAfter));
    expect(await kids()).toEqual([next.kid]);
    const refused = await whoami(last);
    expect(refused.status).toBe(401);
    expect(refused.headers['www-authenticate']).toContain('error="invalid_token"');
    expect((await introspect(last)).body).toEqual({ active: false });
  });

  it('instances with different token lifetimes (60 s and 120 s): the retired key stays until the longer-lived token has expired, not longer', async () => {
    const longer = await createTestApp({
      env: { JWKS_PUBLICATION_DELAY_S: String(PUBLICATION_DELAY_S), ACCESS_TOKEN_LIFETIME_S: '120' },
      databaseUrl: t.databaseUrl,
      clock: t.clock,
      shareHsmWith: t,
    });
    try {
      const [old] = await kids();
      const next = (
        await t.http
          .post(KEYS)
          .auth(await platformAdminToken(t.http), { type: 'bearer' })
          .send({ algorithm: 'EC-P256' })
          .expect(201)
      ).body as { kid: string };
      t.clock.advance(PUBLICATION_DELAY_S);
      const long = await tokenBySecret(longer.http, client.org, client.clientId, client.secret);
      // A shorter-lived token issued after it does not lower what the key covers.
      const short = await tokenBySecret(t.http, client.org, client.clientId, client.secret);
      expect([header(long).kid, header(short).kid]).toEqual([old, old]);
      expect(expiryOf(long) - expiryOf(short)).toBe(60_000);
      await t.http
        .post(`${KEYS}/${next.kid}/activate`)
        .auth(await platformAdminToken(t.http), { type: 'bearer' })
        .send({})
        .expect(200);
      const retired = (
        (
          await t.http
            .get(KEYS)
            .auth(await platformAdminToken(t.http), { type: 'bearer' })
            .expect(200)
        ).body.Resources as Array<{ kid: string; notAfter: string }>
      ).find((k) => k.kid === old)!;
      const notAfter = new Date(retired.notAfter).getTime();
      expect(notAfter - expiryOf(long)).toBeGreaterThanOrEqual(RETIRED_KEY_SKEW_S * 1000);
      expect(notAfter - expiryOf(long)).toBeLessThanOrEqual((RESERVE_AHEAD_S + RETIRED_KEY_SKEW_S) * 1000);

      t.clock.set(new Date(expiryOf(long) - 1000));
      expect(await kids()).toContain(old);
      expect((await whoami(long)).status).toBe(200);
      t.clock.set(new Date(notAfter));
      expect(await kids()).toEqual([next.kid]);
      expect((await whoami(long)).status).toBe(401);
    } finally {
      await longer.close();
    }
  });
});

describe('token-signing key rollover on two instances (DECISIONS 12.1)', () => {
  let a: TestApp;
  let b: TestApp;
  let client: CreatedAccount & { org: string };

  beforeAll(async () => {
    const env = { JWKS_PUBLICATION_DELAY_S: String(PUBLICATION_DELAY_S) };
    a = await createTestApp({ env });
    b = await createTestApp({ env, databaseUrl: a.databaseUrl, clock: a.clock, shareHsmWith: a });
    const org = `keys2_${Date.now().toString(36)}`;
    await createOrganization(a.http, await platformAdminToken(a.http), org);
    client = { ...(await createSystemAccount(a.http, await platformAdminToken(a.http), org, { role: 'Issuance' })), org };
  });
  afterAll(async () => {
    await b.close();
    await a.close();
  });

  const kids = async (t: TestApp) =>
    ((await t.http.get(`/authentication/customer/${client.org}/.well-known/jwks.json`).expect(200)).body.keys as Jwk[]).map((k) => k.kid);
  const tokenOn = (t: TestApp) => tokenBySecret(t.http, client.org, client.clientId, client.secret);
  const whoami = (t: TestApp, token: string) => t.http.get(`/authentication/customer/${client.org}/whoami`).auth(token, { type: 'bearer' });

  /** The other instance hears of a change within milliseconds (the change feed); allow up to two seconds. */
  async function eventually(check: () => Promise<boolean>): Promise<boolean> {
    for (let i = 0; i < 40; i++) {
      if (await check()) return true;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return false;
  }

  it('the other instance publishes a next key and signs with it once it is activated; old tokens keep working on both', async () => {
    const [old] = await kids(b);
    const oldToken = await tokenOn(b);
    expect((await whoami(a, oldToken)).status).toBe(200);

    const admin = await platformAdminToken(a.http);
    const next = (await a.http.post(KEYS).auth(admin, { type: 'bearer' }).send({ algorithm: 'EC-P256' }).expect(201)).body as { kid: string };
    expect(await eventually(async () => (await kids(b)).includes(next.kid))).toBe(true);
    expect(header(await tokenOn(b)).kid).toBe(old);

    a.clock.advance(PUBLICATION_DELAY_S);
    await a.http
      .post(`${KEYS}/${next.kid}/activate`)
      .auth(await platformAdminToken(a.http), { type: 'bearer' })
      .send({})
      .expect(200);
    expect(await eventually(async () => header(await tokenOn(b)).kid === next.kid)).toBe(true);
    const newToken = await tokenOn(b);
    for (const t of [a, b]) {
      expect((await whoami(t, newToken)).status).toBe(200);
      expect((await whoami(t, oldToken)).status).toBe(200);
      expect((await kids(t)).sort()).toEqual([old, next.kid].sort());
    }
  });

  it('an instance whose change feed is cut at the activation signs no token with the retired key once the activate call has answered (issue 34 item 2)', async () => {
    const admin = await platformAdminToken(a.http);
    const [old] = (await a.http.get(KEYS).auth(admin, { type: 'bearer' }).expect(200)).body.Resources.filter((k: { state: string }) => k.state === 'active');
    const next = (await a.http.post(KEYS).auth(admin, { type: 'bearer' }).send({ algorithm: 'EC-P256' }).expect(201)).body as { kid: string };
    expect(await eventually(async () => (await kids(b)).includes(next.kid))).toBe(true);
    a.clock.advance(PUBLICATION_DELAY_S);
    // B signs with the old key and holds it in memory.
    expect(header(await tokenOn(b)).kid).toBe(old.kid);

    // Cut B's listening connection (only B's): B hears of nothing until it reconnects.
    const listener = (b.app.get(ChangeFeed) as unknown as { listener?: { processID?: number } }).listener;
    expect(listener?.processID).toEqual(expect.any(Number));
    const terminated = await a.db.query<{ done: boolean }>('SELECT pg_terminate_backend($1) AS done', [listener!.processID]);
    expect(terminated.rows).toEqual([{ done: true }]);
    await a.http
      .post(`${KEYS}/${next.kid}/activate`)
      .auth(await platformAdminToken(a.http), { type: 'bearer' })
      .send({})
      .expect(200);

    // Every token B issues from now on: 10 one after the other, then 20 at once; their rows name the new key too.
    const tokens: string[] = [];
    for (let i = 0; i < 10; i++) tokens.push(await tokenOn(b));
    tokens.push(...(await Promise.all(Array.from({ length: 20 }, () => tokenOn(b)))));
    expect(tokens.map((token) => header(token).kid).filter((kid) => kid !== next.kid)).toEqual([]);
    const jtis = tokens.map((token) => (JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8')) as { jti: string }).jti);
    const rows = await a.db.query<{ kid: string }>('SELECT DISTINCT kid FROM access_tokens WHERE jti = ANY($1::uuid[])', [jtis]);
    expect(rows.rows).toEqual([{ kid: next.kid }]);
    expect(await eventually(async () => b.app.get(ChangeFeed).live)).toBe(true);
  });

  it("a withdrawn key's token is refused at once by an instance whose change feed is down: its database read says so (issue 32 item 4)", async () => {
    const admin = await platformAdminToken(a.http);
    const token = await tokenOn(b);
    const kid = header(token).kid;
    expect((await whoami(b, token)).status).toBe(200);
    const feed = b.app.get(ChangeFeed);
    await feed.stop();
    try {
      expect(feed.live).toBe(false);
      const withdrawn = await a.http.post(`${KEYS}/${kid}/withdraw`).auth(admin, { type: 'bearer' }).send({ reason: 'drill' });
      expect(withdrawn.status).toBe(200);
      // B's keys in memory still hold the key as active; the token's row, read from the database, is refused.
      const refused = await whoami(b, token);
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toContain('The access token has been revoked.');
      // And B signs its next token with the new key (the database refuses the withdrawn one).
      expect(header(await tokenOn(b)).kid).toBe(withdrawn.body.replacedBy.kid);
    } finally {
      await feed.start();
    }
    expect((await whoami(b, token)).status).toBe(401);
  });
});
