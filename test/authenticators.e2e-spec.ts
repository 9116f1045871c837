import { KeyObject, generateKeyPairSync, sign } from 'node:crypto';
import {
  TestApp,
  createCardholder,
  createOrganization,
  createSystemAccount,
  createTestApp,
  expectScimError,
  makeCertificate,
  platformAdminToken,
  scopeAssignmentFile,
  signAssertion,
  tokenBySecret,
  tokenRequest,
} from '@app/testing';

/**
 * Authenticators (issue 25 item 1; CREDENTIAL-MANAGEMENT.md "Authenticators"): a simulated app (an
 * EC P-256 key pair made here) gets a challenge, signs it and registers, through Self and through an
 * operator; bad proofs and bad attributes are clear 400s; disabling or deleting the person removes
 * the apps in the same transaction.
 */

const SCIM = 'application/scim+json';
const BASE = 'https://api.example.test';
const SCHEMA = 'urn:vendor:scim:api:cms:1.0:Authenticator';
const CHALLENGE_SCHEMA = 'urn:vendor:scim:api:cms:1.0:AuthenticatorChallenge';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const PASSWORD = 'correct horse battery staple';
const SELF = '/aims/rs/scim/v2/Self/Authenticators';
const ORG = 'authn';

/** A mobile authenticator app: its key pair, and what it sends. */
class SimulatedApp {
  readonly privateKey: KeyObject;
  readonly jwk: Record<string, string>;

  constructor(curve: 'P-256' | 'P-384' = 'P-256') {
    const pair = generateKeyPairSync('ec', { namedCurve: curve });
    this.privateKey = pair.privateKey;
    this.jwk = pair.publicKey.export({ format: 'jwk' }) as Record<string, string>;
  }

  /** ES256: r||s, base64url (CREDENTIAL-MANAGEMENT.md "Authenticators"). */
  sign(input: string): string {
    return sign('sha256', Buffer.from(input, 'utf8'), { key: this.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url');
  }
}

describe('Authenticators', () => {
  let t: TestApp;
  let admin: string;
  const tokens: Record<string, string> = {};

  beforeAll(async () => {
    // The default roles, and an Operator Dependent help desk ("Desk East").
    const file = scopeAssignmentFile(
      'authenticators.properties',
      {
        Administration: ['Scope.device_management', 'Scope.helpdesk', 'Scope.configuration_operator'],
        'Help Desk': ['Scope.helpdesk'],
        Issuance: ['Scope.device_management'],
        Configuration: ['Scope.configuration_operator'],
        Cardholder: ['Scope.device'],
        'Desk East': ['Scope.helpdesk'],
      },
      ['Desk East'],
    );
    t = await createTestApp({ env: { SCOPE_ASSIGNMENT_FILE: file } });
    admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, ORG);
    await createOrganization(t.http, admin, 'authn2');
    for (const role of ['Help Desk', 'Issuance', 'Configuration']) {
      const account = await createSystemAccount(t.http, admin, ORG, { role });
      tokens[role] = await tokenBySecret(t.http, ORG, account.clientId, account.secret);
    }
    const other = await createSystemAccount(t.http, admin, 'authn2', { role: 'Administration' });
    tokens.other = await tokenBySecret(t.http, 'authn2', other.clientId, other.secret);
  });
  afterAll(() => t.close());

  const send = (method: 'get' | 'post' | 'patch' | 'delete', path: string, token: string | undefined, body?: unknown) => {
    let request = t.http[method](path).set('Accept', SCIM);
    if (token !== undefined) request = request.auth(token, { type: 'bearer' });
    return body === undefined ? request : request.set('Content-Type', SCIM).send(JSON.stringify(body));
  };

  async function person(userName: string, extra: Record<string, unknown> = {}): Promise<{ id: string; token: string }> {
    const { id } = await createCardholder(t, admin, ORG, userName, { password: PASSWORD, ...extra });
    const grant = await tokenRequest(t.http, ORG, { grant_type: 'password', username: userName, password: PASSWORD });
    expect(grant.status).toBe(200);
    return { id, token: grant.body.access_token };
  }

  /** Gets a challenge at `base` and answers the registration body the app sends, signed by `signer` (default: the app). */
  async function registration(base: string, token: string, app: SimulatedApp, overrides: Record<string, unknown> = {}, signer: SimulatedApp = app) {
    const challenge = await send('post', `${base}/.challenge`, token);
    expect(challenge.status).toBe(200);
    return {
      schemas: [SCHEMA],
      displayName: 'Pixel of Carla',
      operatingSystem: 'Android',
      pushHandle: 'fcm-registration-token-0123456789',
      publicKey: app.jwk,
      challenge: challenge.body.challenge,
      signature: signer.sign(challenge.body.signingInput),
      ...overrides,
    };
  }

  const countOf = async (userId: string) => Number((await t.db.query('SELECT count(*) AS n FROM authenticators WHERE user_id = $1', [userId])).rows[0].n);

  it('a person gets a challenge, signs it, registers the app, lists, reads, renames and removes it', async () => {
    const carla = await person('carla');
    const app = new SimulatedApp();
    const challenge = await send('post', `${SELF}/.challenge`, carla.token);
    expect(challenge.status).toBe(200);
    expect(challenge.headers['content-type']).toMatch(/^application\/scim\+json/);
    expect(challenge.body).toEqual({
      schemas: [CHALLENGE_SCHEMA],
      challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      signingInput: `authenticator-registration.${ORG}.${carla.id}.${challenge.body.challenge}`,
      expiresAt: new Date(t.clock.now().getTime() + 300_000).toISOString(),
    });
    const handle = 'fcm-handle-that-must-stay-secret-0123456789';
    const created = await send('post', SELF, carla.token, {
      schemas: [SCHEMA],
      displayName: 'Pixel of Carla',
      operatingSystem: 'Android',
      pushHandle: handle,
      publicKey: app.jwk,
      challenge: challenge.body.challenge,
      signature: app.sign(challenge.body.signingInput),
    });
    expect(created.status).toBe(201);
    const id = created.body.id;
    const location = `${BASE}${SELF}/${id}`;
    expect(created.headers.location).toBe(location);
    expect(created.headers.etag).toBe('W/"1"');
    expect(created.body).toEqual({
      schemas: [SCHEMA],
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      displayName: 'Pixel of Carla',
      operatingSystem: 'Android',
      publicKey: { kty: 'EC', crv: 'P-256', x: app.jwk.x, y: app.jwk.y },
      thumbprint: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      status: 'active',
      owner: { value: carla.id, $ref: `${BASE}/aims/rs/scim/v2/Users/${carla.id}`, type: 'User' },
      meta: { resourceType: 'Authenticator', created: expect.any(String), lastModified: expect.any(String), location, version: '1' },
    });
    expect(JSON.stringify(created.body)).not.toContain(handle);

    const list = await send('get', SELF, carla.token);
    expect(list.status).toBe(200);
    expect(list.body).toEqual({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
      totalResults: 1,
      itemsPerPage: 1,
      startIndex: 1,
      Resources: [created.body],
    });
    expect((await send('get', `${SELF}/${id}`, carla.token)).body).toEqual(created.body);
    // The customer form (DECISIONS 1) names the resources in any case.
    const customer = await send('get', `/credential-management/customer/${ORG}/self/authenticators`, carla.token);
    expect(customer.status).toBe(200);
    expect(customer.body.Resources).toEqual([created.body]);

    const renamed = await send('patch', `${SELF}/${id}`, carla.token, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', path: 'displayName', value: 'Old Pixel' }],
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ displayName: 'Old Pixel', meta: { version: '2' } });
    expectScimError(
      await send('patch', `${SELF}/${id}`, carla.token, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'operatingSystem', value: 'iOS13' }] }),
      400,
      'mutability',
      'Only displayName can be changed',
    );
    expectScimError(
      await send('patch', `${SELF}/${id}`, carla.token, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'displayName', value: 'x'.repeat(65) }] }),
      400,
      'invalidValue',
      'displayName: must be 1-64 characters',
    );
    const stale = await send('delete', `${SELF}/${id}`, carla.token).set('If-Match', 'W/"1"');
    expectScimError(stale, 412, undefined, `Authenticator ${id} has changed: its current version is 2`);
    expect((await send('delete', `${SELF}/${id}`, carla.token).set('If-Match', 'W/"2"')).status).toBe(204);
    expect((await send('get', SELF, carla.token)).body.totalResults).toBe(0);
    expectScimError(await send('delete', `${SELF}/${id}`, carla.token), 404, undefined, `Authenticator ${id} does not exist`);

    const events = await t.db.query('SELECT code, action, target, details::text AS details FROM audit_events WHERE target = $1 ORDER BY id', [id]);
    expect(events.rows.map((e: { code: number }) => e.code)).toEqual([92001, 92002, 92003]);
    // The push handle is sensitive: never in the audit log, never in the service's log.
    for (const event of events.rows) expect(event.details).not.toContain(handle);
    expect(t.logs.join('\n')).not.toContain(handle);
  });

  it('answers a clear 400 for a replayed or expired challenge, another key, P-384, an unknown OS, an oversized handle', async () => {
    const dora = await person('dora');
    expectScimError(
      await send('post', `${SELF}/.challenge`, dora.token, { nonce: 'mine' }),
      400,
      'invalidValue',
      'attribute "nonce" is not part of this resource',
    );
    const app = new SimulatedApp();
    const body = await registration(SELF, dora.token, app);
    expect((await send('post', SELF, dora.token, body)).status).toBe(201);
    expectScimError(await send('post', SELF, dora.token, body), 400, 'invalidValue', 'is unknown or was used already: get a new one');

    // Two registrations with one challenge at once: the database hands it to exactly one.
    const raced = await registration(SELF, dora.token, new SimulatedApp());
    const statuses = (await Promise.all([send('post', SELF, dora.token, raced), send('post', SELF, dora.token, raced)])).map((r) => r.status).sort();
    expect(statuses).toEqual([201, 400]);

    const expired = await registration(SELF, dora.token, new SimulatedApp());
    t.clock.advance(301);
    expectScimError(await send('post', SELF, dora.token, expired), 400, 'invalidValue', 'expired');
    // Back again, so that the suite's tokens not used yet stay within their unused timeout (DECISIONS 3.4).
    t.clock.advance(-301);

    const stranger = new SimulatedApp();
    expectScimError(
      await send('post', SELF, dora.token, await registration(SELF, dora.token, app, { publicKey: new SimulatedApp().jwk }, stranger)),
      400,
      'invalidValue',
      'signature does not verify with publicKey',
    );
    const p384 = new SimulatedApp('P-384');
    expectScimError(await send('post', SELF, dora.token, await registration(SELF, dora.token, p384)), 400, 'invalidValue', 'publicKey.crv: must be "P-256"');
    expectScimError(
      await send('post', SELF, dora.token, await registration(SELF, dora.token, new SimulatedApp(), { operatingSystem: 'BlackBerry' })),
      400,
      'invalidValue',
      'operatingSystem: "BlackBerry" is not a supported operating system; allowed: WINDOWS, WINDOWS10, WINDOWS11, Android, iOS12, iOS13',
    );
    expectScimError(
      await send('post', SELF, dora.token, await registration(SELF, dora.token, new SimulatedApp(), { pushHandle: 'h'.repeat(2049) })),
      400,
      'invalidValue',
      'pushHandle: must be 1-2048 printable ASCII characters',
    );
    const withPrivate = new SimulatedApp();
    const privateJwk = withPrivate.privateKey.export({ format: 'jwk' });
    expectScimError(
      await send('post', SELF, dora.token, await registration(SELF, dora.token, withPrivate, { publicKey: privateJwk })),
      400,
      'invalidValue',
      'publicKey: holds a private key (d)',
    );
    expectScimError(
      await send('post', SELF, dora.token, await registration(SELF, dora.token, new SimulatedApp(), { displayName: '' })),
      400,
      'invalidValue',
      'displayName: must be 1-64 characters',
    );
    // A challenge made for another person does not register for this one.
    const erin = await person('erin');
    const forErin = await registration(SELF, erin.token, new SimulatedApp());
    expectScimError(await send('post', SELF, dora.token, forErin), 400, 'invalidValue', 'is unknown or was used already');
    // The same key twice for one person.
    expectScimError(await send('post', SELF, dora.token, await registration(SELF, dora.token, app)), 409, 'uniqueness', 'already registered');
    expect(await countOf(dora.id)).toBe(2);
  });

  it("another person's authenticator, or another organization's, answers 404", async () => {
    const fay = await person('fay');
    const gil = await person('gil');
    const created = await send('post', SELF, fay.token, await registration(SELF, fay.token, new SimulatedApp()));
    const id = created.body.id;
    for (const [method, body] of [
      ['get', undefined],
      ['patch', { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'displayName', value: 'mine now' }] }],
      ['delete', undefined],
    ] as const) {
      expectScimError(await send(method, `${SELF}/${id}`, gil.token, body), 404, undefined, `Authenticator ${id} does not exist`);
      expectScimError(
        await send(method, `/aims/rs/scim/v2/Users/${gil.id}/Authenticators/${id}`, tokens['Help Desk'], body),
        404,
        undefined,
        `Authenticator ${id} does not exist`,
      );
    }
    expectScimError(await send('get', `/aims/rs/scim/v2/Users/${fay.id}/Authenticators`, tokens.other), 404, undefined, `User "${fay.id}" does not exist`);
    expect((await send('get', SELF, gil.token)).body.totalResults).toBe(0);
    expect(await countOf(fay.id)).toBe(1);
  });

  it('an operator registers an app for a person, lists and removes it; the grant rules apply', async () => {
    const hal = await person('hal');
    const base = `/aims/rs/scim/v2/Users/${hal.id}/Authenticators`;
    const app = new SimulatedApp();
    const challenge = await send('post', `${base}/.challenge`, tokens['Help Desk']);
    expect(challenge.body.signingInput).toBe(`authenticator-registration.${ORG}.${hal.id}.${challenge.body.challenge}`);
    const created = await send('post', base, tokens['Help Desk'], {
      schemas: [SCHEMA],
      displayName: 'iPhone of Hal',
      operatingSystem: 'iOS13',
      pushHandle: 'a'.repeat(64),
      publicKey: app.jwk,
      challenge: challenge.body.challenge,
      signature: app.sign(challenge.body.signingInput),
    });
    expect(created.status).toBe(201);
    expect(created.headers.location).toBe(`${BASE}${base}/${created.body.id}`);
    expect(created.body.meta.location).toBe(`${BASE}${base}/${created.body.id}`);
    // The person sees it under Self.
    expect((await send('get', SELF, hal.token)).body.Resources.map((a: { id: string }) => a.id)).toEqual([created.body.id]);
    expect((await send('get', base, tokens.Issuance)).body.totalResults).toBe(1);
    expect((await send('delete', `${base}/${created.body.id}`, tokens.Issuance)).status).toBe(204);
    expect(await countOf(hal.id)).toBe(0);

    // A Help Desk operator cannot give a greater account an authenticator (DECISIONS 5.3).
    const boss = await createCardholder(t, admin, ORG, 'boss', { role: 'Administration', userType: 'operator' });
    const bossBase = `/aims/rs/scim/v2/Users/${boss.id}/Authenticators`;
    expectScimError(
      await send('post', bossBase, tokens['Help Desk'], await registration(bossBase, tokens['Help Desk'], new SimulatedApp())),
      403,
      undefined,
      'rule "account-above-own"',
    );
    expect(await countOf(boss.id)).toBe(0);
  });

  it('an Operator Dependent operator reaches the apps of its groups only', async () => {
    const olga = await createCardholder(t, admin, ORG, 'olga.op', { role: 'Desk East', userType: 'operator', groups: ['east'] });
    const certificate = await makeCertificate();
    const enrolled = await t.http
      .post(`/admin/v1/organizations/${ORG}/users/${olga.id}/certificates`)
      .auth(admin, { type: 'bearer' })
      .set('Content-Type', 'application/x-pem-file')
      .send(certificate.pem);
    expect(enrolled.status).toBe(201);
    const grant = await tokenRequest(t.http, ORG, {
      grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
      assertion: await signAssertion(certificate, 'olga.op', `https://auth.example.test/authentication/customer/${ORG}/token`, { now: t.clock.now() }),
    });
    expect(grant.status).toBe(200);
    const operator = grant.body.access_token;
    const east = await createCardholder(t, admin, ORG, 'eve.east', { groups: ['east'] });
    const west = await createCardholder(t, admin, ORG, 'will.west', { groups: ['west'] });
    const eastBase = `/aims/rs/scim/v2/Users/${east.id}/Authenticators`;
    const westBase = `/aims/rs/scim/v2/Users/${west.id}/Authenticators`;
    expect((await send('post', eastBase, operator, await registration(eastBase, operator, new SimulatedApp()))).status).toBe(201);
    expectScimError(await send('post', `${westBase}/.challenge`, operator), 404, undefined, `User "${west.id}" does not exist`);
    expectScimError(await send('get', westBase, operator), 404, undefined, `User "${west.id}" does not exist`);
    const forWest = await registration(westBase, tokens['Help Desk'], new SimulatedApp());
    expectScimError(await send('post', westBase, operator, forWest), 404, undefined, `User "${west.id}" does not exist`);
    expect(await countOf(west.id)).toBe(0);
  });

  it('disabling the person removes the apps in the same change; re-enabling does not bring them back; deleting removes them', async () => {
    const ivy = await person('ivy');
    for (let i = 0; i < 2; i++) expect((await send('post', SELF, ivy.token, await registration(SELF, ivy.token, new SimulatedApp()))).status).toBe(201);
    expect(await countOf(ivy.id)).toBe(2);
    const disabled = await t.http.patch(`/admin/v1/organizations/${ORG}/users/${ivy.id}`).auth(admin, { type: 'bearer' }).send({ disabled: true });
    expect(disabled.status).toBe(200);
    expect(await countOf(ivy.id)).toBe(0);
    const removed = await t.db.query("SELECT details->>'reason' AS reason FROM audit_events WHERE action = 'authenticator.remove' AND details->>'user' = $1", [
      ivy.id,
    ]);
    expect(removed.rows).toEqual([{ reason: 'userDisabled' }, { reason: 'userDisabled' }]);
    // A disabled person gets none, through an operator either.
    const base = `/aims/rs/scim/v2/Users/${ivy.id}/Authenticators`;
    expectScimError(await send('post', `${base}/.challenge`, tokens['Help Desk']), 409, undefined, 'is disabled');
    expect((await t.http.patch(`/admin/v1/organizations/${ORG}/users/${ivy.id}`).auth(admin, { type: 'bearer' }).send({ disabled: false })).status).toBe(200);
    expect((await send('get', base, tokens['Help Desk'])).body).toMatchObject({ totalResults: 0, Resources: [] });
    const again = await tokenRequest(t.http, ORG, { grant_type: 'password', username: 'ivy', password: PASSWORD });
    expect((await send('get', SELF, again.body.access_token)).body.totalResults).toBe(0);

    expect((await send('post', base, tokens['Help Desk'], await registration(base, tokens['Help Desk'], new SimulatedApp()))).status).toBe(201);
    expect(await countOf(ivy.id)).toBe(1);
    expect((await t.http.delete(`/admin/v1/organizations/${ORG}/users/${ivy.id}`).auth(admin, { type: 'bearer' })).status).toBe(204);
    expect(await countOf(ivy.id)).toBe(0);
    expect(Number((await t.db.query('SELECT count(*) AS n FROM authenticator_challenges WHERE user_id = $1', [ivy.id])).rows[0].n)).toBe(0);
  });

  it('answers 401 without a token and 403 without the permission, on every route', async () => {
    const jay = await person('jay');
    const id = '7d444840-9dc0-11d1-b245-5ffdce74fad2';
    const userBase = `/aims/rs/scim/v2/Users/${jay.id}/Authenticators`;
    const routes: ['get' | 'post' | 'patch' | 'delete', string, string][] = [
      ['post', `${SELF}/.challenge`, 'self.authenticator.manage'],
      ['post', SELF, 'self.authenticator.manage'],
      ['get', SELF, 'self.authenticator.read'],
      ['get', `${SELF}/${id}`, 'self.authenticator.read'],
      ['patch', `${SELF}/${id}`, 'self.authenticator.manage'],
      ['delete', `${SELF}/${id}`, 'self.authenticator.manage'],
      ['post', `${userBase}/.challenge`, 'user.authenticator.manage'],
      ['post', userBase, 'user.authenticator.manage'],
      ['get', userBase, 'user.authenticator.read'],
      ['get', `${userBase}/${id}`, 'user.authenticator.read'],
      ['patch', `${userBase}/${id}`, 'user.authenticator.manage'],
      ['delete', `${userBase}/${id}`, 'user.authenticator.manage'],
    ];
    for (const [method, path, permission] of routes) {
      const anonymous = await send(method, path, undefined);
      expect({ path, status: anonymous.status }).toEqual({ path, status: 401 });
      // Self is the Device scope's; the person's own token has no operator permission.
      const refused = await send(method, path, path.startsWith(SELF) ? tokens.Configuration : jay.token);
      expect({ path, status: refused.status, detail: refused.body.detail }).toEqual({ path, status: 403, detail: expect.stringContaining(permission) });
    }
  });
});
