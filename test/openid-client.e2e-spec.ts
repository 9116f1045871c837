import * as client from 'openid-client';
import {
  TestApp,
  createOrganization,
  createSystemAccount,
  createTestApp,
  freePort,
  makeCertificate,
  platformAdminToken,
  uploadCertificate,
} from '@app/testing';

/**
 * A real partner client library, unchanged, gets a token (DECISIONS 3.1, 3.3; notes/runtime.md):
 * openid-client 6 discovers the issuer over HTTP, authenticates with client_secret_post,
 * client_secret_basic or private_key_jwt (issuer as aud, 43-character jti, client_id beside the
 * assertion), validates the id_token, and the access token it receives works on whoami.
 * The FakeClock starts at real time and is never moved here, so openid-client's clock checks pass.
 */

/** openid-client's key type (the global CryptoKey; this project compiles without the DOM lib). */
type ClientKey = Extract<Parameters<typeof client.PrivateKeyJwt>[0], { type: string }>;

let sequence = 0;
function orgId(label: string): string {
  sequence += 1;
  return `oc_${label}_${sequence}_${Date.now().toString(36)}`;
}

describe('openid-client 6 against the token service', () => {
  let t: TestApp;
  let base: string;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ env: { AUTH_BASE_URL: base, PUBLIC_BASE_URL: base } });
    await t.app.listen(port, '127.0.0.1');
  });
  afterAll(() => t.close());

  async function newAccount(label: string): Promise<{ org: string; clientId: string; secret: string; tokenUrl: string; issuer: string }> {
    const admin = await platformAdminToken(t.http);
    const org = orgId(label);
    await createOrganization(t.http, admin, org);
    const account = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
    return { org, ...account, issuer: `${base}/authentication/customer/${org}` };
  }

  async function whoami(org: string, accessToken: string) {
    const response = await fetch(`${base}/authentication/customer/${org}/whoami`, { headers: { Authorization: `Bearer ${accessToken}` } });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  /** How the service saw the client authenticate each token it issued (the audit trail), oldest first. */
  async function issueMethods(clientId: string): Promise<string[]> {
    const { rows } = await t.db.query<{ method: string }>(
      "SELECT details->>'method' AS method FROM audit_events WHERE action = 'token.issue' AND actor = $1 ORDER BY id",
      [clientId],
    );
    return rows.map((r) => r.method);
  }

  /** Discovery plus the client_credentials grant, exactly as an integrator would call the library. */
  async function grant(account: { org: string; clientId: string; issuer: string }, auth: client.ClientAuth) {
    const config = await client.discovery(new URL(account.issuer), account.clientId, {}, auth, { execute: [client.allowInsecureRequests] });
    const metadata = config.serverMetadata();
    expect(metadata.issuer).toBe(account.issuer);
    expect(metadata.token_endpoint).toBe(`${account.issuer}/token`);
    const tokens = await client.clientCredentialsGrant(config);
    expect(typeof tokens.access_token).toBe('string');
    expect(tokens.token_type).toMatch(/^bearer$/i);
    expect(tokens.expires_in).toBe(3600);
    // openid-client validated the id_token (iss, aud = Client ID, ES256 as listed); its claims are ours.
    expect(tokens.claims()).toMatchObject({ iss: account.issuer, sub: account.clientId, aud: account.clientId, org: account.org });
    return tokens;
  }

  it('client_secret_post: discovers, gets a token, and the token works on whoami', async () => {
    const account = await newAccount('post');
    const tokens = await grant(account, client.ClientSecretPost(account.secret));
    expect(await issueMethods(account.clientId)).toEqual(['client_secret_post']);
    const answer = await whoami(account.org, tokens.access_token);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ clientId: account.clientId, org: account.org, role: 'Issuance' });
  });

  it('client_secret_basic: gets a token that works on whoami', async () => {
    const account = await newAccount('basic');
    const tokens = await grant(account, client.ClientSecretBasic(account.secret));
    expect(await issueMethods(account.clientId)).toEqual(['client_secret_basic']);
    const answer = await whoami(account.org, tokens.access_token);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ clientId: account.clientId, org: account.org, role: 'Issuance' });
  });

  it('private_key_jwt with the key of an uploaded EC P-256 certificate: gets a token that works on whoami', async () => {
    const account = await newAccount('pkjwt');
    const certificate = await makeCertificate({ keyType: 'EC-P256' });
    const admin = await platformAdminToken(t.http);
    expect((await uploadCertificate(t.http, admin, account.org, account.clientId, certificate.pem)).status).toBe(201);

    const tokens = await grant(account, client.PrivateKeyJwt(certificate.privateKey as unknown as ClientKey));
    expect(await issueMethods(account.clientId)).toEqual(['private_key_jwt']);
    // The assertion's jti, as openid-client makes it (43 base64url characters), was accepted and remembered.
    const jtis = async () =>
      (
        await t.db.query<{ jti: string }>('SELECT j.jti FROM assertion_jtis j JOIN system_accounts a ON a.id = j.account_id WHERE a.client_id = $1', [
          account.clientId,
        ])
      ).rows.map((r) => r.jti);
    expect(await jtis()).toEqual([expect.stringMatching(/^[A-Za-z0-9_-]{43}$/)]);
    const answer = await whoami(account.org, tokens.access_token);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ clientId: account.clientId, org: account.org, role: 'Issuance' });

    // A second grant (a new jti each time) works too; with the certificate's x5t#S256 as kid as well.
    const again = await grant(account, client.PrivateKeyJwt({ key: certificate.privateKey as unknown as ClientKey, kid: certificate.thumbprint }));
    expect((await whoami(account.org, again.access_token)).status).toBe(200);
    expect(await issueMethods(account.clientId)).toEqual(['private_key_jwt', 'private_key_jwt']);
    expect(await jtis()).toHaveLength(2);
  });

  it('a wrong secret makes openid-client fail with invalid_client (and no token)', async () => {
    const account = await newAccount('wrong');
    const config = await client.discovery(new URL(account.issuer), account.clientId, {}, client.ClientSecretPost(`${account.secret}x`), {
      execute: [client.allowInsecureRequests],
    });
    await expect(client.clientCredentialsGrant(config)).rejects.toMatchObject({ error: 'invalid_client', status: 401 });
    expect(await issueMethods(account.clientId)).toEqual([]);
  });
});
