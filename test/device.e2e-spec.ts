import { randomUUID } from 'node:crypto';
import {
  TestApp,
  TestCertificate,
  createOrganization,
  createSystemAccount,
  createTestApp,
  makeCertificate,
  platformAdminToken,
  signAssertion,
  tokenBySecret,
  tokenRequest,
  expectScimError,
  operatorDependentScopeFile,
} from '@app/testing';

/**
 * The Device resource (interface "Device resource", "Create a device"; DECISIONS 8): create with
 * every refusal, read, delete, the alias path, tenancy (DECISIONS 2), the permission of each entry
 * point per default role (DECISIONS 5.2) and Operator Dependent roles.
 */

const SCIM = 'application/scim+json';
/** The answer's media type (Fastify adds the charset). */
const SCIM_ANSWER = /^application\/scim\+json(; charset=utf-8)?$/;
const DEVICE_SCHEMA = 'urn:vendor:scim:api:cms:1.0:Device';
const BASE = 'https://api.example.test';
const ISO_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ATR = '3B7F96000080318065B0846160FB120FFD829000';

/** The interface's example request (Create a device): schemas and one {ATR, CUID}. */
const exampleRequest = (cuid: string) => ({ schemas: [DEVICE_SCHEMA], externalIds: [{ ATR, CUID: cuid }] });

let cuidCounter = 0;
/** A CUID no other test uses. */
const newCuid = () => `40812345${String(++cuidCounter).padStart(8, '0')}`;

describe('Device resource', () => {
  let t: TestApp;
  let admin: string;
  /** One system account token per default role, in org `dev` (automatic creation on). */
  const tokens: Record<string, string> = {};

  beforeAll(async () => {
    t = await createTestApp();
    admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, 'dev', { automaticDeviceCreation: true });
    await createOrganization(t.http, admin, 'other', { automaticDeviceCreation: true });
    await createOrganization(t.http, admin, 'manual');
    for (const role of ['Administration', 'Issuance', 'Help Desk', 'Cardholder']) {
      const account = await createSystemAccount(t.http, admin, 'dev', { role });
      tokens[role] = await tokenBySecret(t.http, 'dev', account.clientId, account.secret);
    }
    for (const org of ['other', 'manual']) {
      const account = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
      tokens[org] = await tokenBySecret(t.http, org, account.clientId, account.secret);
    }
  });
  afterAll(() => t.close());

  const create = (body: unknown, token = tokens.Issuance, path = '/aims/rs/scim/v2/Device') =>
    t.http.post(path).auth(token, { type: 'bearer' }).set('Accept', SCIM).set('Content-Type', SCIM).send(JSON.stringify(body));

  describe('POST /Device', () => {
    it("answers the interface's example request with 201, Location = meta.location, and the documented shape", async () => {
      const cuid = newCuid();
      const response = await create(exampleRequest(cuid));
      expect(response.status).toBe(201);
      expect(response.headers['content-type']).toMatch(SCIM_ANSWER);
      const now = t.clock.now().toISOString();
      expect(response.body).toEqual({
        id: expect.stringMatching(UUID),
        schemas: [DEVICE_SCHEMA],
        externalIds: [{ ATR, CUID: cuid }],
        status: { status: 'AVAILABLE', reason: 'NONE' },
        meta: { resourceType: 'Device', created: now, lastModified: now, location: `${BASE}/aims/rs/scim/v2/Device/${response.body.id}`, version: '1' },
      });
      expect(response.body.meta.created).toMatch(ISO_MS_UTC);
      expect(response.headers.location).toBe(response.body.meta.location);
      expect(response.headers.etag).toBe('W/"1"');
      // what was stored, and the audit record
      const stored = await t.db.query('SELECT org_id, status, reason, version FROM devices WHERE id = $1', [response.body.id]);
      expect(stored.rows).toEqual([{ org_id: 'dev', status: 'AVAILABLE', reason: 'NONE', version: 1 }]);
      const audit = await t.db.query('SELECT org_id, action, target, outcome, details FROM audit_events WHERE target = $1', [response.body.id]);
      expect(audit.rows).toEqual([
        { org_id: 'dev', action: 'device.create', target: response.body.id, outcome: 'success', details: { externalIds: [{ ATR, CUID: cuid }] } },
      ]);
    });

    it('keeps milliseconds in UTC in meta timestamps', async () => {
      // A moment a little ahead whose milliseconds are not zero (the suite's tokens stay valid).
      const moment = new Date(Math.floor(t.clock.now().getTime() / 1000) * 1000 + 2_089);
      t.clock.set(moment);
      const response = await create(exampleRequest(newCuid()));
      expect(response.status).toBe(201);
      expect(response.body.meta.created).toBe(moment.toISOString());
      expect(response.body.meta.created).toMatch(/\.089Z$/);
      expect(response.body.meta.lastModified).toBe(moment.toISOString());
    });

    it('answers on the /aims/rs/scm/v2 alias too, with the canonical Location', async () => {
      const response = await create(exampleRequest(newCuid()), tokens.Issuance, '/aims/rs/scm/v2/Device');
      expect(response.status).toBe(201);
      expect(response.headers.location).toBe(`${BASE}/aims/rs/scim/v2/Device/${response.body.id}`);
      const read = await t.http.get(`/aims/rs/scm/v2/Device/${response.body.id}`).auth(tokens.Issuance, { type: 'bearer' });
      expect(read.status).toBe(200);
      expect(read.body).toEqual(response.body);
    });

    it('takes several {ATR, CUID}, application/json, lower-case ATRs (stored upper-case), case-insensitive attribute names, and ignores id, meta and status', async () => {
      const [a, b] = [newCuid(), newCuid()];
      const response = await t.http
        .post('/aims/rs/scim/v2/Device')
        .auth(tokens.Administration, { type: 'bearer' })
        .send({
          Schemas: [DEVICE_SCHEMA],
          externalids: [
            { atr: '3b00', cuid: a },
            { ATR: 'ABCDEF', CUID: b },
          ],
          id: 'mine',
          meta: { version: '9' },
          status: { status: 'ISSUED' },
        });
      expect(response.status).toBe(201);
      expect(response.headers['content-type']).toMatch(SCIM_ANSWER);
      expect(response.body).toMatchObject({
        externalIds: [
          { ATR: '3B00', CUID: a },
          { ATR: 'ABCDEF', CUID: b },
        ],
        status: { status: 'AVAILABLE', reason: 'NONE' },
        meta: { version: '1' },
      });
      expect(response.body.id).not.toBe('mine');
    });

    it.each([
      ['no schemas', { externalIds: [{ ATR, CUID: '1' }] }, /schemas: is required and must contain "urn:vendor:scim:api:cms:1.0:Device"/],
      [
        'schemas without the Device URN',
        { schemas: ['urn:other'], externalIds: [{ ATR, CUID: '1' }] },
        /schemas: must contain "urn:vendor:scim:api:cms:1.0:Device"/,
      ],
      ['an extension schema', { schemas: [DEVICE_SCHEMA, 'urn:x'], externalIds: [{ ATR, CUID: '1' }] }, /schemas: may name only/],
      ['schemas not an array', { schemas: DEVICE_SCHEMA, externalIds: [{ ATR, CUID: '1' }] }, /schemas: must be an array of strings/],
      ['no externalIds', { schemas: [DEVICE_SCHEMA] }, /externalIds: is required: a non-empty array of \{ATR, CUID\}/],
      ['empty externalIds', { schemas: [DEVICE_SCHEMA], externalIds: [] }, /externalIds: must hold at least one \{ATR, CUID\}/],
      ['externalIds not an array', { schemas: [DEVICE_SCHEMA], externalIds: { ATR, CUID: '1' } }, /externalIds: must be an array of \{ATR, CUID\}/],
      [
        'too many externalIds',
        { schemas: [DEVICE_SCHEMA], externalIds: Array.from({ length: 17 }, (_, i) => ({ ATR, CUID: String(i) })) },
        /externalIds: must hold at most 16/,
      ],
      ['no ATR', { schemas: [DEVICE_SCHEMA], externalIds: [{ CUID: '1' }] }, /externalIds\.0\.ATR: is required/],
      ['no CUID', { schemas: [DEVICE_SCHEMA], externalIds: [{ ATR }] }, /externalIds\.0\.CUID: is required/],
      [
        'ATR not hexadecimal',
        { schemas: [DEVICE_SCHEMA], externalIds: [{ ATR: '3BZZ', CUID: '1' }] },
        /externalIds\.0\.ATR: must be hexadecimal text of even length, 2 to 33 bytes/,
      ],
      ['ATR of odd length', { schemas: [DEVICE_SCHEMA], externalIds: [{ ATR: '3B0', CUID: '1' }] }, /externalIds\.0\.ATR: must be hexadecimal/],
      ['ATR of one byte', { schemas: [DEVICE_SCHEMA], externalIds: [{ ATR: '3B', CUID: '1' }] }, /externalIds\.0\.ATR: must be hexadecimal/],
      ['ATR of 34 bytes', { schemas: [DEVICE_SCHEMA], externalIds: [{ ATR: '3B'.repeat(34), CUID: '1' }] }, /externalIds\.0\.ATR: must be hexadecimal/],
      ['ATR a number', { schemas: [DEVICE_SCHEMA], externalIds: [{ ATR: 3, CUID: '1' }] }, /externalIds\.0\.ATR: must be a string/],
      ['CUID with letters', { schemas: [DEVICE_SCHEMA], externalIds: [{ ATR, CUID: '12a' }] }, /externalIds\.0\.CUID: must be 1 to 64 decimal digits/],
      ['CUID empty', { schemas: [DEVICE_SCHEMA], externalIds: [{ ATR, CUID: '' }] }, /externalIds\.0\.CUID: must be 1 to 64 decimal digits/],
      ['CUID of 65 digits', { schemas: [DEVICE_SCHEMA], externalIds: [{ ATR, CUID: '1'.repeat(65) }] }, /externalIds\.0\.CUID: must be 1 to 64 decimal digits/],
      ['CUID a number', { schemas: [DEVICE_SCHEMA], externalIds: [{ ATR, CUID: 12 }] }, /externalIds\.0\.CUID: must be a string/],
      [
        'a CUID twice',
        {
          schemas: [DEVICE_SCHEMA],
          externalIds: [
            { ATR, CUID: '7' },
            { ATR: '3B00', CUID: '7' },
          ],
        },
        /externalIds\.1\.CUID: repeats CUID 7/,
      ],
      [
        'an unknown attribute',
        { schemas: [DEVICE_SCHEMA], externalIds: [{ ATR, CUID: '1' }], owner: 'x', colour: 'red' },
        /attributes "owner", "colour" are not part of this resource/,
      ],
      [
        'an unknown attribute in an externalId',
        { schemas: [DEVICE_SCHEMA], externalIds: [{ ATR, CUID: '1', type: 'card' }] },
        /attribute "type" is not part of this resource/,
      ],
    ])('refuses %s with 400 naming the field', async (_case, body, detail) => {
      expectScimError(await create(body), 400, 'invalidValue', detail);
    });

    it.each([
      ['a JSON array', '[]', 'invalidSyntax', /must be a JSON object/],
      ['text that is not JSON', '{"schemas": [', 'invalidSyntax', /not valid JSON/],
    ])('refuses %s with 400', async (_case, raw, scimType, detail) => {
      const response = await t.http.post('/aims/rs/scim/v2/Device').auth(tokens.Issuance, { type: 'bearer' }).set('Content-Type', SCIM).send(raw);
      expectScimError(response, 400, scimType, detail);
    });

    it('refuses another media type with 415 and an Accept it cannot meet with 406', async () => {
      const text = await t.http.post('/aims/rs/scim/v2/Device').auth(tokens.Issuance, { type: 'bearer' }).set('Content-Type', 'text/plain').send('hello');
      expectScimError(text, 415, undefined, /Content-Type text\/plain is not accepted here/);
      const accept = await create(exampleRequest(newCuid())).set('Accept', 'text/html');
      expectScimError(accept, 406, undefined, /Accept text\/html/);
    });

    it('refuses without a token (401), and with an expired one (401)', async () => {
      const none = await t.http
        .post('/aims/rs/scim/v2/Device')
        .set('Content-Type', SCIM)
        .send(JSON.stringify(exampleRequest(newCuid())));
      expectScimError(none, 401, undefined, /Authorization: Bearer/);
      expect(none.headers['www-authenticate']).toBe('Bearer realm="credential-platform"');
      const bogus = await create(exampleRequest(newCuid()), 'not.a.token');
      expect(bogus.status).toBe(401);
      expect(bogus.headers['www-authenticate']).toMatch(/error="invalid_token"/);
    });

    it('refuses a role without device.create with 403 naming the permission', async () => {
      expectScimError(
        await create(exampleRequest(newCuid()), tokens['Help Desk']),
        403,
        undefined,
        'This entry point needs the permission device.create, which the role "Help Desk" does not grant.',
      );
      expectScimError(await create(exampleRequest(newCuid()), tokens.Cardholder), 403, undefined, /needs the permission device.create/);
    });

    it('refuses with a different 403 when the organization keeps automatic device creation off, pointing to the bulk import', async () => {
      const response = await create(exampleRequest(newCuid()), tokens.manual);
      expectScimError(
        response,
        403,
        undefined,
        /^Automatic device creation is disabled for organization manual: devices come in through the bulk import \(POST \/admin\/v1\/organizations\/manual\/devices\/import/,
      );
      expect(response.body.detail).not.toMatch(/permission/);
      // turned on, the same request succeeds
      const settings = await t.http
        .put('/admin/v1/organizations/manual/settings')
        .auth(admin, { type: 'bearer' })
        .send({ automaticDeviceCreation: true, applicationIdPolicy: 'any' });
      expect(settings.status).toBe(200);
      expect((await create(exampleRequest(newCuid()), tokens.manual)).status).toBe(201);
      await t.http
        .put('/admin/v1/organizations/manual/settings')
        .auth(admin, { type: 'bearer' })
        .send({ automaticDeviceCreation: false, applicationIdPolicy: 'any' });
      expect((await create(exampleRequest(newCuid()), tokens.manual)).status).toBe(403);
    });

    it('refuses a CUID already in the organization with 409 uniqueness, and takes it in another organization', async () => {
      const cuid = newCuid();
      const first = await create(exampleRequest(cuid));
      expect(first.status).toBe(201);
      const again = await create({
        schemas: [DEVICE_SCHEMA],
        externalIds: [
          { ATR: '3B00', CUID: newCuid() },
          { ATR: '3B01', CUID: cuid },
        ],
      });
      expectScimError(again, 409, 'uniqueness', `CUID ${cuid} is already registered in this organization (device ${first.body.id})`);
      // nothing of the refused device was kept
      expect((await t.db.query('SELECT count(*)::int AS n FROM device_external_ids WHERE cuid = $1', [cuid])).rows).toEqual([{ n: 1 }]);
      const elsewhere = await create(exampleRequest(cuid), tokens.other);
      expect(elsewhere.status).toBe(201);
    });

    it('two concurrent creates of one CUID: one 201, one 409', async () => {
      for (let round = 0; round < 3; round++) {
        const cuid = newCuid();
        const responses = await Promise.all([create(exampleRequest(cuid)), create(exampleRequest(cuid))]);
        expect(responses.map((r) => r.status).sort()).toEqual([201, 409]);
        expect(responses.find((r) => r.status === 409)!.body.scimType).toBe('uniqueness');
      }
      const cuid = newCuid();
      const many = await Promise.all(Array.from({ length: 8 }, () => create(exampleRequest(cuid))));
      expect(many.filter((r) => r.status === 201)).toHaveLength(1);
      expect(many.filter((r) => r.status === 409)).toHaveLength(7);
      expect((await t.db.query('SELECT count(*)::int AS n FROM device_external_ids WHERE org_id = $1 AND cuid = $2', ['dev', cuid])).rows).toEqual([{ n: 1 }]);
    });
  });

  describe('GET and DELETE /Device/{id}', () => {
    it('GET answers the device with its ETag; attributes and excludedAttributes select what is returned', async () => {
      const created = await create(exampleRequest(newCuid()));
      const response = await t.http.get(`/aims/rs/scim/v2/Device/${created.body.id}`).auth(tokens['Help Desk'], { type: 'bearer' }).set('Accept', SCIM);
      expect(response.status).toBe(200);
      expect(response.headers['content-type']).toMatch(SCIM_ANSWER);
      expect(response.headers.etag).toBe('W/"1"');
      expect(response.body).toEqual(created.body);
      const only = await t.http.get(`/aims/rs/scim/v2/Device/${created.body.id}?attributes=status,meta.version`).auth(tokens['Help Desk'], { type: 'bearer' });
      expect(only.body).toEqual({ id: created.body.id, schemas: [DEVICE_SCHEMA], status: { status: 'AVAILABLE', reason: 'NONE' }, meta: { version: '1' } });
      const without = await t.http
        .get(`/aims/rs/scim/v2/Device/${created.body.id}?excludedAttributes=externalIds,meta`)
        .auth(tokens['Help Desk'], { type: 'bearer' });
      expect(without.body).toEqual({ id: created.body.id, schemas: [DEVICE_SCHEMA], status: { status: 'AVAILABLE', reason: 'NONE' } });
      const unknown = await t.http.get(`/aims/rs/scim/v2/Device/${created.body.id}?attributes=colour`).auth(tokens['Help Desk'], { type: 'bearer' });
      expectScimError(unknown, 400, 'invalidValue', 'attributes: "colour" is not an attribute of this resource.');
    });

    it('a read again answers the same text from the cache, in the media type asked for, until the device goes (DECISIONS 13.1)', async () => {
      const created = await create(exampleRequest(newCuid()));
      const read = (accept: string) =>
        t.http.get(`/aims/rs/scim/v2/Device/${created.body.id}`).auth(tokens['Help Desk'], { type: 'bearer' }).set('Accept', accept);
      const first = await read(SCIM);
      const second = await read('application/json');
      expect(second.status).toBe(200);
      expect(second.text).toBe(first.text);
      expect(second.headers['content-type']).toMatch(/^application\/json; charset=utf-8$/);
      expect(second.headers.etag).toBe('W/"1"');
      expect(JSON.parse(second.text)).toEqual(created.body);
      expect((await t.http.delete(`/aims/rs/scim/v2/Device/${created.body.id}`).auth(tokens.Administration, { type: 'bearer' })).status).toBe(204);
      expectScimError(await read(SCIM), 404, undefined, `Device ${created.body.id} does not exist.`);
    });

    it("an unknown id, a malformed id and another organization's device all answer 404 (DECISIONS 2)", async () => {
      const theirs = await create(exampleRequest(newCuid()), tokens.other);
      expect(theirs.status).toBe(201);
      const malformed = await t.http.get(`/aims/rs/scim/v2/Device/not-a-uuid`).auth(tokens.Administration, { type: 'bearer' });
      expectScimError(malformed, 404, undefined, 'Nothing is named "not-a-uuid": the path parameter id must be a UUID');
      for (const id of [randomUUID(), theirs.body.id]) {
        const response = await t.http.get(`/aims/rs/scim/v2/Device/${id}`).auth(tokens.Administration, { type: 'bearer' });
        expectScimError(response, 404, undefined, `Device ${id} does not exist.`);
        expectScimError(
          await t.http.delete(`/aims/rs/scim/v2/Device/${id}`).auth(tokens.Administration, { type: 'bearer' }),
          404,
          undefined,
          `Device ${id} does not exist.`,
        );
        expectScimError(
          await t.http.post(`/aims/rs/scim/v2/Device/${id}/terminate`).auth(tokens.Administration, { type: 'bearer' }),
          404,
          undefined,
          `Device ${id} does not exist.`,
        );
      }
      // and their device is untouched
      expect((await t.http.get(`/aims/rs/scim/v2/Device/${theirs.body.id}`).auth(tokens.other, { type: 'bearer' })).status).toBe(200);
    });

    it('DELETE removes an AVAILABLE device (204, audited); afterwards it is 404', async () => {
      const created = await create(exampleRequest(newCuid()));
      const response = await t.http.delete(`/aims/rs/scm/v2/Device/${created.body.id}`).auth(tokens['Help Desk'], { type: 'bearer' });
      expect(response.status).toBe(204);
      expect(response.text).toBe('');
      expect((await t.http.get(`/aims/rs/scim/v2/Device/${created.body.id}`).auth(tokens['Help Desk'], { type: 'bearer' })).status).toBe(404);
      expect((await t.db.query('SELECT count(*)::int AS n FROM device_external_ids WHERE device_id = $1', [created.body.id])).rows).toEqual([{ n: 0 }]);
      const audit = await t.db.query('SELECT action, outcome FROM audit_events WHERE target = $1 ORDER BY id', [created.body.id]);
      expect(audit.rows).toEqual([
        { action: 'device.create', outcome: 'success' },
        { action: 'device.delete', outcome: 'success' },
      ]);
    });
  });

  /** DECISIONS 5.2, Device rows, transcribed: which default roles reach each entry point. */
  describe('permissions of the Device entry points per default role', () => {
    type Route = {
      name: string;
      permission: string;
      roles: string[];
      passed?: number;
      call: (token: string, id: string) => ReturnType<TestApp['http']['get']>;
    };
    const ROUTES: Route[] = [
      { name: 'POST /Device', permission: 'device.create', roles: ['Administration', 'Issuance'], passed: 400, call: (token) => create({}, token) },
      {
        name: 'GET /Device/{id}',
        permission: 'device.read',
        roles: ['Administration', 'Issuance', 'Help Desk'],
        call: (token, id) => t.http.get(`/aims/rs/scim/v2/Device/${id}`).auth(token, { type: 'bearer' }),
      },
      {
        name: 'POST /Device/.search',
        permission: 'device.search',
        roles: ['Administration', 'Issuance', 'Help Desk'],
        passed: 200,
        call: (token) =>
          t.http
            .post('/aims/rs/scim/v2/Device/.search')
            .auth(token, { type: 'bearer' })
            .send({ schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'], count: 0 }),
      },
      {
        name: 'DELETE /Device/{id}',
        permission: 'device.delete',
        roles: ['Administration', 'Issuance', 'Help Desk'],
        call: (token, id) => t.http.delete(`/aims/rs/scim/v2/Device/${id}`).auth(token, { type: 'bearer' }),
      },
      ...(['suspend', 'resume', 'revoke'] as const).map((action) => ({
        name: `POST /Device/{id}/${action}`,
        permission: `device.${action}`,
        roles: ['Administration', 'Issuance', 'Help Desk'],
        call: (token: string, id: string) =>
          t.http
            .post(`/aims/rs/scim/v2/Device/${id}/${action}`)
            .auth(token, { type: 'bearer' })
            .send(action === 'suspend' ? { reason: 'LOST' } : {}),
      })),
      {
        name: 'POST /Device/{id}/terminate',
        permission: 'device.terminate',
        roles: ['Administration', 'Help Desk'],
        call: (token, id) => t.http.post(`/aims/rs/scim/v2/Device/${id}/terminate`).auth(token, { type: 'bearer' }),
      },
      {
        name: 'POST /Device/{id}/activate',
        permission: 'device.activate',
        roles: ['Administration', 'Issuance'],
        call: (token, id) => t.http.post(`/aims/rs/scim/v2/Device/${id}/activate`).auth(token, { type: 'bearer' }),
      },
    ];

    it.each(ROUTES.map((r) => [r.name, r]))('%s', async (_name, route) => {
      // A device id that does not exist: a caller with the permission passes the guard and gets 404
      // (or 400 for the empty create body, 200 for the search); without it, 403 naming the permission.
      const id = randomUUID();
      for (const role of ['Administration', 'Issuance', 'Help Desk', 'Cardholder']) {
        const response = await route.call(tokens[role], id);
        if (route.roles.includes(role)) {
          expect({ role, status: response.status }).toEqual({ role, status: route.passed ?? 404 });
          expect(response.body.detail ?? '').not.toMatch(/permission/);
        } else {
          expect({ role, status: response.status }).toEqual({ role, status: 403 });
          expect(response.body.detail).toBe(`This entry point needs the permission ${route.permission}, which the role "${role}" does not grant.`);
        }
      }
      const anonymous = await route.call('', id).unset('Authorization');
      expect(anonymous.status).toBe(401);
    });
  });
});

/**
 * Operator Dependent roles (DECISIONS 5.2): an operator reaches the devices whose owner shares one
 * of its groups, and the unowned stock devices (our decision: stock belongs to no group and is the
 * pool every operator issues from); another group's device is 404 (DECISIONS 2).
 */
describe('Device resource and Operator Dependent roles', () => {
  let t: TestApp;
  let admin: string;
  let operator: string;
  const tokenUrl = 'https://auth.example.test/authentication/customer/od/token';

  beforeAll(async () => {
    const file = operatorDependentScopeFile('device-operator-dependent.properties');
    t = await createTestApp({ env: { SCOPE_ASSIGNMENT_FILE: file } });
    admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, 'od', { automaticDeviceCreation: true });
    const user = await t.http
      .post('/admin/v1/organizations/od/users')
      .auth(admin, { type: 'bearer' })
      .send({ userName: 'olga.op', role: 'Desk East', userType: 'operator', groups: ['east'] });
    expect(user.status).toBe(201);
    const certificate: TestCertificate = await makeCertificate();
    const enrolled = await t.http
      .post(`/admin/v1/organizations/od/users/${user.body.id}/certificates`)
      .auth(admin, { type: 'bearer' })
      .set('Content-Type', 'application/x-pem-file')
      .send(certificate.pem);
    expect(enrolled.status).toBe(201);
    const grant = await tokenRequest(t.http, 'od', {
      grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
      assertion: await signAssertion(certificate, 'olga.op', tokenUrl, { now: t.clock.now() }),
    });
    expect(grant.status).toBe(200);
    operator = grant.body.access_token;
  });
  afterAll(() => t.close());

  async function cardholder(userName: string, groups: string[]): Promise<string> {
    const response = await t.http.post('/admin/v1/organizations/od/users').auth(admin, { type: 'bearer' }).send({ userName, role: 'Cardholder', groups });
    expect(response.status).toBe(201);
    return response.body.id;
  }

  async function seed(status: string, owner: string | null, cuid: string): Promise<string> {
    const id = randomUUID();
    const now = t.clock.now();
    await t.db.query('INSERT INTO devices (id, org_id, status, reason, owner_user_id, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6)', [
      id,
      'od',
      status,
      'NONE',
      owner,
      now,
    ]);
    await t.db.query('INSERT INTO device_external_ids (device_id, org_id, position, atr, cuid) VALUES ($1, $2, 1, $3, $4)', [id, 'od', ATR, cuid]);
    return id;
  }

  it("reaches devices of its groups and stock devices; another group's device is 404 on every entry point and absent from search", async () => {
    const east = await seed('ISSUED', await cardholder('eve.east', ['east', 'north']), '9001');
    const west = await seed('ISSUED', await cardholder('walt.west', ['west']), '9002');
    const stock = await seed('AVAILABLE', null, '9003');
    const get = (id: string) => t.http.get(`/aims/rs/scim/v2/Device/${id}`).auth(operator, { type: 'bearer' });

    const mine = await get(east);
    expect(mine.status).toBe(200);
    expect(mine.body.owner).toEqual({
      value: expect.stringMatching(UUID),
      display: 'eve.east',
      $ref: `${BASE}/aims/rs/scim/v2/Users/${mine.body.owner.value}`,
      type: 'User',
    });
    expect((await get(stock)).status).toBe(200);
    expectScimError(await get(west), 404, undefined, `Device ${west} does not exist.`);
    expectScimError(
      await t.http.post(`/aims/rs/scim/v2/Device/${west}/suspend`).auth(operator, { type: 'bearer' }).send({ reason: 'LOST' }),
      404,
      undefined,
      `Device ${west} does not exist.`,
    );
    expectScimError(
      await t.http.post(`/aims/rs/scim/v2/Device/${west}/terminate`).auth(operator, { type: 'bearer' }),
      404,
      undefined,
      `Device ${west} does not exist.`,
    );
    expect((await t.db.query('SELECT status FROM devices WHERE id = $1', [west])).rows).toEqual([{ status: 'ISSUED' }]);

    const search = await t.http
      .post('/aims/rs/scim/v2/Device/.search')
      .auth(operator, { type: 'bearer' })
      .send({ schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'], sortBy: 'externalIds.CUID' });
    expect(search.status).toBe(400);
    const all = await t.http
      .post('/aims/rs/scim/v2/Device/.search')
      .auth(operator, { type: 'bearer' })
      .send({ schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'] });
    expect(all.status).toBe(200);
    expect(all.body.totalResults).toBe(2);
    expect(all.body.Resources.map((d: { id: string }) => d.id).sort()).toEqual([east, stock].sort());

    // the same operator suspends a device of its group; terminate unassigns it, after which it is stock
    const suspended = await t.http.post(`/aims/rs/scim/v2/Device/${east}/suspend`).auth(operator, { type: 'bearer' }).type('form').send({ reason: 'LOST' });
    expect(suspended.status).toBe(200);
    expect(suspended.body.status).toEqual({ status: 'ON_HOLD', reason: 'LOST' });
    const terminated = await t.http.post(`/aims/rs/scim/v2/Device/${east}/terminate`).auth(operator, { type: 'bearer' });
    expect(terminated.status).toBe(200);
    expect(terminated.body.status).toEqual({ status: 'TERMINATED', reason: 'UNASSIGNED' });
    expect(terminated.body.owner).toBeUndefined();

    // the Administration role is not Operator Dependent and reaches all three
    const account = await createSystemAccount(t.http, admin, 'od', { role: 'Administration' });
    const full = await tokenBySecret(t.http, 'od', account.clientId, account.secret);
    expect((await t.http.get(`/aims/rs/scim/v2/Device/${west}`).auth(full, { type: 'bearer' })).status).toBe(200);
  });
});
