import * as client from 'openid-client';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { TestApp, createOrganization, createSystemAccount, createTestApp, freePort, platformAdminToken } from '@app/testing';

/**
 * A token-signing key rollover as relying parties see it (issue 26; DECISIONS 12.1), over real HTTP:
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
    const before = await client.clientCredentialsGrant(await relyingParty());
    const oldKid = decodeProtectedHeader(before.id_token!).kid;
    // The resource server caches JWKS as it is now: the old key alone.
    expect((await jwtVerify(before.access_token, resourceServerKeys, { issuer, typ: 'at+jwt' })).protectedHeader.kid).toBe(oldKid);

    const newKid = await rollOver();
    expect(newKid).not.toBe(oldKid);

    // openid-client verified the new id_token's signature with a key it found in JWKS by its kid.
    const after = await client.clientCredentialsGrant(await relyingParty());
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
});
