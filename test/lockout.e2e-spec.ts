import { Client } from 'pg';
import { PurgeJob } from '@app/auth';
import { CreatedAccount, TestApp, createOrganization, createSystemAccount, createTestApp, platformAdminToken, tokenRequest } from '@app/testing';
import { LockoutService } from '../libs/auth/src/clients/lockout.service';

/**
 * Brute-force protection of the token endpoint (DECISIONS 4): counted per (Client ID, source address)
 * and per address, 429 with Retry-After, never a lockout from afar, shared by all instances.
 */
describe('token endpoint lockout', () => {
  const env = { AUTH_FAILURE_LIMIT: '3', AUTH_FAILURE_WINDOW_S: '60', TRUSTED_PROXIES: '127.0.0.1,::1,::ffff:127.0.0.1' };
  let t: TestApp;
  let second: TestApp;
  let admin: string;
  let orgCounter = 0;

  beforeAll(async () => {
    t = await createTestApp({ env });
    // A second instance on the same database and clock: counters must hold across instances.
    second = await createTestApp({ env, databaseUrl: t.databaseUrl, clock: t.clock, shareHsmWith: t });
    admin = await platformAdminToken(t.http);
  });
  afterAll(async () => {
    await second.close();
    await t.close();
  });

  async function freshAccount(): Promise<{ org: string; account: CreatedAccount }> {
    const org = `lock${++orgCounter}`;
    await createOrganization(t.http, admin, org);
    return { org, account: await createSystemAccount(t.http, admin, org, { role: 'Issuance' }) };
  }

  const attempt = (app: TestApp, org: string, clientId: string, secret: string, from: string) =>
    tokenRequest(app.http, org, { grant_type: 'client_credentials', client_id: clientId, client_secret: secret }).set('X-Forwarded-For', from);

  it('after the limit, the pair gets 429 with Retry-After, even with the right secret; another address is not blocked', async () => {
    const { org, account } = await freshAccount();
    for (let i = 0; i < 3; i++) expect((await attempt(t, org, account.clientId, 'wrong', '203.0.113.5')).status).toBe(401);
    const blocked = await attempt(t, org, account.clientId, account.secret, '203.0.113.5');
    expect(blocked.status).toBe(429);
    expect(blocked.body.error).toBe('temporarily_unavailable');
    expect(blocked.body.error_description).toMatch(/retry after \d+ seconds/);
    const retryAfter = Number(blocked.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect((await attempt(t, org, account.clientId, account.secret, '198.51.100.7')).status).toBe(200);
  });

  it('the block holds on another instance and ends when the window passes', async () => {
    const { org, account } = await freshAccount();
    for (let i = 0; i < 3; i++) expect((await attempt(t, org, account.clientId, 'wrong', '203.0.113.9')).status).toBe(401);
    expect((await attempt(second, org, account.clientId, account.secret, '203.0.113.9')).status).toBe(429);
    t.clock.advance(61);
    expect((await attempt(second, org, account.clientId, account.secret, '203.0.113.9')).status).toBe(200);
  });

  it('failed assertions count too', async () => {
    const { org, account } = await freshAccount();
    for (let i = 0; i < 3; i++) {
      const response = await tokenRequest(t.http, org, { grant_type: 'client_credentials', client_assertion: 'not-a-jwt' }).set(
        'X-Forwarded-For',
        '203.0.113.20',
      );
      expect(response.status).toBe(401);
    }
    // Malformed assertions name no known account, so they count per address (limit 10 x 3).
    for (let i = 0; i < 27; i++)
      await tokenRequest(t.http, org, { grant_type: 'client_credentials', client_assertion: 'x' }).set('X-Forwarded-For', '203.0.113.20');
    expect((await attempt(t, org, account.clientId, account.secret, '203.0.113.20')).status).toBe(429);
  });

  it('unknown Client IDs get pair counters too, bounded by the address limit of ten times the limit', async () => {
    const { org, account } = await freshAccount();
    const pairs = async () => (await t.db.query(`SELECT count(*)::int AS n FROM auth_failures WHERE key LIKE 'pair:%'`)).rows[0].n as number;
    const before = await pairs();
    for (let i = 0; i < 29; i++) {
      expect((await attempt(t, org, `${org}-unknown${i}`, 'x', '203.0.113.30')).status).toBe(401);
    }
    expect((await pairs()) - before).toBe(29);
    // The 30th failure reaches 10 x limit for the address.
    expect((await attempt(t, org, `${org}-unknown-last`, 'x', '203.0.113.30')).status).toBe(401);
    expect((await attempt(t, org, account.clientId, account.secret, '203.0.113.30')).status).toBe(429);
    expect((await attempt(t, org, account.clientId, account.secret, '203.0.113.31')).status).toBe(200);
    // A blocked address adds no more rows, whatever ids it claims: 30 per address and window at most.
    for (let i = 0; i < 5; i++) expect((await attempt(t, org, `${org}-more${i}`, 'x', '203.0.113.30')).status).toBe(429);
    expect((await pairs()) - before).toBe(30);
  });

  it('a claimed id longer than any real one keeps a counter key of bounded length', async () => {
    const { org } = await freshAccount();
    const long = `${org}-${'x'.repeat(5000)}`;
    expect((await attempt(t, org, long, 'x', '203.0.113.60')).status).toBe(401);
    const rows = await t.db.query(`SELECT max(length(key))::int AS n FROM auth_failures WHERE key LIKE '%203.0.113.60'`);
    expect(rows.rows[0].n).toBeLessThan(300);
  });

  it('an unknown Client ID is locked out after the limit just like a known one, so the answer does not tell which exists', async () => {
    const { org, account } = await freshAccount();
    const answers: Record<string, unknown>[] = [];
    for (const clientId of [account.clientId, `${org}-nosuchclient`]) {
      for (let i = 0; i < 3; i++) expect((await attempt(t, org, clientId, 'wrong', '203.0.113.50')).status).toBe(401);
      const fourth = await attempt(second, org, clientId, 'wrong', '203.0.113.50');
      answers.push({ status: fourth.status, retryAfter: Number(fourth.headers['retry-after']) > 0, body: fourth.body });
    }
    expect(answers[0]).toMatchObject({ status: 429, retryAfter: true });
    expect(answers[1]).toEqual(answers[0]);
  });

  it('X-Forwarded-For is ignored unless the peer is a trusted proxy', async () => {
    const untrusting = await createTestApp({
      env: { AUTH_FAILURE_LIMIT: '3', AUTH_FAILURE_WINDOW_S: '60' },
      databaseUrl: t.databaseUrl,
      clock: t.clock,
      shareHsmWith: t,
    });
    try {
      const { org, account } = await freshAccount();
      for (const from of ['192.0.2.1', '192.0.2.2', '192.0.2.3']) expect((await attempt(untrusting, org, account.clientId, 'wrong', from)).status).toBe(401);
      // All three came from the same peer, so that pair is now blocked whatever the header says.
      expect((await attempt(untrusting, org, account.clientId, account.secret, '192.0.2.99')).status).toBe(429);
    } finally {
      await untrusting.close();
    }
  });

  /** A fresh organization with the user bea and her password. */
  async function freshUser(): Promise<string> {
    const { org } = await freshAccount();
    const created = await t.http
      .post(`/admin/v1/organizations/${org}/users`)
      .auth(admin, { type: 'bearer' })
      .send({ userName: 'bea', role: 'Cardholder', password: 'correct horse battery staple' });
    expect(created.status).toBe(201);
    return org;
  }
  const passwordAttempt = (app: TestApp, org: string, password: string, from: string) =>
    tokenRequest(app.http, org, { grant_type: 'password', username: 'bea', password }).set('X-Forwarded-For', from);
  const counters = async (org: string) =>
    (
      await t.db.query<{ key: string; failures: number }>(
        "SELECT key, failures FROM auth_failures WHERE key IN ($1, 'addr:' || $2, 'pwd:' || $3) ORDER BY key",
        [`pair:user:${org}/bea|203.0.113.40`, '203.0.113.40', org],
      )
    ).rows;

  it('wrong passwords sent at once, to two instances, get no more checks than the limit: each is counted before its hash', async () => {
    const org = await freshUser();
    const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => passwordAttempt(i % 2 ? second : t, org, 'wrong password', '203.0.113.40')));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([...Array(3).fill(400), ...Array(21).fill(429)]);
    for (const refused of answers.filter((a) => a.status === 429)) expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    const checked = await t.db.query(
      "SELECT count(*)::int AS n FROM audit_events WHERE org_id = $1 AND action = 'authentication.fail' AND details->>'reason' = 'wrong_password'",
      [org],
    );
    expect(checked.rows).toEqual([{ n: 3 }]);
    const lockouts = await t.db.query("SELECT details->>'scope' AS scope FROM audit_events WHERE org_id = $1 AND action = 'authentication.lockout'", [org]);
    expect(lockouts.rows).toEqual([{ scope: 'identity and address' }]);
    expect(await counters(org)).toEqual([
      { key: 'addr:203.0.113.40', failures: 3 },
      { key: `pair:user:${org}/bea|203.0.113.40`, failures: 3 },
      { key: `pwd:${org}`, failures: 3 },
    ]);
    // The right password from there waits too; from another address it works.
    expect((await passwordAttempt(t, org, 'correct horse battery staple', '203.0.113.40')).status).toBe(429);
    expect((await passwordAttempt(t, org, 'correct horse battery staple', '203.0.113.41')).status).toBe(200);
    t.clock.advance(61);
  });

  it('turns that start together, before any of them made the pair counter, still get no more checks than the limit', async () => {
    const org = await freshUser();
    const lockout = t.app.get(LockoutService);
    // The organization's password budget counter exists (one earlier turn from elsewhere); the pair's and the address's do not yet.
    await lockout.takePasswordTurn(`user:${org}/other`, '203.0.113.50', org);
    // Another connection holds the budget counter, so that every turn below starts its statement (and
    // reads the counters) before any of them has made the pair's: they then run one after another.
    const holder = new Client({ connectionString: t.databaseUrl });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM auth_failures WHERE key = $1 FOR UPDATE', [`pwd:${org}`]);
      const turns = Array.from({ length: 8 }, () => lockout.takePasswordTurn(`user:${org}/bea`, '203.0.113.51', org));
      await new Promise((resolve) => setTimeout(resolve, 500));
      await holder.query('COMMIT');
      const settled = await Promise.allSettled(turns);
      expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(3);
      for (const refused of settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected')) {
        expect(refused.reason).toMatchObject({ status: 429 });
      }
    } finally {
      await holder.end();
    }
    // The refused turns gave their counts back: three checks counted on the pair, the address and the budget (with the earlier one).
    expect(
      (
        await t.db.query("SELECT key, failures FROM auth_failures WHERE key IN ($1, 'addr:203.0.113.51', $2) ORDER BY key", [
          `pair:user:${org}/bea|203.0.113.51`,
          `pwd:${org}`,
        ])
      ).rows,
    ).toEqual([
      { key: 'addr:203.0.113.51', failures: 3 },
      { key: `pair:user:${org}/bea|203.0.113.51`, failures: 3 },
      { key: `pwd:${org}`, failures: 4 },
    ]);
    t.clock.advance(61);
  });

  it('a password that matches gives its turn back: signing in leaves no counters, and wrong ones stay counted', async () => {
    const org = await freshUser();
    for (let i = 0; i < 3; i++) expect((await passwordAttempt(t, org, 'correct horse battery staple', '203.0.113.40')).status).toBe(200);
    expect(await counters(org)).toEqual([]);
    expect((await passwordAttempt(t, org, 'wrong password', '203.0.113.40')).status).toBe(400);
    expect((await passwordAttempt(second, org, 'correct horse battery staple', '203.0.113.40')).status).toBe(200);
    expect((await passwordAttempt(t, org, 'wrong password', '203.0.113.40')).status).toBe(400);
    expect(await counters(org)).toEqual([
      { key: 'addr:203.0.113.40', failures: 2 },
      { key: `pair:user:${org}/bea|203.0.113.40`, failures: 2 },
      { key: `pwd:${org}`, failures: 2 },
    ]);
    t.clock.advance(61);
  });

  it('the purge job removes counters whose window has passed', async () => {
    const { org, account } = await freshAccount();
    await attempt(t, org, account.clientId, 'wrong', '203.0.113.40');
    t.clock.advance(120);
    const purged = await t.app.get(PurgeJob).runOnce();
    expect(purged.counters).toBeGreaterThan(0);
    const left = await t.db.query(`SELECT count(*)::int AS n FROM auth_failures WHERE key LIKE '%203.0.113.40%'`);
    expect(left.rows[0].n).toBe(0);
  });
});
