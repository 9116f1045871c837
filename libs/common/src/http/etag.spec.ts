import { DomainError } from '../domain-error';
import { IfMatch, SerializedAnswer, keepVersion, resourceAnswer, serializedOnce, versionOf, weakETag } from './etag';

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

  describe('answers serialised once per version of a cached object (issue 35)', () => {
    it('presents and serialises a cached object once per variant, and anew for another object', () => {
      const cached = { id: 'x', version: 3 };
      let presented = 0;
      const present = () => {
        presented++;
        return { id: cached.id, meta: { version: String(cached.version) } };
      };
      const first = serializedOnce(cached, '3', present);
      expect(first).toBeInstanceOf(SerializedAnswer);
      expect(first.json).toBe('{"id":"x","meta":{"version":"3"}}');
      expect(first.version).toBe('3');
      expect(serializedOnce(cached, '3', present)).toBe(first);
      expect(presented).toBe(1);
      // Another variant (an API version, a row version) is another answer.
      expect(serializedOnce(cached, '4', present)).not.toBe(first);
      expect(presented).toBe(2);
      // The object a cache reads after an eviction is another object: presented again.
      const reread = { id: 'x', version: 4 };
      expect(serializedOnce(reread, '4', () => ({ id: reread.id, meta: { version: '4' } })).json).toBe('{"id":"x","meta":{"version":"4"}}');
    });

    const reply = (headers: Record<string, string> = {}) => ({
      headers,
      hasHeader: (name: string) => name.toLowerCase() in headers,
      header(name: string, value: string) {
        headers[name.toLowerCase()] = value;
        return this;
      },
    });
    it('resourceAnswer sends its JSON text with its version as ETag, in the media type already chosen', async () => {
      const answer = serializedOnce({}, '', () => ({ id: 'y', meta: { version: '5' } }));
      const scim = reply({ 'content-type': 'application/scim+json' });
      const sent = resourceAnswer(scim, answer);
      expect(sent).toBe('{"id":"y","meta":{"version":"5"}}');
      expect(scim.headers).toEqual({ 'content-type': 'application/scim+json', etag: 'W/"5"' });
      // No media type chosen by the route: JSON, as an object answer would have been.
      const plain = reply();
      resourceAnswer(plain, answer);
      expect(plain.headers['content-type']).toBe('application/json; charset=utf-8');
      // A list has no version: no ETag.
      const list = reply({ 'content-type': 'application/scim+json' });
      const listAnswer = serializedOnce([], '', () => ({ totalResults: 0, resources: [] }));
      expect(resourceAnswer(list, listAnswer)).toBe('{"totalResults":0,"resources":[]}');
      expect(list.headers.etag).toBeUndefined();
    });

    it('resourceAnswer tags an object answer with its version and leaves the object to Fastify, and keeps an ETag the route set', () => {
      const resource = { id: 'z', meta: { version: '7' } };
      const plain = reply();
      expect(resourceAnswer(plain, resource)).toBe(resource);
      expect(plain.headers).toEqual({ etag: 'W/"7"' });
      const own = reply({ etag: 'W/"own"' });
      resourceAnswer(own, resource);
      expect(own.headers.etag).toBe('W/"own"');
    });
  });
});
