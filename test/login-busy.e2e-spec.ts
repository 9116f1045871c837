import { TestApp, cookiePair, createIssuingOrganization, createPersonWithCard, createTestApp, errorText, hiddenField, platformAdminToken } from '@app/testing';

/**
 * The login page while every password-hashing turn is taken (DECISIONS 3.5, 14.3): like the password
 * grant it answers at once with Retry-After and counts no failure; being a page, it says so on the
 * form (a 200 page, as the lockout), never in a JSON error a person cannot read.
 */
const ORG = 'loginbusy';
const LOGIN = `/authentication/customer/${ORG}/login`;
const ORIGIN = 'https://auth.example.test';

describe('login page under a flood of password checks', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ env: { PASSWORD_HASH_CONCURRENCY: '1', PASSWORD_HASH_QUEUE: '0' } });
    const admin = await platformAdminToken(t.http);
    await createIssuingOrganization(t, admin, ORG, {});
    await createPersonWithCard(t, admin, ORG, 'busy');
  }, 60_000);
  afterAll(() => t.close());

  it('answers the form with a busy message and Retry-After when no hashing turn is free', async () => {
    const form = await t.bare.get(LOGIN);
    const cookie = cookiePair(form.headers['set-cookie'], '__Host-Http-login-form')!;
    const token = hiddenField(form.text, 'form_token')!;
    const answers = await Promise.all(
      Array.from({ length: 6 }, () =>
        t.bare
          .post(LOGIN)
          .set({ Cookie: cookie, Origin: ORIGIN })
          .type('form')
          .send({ form_token: token, step: 'password', userName: 'busy', password: 'not the password, not at all' }),
      ),
    );
    for (const answer of answers)
      expect({ status: answer.status, type: answer.headers['content-type'] }).toEqual({ status: 200, type: 'text/html; charset=utf-8' });
    const busy = answers.filter((answer) => errorText(answer.text).startsWith('The service is busy'));
    expect(busy.length).toBeGreaterThan(0);
    for (const answer of busy) {
      expect(answer.headers['retry-after']).toMatch(/^\d+$/);
      expect(answer.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(errorText(answer.text)).toMatch(/^The service is busy\. Try again in \d+ seconds?\.$/);
      expect(answer.text).toContain('name="password"');
    }
    // Refused for want of a turn: no failure counted, none audited.
    const failures = (await t.db.query("SELECT count(*)::int AS n FROM audit_events WHERE action = 'sign_in.fail' AND actor = 'busy'")).rows[0].n;
    expect(failures).toBe(answers.length - busy.length);
  });
});
