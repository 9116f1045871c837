import * as client from 'openid-client';
import {
  IssuedPerson,
  TestApp,
  createIssuingOrganization,
  createPersonWithCard,
  createSystemAccount,
  createTestApp,
  cookiePair,
  freePort,
  platformAdminToken,
  registerOidcClient,
  signIn,
} from '@app/testing';

/**
 * openid-client 6, unchanged, runs the authorization code flow against the platform (issue 23;
 * DECISIONS 15): discovery, the authorization URL with PKCE and nonce, the browser's way through
 * the login page (signed in by the test helper that drives the real form), the code exchange with
 * id_token validation, refresh with rotation, reuse detection, and RP-initiated logout; for a
 * confidential and a public client. The FakeClock starts at real time, so openid-client's clock
 * checks pass.
 */

const ORG = 'oc_code';
const PASSWORD = 'correct horse battery staple';
const REDIRECT = 'https://app.example.test/callback';
const AFTER_LOGOUT = 'https://app.example.test/signed-out';

describe('openid-client 6: authorization code flow with PKCE', () => {
  let t: TestApp;
  let base: string;
  let issuer: string;
  let admin: string;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ env: { AUTH_BASE_URL: base, PUBLIC_BASE_URL: base } });
    await t.app.listen(port, '127.0.0.1');
    issuer = `${base}/authentication/customer/${ORG}`;
    admin = await platformAdminToken(t.http);
    await createIssuingOrganization(t, admin, ORG, {});
  }, 60_000);
  afterAll(() => t.close());

  /**
   * What a browser does with the authorization URL: the platform sends it to the login page (no
   * session yet), the person signs in there and is sent back, and the platform redirects to the
   * client with the code. Answers the URL the client receives.
   */
  async function browse(authorizationUrl: URL, person: IssuedPerson): Promise<{ callback: URL; cookie: string }> {
    const first = await fetch(authorizationUrl, { redirect: 'manual' });
    expect(first.status).toBe(303);
    const login = new URL(first.headers.get('location')!, base);
    expect(login.pathname).toBe(`/authentication/customer/${ORG}/login`);
    const returnTo = login.searchParams.get('return_to')!;
    const { cookie, location } = await signIn(t, { org: ORG, userName: person.userName, password: PASSWORD, totpSecret: person.totpSecret, returnTo });
    expect(location).toBe(returnTo);
    const back = await fetch(new URL(location, base), { redirect: 'manual', headers: { Cookie: cookie } });
    expect(back.status).toBe(303);
    return { callback: new URL(back.headers.get('location')!), cookie };
  }

  async function run(kind: 'confidential' | 'public', person: IssuedPerson) {
    const account = await createSystemAccount(t.http, admin, ORG, { role: 'Cardholder' });
    await registerOidcClient(t.http, admin, ORG, account.clientId, {
      redirectUris: [REDIRECT],
      postLogoutRedirectUris: [AFTER_LOGOUT],
      publicClient: kind === 'public',
      firstParty: true,
      refreshTokens: true,
    });
    const auth = kind === 'public' ? client.None() : client.ClientSecretPost(account.secret);
    const config = await client.discovery(new URL(issuer), account.clientId, {}, auth, { execute: [client.allowInsecureRequests] });
    const metadata = config.serverMetadata();
    expect(metadata).toMatchObject({
      authorization_endpoint: `${issuer}/authorize`,
      end_session_endpoint: `${issuer}/end-session`,
      code_challenge_methods_supported: ['S256'],
    });

    const verifier = client.randomPKCECodeVerifier();
    const nonce = client.randomNonce();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      nonce,
      state,
    });
    const { callback, cookie } = await browse(url, person);
    expect(callback.searchParams.get('state')).toBe(state);

    // The code exchange; openid-client checks state, iss (RFC 9207), the id_token (iss, aud, exp, iat, nonce).
    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedNonce: nonce,
      expectedState: state,
      idTokenExpected: true,
    });
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({
      iss: issuer,
      sub: person.userName,
      aud: account.clientId,
      nonce,
      amr: ['pwd', 'otp'],
      acr: 'urn:credential-platform:acr:mfa',
    });
    expect(typeof claims.auth_time).toBe('number');
    const whoami = await fetch(`${issuer}/whoami`, { headers: { Authorization: `Bearer ${tokens.access_token}` } });
    expect(whoami.status).toBe(200);
    expect(await whoami.json()).toMatchObject({ userName: person.userName, org: ORG });

    // The same callback again (a replayed code) fails and revokes what it gave.
    await expect(
      client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedNonce: nonce, expectedState: state }),
    ).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    expect((await fetch(`${issuer}/whoami`, { headers: { Authorization: `Bearer ${tokens.access_token}` } })).status).toBe(401);

    // A fresh code, refreshed with rotation; the rotated refresh token used again ends the family.
    const verifier2 = client.randomPKCECodeVerifier();
    const nonce2 = client.randomNonce();
    const url2 = client.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid offline_access',
      code_challenge: await client.calculatePKCECodeChallenge(verifier2),
      code_challenge_method: 'S256',
      nonce: nonce2,
    });
    const again = await fetch(url2, { redirect: 'manual', headers: { Cookie: cookie } });
    expect(again.status).toBe(303);
    const fresh = await client.authorizationCodeGrant(config, new URL(again.headers.get('location')!), { pkceCodeVerifier: verifier2, expectedNonce: nonce2 });
    const refreshed = await client.refreshTokenGrant(config, fresh.refresh_token!);
    expect(refreshed.refresh_token).toBeDefined();
    expect(refreshed.refresh_token).not.toBe(fresh.refresh_token);
    expect(refreshed.claims()).toMatchObject({ sub: person.userName, aud: account.clientId });
    const twice = await client.refreshTokenGrant(config, refreshed.refresh_token!);
    await expect(client.refreshTokenGrant(config, fresh.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    await expect(client.refreshTokenGrant(config, twice.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });

    // RP-initiated logout: the person confirms (DECISIONS 15.6), then the session ends and the browser is sent to sign in again.
    const logoutUrl = client.buildEndSessionUrl(config, { id_token_hint: fresh.id_token!, post_logout_redirect_uri: AFTER_LOGOUT, state: 'bye' });
    const ask = await fetch(logoutUrl, { redirect: 'manual', headers: { Cookie: cookie } });
    expect(ask.status).toBe(200);
    const page = await ask.text();
    const fields = new URLSearchParams(
      [...page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m): [string, string] => [m[1], m[2].replace(/&amp;/g, '&')]),
    );
    const formCookie = cookiePair(ask.headers.getSetCookie(), '__Host-Http-login-form')!;
    const logout = await fetch(`${base}/authentication/customer/${ORG}/end-session`, {
      method: 'POST',
      redirect: 'manual',
      headers: { Cookie: `${cookie}; ${formCookie}`, Origin: base, 'Sec-Fetch-Site': 'same-origin', 'Content-Type': 'application/x-www-form-urlencoded' },
      body: fields.toString(),
    });
    expect(logout.status).toBe(303);
    expect(logout.headers.get('location')).toBe(`${AFTER_LOGOUT}?state=bye`);
    const afterLogout = await fetch(url2, { redirect: 'manual', headers: { Cookie: cookie } });
    expect(new URL(afterLogout.headers.get('location')!, base).pathname).toBe(`/authentication/customer/${ORG}/login`);
  }

  it('a confidential client (client_secret_post)', async () => {
    await run('confidential', await createPersonWithCard(t, admin, ORG, 'alice', { password: PASSWORD }));
  });

  it('a public client (PKCE only, token_endpoint_auth_method none)', async () => {
    await run('public', await createPersonWithCard(t, admin, ORG, 'bruno', { password: PASSWORD }));
  });
});
