import {
  TestApp,
  authorizeQuery,
  createOrganization,
  createSystemAccount,
  createTestApp,
  pkcePair,
  platformAdminToken,
  registerOidcClient,
  tokenRequest,
} from '@app/testing';

/**
 * The authorization endpoint refuses bad input clearly (DECISIONS 15.2): while the client or its
 * redirect URI is not established, an HTML error page and never a redirect (no open redirect); after
 * that, an RFC 6749 4.1.2.1 error at the redirect URI with state and iss (RFC 9207). Never a 500.
 * These requests carry no session; a valid one is sent to the organization's login page.
 */
describe('/authorize: bad input', () => {
  let t: TestApp;
  const org = 'authz_bad';
  const issuer = `https://auth.example.test/authentication/customer/${org}`;
  const redirectUri = 'https://app.example.test/cb';
  let clientId: string;
  let clientSecret: string;
  let publicId: string;
  const { challenge } = pkcePair();

  const valid = (): [string, string][] => [
    ['response_type', 'code'],
    ['client_id', clientId],
    ['redirect_uri', redirectUri],
    ['scope', 'openid'],
    ['state', 'st-123'],
    ['nonce', 'n-456'],
    ['code_challenge', challenge],
    ['code_challenge_method', 'S256'],
  ];
  const without = (name: string) => valid().filter(([n]) => n !== name);
  const replacing = (name: string, value: string) => valid().map(([n, v]): [string, string] => [n, n === name ? value : v]);
  const authorize = (entries: [string, string][]) => t.bare.get(`/authentication/customer/${org}/authorize?${authorizeQuery(entries)}`);

  /** A page, never a redirect: status 400, HTML, no Location, protective headers. */
  async function expectErrorPage(entries: [string, string][], message: RegExp) {
    const response = await authorize(entries);
    expect(response.status).toBe(400);
    expect(response.headers.location).toBeUndefined();
    expect(response.headers['content-type']).toMatch(/^text\/html/);
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    expect(response.text).toMatch(/<html lang="en">/);
    expect(response.text).toMatch(message);
    expect(response.text).not.toMatch(/<script/);
  }

  /** A 303 back to the registered redirect URI with an RFC 6749 error, the request's state (unless unreadable) and iss. */
  async function expectRedirectError(entries: [string, string][], error: string, description: RegExp, state: string | null = 'st-123') {
    const response = await authorize(entries);
    expect(response.status).toBe(303);
    expect(response.headers['cache-control']).toBe('no-store');
    const location = new URL(response.headers.location);
    expect(`${location.origin}${location.pathname}`).toBe(redirectUri);
    expect(location.searchParams.get('error')).toBe(error);
    expect(location.searchParams.get('error_description')).toMatch(description);
    expect(location.searchParams.get('state')).toBe(state);
    expect(location.searchParams.get('iss')).toBe(issuer);
    expect(location.searchParams.get('code')).toBeNull();
  }

  beforeAll(async () => {
    t = await createTestApp();
    const admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, org);
    const account = await createSystemAccount(t.http, admin, org, { suffix: 'web', role: 'Cardholder' });
    clientId = account.clientId;
    clientSecret = account.secret;
    await registerOidcClient(t.http, admin, org, clientId, {
      redirectUris: [redirectUri, 'https://app.example.test/cb?tenant=a'],
      postLogoutRedirectUris: ['https://app.example.test/bye'],
      firstParty: true,
    });
    publicId = (await createSystemAccount(t.http, admin, org, { suffix: 'spa', role: 'Cardholder' })).clientId;
    await registerOidcClient(t.http, admin, org, publicId, { redirectUris: [redirectUri], publicClient: true, firstParty: true, refreshTokens: true });
    await createSystemAccount(t.http, admin, org, { suffix: 'robot', role: 'Cardholder' });
  });
  afterAll(() => t.close());

  it('a valid request without a session goes to the login page, which returns to this request', async () => {
    const response = await authorize([...valid(), ['login_hint', 'alice']]);
    expect(response.status).toBe(303);
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    expect(response.headers['x-frame-options']).toBe('DENY');
    const location = new URL(response.headers.location, 'https://auth.example.test');
    expect(location.pathname).toBe(`/authentication/customer/${org}/login`);
    expect(location.searchParams.get('login_hint')).toBe('alice');
    expect(location.searchParams.get('prompt')).toBeNull();
    const returnTo = new URL(location.searchParams.get('return_to')!, 'https://auth.example.test');
    expect(returnTo.pathname).toBe(`/authentication/customer/${org}/authorize`);
    expect(Object.fromEntries(returnTo.searchParams)).toEqual({ ...Object.fromEntries(valid()), login_hint: 'alice' });
  });

  it('prompt=login and max_age return with login_after, so the fresh sign-in is not asked again', async () => {
    for (const extra of [
      ['prompt', 'login'],
      ['max_age', '0'],
    ] as [string, string][]) {
      const response = await authorize([...valid(), extra]);
      expect(response.status).toBe(303);
      const returnTo = new URL(new URL(response.headers.location, 'https://x').searchParams.get('return_to')!, 'https://x');
      expect(returnTo.searchParams.get(extra[0])).toBe(extra[1]);
      // The time it was asked, with the service's MAC over it and this request (DECISIONS 15.2).
      const marker = /^([0-9]+)\.[A-Za-z0-9_-]{43}$/.exec(returnTo.searchParams.get('login_after') ?? '');
      expect(marker).not.toBeNull();
      expect(Number(marker![1])).toBe(Math.floor(t.clock.now().getTime() / 1000));
    }
  });

  it('a POSTed form request works like the GET; another body type gets an error page', async () => {
    const response = await t.bare.post(`/authentication/customer/${org}/authorize`).type('form').send(authorizeQuery(valid()));
    expect(response.status).toBe(303);
    expect(response.headers.location).toMatch(new RegExp(`^/authentication/customer/${org}/login\\?return_to=`));
    const json = await t.bare.post(`/authentication/customer/${org}/authorize`).send(Object.fromEntries(valid()));
    expect(json.status).toBe(400);
    expect(json.headers.location).toBeUndefined();
    expect(json.text).toMatch(/must be application\/x-www-form-urlencoded/);
  });

  it('a navigation another site started is asked again from this site (the session cookie is SameSite=Strict)', async () => {
    const response = await authorize(valid()).set('Sec-Fetch-Site', 'cross-site');
    expect(response.status).toBe(200);
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.text).toMatch(/<meta http-equiv="refresh" content="0;url=\/authentication\/customer\/authz_bad\/authorize\?/);
    expect(response.text).not.toMatch(/<script/);
  });

  describe('client_id and redirect_uri: an error page, never a redirect', () => {
    it.each([
      ['client_id missing', () => without('client_id'), /client_id is missing/],
      ['client_id repeated', () => [...valid(), ['client_id', clientId]], /client_id is given more than once/],
      ['client_id oversized', () => replacing('client_id', 'x'.repeat(131)), /client_id is longer than 130/],
      ['client_id unknown', () => replacing('client_id', `${org}-nobody`), /is not registered for sign-in/],
      ['client_id of another organization', () => replacing('client_id', 'platform-admin'), /is not registered for sign-in/],
      ['client_id of an account not set up for the flow', () => replacing('client_id', `${org}-robot`), /is not registered for sign-in/],
      ['client_id with a control character', () => replacing('client_id', `${org}-web\u0001`), /control character/],
      ['redirect_uri missing', () => without('redirect_uri'), /redirect_uri is missing/],
      ['redirect_uri repeated', () => [...valid(), ['redirect_uri', redirectUri]], /redirect_uri is given more than once/],
      ['redirect_uri oversized', () => replacing('redirect_uri', `${redirectUri}?${'a'.repeat(2000)}`), /redirect_uri is longer than 2000/],
      ['redirect_uri with a trailing slash', () => replacing('redirect_uri', `${redirectUri}/`), /not registered for this application/],
      ['redirect_uri one character short', () => replacing('redirect_uri', redirectUri.slice(0, -1)), /not registered/],
      ['redirect_uri in other case', () => replacing('redirect_uri', 'https://APP.example.test/cb'), /not registered/],
      ['redirect_uri with another port', () => replacing('redirect_uri', 'https://app.example.test:443/cb'), /not registered/],
      ['redirect_uri with an added query', () => replacing('redirect_uri', `${redirectUri}?x=1`), /not registered/],
      ['redirect_uri of another site', () => replacing('redirect_uri', 'https://evil.example/cb'), /not registered/],
      ['redirect_uri percent-encoded', () => replacing('redirect_uri', 'https://app.example.test/c%62'), /not registered/],
    ])('%s', async (_label, entries, message) => {
      await expectErrorPage(entries() as [string, string][], message);
    });

    it('an invalid organization id gets the page too', async () => {
      const response = await t.bare.get(`/authentication/customer/no-such-org/authorize?${authorizeQuery(valid())}`);
      expect(response.status).toBe(404);
      expect(response.headers.location).toBeUndefined();
    });

    it('a disabled client gets the page', async () => {
      const admin = await platformAdminToken(t.http);
      const account = await createSystemAccount(t.http, admin, org, { role: 'Cardholder' });
      await registerOidcClient(t.http, admin, org, account.clientId, { redirectUris: [redirectUri], firstParty: true });
      await t.http.patch(`/admin/v1/organizations/${org}/system-accounts/${account.clientId}`).auth(admin, { type: 'bearer' }).send({ disabled: true });
      await expectErrorPage(replacing('client_id', account.clientId), /is not registered for sign-in/);
    });
  });

  describe('everything else: an RFC 6749 error at the redirect URI', () => {
    it.each([
      ['response_type missing', () => without('response_type'), 'invalid_request', /response_type is missing/],
      ['response_type token', () => replacing('response_type', 'token'), 'unsupported_response_type', /use code/],
      ['response_type "code id_token"', () => replacing('response_type', 'code id_token'), 'unsupported_response_type', /use code/],
      ['response_type repeated', () => [...valid(), ['response_type', 'code']], 'invalid_request', /response_type is given more than once/],
      ['scope missing', () => without('scope'), 'invalid_request', /scope is missing/],
      ['scope without openid', () => replacing('scope', 'offline_access'), 'invalid_scope', /must include openid/],
      ['scope unknown', () => replacing('scope', 'openid admin'), 'invalid_scope', /Unknown scope "admin"/],
      ['scope malformed', () => replacing('scope', 'openid  profile'), 'invalid_request', /single spaces/],
      ['scope oversized', () => replacing('scope', `openid ${'a'.repeat(1000)}`), 'invalid_request', /scope is longer than 1000/],
      [
        'scope offline_access for a client without refresh tokens',
        () => replacing('scope', 'openid offline_access'),
        'invalid_scope',
        /not allowed refresh tokens/,
      ],
      ['code_challenge missing', () => without('code_challenge'), 'invalid_request', /PKCE is required/],
      ['code_challenge too short', () => replacing('code_challenge', challenge.slice(1)), 'invalid_request', /43 base64url characters/],
      ['code_challenge oversized', () => replacing('code_challenge', `${challenge}A`), 'invalid_request', /code_challenge is longer than 43/],
      ['code_challenge with a bad character', () => replacing('code_challenge', `${challenge.slice(1)}+`), 'invalid_request', /43 base64url/],
      ['code_challenge repeated', () => [...valid(), ['code_challenge', challenge]], 'invalid_request', /more than once/],
      ['code_challenge_method missing', () => without('code_challenge_method'), 'invalid_request', /must be S256 \(plain is not accepted\)/],
      ['code_challenge_method plain', () => replacing('code_challenge_method', 'plain'), 'invalid_request', /must be S256, not "plain"/],
      ['code_challenge_method s256', () => replacing('code_challenge_method', 's256'), 'invalid_request', /must be S256/],
      ['nonce oversized', () => replacing('nonce', 'n'.repeat(513)), 'invalid_request', /nonce is longer than 512/],
      ['nonce repeated', () => [...valid(), ['nonce', 'again']], 'invalid_request', /nonce is given more than once/],
      ['prompt unknown', () => [...valid(), ['prompt', 'always']], 'invalid_request', /prompt has the value "always"/],
      ['prompt none with login', () => [...valid(), ['prompt', 'none login']], 'invalid_request', /cannot be combined/],
      ['prompt none without a session', () => [...valid(), ['prompt', 'none']], 'login_required', /not signed in/],
      ['max_age not a number', () => [...valid(), ['max_age', 'ten']], 'invalid_request', /max_age must be a number/],
      ['max_age negative', () => [...valid(), ['max_age', '-1']], 'invalid_request', /max_age must be a number/],
      ['max_age oversized', () => [...valid(), ['max_age', '1234567890']], 'invalid_request', /max_age is longer than 9/],
      ['login_hint oversized', () => [...valid(), ['login_hint', 'a'.repeat(129)]], 'invalid_request', /login_hint is longer than 128/],
      ['response_mode fragment', () => [...valid(), ['response_mode', 'fragment']], 'invalid_request', /response_mode must be query/],
      ['request object', () => [...valid(), ['request', 'eyJ.x.y']], 'request_not_supported', /not supported/],
      ['request_uri', () => [...valid(), ['request_uri', 'urn:x']], 'request_uri_not_supported', /not supported/],
      ['registration', () => [...valid(), ['registration', '{}']], 'registration_not_supported', /not supported/],
      ['an unknown parameter repeated', () => [...valid(), ['foo', '1'], ['foo', '2']], 'invalid_request', /foo is given more than once/],
    ])('%s', async (_label, entries, error, description) => {
      await expectRedirectError(entries() as [string, string][], error, description);
    });

    it('an unreadable state is not echoed', async () => {
      await expectRedirectError([...valid(), ['state', 'again']], 'invalid_request', /state is given more than once/, null);
      await expectRedirectError(replacing('state', 's'.repeat(1025)), 'invalid_request', /state is longer than 1024/, null);
    });

    it('unknown parameters are ignored (RFC 6749 3.1) and a registered query is kept', async () => {
      const response = await authorize([...valid(), ['display', 'page'], ['foo', 'bar']]);
      expect(response.status).toBe(303);
      expect(response.headers.location).toMatch(/\/login\?/);
      const withQuery = await authorize([...replacing('redirect_uri', 'https://app.example.test/cb?tenant=a'), ['prompt', 'none']]);
      expect(withQuery.status).toBe(303);
      expect(withQuery.headers.location).toMatch(/^https:\/\/app\.example\.test\/cb\?tenant=a&error=login_required&/);
    });

    it('each refusal is audited with its code', async () => {
      const { rows } = await t.db.query<{ code: number; outcome: string }>(
        "SELECT code, outcome FROM audit_events WHERE action = 'authorization.deny' AND org_id = $1 LIMIT 1",
        [org],
      );
      expect(rows).toEqual([{ code: 83014, outcome: 'failure' }]);
    });
  });

  describe('the token endpoint refuses bad code and refresh requests with RFC 6749 errors', () => {
    const code = (form: Record<string, string>) => tokenRequest(t.bare, org, { grant_type: 'authorization_code', ...form });
    const verifier = 'v'.repeat(43);

    it.each([
      [
        'a public client with an unknown code',
        () => ({ client_id: publicId, code: 'nope', redirect_uri: redirectUri, code_verifier: verifier }),
        400,
        'invalid_grant',
        /not valid/,
      ],
      ['no code', () => ({ client_id: publicId, redirect_uri: redirectUri, code_verifier: verifier }), 400, 'invalid_request', /needs the code/],
      ['no redirect_uri', () => ({ client_id: publicId, code: 'x', code_verifier: verifier }), 400, 'invalid_request', /needs redirect_uri/],
      ['no code_verifier', () => ({ client_id: publicId, code: 'x', redirect_uri: redirectUri }), 400, 'invalid_request', /needs code_verifier/],
      [
        'a short code_verifier',
        () => ({ client_id: publicId, code: 'x', redirect_uri: redirectUri, code_verifier: 'short' }),
        400,
        'invalid_request',
        /43-128/,
      ],
      [
        'a confidential client with client_id alone',
        () => ({ client_id: clientId, code: 'x', redirect_uri: redirectUri, code_verifier: verifier }),
        401,
        'invalid_client',
        /only a public client/,
      ],
      [
        'a confidential client with a wrong secret',
        () => ({ client_id: clientId, client_secret: 'wrong', code: 'x', redirect_uri: redirectUri, code_verifier: verifier }),
        401,
        'invalid_client',
        /failed/,
      ],
      [
        'an account not set up for the flow',
        () => ({ client_id: `${org}-robot`, code: 'x', redirect_uri: redirectUri, code_verifier: verifier }),
        401,
        'invalid_client',
        /only a public client/,
      ],
      ['no client at all', () => ({ code: 'x', redirect_uri: redirectUri, code_verifier: verifier }), 401, 'invalid_client', /No client authentication/],
    ])('%s', async (_label, form, status, error, description) => {
      const response = await code(form());
      expect(response.status).toBe(status);
      expect(response.body.error).toBe(error);
      expect(response.body.error_description).toMatch(description);
      expect(response.headers['cache-control']).toBe('no-store');
    });

    it('a confidential client that authenticates but is not set up: unauthorized_client', async () => {
      const admin = await platformAdminToken(t.http);
      const robot = await createSystemAccount(t.http, admin, org, { role: 'Cardholder' });
      const response = await code({ client_id: robot.clientId, client_secret: robot.secret, code: 'x', redirect_uri: redirectUri, code_verifier: verifier });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: 'unauthorized_client', error_description: expect.stringMatching(/not set up for the authorization code flow/) });
    });

    it('an unknown refresh token: invalid_grant; none: invalid_request', async () => {
      const unknown = await tokenRequest(t.bare, org, { grant_type: 'refresh_token', client_id: clientId, client_secret: clientSecret, refresh_token: 'nope' });
      expect(unknown.status).toBe(400);
      expect(unknown.body).toEqual({ error: 'invalid_grant', error_description: 'The refresh token is not valid.' });
      const none = await tokenRequest(t.bare, org, { grant_type: 'refresh_token', client_id: publicId });
      expect(none.status).toBe(400);
      expect(none.body.error).toBe('invalid_request');
    });
  });

  describe('logout without a session', () => {
    const logout = (entries: [string, string][]) => t.bare.get(`/authentication/customer/${org}/end-session?${authorizeQuery(entries)}`);

    it('returns to a registered post-logout redirect URI with state, or shows that the person is signed out', async () => {
      const back = await logout([
        ['client_id', clientId],
        ['post_logout_redirect_uri', 'https://app.example.test/bye'],
        ['state', 'x1'],
      ]);
      expect(back.status).toBe(303);
      expect(back.headers.location).toBe('https://app.example.test/bye?state=x1');
      const page = await logout([]);
      expect(page.status).toBe(200);
      expect(page.text).toMatch(/You are signed out/);
      expect(page.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    });

    it.each([
      [
        'an unregistered post_logout_redirect_uri',
        [
          ['client_id', clientId],
          ['post_logout_redirect_uri', 'https://app.example.test/bye/'],
        ],
        /not registered/,
      ],
      ['a post_logout_redirect_uri without a client', [['post_logout_redirect_uri', 'https://app.example.test/bye']], /needs id_token_hint or client_id/],
      ['an id_token_hint that is not ours', [['id_token_hint', 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.']], /not an id_token this organization issued/],
      [
        'a repeated parameter',
        [
          ['state', 'a'],
          ['state', 'b'],
        ],
        /given more than once/,
      ],
      ['an unknown client', [['client_id', `${org}-nobody`]], /not registered/],
    ])('%s: an error page, never a redirect', async (_label, entries, message) => {
      const response = await logout(entries as [string, string][]);
      expect(response.status).toBe(400);
      expect(response.headers.location).toBeUndefined();
      expect(response.text).toMatch(message);
    });
  });

  it('discovery lists the authorization and end-session endpoints, S256 only, the code response type and the new grants', async () => {
    const response = await t.bare.get(`/authentication/customer/${org}/.well-known/openid-configuration`);
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      issuer,
      authorization_endpoint: `${issuer}/authorize`,
      end_session_endpoint: `${issuer}/end-session`,
      code_challenge_methods_supported: ['S256'],
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      scopes_supported: ['openid', 'offline_access'],
      authorization_response_iss_parameter_supported: true,
      token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic', 'private_key_jwt', 'none'],
      acr_values_supported: ['urn:credential-platform:acr:password', 'urn:credential-platform:acr:mfa', 'urn:credential-platform:acr:smartcard'],
    });
    expect(response.body.grant_types_supported).toEqual(expect.arrayContaining(['client_credentials', 'authorization_code', 'refresh_token']));
    expect(response.body.claims_supported).toEqual(expect.arrayContaining(['nonce', 'auth_time', 'amr', 'acr']));
  });
});
