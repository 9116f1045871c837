import { TestApp, adminCall, createOrganization, createTestApp, expectScimError, platformAdminToken, signIn } from '@app/testing';

/**
 * The portal's user administration over the admin API (issue 37 item 3; DECISIONS 17.2): the user
 * list searched on the server with a SCIM filter (userName, displayName, e-mail), each user with
 * their last sign-in at the login page, and bad input answered with a 400 naming what was wrong.
 */
const ORG = 'usearch';
const PASSWORD = 'correct horse battery staple';

interface Listed {
  userName: string;
  displayName: string | null;
  emails: { value: string }[];
  lastSignIn?: string | null;
}

describe('admin API: users searched, with their last sign-in (DECISIONS 17.2)', () => {
  let t: TestApp;
  let admin: string;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    t = await createTestApp();
    admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, ORG, { passwordOnlySignIn: true });
    await createOrganization(t.http, admin, `${ORG}_other`, {});
    const people = [
      { userName: 'jane.doe', displayName: 'Jane Doe', emails: [{ value: 'jane@example.com', primary: true }] },
      { userName: 'john.roe', displayName: 'Johnny Roe', emails: [{ value: 'jroe@corp.example' }] },
      { userName: 'kim.lee', displayName: 'Kim Lee', emails: [{ value: 'kim@example.com' }] },
    ];
    for (const person of people) {
      const created = await adminCall(t.http, 'post', `/organizations/${ORG}/users`, admin).send({ ...person, role: 'Cardholder', password: PASSWORD });
      expect(created.status).toBe(201);
      ids[person.userName] = created.body.id as string;
    }
  });
  afterAll(() => t?.close());

  const list = (query: Record<string, string>, org = ORG) =>
    adminCall(t.http, 'get', `/organizations/${org}/users?${new URLSearchParams(query).toString()}`, admin);
  const names = (body: { Resources: Listed[] }) => body.Resources.map((user) => user.userName);

  it('finds users by the start of the user name, a part of the display name or of an e-mail address, by userName, paged', async () => {
    const byName = await list({ filter: 'userName sw "JA"' });
    expect(byName.status).toBe(200);
    expect(names(byName.body)).toEqual(['jane.doe']);
    expect(byName.body.totalResults).toBe(1);

    const either = (text: string) => `userName sw "${text}" or displayName co "${text}" or emails.value co "${text}"`;
    expect(names((await list({ filter: either('johnny') })).body)).toEqual(['john.roe']);
    expect(names((await list({ filter: either('example.com') })).body)).toEqual(['jane.doe', 'kim.lee']);
    expect(names((await list({ filter: either('example') })).body)).toEqual(['jane.doe', 'john.roe', 'kim.lee']);

    const paged = await list({ filter: either('example'), startIndex: '2', count: '1' });
    expect(paged.status).toBe(200);
    expect(paged.body).toMatchObject({ totalResults: 3, startIndex: 2, itemsPerPage: 1 });
    expect(names(paged.body)).toEqual(['john.roe']);

    // Without a filter, the list is as before: everyone by userName.
    expect(names((await list({})).body)).toEqual(['jane.doe', 'john.roe', 'kim.lee']);
    // Another organization's users are not found by its filter.
    expect((await list({ filter: either('example') }, `${ORG}_other`)).body.totalResults).toBe(0);
  });

  it("answers each user's last sign-in at the login page, null before the first", async () => {
    const before = await list({ filter: 'userName eq "kim.lee"' });
    expect(before.body.Resources[0].lastSignIn).toBeNull();
    const one = await adminCall(t.http, 'get', `/organizations/${ORG}/users/${ids['kim.lee']}`, admin);
    expect(one.body.lastSignIn).toBeNull();

    const signedInAt = t.clock.now().toISOString();
    await signIn(t, { org: ORG, userName: 'kim.lee', password: PASSWORD });
    const after = await list({ filter: 'userName eq "kim.lee"' });
    expect(after.body.Resources[0].lastSignIn).toBe(signedInAt);
    expect((await adminCall(t.http, 'get', `/organizations/${ORG}/users/${ids['kim.lee']}`, admin)).body.lastSignIn).toBe(signedInAt);

    // Ending the session keeps the sign-in on record; the next sign-in is the last one.
    const ended = await adminCall(t.http, 'delete', `/organizations/${ORG}/users/${ids['kim.lee']}/sessions`, admin);
    expect(ended.status).toBe(204);
    expect((await list({ filter: 'userName eq "kim.lee"' })).body.Resources[0].lastSignIn).toBe(signedInAt);
    t.clock.advance(90);
    const later = t.clock.now().toISOString();
    await signIn(t, { org: ORG, userName: 'kim.lee', password: PASSWORD });
    const listed = (await list({})).body.Resources as Listed[];
    expect(listed.find((user) => user.userName === 'kim.lee')!.lastSignIn).toBe(later);
    expect(listed.find((user) => user.userName === 'jane.doe')!.lastSignIn).toBeNull();
  });

  it('a bad filter is a 400 that names the problem, never a 500', async () => {
    const unknown = await list({ filter: 'password eq "x"' });
    expectScimError(unknown, 400, 'invalidFilter', /password/);
    const broken = await list({ filter: 'userName sw' });
    expect(broken.status).toBe(400);
    expect(broken.body.scimType).toBe('invalidFilter');
    const twice = await adminCall(t.http, 'get', `/organizations/${ORG}/users?filter=a&filter=b`, admin);
    expectScimError(twice, 400, 'invalidValue', /filter must be given once/);
    const count = await list({ filter: 'userName sw "j"', count: 'many' });
    expectScimError(count, 400, 'invalidValue', /count/);
  });

  it('needs an administrator of the organization: 401 without a token, 404 for an organization one does not administer', async () => {
    const bare = await t.http.get(`/admin/v1/organizations/${ORG}/users?filter=${encodeURIComponent('userName sw "j"')}`);
    expect(bare.status).toBe(401);
    const other = await adminCall(t.http, 'post', `/organizations/${ORG}_other/system-accounts`, admin).send({
      role: 'Administration',
      organizationAdministrator: true,
    });
    expect(other.status).toBe(201);
    const token = (
      await t.http
        .post(`/authentication/customer/${ORG}_other/token`)
        .type('form')
        .send({ grant_type: 'client_credentials', client_id: other.body.clientId, client_secret: other.body.secret.value })
    ).body.access_token as string;
    const refused = await adminCall(t.http, 'get', `/organizations/${ORG}/users?filter=${encodeURIComponent('userName sw "j"')}`, token);
    expect(refused.status).toBe(404);
  });
});
