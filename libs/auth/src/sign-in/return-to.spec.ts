import { safeReturnTo } from './return-to';

describe('safeReturnTo (DECISIONS 14.3)', () => {
  it.each([
    ['/authentication/customer/acme/authorize?client_id=acme-app&state=x', '/authentication/customer/acme/authorize?client_id=acme-app&state=x'],
    ['/portal/', '/portal/'],
    ['/portal/devices?page=2', '/portal/devices?page=2'],
    ['/portal', '/portal'],
  ])('accepts %s', (value, expected) => {
    expect(safeReturnTo('acme', value)).toBe(expected);
  });

  it.each([
    'https://evil.example/portal/',
    '//evil.example/portal/',
    '/\\evil.example/portal/',
    '\\\\evil.example',
    '/portal//evil.example',
    '/authentication/customer/other/authorize?client_id=x',
    '/authentication/customer/acme/token',
    '/portal/../admin/v1/organizations',
    '/portal/%2e%2e/admin',
    '/admin/v1/organizations',
    'javascript:alert(1)',
    '/portal/\nSet-Cookie: x=y',
    '/portal/#fragment',
    // Encoded: a proxy or router that decodes before normalizing would go elsewhere.
    '/portal/..%2f..%2fadmin/v1/organizations',
    '/portal/%2F%2Fevil.example',
    '/portal/%5cevil.example',
    '/portal/.%2E/admin',
    '/portal/%0d%0aSet-Cookie:%20x=y',
    '/portal/%E0%A4%A',
    // Decoded twice, or by a router that strips path parameters (#32 item 8).
    '/portal/%252e%252e/admin/v1/organizations',
    '/portal/%252e%252e%252fadmin',
    '/portal/%25252e%25252e/admin',
    '/portal/..;/admin/v1/organizations',
    '/portal/.%2e;/admin',
    '/portal/%3b/devices',
    '/portal;x/devices',
    'portal/',
    '',
    `/portal/${'a'.repeat(5000)}`.slice(0, 4097),
  ])('refuses case %# (%s)', (value) => {
    expect(safeReturnTo('acme', value)).toBeUndefined();
  });
});
