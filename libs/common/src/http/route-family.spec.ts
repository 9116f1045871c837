import { routeFamilyOf, routeFamilyOfRequest } from './route-family';

describe('routeFamilyOf', () => {
  it.each([
    ['/authentication/customer/acme/token', 'oauth'],
    ['/authentication/customer/acme/token?x=1', 'oauth'],
    ['/oip/authentication/customer/acme/introspect', 'oauth'],
    ['/authentication/customer/acme/revoke/', 'oauth'],
    ['/authentication/customer/acme/whoami', 'authentication'],
    ['/authentication/customer/:org/login', 'page'],
    ['/authentication/customer/:org/login/certificate', 'page'],
    ['/authentication/customer/acme/login?return_to=/portal/', 'page'],
    ['/authentication/customer/:org/logout', 'page'],
    ['/authentication/customer/:org/sessions/:session/end', 'page'],
    ['/authentication/customer/:org/authorize', 'page'],
    ['/authentication/customer/:org/end-session', 'page'],
    ['/authentication/login.css', 'authentication'],
    ['/authentication/customer/acme/logins', 'authentication'],
    ['/authentication/customer/acme/.well-known/jwks.json', 'authentication'],
    ['/authentication/customer/acme/tokens', 'authentication'],
    ['/aims/rs/scim/v2/Device', 'scim'],
    ['/aims/rs/scm/v2/Device/1/suspend', 'scim'],
    ['/credential-management/customer/acme/users', 'scim'],
    ['/configuration/acme/v2/DeliveryGateway/Push', 'scim'],
    ['/admin/v1/organizations', 'admin'],
    ['/pki/acme/crl', 'pki'],
    ['/health/ready', 'operations'],
    ['/api-docs-json', 'operations'],
    ['/api-docs', 'operations'],
    ['/healthz', 'other'],
    ['/', 'operations'],
    ['/?x=1', 'operations'],
    ['//x', 'other'],
  ])('%s is %s', (url, family) => {
    expect(routeFamilyOf(url).name).toBe(family);
  });

  it('names the rules each family follows', () => {
    expect(routeFamilyOf('/authentication/customer/acme/token')).toMatchObject({ oauthErrors: true, applicationHeaders: false, htmlPages: false });
    expect(routeFamilyOf('/authentication/customer/acme/login')).toMatchObject({ oauthErrors: false, htmlPages: true, applicationHeaders: false });
    expect(routeFamilyOf('/aims/rs/scim/v2/Device')).toMatchObject({ oauthErrors: false, scimMediaType: true, applicationHeaders: true });
    expect(routeFamilyOf('/admin/v1/roles')).toMatchObject({ scimMediaType: false, applicationHeaders: true, formBodies: false });
    expect(routeFamilyOf('/authentication/customer/acme/token')).toMatchObject({ formBodies: true });
    expect(routeFamilyOf('/pki/acme/ca.crt')).toMatchObject({ applicationHeaders: false });
  });
});

describe('routeFamilyOfRequest', () => {
  it('decides on the route the router matched, not on the URL as sent', () => {
    expect(routeFamilyOfRequest({ url: '/%61dmin/v1/roles', routeOptions: { url: '/admin/v1/roles' } }).name).toBe('admin');
    expect(
      routeFamilyOfRequest({ url: '/%63redential-management/customer/globex/Users', routeOptions: { url: '/credential-management/customer/:org/Users' } }).name,
    ).toBe('scim');
  });

  it('classifies a request that matched no route by its decoded path', () => {
    expect(routeFamilyOfRequest({ url: '/%61ims/rs/scim/v2/Nothing?x=%2F', routeOptions: {} }).name).toBe('scim');
    expect(routeFamilyOfRequest({ url: '/%E0%A4%A/x' }).name).toBe('other');
  });
});
