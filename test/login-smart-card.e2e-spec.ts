import {
  IssuedPerson,
  makeCertificate,
  TestApp,
  authorizeQuery,
  cookiePair,
  createIssuingOrganization,
  createPersonWithCard,
  createTestApp,
  errorText,
  hiddenField,
  pkcePair,
  platformAdminToken,
  registerOidcClient,
  createSystemAccount,
  tokenRequest,
} from '@app/testing';

/**
 * Smart-card sign-in at the hosted login page (issue 23 item 1; DECISIONS 14.1): the certificate the
 * organization's CA issued into the person's wallet, forwarded by a proxy in TRUSTED_PROXIES in the
 * one documented header (X-Client-Certificate, URL-encoded PEM); refused when revoked or on hold,
 * and a revocation ends the session it opened.
 */

const ORG = 'cardlogin';
const ORIGIN = 'https://auth.example.test';

describe('Smart-card sign-in', () => {
  let t: TestApp;
  let admin: string;
  let ada: IssuedPerson;
  let helpdesk: string;

  beforeAll(async () => {
    // The suite's requests come from the loopback address: here, the trusted proxy.
    t = await createTestApp({ env: { TRUSTED_PROXIES: 'loopback', CLIENT_CERTIFICATE_FROM_PROXY: 'true' } });
    admin = await platformAdminToken(t.http);
    ({
      tokens: { helpdesk },
    } = await createIssuingOrganization(t, admin, ORG, { helpdesk: 'Help Desk' }));
    ada = await createPersonWithCard(t, admin, ORG, 'ada', { smartCard: true, totp: false });
  }, 60_000);
  afterAll(() => t.close());

  async function withCertificate(pem: string | undefined, app = t) {
    const form = await app.bare.get(`/authentication/customer/${ORG}/login`);
    const formCookie = cookiePair(form.headers['set-cookie'], '__Host-Http-login-form')!;
    expect(form.text).toContain('Sign in with a smart card');
    const request = app.bare.post(`/authentication/customer/${ORG}/login/certificate`).set({ Cookie: formCookie, Origin: ORIGIN }).type('form');
    if (pem) request.set('X-Client-Certificate', encodeURIComponent(pem));
    return request.send({ form_token: hiddenField(form.text, 'form_token')! });
  }
  const page = (cookie: string) => t.bare.get(`/authentication/customer/${ORG}/login`).set('Cookie', cookie);

  it('signs the wallet owner in with amr sc + hwk; a hold (suspended wallet) ends the session and refuses the card', async () => {
    const answer = await withCertificate(ada.certificatePem);
    const cookie = cookiePair(answer.headers['set-cookie'], '__Host-Http-session');
    expect(cookie).toBeDefined();
    expect(answer.text).toContain('<strong>ada</strong>');
    const [row] = (await t.db.query('SELECT amr, certificate_serial FROM sign_in_sessions WHERE user_id = $1', [ada.id])).rows;
    expect(row.amr).toEqual(['sc', 'hwk']);
    expect(row.certificate_serial).toMatch(/^[0-9a-f]+$/);
    const suspended = await t.http
      .post(`/aims/rs/scim/v2/Wallet/${ada.wallet}/suspend`)
      .auth(helpdesk, { type: 'bearer' })
      .set('Content-Type', 'application/scim+json')
      .send(JSON.stringify({ reason: 'LOST' }));
    expect(suspended.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await page(cookie!)).text).toContain('name="password"');
    const again = await withCertificate(ada.certificatePem);
    expect(cookiePair(again.headers['set-cookie'], '__Host-Http-session')).toBeUndefined();
    expect(errorText(again.text)).toContain('The sign-in did not succeed');
    const [failure] = (await t.db.query("SELECT code, details FROM audit_events WHERE action = 'sign_in.fail' ORDER BY occurred_at DESC, id DESC LIMIT 1"))
      .rows;
    expect(failure).toMatchObject({ code: 82001, details: { step: 'certificate', reason: expect.stringMatching(/on-hold|in no wallet/) } });
    const [ended] = (await t.db.query('SELECT end_reason FROM sign_in_sessions WHERE user_id = $1', [ada.id])).rows;
    expect(ended.end_reason).toBe('certificate_revoked');
  });

  it("a hold on the card's certificate also ends the tokens an application got through its session", async () => {
    const app = await createSystemAccount(t.http, admin, ORG, { suffix: 'cardapp', role: 'Cardholder' });
    await registerOidcClient(t.http, admin, ORG, app.clientId, { redirectUris: ['https://app.example.test/cb'], publicClient: true, firstParty: true });
    const holder = await createPersonWithCard(t, admin, ORG, 'hal', { smartCard: true, totp: false });
    const cookie = cookiePair((await withCertificate(holder.certificatePem)).headers['set-cookie'], '__Host-Http-session')!;
    const { verifier, challenge } = pkcePair();
    const authorized = await t.bare
      .get(
        `/authentication/customer/${ORG}/authorize?${authorizeQuery([
          ['response_type', 'code'],
          ['client_id', app.clientId],
          ['redirect_uri', 'https://app.example.test/cb'],
          ['scope', 'openid'],
          ['code_challenge', challenge],
          ['code_challenge_method', 'S256'],
        ])}`,
      )
      .set('Cookie', cookie);
    const code = new URL(authorized.headers.location).searchParams.get('code')!;
    const tokens = await tokenRequest(t.bare, ORG, {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      client_id: app.clientId,
      redirect_uri: 'https://app.example.test/cb',
    });
    expect(tokens.status).toBe(200);
    const whoami = () => t.bare.get(`/authentication/customer/${ORG}/whoami`).auth(tokens.body.access_token, { type: 'bearer' });
    expect((await whoami()).status).toBe(200);
    const suspended = await t.http
      .post(`/aims/rs/scim/v2/Wallet/${holder.wallet}/suspend`)
      .auth(helpdesk, { type: 'bearer' })
      .set('Content-Type', 'application/scim+json')
      .send(JSON.stringify({ reason: 'LOST' }));
    expect(suspended.status).toBe(200);
    expect((await whoami()).status).toBe(401);
    const [grant] = (await t.db.query('SELECT revoked_reason FROM authorization_grants WHERE user_id = $1', [holder.id])).rows;
    expect(grant).toEqual({ revoked_reason: 'session_certificate_revoked' });
  });

  it("refuses a certificate the organization's CA did not issue, and no certificate at all", async () => {
    const eve = await createPersonWithCard(t, admin, ORG, 'eve', { smartCard: true, totp: false });
    // Eve's certificate with one bit of its signature flipped: the CA did not sign this one.
    const der = Buffer.from(eve.certificatePem!.replace(/-----[^-]+-----|\s/g, ''), 'base64');
    der[der.length - 1] ^= 0x01;
    const tampered = `-----BEGIN CERTIFICATE-----\n${der.toString('base64')}\n-----END CERTIFICATE-----\n`;
    const selfSigned = (await makeCertificate({ subject: 'CN=eve' })).pem;
    for (const pem of [tampered, selfSigned]) {
      const refused = await withCertificate(pem);
      expect(cookiePair(refused.headers['set-cookie'], '__Host-Http-session')).toBeUndefined();
      expect(errorText(refused.text)).toContain('The sign-in did not succeed');
    }
    const [notIssued] = (
      await t.db.query("SELECT count(*)::int AS n FROM audit_events WHERE action = 'sign_in.fail' AND details->>'reason' = $1", [
        "certificate_refused: not issued by the organization's CA",
      ])
    ).rows;
    expect(notIssued.n).toBe(2);
    // Eve's own certificate still signs her in.
    expect(cookiePair((await withCertificate(eve.certificatePem)).headers['set-cookie'], '__Host-Http-session')).toBeDefined();
    const none = await withCertificate(undefined);
    expect(errorText(none.text)).toContain('presented no smart card certificate');
  });

  it.each([
    ['from a peer outside TRUSTED_PROXIES', {}],
    ['from a trusted proxy unless CLIENT_CERTIFICATE_FROM_PROXY says the proxy sets it', { TRUSTED_PROXIES: 'loopback' }],
  ])('never believes the header %s', async (_name, env: Record<string, string>) => {
    const untrusted = await createTestApp({ databaseUrl: t.databaseUrl, shareHsmWith: t, env });
    try {
      const person = await createPersonWithCard(t, admin, ORG, `grace${Object.keys(env).length}`, { smartCard: true, totp: false });
      const answer = await withCertificate(person.certificatePem, untrusted);
      expect(cookiePair(answer.headers['set-cookie'], '__Host-Http-session')).toBeUndefined();
      expect(errorText(answer.text)).toContain('presented no smart card certificate');
    } finally {
      await untrusted.close();
    }
  });
});
