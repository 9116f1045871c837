import { PasswordHashSlots } from '@app/accounts';
import {
  CreatedAccount,
  TestApp,
  TestCertificate,
  createOrganization,
  createSystemAccount,
  createTestApp,
  makeCertificate,
  platformAdminToken,
  signAssertion,
  tokenRequest,
  uploadCertificate,
} from '@app/testing';

const PASSWORD = 'correct horse battery staple';

/**
 * A flood of password guesses must not starve token issuance (issue 22, DECISIONS 3.5 and 4): hashing
 * has its own bounded turns (503 + Retry-After when they are all taken), client assertions are
 * verified without libuv's pool, and an organization's failed password checks have a budget (429).
 * One hash at a time and no queue here, so "all turns taken" is one held hash.
 */
describe('password flood', () => {
  let t: TestApp;
  let admin: string;
  let address = 0;
  const accounts: Record<string, { client: CreatedAccount; certificate: TestCertificate }> = {};

  beforeAll(async () => {
    t = await createTestApp({
      env: {
        PASSWORD_HASH_CONCURRENCY: '1',
        PASSWORD_HASH_QUEUE: '0',
        PASSWORD_FAILURE_BUDGET: '5',
        AUTH_FAILURE_LIMIT: '1000',
        TRUSTED_PROXIES: '127.0.0.1,::1,::ffff:127.0.0.1',
      },
    });
    admin = await platformAdminToken(t.http);
    for (const org of ['held', 'flood', 'budget']) {
      await createOrganization(t.http, admin, org);
      const created = await t.http
        .post(`/admin/v1/organizations/${org}/users`)
        .auth(admin, { type: 'bearer' })
        .send({ userName: 'bea', role: 'Cardholder', password: PASSWORD });
      expect(created.status).toBe(201);
      const client = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
      const certificate = await makeCertificate({ keyType: 'EC-P256' });
      expect((await uploadCertificate(t.http, admin, org, client.clientId, certificate.pem)).status).toBe(201);
      accounts[org] = { client, certificate };
    }
  });
  afterAll(() => t.close());

  /** Each request its own source address, so the per-address lockout is not what answers. */
  const from = () => `198.51.100.${++address % 250}`;
  const passwordGrant = (org: string, username: string, password: string) =>
    tokenRequest(t.http, org, { grant_type: 'password', username, password }).set('X-Forwarded-For', from());
  const clientSecretGrant = (org: string) =>
    tokenRequest(t.http, org, { grant_type: 'client_credentials', client_id: accounts[org].client.clientId, client_secret: accounts[org].client.secret });
  const privateKeyJwtGrant = async (org: string) =>
    tokenRequest(t.http, org, {
      grant_type: 'client_credentials',
      client_assertion: await signAssertion(accounts[org].certificate, accounts[org].client.clientId, accounts[org].client.tokenUrl, { now: t.clock.now() }),
    });

  it('with every hash turn taken, a password grant gets 503 with Retry-After at once, while client_secret and private_key_jwt succeed', async () => {
    let release!: () => void;
    const held = t.app.get(PasswordHashSlots).run(() => new Promise<void>((resolve) => (release = resolve)));
    let creating: Promise<{ status: number }> | undefined;
    try {
      const busy = await passwordGrant('held', 'bea', PASSWORD);
      expect(busy.status).toBe(503);
      expect(busy.headers['retry-after']).toBe('1');
      expect(busy.headers['cache-control']).toBe('no-store');
      expect(busy.body).toEqual({ error: 'temporarily_unavailable', error_description: 'Too many password checks are in progress; retry in 1 second.' });
      expect((await clientSecretGrant('held')).status).toBe(200);
      expect((await privateKeyJwtGrant('held')).status).toBe(200);
      // An administrator setting a password is no flood: it waits for its turn instead of a 503.
      creating = t.http
        .post('/admin/v1/organizations/held/users')
        .auth(admin, { type: 'bearer' })
        .send({ userName: 'cy', role: 'Cardholder', password: PASSWORD })
        .then((response) => response);
    } finally {
      release();
      await held;
    }
    expect((await creating)?.status).toBe(201);
    // A refusal for want of a turn is no failed check: nothing was counted, and the next try works.
    expect((await t.db.query(`SELECT count(*)::int AS n FROM auth_failures WHERE key = 'pwd:held'`)).rows[0].n).toBe(0);
    expect((await passwordGrant('held', 'bea', PASSWORD)).status).toBe(200);
  });

  it('under a concurrent wrong-password flood, client_secret and private_key_jwt keep getting tokens, and the flood gets 503s and 429s', async () => {
    const flood = Promise.all(Array.from({ length: 24 }, (_, i) => passwordGrant('flood', `ghost${i}`, 'wrong password!')));
    const grants = [];
    for (let i = 0; i < 4; i++) grants.push((await clientSecretGrant('flood')).status, (await privateKeyJwtGrant('flood')).status);
    const answers = await flood;
    expect(grants).toEqual(Array(8).fill(200));
    for (const answer of answers) expect([400, 429, 503]).toContain(answer.status);
    const pushedBack = answers.filter((r) => r.status === 503 || r.status === 429);
    expect(pushedBack.length).toBeGreaterThan(0);
    for (const answer of pushedBack) {
      expect(answer.body.error).toBe('temporarily_unavailable');
      expect(Number(answer.headers['retry-after'])).toBeGreaterThan(0);
    }
  });

  it("past the organization's budget of failed password checks, its password grant answers 429 for every userName; other grants and organizations go on", async () => {
    for (let i = 0; i < 5; i++) expect((await passwordGrant('budget', i % 2 ? 'bea' : `ghost${i}`, 'wrong password!')).status).toBe(400);
    const known = await passwordGrant('budget', 'bea', PASSWORD);
    const unknown = await passwordGrant('budget', 'nobody', PASSWORD);
    for (const response of [known, unknown]) {
      expect(response.status).toBe(429);
      expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
      expect(response.body).toEqual({
        error: 'temporarily_unavailable',
        error_description: expect.stringMatching(
          /^Too many failed password sign-ins in this organization; the password grant pauses; retry after \d+ seconds\.$/,
        ),
      });
    }
    expect(unknown.body).toEqual(known.body);
    expect((await clientSecretGrant('budget')).status).toBe(200);
    expect((await privateKeyJwtGrant('budget')).status).toBe(200);
    expect((await passwordGrant('held', 'bea', PASSWORD)).status).toBe(200);
    const lockouts = await t.db.query(`SELECT target, details FROM audit_events WHERE org_id = 'budget' AND action = 'authentication.lockout'`);
    expect(lockouts.rows).toEqual([{ target: 'budget', details: { scope: 'organization password checks', failures: 5, windowSeconds: 300 } }]);
    t.clock.advance(301);
    expect((await passwordGrant('budget', 'bea', PASSWORD)).status).toBe(200);
  });
});
