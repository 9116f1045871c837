import { canonicalResourceSpelling, credentialManagementPaths } from './credential-management-paths';

describe('credential-management path forms (DECISIONS 1)', () => {
  it('declares the canonical path, the scm alias and the customer form', () => {
    expect(credentialManagementPaths('Users')).toEqual(['aims/rs/scim/v2/Users', 'aims/rs/scm/v2/Users', 'credential-management/customer/:org/Users']);
  });

  it.each([
    ['/credential-management/customer/acme/users', '/credential-management/customer/acme/Users'],
    ['/credential-management/customer/acme/USERS/7?attributes=userName', '/credential-management/customer/acme/Users/7?attributes=userName'],
    ['/credential-management/customer/acme/devicepolicy/.search', '/credential-management/customer/acme/DevicePolicy/.search'],
    ['/credential-management/customer/acme/Device', '/credential-management/customer/acme/Device'],
    ['/credential-management/customer/acme/self/device/7/suspend', '/credential-management/customer/acme/Self/Device/7/suspend'],
    ['/credential-management/customer/acme/users/7/enrollmentdata', '/credential-management/customer/acme/Users/7/EnrollmentData'],
    ['/credential-management/customer/acme/users?filter=users', '/credential-management/customer/acme/Users?filter=users'],
    ['/credential-management/customer/acme/unknown', '/credential-management/customer/acme/unknown'],
    ['/aims/rs/scim/v2/users', '/aims/rs/scim/v2/users'],
    ['/credential-management/customer/acme', '/credential-management/customer/acme'],
  ])('%s is routed as %s', (url, routed) => {
    expect(canonicalResourceSpelling(url)).toBe(routed);
  });
});
