import { Controller, Get, Module } from '@nestjs/common';
import { Permission } from '@app/auth';
import { RequirePermission } from '@app/common';
import { TestApp, createAdminAndPlainAccounts, createOrganization, createTestApp, platformAdminToken, tokenBySecret, createSystemAccount } from '@app/testing';

/** Test-only: an administration route that declares a permission instead of an administrator rule, so deny-by-default must close it. */
@Controller('admin/v1/encoded-probe')
class MisdeclaredAdminController {
  @Get()
  @RequirePermission(Permission.DeviceRead)
  probe() {
    return { reached: true };
  }
}

@Module({ controllers: [MisdeclaredAdminController] })
class MisdeclaredAdminModule {}

/**
 * The router matches the percent-decoded path, so every rule that depends on a request's family
 * (DECISIONS 1, 6, 7, 11) is decided on the route it matched, never on the URL as sent: each
 * family's prefix with one letter percent-encoded answers exactly as the plain prefix does.
 */
describe('percent-encoded route prefixes', () => {
  let t: TestApp;
  let acme: string;
  let acmeOrgAdmin: string;

  beforeAll(async () => {
    t = await createTestApp({ imports: [MisdeclaredAdminModule] });
    const admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, 'acme');
    await createOrganization(t.http, admin, 'globex');
    const account = await createSystemAccount(t.http, admin, 'acme', { role: 'Administration' });
    acme = await tokenBySecret(t.http, 'acme', account.clientId, account.secret);
    acmeOrgAdmin = (await createAdminAndPlainAccounts(t.http, admin, 'acme')).orgAdminToken;
  });
  afterAll(() => t.close());

  /** The parts of an answer a family decides: status, media type, error format. */
  const shape = (response: { status: number; headers: Record<string, string>; body: Record<string, unknown> }) => ({
    status: response.status,
    contentType: response.headers['content-type'],
    schemas: response.body.schemas,
    error: response.body.error,
    detail: response.body.detail,
  });

  it.each([
    ['the customer form names another organization', '/credential-management/customer/globex/Users', '/%63redential-management/customer/globex/Users', 403],
    ['the customer form, an inner segment encoded', '/credential-management/customer/globex/Users', '/credential-management/%63ustomer/globex/Users', 403],
    ['the customer form, the organization encoded', '/credential-management/customer/globex/Users', '/credential-management/customer/%67lobex/Users', 403],
    ['push gateways of another tenant', '/configuration/globex/v2/DeliveryGateway/Push', '/%63onfiguration/globex/v2/DeliveryGateway/Push', 403],
    ['an administration route without an administrator rule', '/admin/v1/encoded-probe', '/%61dmin/v1/encoded-probe', 403],
  ])('%s: %s and %s answer alike (%i)', async (_case, plain, encoded, status) => {
    const expected = await t.http.get(plain).auth(acme, { type: 'bearer' });
    expect(expected.status).toBe(status);
    const response = await t.http.get(encoded).auth(acme, { type: 'bearer' });
    expect(shape(response)).toEqual(shape(expected));
  });

  it("another organization's users on the admin API: 404 either way", async () => {
    const plain = await t.http.get('/admin/v1/organizations/globex/users').auth(acmeOrgAdmin, { type: 'bearer' });
    expect(plain.status).toBe(404);
    const encoded = await t.http.get('/%61dmin/v1/organizations/globex/users').auth(acmeOrgAdmin, { type: 'bearer' });
    expect(shape(encoded)).toEqual(shape(plain));
  });

  it('the canonical SCIM form still needs Application-ID: 400 in application/scim+json either way', async () => {
    const plain = await t.bare.get('/aims/rs/scim/v2/Users').auth(acme, { type: 'bearer' });
    expect(plain.status).toBe(400);
    expect(plain.headers['content-type']).toMatch(/^application\/scim\+json/);
    const encoded = await t.bare.get('/%61ims/rs/scim/v2/Users').auth(acme, { type: 'bearer' });
    expect(shape(encoded)).toEqual(shape(plain));
  });

  it('the token endpoint answers RFC 6749 errors either way, also to a body it cannot read', async () => {
    const send = (path: string) => t.http.post(path).set('Content-Type', 'application/json').send('{');
    const plain = await send('/authentication/customer/acme/token');
    expect(plain.status).toBe(400);
    expect(plain.body.error).toBe('invalid_request');
    const encoded = await send('/%61uthentication/customer/acme/token');
    expect(shape(encoded)).toEqual(shape(plain));
  });
});
