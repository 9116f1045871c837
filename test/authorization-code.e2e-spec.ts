import {
  IssuedPerson,
  TestApp,
  authorizeQuery,
  cookiePair,
  createCardholder,
  createIssuingOrganization,
  createPersonWithCard,
  createSystemAccount,
  createTestApp,
  pkcePair,
  platformAdminToken,
  registerOidcClient,
  signIn,
  signOut,
  tokenRequest,
} from '@app/testing';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { SecretHasher } from '@app/accounts';
import { PurgeJob, SigningKeys } from '@app/auth';
import { AuthorizationGrantRepository, KEY_NOT_ACTIVE } from '../libs/auth/src/oidc/authorization-grant.repository';
import { Pkcs11Hsm } from '@app/hsm';
import { simulateModuleFailure } from '@app/hsm/testing';

/**
 * The authorization code flow for people end to end over HTTP (DECISIONS 15): a person signed in at
 * the hosted login page (password and one-time code), the authorization endpoint's code, its single
 * use decided by the database, the token endpoint's authorization_code and refresh_token grants,
 * the id_token's claims, and RP-initiated logout.
 */

const ORG = 'authz_code';
const ISSUER = `https://auth.example.test/authentication/customer/${ORG}`;
const REDIRECT = 'https://app.example.test/cb';
const PASSWORD = 'correct horse battery staple';

function claimsOf(jwt: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8')) as Record<string, unknown>;
}

describe('Authorization code flow (people)', () => {
  let t: TestApp;
  let admin: string;
  let jane: IssuedPerson;
  let cookie: string;
  let web: { clientId: string; secret: string };
  let spa: { clientId: string };
  let partner: { clientId: string; secret: string };

  beforeAll(async () => {
    t = await createTestApp();
    admin = await platformAdminToken(t.http);
    await createIssuingOrganization(t, admin, ORG, {});
    jane = await createPersonWithCard(t, admin, ORG, 'jane', { password: PASSWORD });
    web = await createSystemAccount(t.http, admin, ORG, { suffix: 'web', role: 'Cardholder' });
    await registerOidcClient(t.http, admin, ORG, web.clientId, {
      redirectUris: [REDIRECT],
      postLogoutRedirectUris: ['https://app.example.test/bye'],
      firstParty: true,
      refreshTokens: true,
    });
    spa = await createSystemAccount(t.http, admin, ORG, { suffix: 'spa', role: 'Cardholder' });
    await registerOidcClient(t.http, admin, ORG, spa.clientId, { redirectUris: [REDIRECT], publicClient: true, firstParty: true, refreshTokens: true });
    partner = await createSystemAccount(t.http, admin, ORG, { suffix: 'partner', role: 'Cardholder' });
    await registerOidcClient(t.http, admin, ORG, partner.clientId, { redirectUris: [REDIRECT] });
    cookie = (await signIn(t, { org: ORG, userName: 'jane', password: PASSWORD, totpSecret: jane.totpSecret })).cookie;
  }, 90_000);
  afterAll(() => t.close());

  const baseParameters = (clientId: string, challenge: string): [string, string][] => [
    ['response_type', 'code'],
    ['client_id', clientId],
    ['redirect_uri', REDIRECT],
    ['scope', 'openid'],
    ['state', 'st'],
    ['nonce', 'n-1'],
    ['code_challenge', challenge],
    ['code_challenge_method', 'S256'],
  ];

  /** The authorization request with the session cookie; answers the 303. */
  function authorize(clientId: string, challenge: string, extra: [string, string][] = [], sessionCookie = cookie) {
    const base = baseParameters(clientId, challenge);
    const names = new Set(extra.map(([name]) => name));
    const query = authorizeQuery([...base.filter(([name]) => !names.has(name)), ...extra]);
    return t.bare.get(`/authentication/customer/${ORG}/authorize?${query}`).set('Cookie', sessionCookie);
  }

  /** A code for the client (asserting the redirect's shape), with its verifier. */
  async function codeFor(clientId: string, extra: [string, string][] = [], sessionCookie = cookie): Promise<{ code: string; verifier: string }> {
    const { verifier, challenge } = pkcePair();
    const response = await authorize(clientId, challenge, extra, sessionCookie);
    expect(response.status).toBe(303);
    const location = new URL(response.headers.location);
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
    expect(location.searchParams.get('error')).toBeNull();
    expect(location.searchParams.get('state')).toBe('st');
    expect(location.searchParams.get('iss')).toBe(ISSUER);
    return { code: location.searchParams.get('code')!, verifier };
  }

  const exchange = (form: Record<string, string>) => tokenRequest(t.bare, ORG, { grant_type: 'authorization_code', redirect_uri: REDIRECT, ...form });
  const asWeb = (code: string, verifier: string) => exchange({ code, code_verifier: verifier, client_id: web.clientId, client_secret: web.secret });
  const asSpa = (code: string, verifier: string) => exchange({ code, code_verifier: verifier, client_id: spa.clientId });
  const refresh = (refreshToken: string, client: Record<string, string> = { client_id: spa.clientId }) =>
    tokenRequest(t.bare, ORG, { grant_type: 'refresh_token', refresh_token: refreshToken, ...client });
  /** The fields of a page's form: its hidden inputs by name. */
  const formFields = (html: string) =>
    Object.fromEntries([...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1], m[2].replace(/&amp;/g, '&')]));

  /** Posts the end-session confirmation page's form as the browser does, from this service's origin unless `headers` say otherwise. */
  function confirmLogout(
    page: { text: string; headers: Record<string, string | string[] | undefined> },
    session: string,
    headers: Record<string, string> = {},
    fields = formFields(page.text),
  ) {
    const formCookie = cookiePair(page.headers['set-cookie'], '__Host-Http-login-form');
    return t.bare
      .post(`/authentication/customer/${ORG}/end-session`)
      .set({
        Cookie: [session, formCookie].filter(Boolean).join('; '),
        Origin: new URL(t.config.authBaseUrl).origin,
        'Sec-Fetch-Site': 'same-origin',
        ...headers,
      })
      .type('form')
      .send(fields);
  }

  const whoami = (accessToken: string) => t.bare.get(`/authentication/customer/${ORG}/whoami`).auth(accessToken, { type: 'bearer' });

  it("a confidential client exchanges the code: the person's access token, and an id_token with nonce, auth_time, amr and acr", async () => {
    const { code, verifier } = await codeFor(web.clientId);
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const response = await asWeb(code, verifier);
    expect(response.status).toBe(200);
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.body).toEqual({
      access_token: expect.any(String),
      id_token: expect.any(String),
      refresh_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      token_type: 'Bearer',
      expires_in: 3600,
    });
    const idToken = claimsOf(response.body.id_token);
    const session = (await t.db.query<{ authenticated_at: Date }>('SELECT * FROM sign_in_sessions WHERE user_id = $1 AND ended_at IS NULL', [jane.id])).rows[0];
    expect(idToken).toEqual({
      iss: ISSUER,
      sub: 'jane',
      aud: web.clientId,
      azp: web.clientId,
      nonce: 'n-1',
      auth_time: expect.any(Number),
      amr: ['pwd', 'otp'],
      acr: 'urn:credential-platform:acr:mfa',
      iat: expect.any(Number),
      exp: (idToken.iat as number) + 3600,
      org: ORG,
    });
    expect(session).toBeDefined();
    expect(Math.abs((idToken.auth_time as number) - Math.floor(t.clock.now().getTime() / 1000))).toBeLessThan(120);
    const access = claimsOf(response.body.access_token);
    expect(access).toMatchObject({ iss: ISSUER, sub: 'jane', client_id: web.clientId, org: ORG, role: 'Cardholder' });
    const me = await whoami(response.body.access_token);
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ userName: 'jane', org: ORG, role: 'Cardholder' });
    // Only the code's hash is stored.
    const stored = await t.db.query('SELECT count(*)::int AS n FROM authorization_grants WHERE code_hash = $1::bytea OR redirect_uri = $2', [
      Buffer.from(code),
      code,
    ]);
    expect(stored.rows).toEqual([{ n: 0 }]);
    // The code's issue, then its redemption: the token.issue event of the tokens it gave, naming the grant.
    const events = await t.db.query<{ code: number; actor: string; method: string | null; grant: string }>(
      "SELECT code, actor, details->>'method' AS method, details->>'grantId' AS grant FROM audit_events WHERE org_id = $1 AND code IN (83010, 83011, 80001) AND actor = 'jane' ORDER BY id",
      [ORG],
    );
    expect(events.rows).toEqual([
      { code: 83010, actor: 'jane', method: null, grant: expect.stringMatching(/^[0-9a-f-]{36}$/) },
      { code: 80001, actor: 'jane', method: 'authorization_code', grant: events.rows[0].grant },
    ]);
  });

  it('a code used twice: invalid_grant, and the tokens issued from it are revoked (RFC 6749 4.1.2)', async () => {
    const { code, verifier } = await codeFor(web.clientId);
    const first = await asWeb(code, verifier);
    expect(first.status).toBe(200);
    expect((await whoami(first.body.access_token)).status).toBe(200);
    const second = await asWeb(code, verifier);
    expect(second.status).toBe(400);
    expect(second.body).toEqual({
      error: 'invalid_grant',
      error_description: 'The authorization code was used before; every token issued from it is revoked.',
    });
    const revoked = await whoami(first.body.access_token);
    expect(revoked.status).toBe(401);
    expect(revoked.headers['www-authenticate']).toMatch(/revoked/);
    expect((await refresh(first.body.refresh_token, { client_id: web.clientId, client_secret: web.secret })).body.error).toBe('invalid_grant');
    const replay = await t.db.query("SELECT code FROM audit_events WHERE action = 'authorization_code.replay' AND org_id = $1", [ORG]);
    expect(replay.rows).toEqual([{ code: 83012 }]);
  });

  it('a code used concurrently: exactly one request consumes it, the others are replays that revoke what it gave', async () => {
    const grantIds = async () => (await t.db.query<{ id: string }>('SELECT id FROM authorization_grants WHERE org_id = $1', [ORG])).rows.map((r) => r.id);
    const before = new Set(await grantIds());
    const { code, verifier } = await codeFor(spa.clientId);
    const [grant] = (await grantIds()).filter((id) => !before.has(id));
    const answers = await Promise.all(Array.from({ length: 6 }, () => asSpa(code, verifier)));
    // The database lets one request consume the code (the one token.issue of the grant), the other five are replays.
    const events = await t.db.query<{ action: string }>("SELECT action FROM audit_events WHERE details->>'grantId' = $1 ORDER BY id", [grant]);
    const actions = events.rows.map((r) => r.action);
    expect(actions.filter((a) => a === 'token.issue')).toHaveLength(1);
    expect(actions.filter((a) => a === 'authorization_code.replay')).toHaveLength(5);
    // The winner's answer is 200 when it finished before the first replay revoked the grant, else
    // invalid_grant too; either way nothing it was given still works.
    const won = answers.filter((a) => a.status === 200);
    expect(won.length).toBeLessThanOrEqual(1);
    expect(answers.filter((a) => a.status === 400)).toHaveLength(6 - won.length);
    for (const loser of answers.filter((a) => a.status === 400)) expect(loser.body.error).toBe('invalid_grant');
    for (const winner of won) {
      expect((await whoami(winner.body.access_token)).status).toBe(401);
      expect((await refresh(winner.body.refresh_token)).status).toBe(400);
    }
  });

  it('a code of another client, past 60 seconds, with the wrong verifier or redirect_uri: invalid_grant', async () => {
    const forWeb = await codeFor(web.clientId);
    const byOther = await asSpa(forWeb.code, forWeb.verifier);
    expect(byOther.status).toBe(400);
    expect(byOther.body).toEqual({ error: 'invalid_grant', error_description: 'The authorization code was issued to another client.' });
    // Another client's attempt does not spend it.
    expect((await asWeb(forWeb.code, forWeb.verifier)).status).toBe(200);

    const late = await codeFor(web.clientId);
    t.clock.advance(61);
    const expired = await asWeb(late.code, late.verifier);
    expect(expired.status).toBe(400);
    expect(expired.body.error_description).toMatch(/expired; codes are valid for 60 seconds/);
    cookie = (await signIn(t, { org: ORG, userName: 'jane', password: PASSWORD, totpSecret: jane.totpSecret })).cookie;

    const wrong = await codeFor(web.clientId);
    const badVerifier = await asWeb(wrong.code, pkcePair().verifier);
    expect(badVerifier.status).toBe(400);
    expect(badVerifier.body).toEqual({ error: 'invalid_grant', error_description: 'The code_verifier does not match the code_challenge.' });
    // The code is spent by that attempt: the right verifier no longer helps.
    expect((await asWeb(wrong.code, wrong.verifier)).body.error).toBe('invalid_grant');

    const other = await codeFor(web.clientId);
    const badRedirect = await exchange({
      code: other.code,
      code_verifier: other.verifier,
      client_id: web.clientId,
      client_secret: web.secret,
      redirect_uri: `${REDIRECT}/`,
    });
    expect(badRedirect.status).toBe(400);
    expect(badRedirect.body.error_description).toMatch(/redirect_uri differs/);
    const rejected = await t.db.query(
      "SELECT details->>'reason' AS reason FROM audit_events WHERE action = 'authorization_code.reject' AND org_id = $1 ORDER BY id",
      [ORG],
    );
    expect(rejected.rows.map((r) => r.reason)).toEqual(['another_client', 'expired', 'code_verifier', 'redirect_uri']);
  });

  it('a public client: PKCE alone; refresh tokens rotate, and a rotated one used again revokes the whole family', async () => {
    const { code, verifier } = await codeFor(spa.clientId);
    const tokens = await asSpa(code, verifier);
    expect(tokens.status).toBe(200);
    const first = tokens.body.refresh_token as string;
    const rotated = await refresh(first);
    expect(rotated.status).toBe(200);
    expect(rotated.body.refresh_token).toEqual(expect.any(String));
    expect(rotated.body.refresh_token).not.toBe(first);
    const refreshedId = claimsOf(rotated.body.id_token);
    expect(refreshedId).toMatchObject({ sub: 'jane', aud: spa.clientId, amr: ['pwd', 'otp'], auth_time: claimsOf(tokens.body.id_token).auth_time });
    expect(refreshedId.nonce).toBeUndefined();
    expect((await whoami(rotated.body.access_token)).status).toBe(200);
    const second = rotated.body.refresh_token as string;

    // The rotated token again: refused, and the family (its new token and the access tokens) revoked.
    const reuse = await refresh(first);
    expect(reuse.status).toBe(400);
    expect(reuse.body.error_description).toMatch(/used before; its whole family is revoked/);
    expect((await refresh(second)).body.error_description).toMatch(/revoked/);
    expect((await whoami(rotated.body.access_token)).status).toBe(401);
    expect((await whoami(tokens.body.access_token)).status).toBe(401);
    const reused = await t.db.query("SELECT code FROM audit_events WHERE action = 'refresh_token.reuse' AND org_id = $1", [ORG]);
    expect(reused.rows).toEqual([{ code: 83021 }]);
  });

  it('a refresh token is bound to its client, and concurrent refreshes with one token: one wins, the family ends', async () => {
    const { code, verifier } = await codeFor(spa.clientId);
    const tokens = await asSpa(code, verifier);
    const byWeb = await refresh(tokens.body.refresh_token, { client_id: web.clientId, client_secret: web.secret });
    expect(byWeb.status).toBe(400);
    expect(byWeb.body.error_description).toMatch(/another client/);
    const grant = claimsOf(tokens.body.access_token).jti as string;
    const [{ grant_id: grantId }] = (await t.db.query<{ grant_id: string }>('SELECT grant_id FROM access_tokens WHERE jti = $1', [grant])).rows;
    const answers = await Promise.all(Array.from({ length: 4 }, () => refresh(tokens.body.refresh_token)));
    // The database lets one request rotate the token; the first of the three others is a reuse that
    // revokes the family, the rest find it a reuse or already revoked.
    const refused = await t.db.query<{ action: string }>(
      "SELECT action FROM audit_events WHERE action IN ('refresh_token.reuse', 'refresh_token.reject') AND details->>'grantId' = $1 AND details->>'reason' IS DISTINCT FROM 'another_client'",
      [grantId],
    );
    expect(refused.rows).toHaveLength(3);
    expect(refused.rows.filter((r) => r.action === 'refresh_token.reuse').length).toBeGreaterThanOrEqual(1);
    const won = answers.filter((a) => a.status === 200);
    expect(won.length).toBeLessThanOrEqual(1);
    for (const loser of answers.filter((a) => a.status !== 200)) expect(loser.body.error).toBe('invalid_grant');
    // A winner that finished before the first reuse got a new refresh token, revoked with the family.
    for (const winner of won) expect((await refresh(winner.body.refresh_token)).status).toBe(400);
  });

  it("RFC 7009: a client revokes its refresh token (the whole grant goes) and its person's access token; another client's revocation changes nothing", async () => {
    const revokeAt = (token: string, client: { clientId: string; secret: string }) =>
      t.bare.post(`/authentication/customer/${ORG}/revoke`).type('form').send({ token, client_id: client.clientId, client_secret: client.secret });
    const first = await codeFor(web.clientId);
    const tokens = await asWeb(first.code, first.verifier);
    const other = await createSystemAccount(t.http, admin, ORG, { role: 'Cardholder' });
    // Another client: 200, no effect.
    expect((await revokeAt(tokens.body.refresh_token, other)).status).toBe(200);
    expect((await revokeAt(tokens.body.access_token, other)).status).toBe(200);
    expect((await whoami(tokens.body.access_token)).status).toBe(200);
    // Its own client: the refresh token and its grant's access tokens stop.
    const revoked = await revokeAt(tokens.body.refresh_token, web);
    expect(revoked.status).toBe(200);
    expect((await refresh(tokens.body.refresh_token, { client_id: web.clientId, client_secret: web.secret })).body.error).toBe('invalid_grant');
    expect((await whoami(tokens.body.access_token)).status).toBe(401);
    const events = await t.db.query("SELECT code FROM audit_events WHERE action = 'refresh_token.revoke' AND org_id = $1", [ORG]);
    expect(events.rows).toEqual([{ code: 83023 }]);

    // A person's access token alone, by the client it was issued to.
    const second = await codeFor(web.clientId);
    const more = await asWeb(second.code, second.verifier);
    expect((await revokeAt(more.body.access_token, web)).status).toBe(200);
    expect((await whoami(more.body.access_token)).status).toBe(401);
    expect((await refresh(more.body.refresh_token, { client_id: web.clientId, client_secret: web.secret })).status).toBe(200);
  });

  /** A code for the client, and the id of the grant it started (the row the authorization request added). */
  async function codeWithGrant(clientId: string): Promise<{ code: string; verifier: string; grantId: string }> {
    const ids = async () => (await t.db.query<{ id: string }>('SELECT id FROM authorization_grants WHERE org_id = $1', [ORG])).rows.map((r) => r.id);
    const before = new Set(await ids());
    const made = await codeFor(clientId);
    const added = (await ids()).filter((id) => !before.has(id));
    expect(added).toHaveLength(1);
    return { ...made, grantId: added[0] };
  }

  /** A grant as the database keeps it. */
  const grantRow = async (id: string) =>
    (
      await t.db.query<{ kept_days: number; expires_at: Date; used: boolean; revoked_reason: string | null }>(
        `SELECT extract(epoch FROM expires_at - code_expires_at)::int / 86400 AS kept_days, expires_at, code_used_at IS NOT NULL AS used, revoked_reason
           FROM authorization_grants WHERE id = $1`,
        [id],
      )
    ).rows[0];

  it("a grant's keeping time is fixed when its code is issued, and the consumption leaves it (no indexed column changes): 90 days with refresh tokens, 1 without", async () => {
    const plain = await createSystemAccount(t.http, admin, ORG, { suffix: 'plain', role: 'Cardholder' });
    await registerOidcClient(t.http, admin, ORG, plain.clientId, { redirectUris: [REDIRECT], firstParty: true });
    for (const [client, days, exchangeIt] of [
      [
        plain.clientId,
        1,
        (code: string, verifier: string) => exchange({ code, code_verifier: verifier, client_id: plain.clientId, client_secret: plain.secret }),
      ],
      [spa.clientId, 90, asSpa],
    ] as const) {
      const { code, verifier, grantId } = await codeWithGrant(client);
      const issued = await grantRow(grantId);
      expect(issued).toMatchObject({ kept_days: days, used: false });
      const answer = await exchangeIt(code, verifier);
      expect(answer.status).toBe(200);
      expect(answer.body.refresh_token === undefined).toBe(days === 1);
      expect(await grantRow(grantId)).toMatchObject({ used: true, expires_at: issued.expires_at });
    }
    // Room on each page for the consumption's new row version, so that it can stay a heap-only update.
    const options = await t.db.query("SELECT reloptions FROM pg_class WHERE relname = 'authorization_grants'");
    expect(options.rows).toEqual([{ reloptions: ['fillfactor=60'] }]);
  });

  it('one code presented twice in one batch: the presentation whose values the consuming statement took is answered, and its token is the one recorded', async () => {
    const { code, verifier, grantId } = await codeWithGrant(web.clientId);
    const repository = t.app.get(AuthorizationGrantRepository);
    const [{ id: accountId }] = (await t.db.query<{ id: string }>('SELECT id FROM system_accounts WHERE client_id = $1', [web.clientId])).rows;
    const now = t.clock.now();
    const expiresAt = new Date(now.getTime() + 3_600_000);
    const key = await t.app.get(SigningKeys).signingKeyFor(expiresAt);
    const presentation = (codeHash: Buffer, jti: string) =>
      repository.redeemCode({
        codeHash,
        accountId,
        now,
        redirectUri: REDIRECT,
        verifierChallenge: createHash('sha256').update(verifier).digest('base64url'),
        accessToken: { jti, issuedAt: now, expiresAt, key },
        refreshToken: { hash: randomBytes(32), expiresAt: new Date(now.getTime() + 86_400_000) },
        sourceAddress: '192.0.2.1',
      });
    // Four unknown codes take the four statements the group commit keeps in flight; the two
    // presentations of the one code wait, and go together in the next statement.
    const fillers = Array.from({ length: 4 }, () => presentation(randomBytes(32), randomUUID()));
    const [first, second] = [randomUUID(), randomUUID()];
    const codeHash = t.app.get(SecretHasher).hash(code);
    const results = await Promise.all([...fillers, presentation(codeHash, first), presentation(codeHash, second)]);
    expect(results.slice(0, 4)).toEqual([undefined, undefined, undefined, undefined]);
    const answered = results
      .slice(4)
      .map((result, i) => (result ? [first, second][i] : undefined))
      .filter((jti) => jti !== undefined);
    expect(answered).toHaveLength(1);
    expect(results.slice(4).find(Boolean)).toMatchObject({ id: grantId, issued: true, redirectUriMatches: true, verifierMatches: true });
    const recorded = await t.db.query('SELECT jti FROM access_tokens WHERE grant_id = $1', [grantId]);
    expect(recorded.rows).toEqual([{ jti: answered[0] }]);
  });

  it("a key retired behind the instance's back: the code is not spent on it, and the exchange signs with the key active now (DECISIONS 12.1)", async () => {
    const old = t.app.get(SigningKeys).active();
    const next = (await t.http.post('/admin/v1/signing-keys').auth(admin, { type: 'bearer' }).send({ algorithm: 'EC-P256' }).expect(201)).body as {
      kid: string;
    };
    const { code, verifier, grantId } = await codeWithGrant(web.clientId);
    // The redemption refuses a token of a key that is not the active one, and leaves the code as it was.
    const now = t.clock.now();
    const refused = await t.app.get(AuthorizationGrantRepository).redeemCode({
      codeHash: t.app.get(SecretHasher).hash(code),
      accountId: (await t.db.query<{ id: string }>('SELECT id FROM system_accounts WHERE client_id = $1', [web.clientId])).rows[0].id,
      now,
      redirectUri: REDIRECT,
      verifierChallenge: createHash('sha256').update(verifier).digest('base64url'),
      accessToken: { jti: randomUUID(), issuedAt: now, expiresAt: new Date(now.getTime() + 3_600_000), key: { kid: next.kid } },
      refreshToken: { hash: randomBytes(32), expiresAt: new Date(now.getTime() + 86_400_000) },
      sourceAddress: '192.0.2.1',
    });
    expect(refused).toBe(KEY_NOT_ACTIVE);
    expect(await grantRow(grantId)).toMatchObject({ used: false });

    // Another instance activates the next key; this one hears nothing of it (no notice) and still holds the old key as active.
    const other = new Client({ connectionString: t.databaseUrl });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query("UPDATE signing_keys SET state = 'retired', retired_at = $2, not_after = $3 WHERE kid = $1", [
        old.kid,
        now,
        new Date(now.getTime() + 7_200_000),
      ]);
      await other.query("UPDATE signing_keys SET state = 'active', activated_at = $2, last_token_expires_at = $3 WHERE kid = $1", [
        next.kid,
        now,
        new Date(now.getTime() + 172_800_000),
      ]);
      await other.query('COMMIT');
    } finally {
      await other.end();
    }
    expect(t.app.get(SigningKeys).active().kid).toBe(old.kid);
    const exchanged = await asWeb(code, verifier);
    expect(exchanged.status).toBe(200);
    for (const token of [exchanged.body.access_token as string, exchanged.body.id_token as string]) {
      expect((JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString('utf8')) as { kid: string }).kid).toBe(next.kid);
    }
    expect((await whoami(exchanged.body.access_token as string)).status).toBe(200);
    const recorded = await t.db.query<{ kid: string }>('SELECT kid FROM access_tokens WHERE grant_id = $1', [grantId]);
    expect(recorded.rows).toEqual([{ kid: next.kid }]);
  });

  it('the HSM failing during an exchange: 503 with Retry-After; the code is spent and its grant revoked with the token recorded for it (83013 not_issued)', async () => {
    const { code, verifier, grantId } = await codeWithGrant(web.clientId);
    simulateModuleFailure(t.app.get(Pkcs11Hsm), 'sessions-closed');
    const refused = await asWeb(code, verifier);
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({ error: 'temporarily_unavailable', error_description: expect.stringMatching(/temporarily unavailable/) });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(await grantRow(grantId)).toMatchObject({ used: true, revoked_reason: 'not_issued' });
    const tokens = await t.db.query('SELECT count(*)::int AS recorded, count(revoked_at)::int AS revoked FROM access_tokens WHERE grant_id = $1', [grantId]);
    expect(tokens.rows).toEqual([{ recorded: 1, revoked: 1 }]);
    const events = await t.db.query("SELECT action, details->>'reason' AS reason FROM audit_events WHERE details->>'grantId' = $1 ORDER BY id", [grantId]);
    expect(events.rows).toEqual([
      { action: 'authorization_code.issue', reason: null },
      { action: 'token.issue', reason: null },
      { action: 'authorization_code.reject', reason: 'not_issued' },
    ]);
    // The signer comes back by itself; the spent code stays spent.
    let ready = false;
    for (let i = 0; i < 100 && !ready; i++) {
      ready = (await t.http.get('/health/ready')).status === 200;
      if (!ready) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(ready).toBe(true);
    const again = await asWeb(code, verifier);
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_grant');
  });

  it('prompt=none with a session gives a code; prompt=login and an exceeded max_age send the person to sign in again', async () => {
    await codeFor(web.clientId, [['prompt', 'none']]);
    const { challenge } = pkcePair();
    for (const extra of [[['prompt', 'login']], [['max_age', '0']]] as [string, string][][]) {
      t.clock.advance(2);
      const again = await authorize(web.clientId, challenge, extra);
      expect(again.status).toBe(303);
      const login = new URL(again.headers.location, 'https://x');
      expect(login.pathname).toBe(`/authentication/customer/${ORG}/login`);
      expect(login.searchParams.get('prompt')).toBe('login');
      // After a new sign-in the return is answered with a code, not sent to sign in again.
      const returnTo = login.searchParams.get('return_to')!;
      const fresh = await signIn(t, { org: ORG, userName: 'jane', password: PASSWORD, totpSecret: jane.totpSecret, returnTo });
      expect(fresh.location).toBe(returnTo);
      const back = await t.bare.get(returnTo).set('Cookie', fresh.cookie);
      expect(back.status).toBe(303);
      expect(new URL(back.headers.location).searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/);
      cookie = fresh.cookie;
    }
    const tooOld = await authorize(web.clientId, challenge, [
      ['prompt', 'none'],
      ['max_age', '0'],
    ]);
    t.clock.advance(2);
    const none = await authorize(web.clientId, challenge, [
      ['prompt', 'none'],
      ['max_age', '1'],
    ]);
    expect(new URL(none.headers.location).searchParams.get('error')).toBe('login_required');
    expect(tooOld.status).toBe(303);
  });

  it("no request parameter stands in for the sign-in prompt=login and max_age ask for: login_after is the service's own marker, bound to the request", async () => {
    t.clock.advance(5);
    const { verifier, challenge } = pkcePair();
    const nowS = () => Math.floor(t.clock.now().getTime() / 1000);
    const forced: [string, string][][] = [
      [['prompt', 'login']],
      [['max_age', '0']],
      [['max_age', '1']],
      [
        ['prompt', 'login'],
        ['max_age', '1'],
      ],
    ];
    const sentToLogin = (response: { status: number; headers: Record<string, string> }) => {
      expect(response.status).toBe(303);
      expect(new URL(response.headers.location, 'https://x').pathname).toBe(`/authentication/customer/${ORG}/login`);
    };
    for (const extra of forced) {
      for (const marker of ['0', String(nowS()), `0.${'A'.repeat(43)}`, `${nowS()}.${'A'.repeat(43)}`]) {
        sentToLogin(await authorize(web.clientId, challenge, [...extra, ['login_after', marker]]));
        // The form-posted request is the same request (OIDC Core 3.1.2.1).
        const form = authorizeQuery([...baseParameters(web.clientId, challenge), ...extra, ['login_after', marker]]);
        sentToLogin(await t.bare.post(`/authentication/customer/${ORG}/authorize`).set('Cookie', cookie).type('form').send(form));
      }
    }
    // The service's own marker, moved onto another request (another code_challenge), is no marker either.
    const asked = await authorize(web.clientId, challenge, [['prompt', 'login']]);
    const returnTo = new URL(new URL(asked.headers.location, 'https://x').searchParams.get('return_to')!, 'https://x');
    const marker = returnTo.searchParams.get('login_after')!;
    expect(marker).toMatch(/^[0-9]+\.[A-Za-z0-9_-]{43}$/);
    sentToLogin(
      await authorize(web.clientId, pkcePair().challenge, [
        ['prompt', 'login'],
        ['login_after', marker],
      ]),
    );
    // Before a new sign-in the marker does not make the old session fresh.
    sentToLogin(await t.bare.get(`${returnTo.pathname}${returnTo.search}`).set('Cookie', cookie));

    // A real sign-in completes, and the id_token's auth_time is the new one.
    const before = await codeFor(web.clientId);
    const oldAuthTime = claimsOf((await asWeb(before.code, before.verifier)).body.id_token).auth_time as number;
    t.clock.advance(60);
    const again = await authorize(web.clientId, challenge, [['prompt', 'login']]);
    const back = new URL(again.headers.location, 'https://x').searchParams.get('return_to')!;
    const fresh = await signIn(t, { org: ORG, userName: 'jane', password: PASSWORD, totpSecret: jane.totpSecret, returnTo: back });
    const answered = await t.bare.get(back).set('Cookie', fresh.cookie);
    expect(answered.status).toBe(303);
    const code = new URL(answered.headers.location).searchParams.get('code')!;
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const tokens = await asWeb(code, verifier);
    expect(tokens.status).toBe(200);
    const authTime = claimsOf(tokens.body.id_token).auth_time as number;
    expect(authTime).toBeGreaterThanOrEqual(oldAuthTime + 60);
    expect(authTime).toBeGreaterThanOrEqual(Number(back.match(/login_after=([0-9]+)/)![1]));
    // The marker expires: past its lifetime the same return asks for a sign-in again.
    t.clock.advance(601);
    sentToLogin(await t.bare.get(back).set('Cookie', fresh.cookie));
    await codeFor(web.clientId, [], fresh.cookie);
    cookie = fresh.cookie;
  });

  it('a client that is not first-party is answered consent_required (no consent screen; DECISIONS 15.1)', async () => {
    const { challenge } = pkcePair();
    const response = await authorize(partner.clientId, challenge);
    expect(response.status).toBe(303);
    const location = new URL(response.headers.location);
    expect(location.searchParams.get('error')).toBe('consent_required');
    expect(location.searchParams.get('state')).toBe('st');
  });

  it('a disabled person: refresh refused, and no new code (the session ended with the disabling)', async () => {
    const bob = await createPersonWithCard(t, admin, ORG, 'bob', { password: PASSWORD });
    const bobCookie = (await signIn(t, { org: ORG, userName: 'bob', password: PASSWORD, totpSecret: bob.totpSecret })).cookie;
    // offline_access: refresh tokens not bound to the session, which the disabling ends too.
    const { code, verifier } = await codeFor(spa.clientId, [['scope', 'openid offline_access']], bobCookie);
    const tokens = await asSpa(code, verifier);
    expect(tokens.status).toBe(200);
    const disabled = await t.http.patch(`/admin/v1/organizations/${ORG}/users/${bob.id}`).auth(admin, { type: 'bearer' }).send({ disabled: true });
    expect(disabled.status).toBe(200);
    const refused = await refresh(tokens.body.refresh_token);
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ error: 'invalid_grant', error_description: 'The person is disabled or no longer exists.' });
    const { challenge } = pkcePair();
    expect((await authorize(spa.clientId, challenge, [], bobCookie)).headers.location).toMatch(/\/login\?/);
  });

  it('RP-initiated logout with id_token_hint ends the session, revokes session-bound refresh tokens, keeps offline ones, and returns with state', async () => {
    const session = (await signIn(t, { org: ORG, userName: 'jane', password: PASSWORD, totpSecret: jane.totpSecret })).cookie;
    const bound = await codeFor(web.clientId, [], session);
    const boundTokens = await asWeb(bound.code, bound.verifier);
    const offline = await codeFor(spa.clientId, [['scope', 'openid offline_access']], session);
    const offlineTokens = await asSpa(offline.code, offline.verifier);
    expect(offlineTokens.status).toBe(200);

    const ask = await t.bare
      .get(
        `/authentication/customer/${ORG}/end-session?${authorizeQuery([
          ['id_token_hint', boundTokens.body.id_token],
          ['post_logout_redirect_uri', 'https://app.example.test/bye'],
          ['state', 'bye-1'],
        ])}`,
      )
      .set('Cookie', session);
    // The person confirms, even with their id_token as the hint (DECISIONS 15.6).
    expect(ask.status).toBe(200);
    const logout = await confirmLogout(ask, session);
    expect(logout.status).toBe(303);
    expect(logout.headers.location).toBe('https://app.example.test/bye?state=bye-1');
    expect(logout.headers['set-cookie'][0]).toMatch(/^__Host-Http-session=; Path=\/; Secure; HttpOnly; SameSite=Strict; Max-Age=0$/);
    // The session is gone: the authorization endpoint sends the person to sign in.
    const { challenge } = pkcePair();
    expect((await authorize(spa.clientId, challenge, [], session)).headers.location).toMatch(/\/login\?/);
    expect((await refresh(boundTokens.body.refresh_token, { client_id: web.clientId, client_secret: web.secret })).body.error).toBe('invalid_grant');
    expect((await whoami(boundTokens.body.access_token)).status).toBe(401);
    expect((await refresh(offlineTokens.body.refresh_token)).status).toBe(200);
    const events = await t.db.query("SELECT code, details->>'revokedGrants' AS grants FROM audit_events WHERE action = 'oidc.logout' AND org_id = $1", [ORG]);
    expect(events.rows).toEqual([{ code: 83030, grants: '1' }]);
  });

  it('a session ended otherwise (here by an administrator) ends the refresh and access tokens bound to it; offline ones go on', async () => {
    const session = (await signIn(t, { org: ORG, userName: 'jane', password: PASSWORD, totpSecret: jane.totpSecret })).cookie;
    const bound = await codeFor(spa.clientId, [], session);
    const boundTokens = await asSpa(bound.code, bound.verifier);
    const offline = await codeFor(spa.clientId, [['scope', 'openid offline_access']], session);
    const offlineTokens = await asSpa(offline.code, offline.verifier);
    const rotated = await refresh(boundTokens.body.refresh_token);
    expect(rotated.status).toBe(200);
    expect((await whoami(rotated.body.access_token)).status).toBe(200);
    // Jane's earlier sessions of this suite end too, each with its grants that are not offline.
    const [held] = (
      await t.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM authorization_grants g JOIN sign_in_sessions s ON s.id::text = g.session_id
          WHERE g.user_id = $1 AND g.revoked_at IS NULL AND g.refresh_tokens <> 'offline' AND s.ended_at IS NULL`,
        [jane.id],
      )
    ).rows;
    expect(held.n).toBeGreaterThanOrEqual(1);
    const ended = await t.http.delete(`/admin/v1/organizations/${ORG}/users/${jane.id}/sessions`).auth(admin, { type: 'bearer' });
    expect(ended.status).toBe(204);
    const refused = await refresh(rotated.body.refresh_token);
    expect(refused.status).toBe(400);
    expect(refused.body.error_description).toMatch(/sign-in session this refresh token belongs to has ended/);
    // The access tokens issued through the session, before and after the rotation, end with it; the offline grant's do not.
    expect((await whoami(boundTokens.body.access_token)).status).toBe(401);
    expect((await whoami(rotated.body.access_token)).status).toBe(401);
    expect((await whoami(offlineTokens.body.access_token)).status).toBe(200);
    expect((await refresh(offlineTokens.body.refresh_token)).status).toBe(200);
    const [event] = (
      await t.db.query("SELECT details FROM audit_events WHERE action = 'session.end' AND target = $1 ORDER BY occurred_at DESC, id DESC LIMIT 1", [jane.id])
    ).rows;
    expect(event.details).toMatchObject({ reason: 'administrator', revokedGrants: held.n });
  });

  it("ending a session does not wait for a code exchange in flight on one of its grants (which waits for the user's row: no deadlock)", async () => {
    const session = (await signIn(t, { org: ORG, userName: 'jane', password: PASSWORD, totpSecret: jane.totpSecret })).cookie;
    const exchanged = await codeFor(spa.clientId, [], session);
    const tokens = await asSpa(exchanged.code, exchanged.verifier);
    expect(tokens.status).toBe(200);
    await codeFor(spa.clientId, [], session);
    // Another connection consumes the second code as the exchange's statement does, and holds its row until it commits.
    const exchange = new Client({ connectionString: t.databaseUrl });
    await exchange.connect();
    try {
      await exchange.query('BEGIN');
      const consumed = await exchange.query<{ id: string }>(
        `UPDATE authorization_grants SET code_used_at = now()
          WHERE user_id = $1 AND code_used_at IS NULL AND revoked_at IS NULL AND session_id IN (SELECT id::text FROM sign_in_sessions WHERE ended_at IS NULL)
          RETURNING id`,
        [jane.id],
      );
      expect(consumed.rows).toHaveLength(1);
      // The administrator's ending takes the user's row first, then the session's grants: answered at once, not after that commit.
      const ended = await t.http.delete(`/admin/v1/organizations/${ORG}/users/${jane.id}/sessions`).auth(admin, { type: 'bearer' }).timeout(5_000);
      expect(ended.status).toBe(204);
      expect((await whoami(tokens.body.access_token)).status).toBe(401);
      // The exchange goes on (its access token's foreign key needs the user's row, free again) and commits.
      await exchange.query('SELECT 1 FROM users WHERE id = $1 FOR KEY SHARE', [jane.id]);
      await exchange.query('COMMIT');
      // Its grant was skipped, as if its exchange had committed just before the ending.
      const [grant] = (await t.db.query('SELECT revoked_at FROM authorization_grants WHERE id = $1', [consumed.rows[0].id])).rows;
      expect(grant.revoked_at).toBeNull();
    } finally {
      await exchange.end();
    }
  });

  it("turning passwordOnlySignIn off ends a password-only session's grants with it: the application's access token stops", async () => {
    const settings = (await t.http.get(`/admin/v1/organizations/${ORG}`).auth(admin, { type: 'bearer' })).body.settings;
    const put = (passwordOnlySignIn: boolean) =>
      t.http
        .put(`/admin/v1/organizations/${ORG}/settings`)
        .auth(admin, { type: 'bearer' })
        .send({ ...settings, passwordOnlySignIn });
    expect((await put(true)).status).toBe(200);
    await createCardholder(t, admin, ORG, 'pat', { password: PASSWORD });
    const session = (await signIn(t, { org: ORG, userName: 'pat', password: PASSWORD })).cookie;
    const bound = await codeFor(spa.clientId, [], session);
    const tokens = await asSpa(bound.code, bound.verifier);
    expect((await whoami(tokens.body.access_token)).status).toBe(200);
    expect((await put(false)).status).toBe(200);
    expect((await whoami(tokens.body.access_token)).status).toBe(401);
    const [grant] = (await t.db.query("SELECT g.revoked_reason FROM authorization_grants g JOIN users u ON u.id = g.user_id WHERE u.user_name = 'pat'")).rows;
    expect(grant).toEqual({ revoked_reason: 'session_sign_in_policy' });
  });

  it('signing out at the login page ends the tokens applications got through the session, as RP-initiated logout does', async () => {
    const session = (await signIn(t, { org: ORG, userName: 'jane', password: PASSWORD, totpSecret: jane.totpSecret })).cookie;
    const bound = await codeFor(web.clientId, [], session);
    const boundTokens = await asWeb(bound.code, bound.verifier);
    expect((await whoami(boundTokens.body.access_token)).status).toBe(200);
    const out = await signOut(t, ORG, session);
    expect(out.status).toBe(200);
    expect(out.text).toContain('You are signed out');
    expect((await whoami(boundTokens.body.access_token)).status).toBe(401);
    const refused = await refresh(boundTokens.body.refresh_token, { client_id: web.clientId, client_secret: web.secret });
    expect(refused.body).toEqual({
      error: 'invalid_grant',
      error_description: expect.stringMatching(/sign-in session this refresh token belongs to has ended/),
    });
    const [grant] = (
      await t.db.query(
        "SELECT revoked_reason FROM authorization_grants WHERE session_id = (SELECT id::text FROM sign_in_sessions WHERE end_reason = 'logout' ORDER BY ended_at DESC LIMIT 1)",
      )
    ).rows;
    expect(grant).toEqual({ revoked_reason: 'session_logout' });
  });

  it('logout without id_token_hint asks the person to confirm; the confirmation form ends the session', async () => {
    const session = (await signIn(t, { org: ORG, userName: 'jane', password: PASSWORD, totpSecret: jane.totpSecret })).cookie;
    const ask = await t.bare.get(`/authentication/customer/${ORG}/end-session?client_id=${web.clientId}&state=s2`).set('Cookie', session);
    expect(ask.status).toBe(200);
    expect(ask.text).toMatch(/<form method="post" action="\/authentication\/customer\/authz_code\/end-session">/);
    expect(ask.text).toMatch(/name="confirm" value="yes"/);
    const { challenge } = pkcePair();
    expect((await authorize(web.clientId, challenge, [], session)).headers.location).toMatch(/^https:\/\/app\.example\.test\/cb\?code=/);
    const confirm = await confirmLogout(ask, session);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toMatch(/You are signed out/);
    expect((await authorize(web.clientId, challenge, [], session)).headers.location).toMatch(/\/login\?/);
  });

  it("the end-session confirmation passes the login form's CSRF rule; the person's id_token as the hint alone signs nobody out (#32 item 5)", async () => {
    const session = (await signIn(t, { org: ORG, userName: 'jane', password: PASSWORD, totpSecret: jane.totpSecret })).cookie;
    const { code, verifier } = await codeFor(web.clientId, [], session);
    const idToken = (await asWeb(code, verifier)).body.id_token as string;
    const { challenge } = pkcePair();
    const stillSignedIn = async () =>
      expect((await authorize(web.clientId, challenge, [], session)).headers.location).toMatch(/^https:\/\/app\.example\.test\/cb\?code=/);
    const endSession = `/authentication/customer/${ORG}/end-session`;

    // The hint alone, by GET (what the bounce page of a cross-site navigation sends) or by POST: asked, not ended.
    const ask = await t.bare.get(`${endSession}?id_token_hint=${idToken}&state=s3`).set('Cookie', session);
    expect(ask.status).toBe(200);
    expect(ask.headers['referrer-policy']).toBe('same-origin');
    expect(ask.text).toMatch(/name="form_token" value="[A-Za-z0-9_-]{43}"/);
    await stillSignedIn();
    const posted = await t.bare.post(endSession).set('Cookie', session).type('form').send({ id_token_hint: idToken });
    expect(posted.status).toBe(200);
    expect(posted.text).toMatch(/Sign out\?/);
    await stillSignedIn();

    // confirm=yes that fails the rule: 403, the confirmation again, nothing ended, no cookie expired.
    const fields = formFields(ask.text);
    const refusals = [
      ['a same-site sibling origin', () => confirmLogout(ask, session, { Origin: 'https://sibling.example.test', 'Sec-Fetch-Site': 'same-site' })],
      ['Sec-Fetch-Site same-site alone', () => confirmLogout(ask, session, { Origin: new URL(t.config.authBaseUrl).origin, 'Sec-Fetch-Site': 'same-site' })],
      ['another Origin without Fetch metadata', () => confirmLogout(ask, session, { Origin: 'https://sibling.example.test', 'Sec-Fetch-Site': 'same-origin' })],
      ['no form token', () => confirmLogout(ask, session, {}, { ...fields, form_token: '' })],
      ['a form token of another browser', () => confirmLogout(ask, session, {}, { ...fields, form_token: 'x'.repeat(43) })],
      [
        'no pre-session cookie',
        () =>
          t.bare
            .post(endSession)
            .set({ Cookie: session, Origin: new URL(t.config.authBaseUrl).origin, 'Sec-Fetch-Site': 'same-origin' })
            .type('form')
            .send(fields),
      ],
    ] as const;
    for (const [name, send] of refusals) {
      const refused = await send();
      expect({ name, status: refused.status }).toEqual({ name, status: 403 });
      expect(refused.text).toMatch(/did not come from this page, so you are still signed in/);
      expect(cookiePair(refused.headers['set-cookie'], '__Host-Http-session')).toBeUndefined();
      await stillSignedIn();
    }

    // From this page, the confirmation ends the session.
    const out = await confirmLogout(ask, session);
    expect(out.status).toBe(200);
    expect(out.text).toMatch(/You are signed out/);
    expect((await authorize(web.clientId, challenge, [], session)).headers.location).toMatch(/\/login\?/);
  });

  it('the purge job removes grants past their keeping time, with their refresh tokens (last: it moves the clock)', async () => {
    const count = async () => (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM authorization_grants WHERE org_id = $1', [ORG])).rows[0].n;
    const before = await count();
    expect(before).toBeGreaterThan(0);
    t.clock.advance(92 * 86_400);
    const purged = await t.app.get(PurgeJob).runOnce();
    expect(purged.grants).toBe(before);
    expect(await count()).toBe(0);
    expect((await t.db.query('SELECT count(*)::int AS n FROM refresh_tokens')).rows).toEqual([{ n: 0 }]);
  });
});
