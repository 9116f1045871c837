import {
  IssuedPerson,
  TestApp,
  cookiePair,
  createIssuingOrganization,
  createPersonWithCard,
  createTestApp,
  errorText,
  hiddenField,
  nextTotpCode,
  platformAdminToken,
} from '@app/testing';

/**
 * Guessing the one-time code (DECISIONS 14.1): whoever passed the password step holds a step token
 * good for five minutes, and may send many codes with it. The code step is bounded per person, in
 * the database, before any code is checked: neither requests sent at once nor requests from many
 * addresses get more than AUTH_FAILURE_LIMIT codes checked in a window.
 */

const ORG = 'codeguess';
const PASSWORD = 'correct horse battery staple';
const LOGIN = `/authentication/customer/${ORG}/login`;
const ORIGIN = 'https://auth.example.test';
const LIMIT = 5;

describe('one-time code guessing on the login page', () => {
  let t: TestApp;
  let admin: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { AUTH_FAILURE_LIMIT: String(LIMIT), TRUSTED_PROXIES: '127.0.0.1,::1,::ffff:127.0.0.1' } });
    admin = await platformAdminToken(t.http);
    await createIssuingOrganization(t, admin, ORG, {});
  }, 60_000);
  afterAll(() => t.close());

  /** The password step from `address`: the form cookie, form token and step token. */
  async function passwordStep(person: IssuedPerson, address: string) {
    const form = await t.bare.get(LOGIN).set('X-Forwarded-For', address);
    const cookie = cookiePair(form.headers['set-cookie'], '__Host-Http-login-form')!;
    const formToken = hiddenField(form.text, 'form_token')!;
    const first = await t.bare
      .post(LOGIN)
      .set({ Cookie: cookie, Origin: ORIGIN, 'X-Forwarded-For': address })
      .type('form')
      .send({ form_token: formToken, step: 'password', userName: person.userName, password: PASSWORD });
    const stepToken = hiddenField(first.text, 'step_token');
    expect(stepToken).toBeDefined();
    return { cookie, formToken, stepToken: stepToken! };
  }
  const sendCode = (step: { cookie: string; formToken: string; stepToken: string }, code: string, address: string) =>
    t.bare
      .post(LOGIN)
      .set({ Cookie: step.cookie, Origin: ORIGIN, 'X-Forwarded-For': address })
      .type('form')
      .send({ form_token: step.formToken, step: 'code', step_token: step.stepToken, code });
  const codesChecked = async (userName: string) =>
    (await t.db.query("SELECT count(*)::int AS n FROM audit_events WHERE action = 'sign_in.fail' AND actor = $1 AND details->>'step' = 'code'", [userName]))
      .rows[0].n as number;
  const wrongCode = (right: string, i: number) => String((Number(right) + 1 + i) % 1_000_000).padStart(6, '0');

  it('checks at most the limit of codes when many are sent at once with one step token', async () => {
    const person = await createPersonWithCard(t, admin, ORG, 'burst');
    const step = await passwordStep(person, '198.51.100.1');
    const right = nextTotpCode(t, person.totpSecret!);
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => sendCode(step, wrongCode(right, i), '198.51.100.1')));
    expect(answers.every((a) => a.status === 200 && cookiePair(a.headers['set-cookie'], '__Host-Http-session') === undefined)).toBe(true);
    expect(await codesChecked('burst')).toBeLessThanOrEqual(LIMIT);
    expect(answers.filter((a) => errorText(a.text).startsWith('Too many failed sign-ins')).length).toBeGreaterThanOrEqual(40 - LIMIT);
  });

  it('checks at most the limit of passwords when many wrong ones are sent at once: each is counted before its hash (DECISIONS 4)', async () => {
    await createPersonWithCard(t, admin, ORG, 'pwburst');
    const address = '198.51.100.9';
    const form = await t.bare.get(LOGIN).set('X-Forwarded-For', address);
    const cookie = cookiePair(form.headers['set-cookie'], '__Host-Http-login-form')!;
    const formToken = hiddenField(form.text, 'form_token')!;
    const answers = await Promise.all(
      Array.from({ length: 30 }, () =>
        t.bare
          .post(LOGIN)
          .set({ Cookie: cookie, Origin: ORIGIN, 'X-Forwarded-For': address })
          .type('form')
          .send({ form_token: formToken, step: 'password', userName: 'pwburst', password: 'wrong password' }),
      ),
    );
    expect(answers.every((a) => a.status === 200 && hiddenField(a.text, 'step_token') === undefined)).toBe(true);
    const locked = answers.filter((a) => errorText(a.text).startsWith('Too many failed sign-ins'));
    expect(locked).toHaveLength(30 - LIMIT);
    for (const answer of locked) expect(answer.headers['retry-after']).toMatch(/^\d+$/);
    const checked = await t.db.query(
      "SELECT count(*)::int AS n FROM audit_events WHERE action = 'sign_in.fail' AND actor = 'pwburst' AND details->>'reason' = 'wrong_password'",
    );
    expect(checked.rows).toEqual([{ n: LIMIT }]);
  });

  it('checks at most the limit of codes of one person from many addresses; the right code then waits for the window too', async () => {
    const person = await createPersonWithCard(t, admin, ORG, 'spread');
    const right = nextTotpCode(t, person.totpSecret!);
    for (let i = 0; i < 3 * LIMIT; i++) {
      const address = `203.0.113.${i + 1}`;
      const answer = await sendCode(await passwordStep(person, address), wrongCode(right, i), address);
      expect(answer.status).toBe(200);
    }
    expect(await codesChecked('spread')).toBe(LIMIT);
    const last = await sendCode(await passwordStep(person, '203.0.113.200'), right, '203.0.113.200');
    expect(errorText(last.text)).toMatch(/^Too many failed sign-ins\. Try again in \d+ (seconds?|minutes)\.$/);
    expect(last.headers['retry-after']).toMatch(/^\d+$/);
    expect(cookiePair(last.headers['set-cookie'], '__Host-Http-session')).toBeUndefined();
    const lockouts = (await t.db.query("SELECT details FROM audit_events WHERE action = 'sign_in.lockout' AND target = $1", [person.userName])).rows;
    expect(lockouts).toHaveLength(1);
    expect(lockouts[0].details.scope).toBe('one-time codes of the person');
    // The window passes: the person's right code signs them in, and their count starts again.
    t.clock.advance(301);
    const step = await passwordStep(person, '203.0.113.201');
    const done = await sendCode(step, nextTotpCode(t, person.totpSecret!), '203.0.113.201');
    expect(cookiePair(done.headers['set-cookie'], '__Host-Http-session')).toBeDefined();
  });
});
