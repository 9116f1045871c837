import type { Response } from 'supertest';
import { PasswordHashSlots } from '@app/accounts';
import {
  CreatedAccount,
  TestApp,
  cookiePair,
  errorText,
  hiddenField,
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

/**
 * A flood of wrong passwords from one or two addresses beside a person with the right password at
 * another (issue 32 item 6, DECISIONS 4): the hashing turns are shared per address, so the person
 * gets a place in the queue and one of the next turns instead of a 503 behind the flood; and an
 * address past its limit is refused (429) before any hash. One hash at a time, four waiting; the
 * test holds the one turn while the queue fills, so nothing here depends on timing.
 */
describe('password flood from few addresses', () => {
  let t: TestApp;
  const ORG = 'fair';
  const LOGIN = `/authentication/customer/${ORG}/login`;
  const ORIGIN = 'https://auth.example.test';

  beforeAll(async () => {
    t = await createTestApp({
      env: { PASSWORD_HASH_CONCURRENCY: '1', PASSWORD_HASH_QUEUE: '4', AUTH_FAILURE_LIMIT: '1', TRUSTED_PROXIES: '127.0.0.1,::1,::ffff:127.0.0.1' },
    });
    const admin = await platformAdminToken(t.http);
    // A password alone signs a cardholder in at the login page here, so the page's right sign-in ends signed in.
    await createOrganization(t.http, admin, ORG, { passwordOnlySignIn: true });
    for (const userName of ['bea', 'cy']) {
      const created = await t.http
        .post(`/admin/v1/organizations/${ORG}/users`)
        .auth(admin, { type: 'bearer' })
        .send({ userName, role: 'Cardholder', password: PASSWORD });
      expect(created.status).toBe(201);
    }
  });
  afterAll(() => t.close());

  async function loginForm() {
    const form = await t.bare.get(LOGIN);
    expect(form.status).toBe(200);
    return { cookie: cookiePair(form.headers['set-cookie'], '__Host-Http-login-form')!, token: hiddenField(form.text, 'form_token')! };
  }
  const loginPost = (form: { cookie: string; token: string }, address: string, userName: string, password: string) =>
    t.bare
      .post(LOGIN)
      .set({ Cookie: form.cookie, Origin: ORIGIN, 'X-Forwarded-For': address })
      .type('form')
      .send({ form_token: form.token, step: 'password', userName, password });
  const passwordGrant = (address: string, username: string, password: string) =>
    tokenRequest(t.http, ORG, { grant_type: 'password', username, password }).set('X-Forwarded-For', address);
  async function until(condition: () => boolean, what: string): Promise<void> {
    for (let i = 0; i < 500 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    if (!condition()) throw new Error(`timed out waiting for ${what}`);
  }

  it('the right password from another address gets a hashing turn beside the flood and signs in; an address past its limit gets 429 before any hash', async () => {
    const slots = t.app.get(PasswordHashSlots);
    const hashes = jest.spyOn(slots, 'derive');
    const [floodA, floodB, personAtGrant, personAtPage] = ['192.0.2.1', '192.0.2.2', '192.0.2.10', '192.0.2.11'];
    const form = await loginForm();
    let release!: () => void;
    const held = slots.run(() => new Promise<void>((resolve) => (release = resolve)));
    let answered = 0;
    const counted = <T>(request: PromiseLike<T>) => Promise.resolve(request).finally(() => answered++);
    const flood: Promise<Response>[] = [];
    const rights: Promise<Response>[] = [];
    try {
      // Six wrong passwords from each flooding address at once (the grant from one, the page from the other).
      flood.push(
        ...Array.from({ length: 6 }, (_, i) => counted(passwordGrant(floodA, `guess${i}`, 'wrong password!'))),
        ...Array.from({ length: 6 }, (_, i) => counted(loginPost(form, floodB, `guess${i}`, 'wrong password!'))),
      );
      // The four places of the queue are taken and the eight others answered busy at once.
      await until(() => answered === 8 && slots.waitingTasks === 4, 'the flood to fill the queue');
      // The person at each of two other addresses still gets a place: each takes the newest place of the flood holding most.
      let settled = 0;
      const pageForm = await loginForm();
      rights.push(
        ...[passwordGrant(personAtGrant, 'bea', PASSWORD), loginPost(pageForm, personAtPage, 'cy', PASSWORD)].map((request) =>
          Promise.resolve(request).finally(() => settled++),
        ),
      );
      // Two flood requests answered busy for them (a FIFO queue would have answered the people busy instead).
      await until(() => answered + settled === 10 && slots.waitingTasks === 4, 'the people to take two places');
      expect(hashes).not.toHaveBeenCalled();
    } finally {
      release();
      await held;
    }
    const [grant, page] = await Promise.all(rights);
    expect(grant.status).toBe(200);
    expect(grant.body.access_token).toEqual(expect.any(String));
    // Signed in: the signed-in page (no return_to) with the session cookie.
    expect(page.status).toBe(200);
    expect(cookiePair(page.headers['set-cookie'], '__Host-Http-session')).toMatch(/^__Host-Http-session=./);
    const answers = await Promise.all(flood);
    const grantAnswers = answers.slice(0, 6).map((a) => a.status);
    const pageAnswers = answers.slice(6).map((a) => errorText(a.text));
    // Each flooding address was left one place: one wrong password checked (400, or the page's failure), the rest busy.
    expect(grantAnswers.filter((s) => s === 400)).toHaveLength(1);
    expect(grantAnswers.filter((s) => s === 503)).toHaveLength(5);
    expect(pageAnswers.filter((a) => /^The service is busy\. Try again in 1 second/.test(a))).toHaveLength(5);
    expect(pageAnswers.filter((a) => a.startsWith('The sign-in did not succeed'))).toHaveLength(1);
    // Four hashes: one of each flooding address and the two people's.
    expect(hashes).toHaveBeenCalledTimes(4);

    // A busy answer counted nothing: the flooding address has one failure; past its limit (10 here) it gets 429 before the hash.
    for (let i = 0; i < 9; i++) expect((await passwordGrant(floodA, `more${i}`, 'wrong password!')).status).toBe(400);
    expect(hashes).toHaveBeenCalledTimes(13);
    const refused = await Promise.all(Array.from({ length: 3 }, (_, i) => passwordGrant(floodA, `late${i}`, 'wrong password!')));
    const pageRefused = await loginPost(form, floodA, 'bea', PASSWORD);
    for (const answer of refused) {
      expect(answer.status).toBe(429);
      expect(Number(answer.headers['retry-after'])).toBeGreaterThan(0);
      expect(answer.body.error).toBe('temporarily_unavailable');
    }
    expect(errorText(pageRefused.text)).toMatch(/^Too many failed sign-ins\. Try again in \d+ (seconds?|minutes)\.$/);
    expect(hashes).toHaveBeenCalledTimes(13);
    // The people elsewhere are not locked out by it.
    expect((await passwordGrant(personAtGrant, 'bea', PASSWORD)).status).toBe(200);
    expect(hashes).toHaveBeenCalledTimes(14);
    hashes.mockRestore();
  });
});
