import { Principal } from '@app/common';
import { parseApiVersion, parseResourceId, requireTenant } from './request-rules';

describe('request rules of the configuration family', () => {
  describe('api-version', () => {
    it('is 1 without the parameter, and 1, 2 or 3 when given', () => {
      expect(parseApiVersion({})).toBe(1);
      expect(parseApiVersion(undefined)).toBe(1);
      expect(parseApiVersion({ 'api-version': '2' })).toBe(2);
      expect(parseApiVersion({ 'api-version': '3' })).toBe(3);
    });

    it('refuses anything else, saying what is allowed', () => {
      for (const bad of ['0', '4', '3.0', 'latest', '', ['1', '2']]) {
        expect(() => parseApiVersion({ 'api-version': bad })).toThrow(/api-version must be 1, 2 or 3/);
      }
    });
  });

  it('ids are positive numeric strings', () => {
    expect(parseResourceId('12')).toBe('12');
    for (const bad of ['0', '012', 'abc', '1e3', '-1', '1234567890123456789']) expect(parseResourceId(bad)).toBeUndefined();
  });

  it('the tenant must be the caller organization', () => {
    const principal = { org: 'acme' } as Principal;
    expect(requireTenant(principal, 'acme')).toBe('acme');
    expect(() => requireTenant(principal, 'other')).toThrow(/Tenant "other" in the path is not your organization/);
  });
});
