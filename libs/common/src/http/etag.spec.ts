import { DomainError } from '../domain-error';
import { IfMatch, keepVersion, versionOf, weakETag } from './etag';

describe('versions and entity tags', () => {
  describe('IfMatch (weak comparison, RFC 7644 3.14)', () => {
    it('matches weak and strong tags of the version, and any version for *', () => {
      expect(IfMatch.parse('W/"3"')!.matches(3)).toBe(true);
      expect(IfMatch.parse('"3"')!.matches(3)).toBe(true);
      expect(IfMatch.parse('W/"2", W/"3"')!.matches(3)).toBe(true);
      expect(IfMatch.parse('W/"2"')!.matches(3)).toBe(false);
      expect(IfMatch.parse('*')!.matches(7)).toBe(true);
      expect(IfMatch.parse('*')!.pinsVersion).toBe(false);
      expect(IfMatch.parse('W/"1"')!.pinsVersion).toBe(true);
      expect(IfMatch.parse(undefined)).toBeUndefined();
    });

    it('refuses a header that is not entity tags', () => {
      for (const bad of ['3', 'W/3', '"3', 'W/"3", 4', '']) {
        expect(() => IfMatch.parse(bad)).toThrow(DomainError);
      }
    });
  });

  it('the ETag of a version is weak', () => {
    expect(weakETag(3)).toBe('W/"3"');
    expect(weakETag('12')).toBe('W/"12"');
  });

  it("a resource's version is its meta.version, or the one its projection kept", () => {
    expect(versionOf({ id: 'x', meta: { version: '4' } })).toBe('4');
    expect(versionOf({ id: 'x' })).toBeUndefined();
    expect(versionOf([{ meta: { version: '1' } }])).toBeUndefined();
    expect(versionOf({ Resources: [], totalResults: 0 })).toBeUndefined();
    const projected = keepVersion({ id: 'x' }, '7');
    expect(versionOf(projected)).toBe('7');
    expect(JSON.stringify(projected)).toBe('{"id":"x"}');
  });

  it('assertMatches throws 412 naming the current version', () => {
    expect(() => IfMatch.parse('W/"2"')!.assertMatches('Gateway 5', 3)).toThrow(/Gateway 5 has changed: its current version is 3/);
    expect(() => IfMatch.parse('W/"3"')!.assertMatches('Gateway 5', 3)).not.toThrow();
  });
});
