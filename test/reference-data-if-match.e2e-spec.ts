import { TestApp, adminCall, createOrganization, createTestApp, expectScimError, platformAdminToken } from '@app/testing';

/**
 * If-Match on the admin API's reference data (CREDENTIAL-MANAGEMENT.md: "meta.version is the ETag and
 * If-Match works on every update"; DECISIONS 17.2): PATCH and DELETE of device policies, groups and
 * printers apply only to the version named (412 otherwise, naming the current one), a malformed
 * header is a 400, and another organization's object is not found.
 */
const ORG = 'ifmatch';
const OTHER = 'ifmatch_other';

const RESOURCES = [
  { path: 'device-policies', create: { name: 'Badge', credentialTypes: ['OATH_TOTP'] }, change: { requiresApproval: false }, what: 'Device policy "Badge"' },
  { path: 'groups', create: { displayName: 'Berlin' }, change: { displayName: 'Berlin Mitte' }, what: 'Group "Berlin"' },
  { path: 'printers', create: { name: 'Desk 1' }, change: { status: 'OFFLINE' }, what: 'Printer "Desk 1"' },
] as const;

describe('admin API: If-Match on device policies, groups and printers', () => {
  let t: TestApp;
  let admin: string;

  beforeAll(async () => {
    t = await createTestApp();
    admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, ORG);
    await createOrganization(t.http, admin, OTHER);
  });
  afterAll(() => t?.close());

  describe.each(RESOURCES)('$path', ({ path, create, change, what }) => {
    it('PATCH and DELETE apply only to the version in If-Match (412 naming the current one); without it, as before', async () => {
      const created = await adminCall(t.http, 'post', `/organizations/${ORG}/${path}`, admin).send(create);
      expect(created.status).toBe(201);
      expect(created.headers.etag).toBe('W/"1"');
      const id = created.body.id as string;

      const stale = await adminCall(t.http, 'patch', `/organizations/${ORG}/${path}/${id}`, admin).set('If-Match', 'W/"7"').send(change);
      expectScimError(stale, 412, undefined, `${what} has changed: its current version is 1 (ETag W/"1"), not the one in If-Match. Read it again and retry.`);
      const changed = await adminCall(t.http, 'patch', `/organizations/${ORG}/${path}/${id}`, admin).set('If-Match', 'W/"1"').send(change);
      expect(changed.status).toBe(200);
      expect(changed.headers.etag).toBe('W/"2"');
      expect(changed.body.meta.version).toBe('2');

      const malformed = await adminCall(t.http, 'patch', `/organizations/${ORG}/${path}/${id}`, admin).set('If-Match', 'version 2').send(change);
      expectScimError(malformed, 400, 'invalidValue', /If-Match must be/);

      const staleDelete = await adminCall(t.http, 'delete', `/organizations/${ORG}/${path}/${id}`, admin).set('If-Match', 'W/"1"');
      expect(staleDelete.status).toBe(412);
      expect((await adminCall(t.http, 'get', `/organizations/${ORG}/${path}/${id}`, admin)).status).toBe(200);
      // Another organization's administrator path does not reach it, with or without If-Match.
      const foreign = await adminCall(t.http, 'delete', `/organizations/${OTHER}/${path}/${id}`, admin).set('If-Match', 'W/"2"');
      expect(foreign.status).toBe(404);
      const deleted = await adminCall(t.http, 'delete', `/organizations/${ORG}/${path}/${id}`, admin).set('If-Match', 'W/"2"');
      expect(deleted.status).toBe(204);
      const gone = await adminCall(t.http, 'patch', `/organizations/${ORG}/${path}/${id}`, admin).set('If-Match', '*').send(change);
      expect(gone.status).toBe(404);
    });

    it('a PATCH without a token is a 401; a bad body a 400 naming the attribute; a foreign id a 404', async () => {
      const created = await adminCall(t.http, 'post', `/organizations/${ORG}/${path}`, admin).send(create);
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      expect((await adminCall(t.http, 'patch', `/organizations/${ORG}/${path}/${id}`).send(change)).status).toBe(401);
      const bad = await adminCall(t.http, 'patch', `/organizations/${ORG}/${path}/${id}`, admin).set('If-Match', 'W/"1"').send({ unknownAttribute: 1 });
      expectScimError(bad, 400, 'invalidValue', /"unknownAttribute" is not part of this resource/);
      const foreign = await adminCall(t.http, 'patch', `/organizations/${OTHER}/${path}/${id}`, admin).set('If-Match', 'W/"1"').send(change);
      expect(foreign.status).toBe(404);
      expect((await adminCall(t.http, 'delete', `/organizations/${ORG}/${path}/${id}`, admin)).status).toBe(204);
    });
  });
});
