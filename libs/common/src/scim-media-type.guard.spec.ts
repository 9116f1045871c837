import { ScimMediaTypeGuard } from './scim-media-type.guard';

/** DECISIONS 6: what the SCIM families accept and how they answer. */
function run(headers: Record<string, string>, options: { acceptForm?: boolean } = {}): { contentType?: string; error?: Error } {
  const sent: Record<string, string> = {};
  const context = {
    switchToHttp: () => ({
      getRequest: () => ({ headers }),
      getResponse: () => ({ header: (name: string, value: string) => (sent[name] = value) }),
    }),
  };
  let allowed: boolean;
  try {
    allowed = new ScimMediaTypeGuard(options).canActivate(context as never);
  } catch (error) {
    return { error: error as Error };
  }
  // The guard refuses by throwing the family's error; it never answers false.
  expect(allowed).toBe(true);
  return { contentType: sent['Content-Type'] };
}

describe('ScimMediaTypeGuard', () => {
  it('accepts application/json, application/scim+json and the credential-management 2.x vendor type', () => {
    for (const type of [
      'application/json',
      'application/scim+json; charset=utf-8',
      'application/vnd.vendor.ma.credential-management-2.2+json',
      'application/vnd.vendor.ma.credential-management-2.7+json',
    ]) {
      expect(run({ 'content-type': type }).error).toBeUndefined();
    }
  });

  it('refuses another vendor major version and other types with 415', () => {
    for (const type of ['application/vnd.vendor.ma.credential-management-3.0+json', 'text/plain', 'application/xml']) {
      expect(run({ 'content-type': type }).error).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE' });
    }
  });

  it('takes a form body only where the route allows it (device actions)', () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    expect(run(form).error).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE' });
    expect(run(form, { acceptForm: true })).toEqual({ contentType: 'application/scim+json' });
  });

  it('answers application/scim+json by default and for wildcards, and echoes the type asked for', () => {
    expect(run({}).contentType).toBe('application/scim+json');
    expect(run({ accept: '*/*' }).contentType).toBe('application/scim+json');
    expect(run({ accept: 'application/json' }).contentType).toBe('application/json');
    expect(run({ accept: 'application/vnd.vendor.ma.credential-management-2.2+json' }).contentType).toBe(
      'application/vnd.vendor.ma.credential-management-2.2+json',
    );
  });

  it('without Accept, answers a vendor-typed body in the vendor type (the interface sends only Content-Type); other bodies in SCIM', () => {
    const vendor = 'application/vnd.vendor.ma.credential-management-2.2+json';
    expect(run({ 'content-type': vendor }).contentType).toBe(vendor);
    expect(run({ 'content-type': `${vendor}; charset=utf-8` }).contentType).toBe(vendor);
    expect(run({ 'content-type': vendor, accept: 'application/scim+json' }).contentType).toBe('application/scim+json');
    expect(run({ 'content-type': 'application/json' }).contentType).toBe('application/scim+json');
  });

  it('treats an Accept of wildcards only as no Accept (curl sends */*), and prefers a type Accept names to a wildcard', () => {
    const vendor = 'application/vnd.vendor.ma.credential-management-2.2+json';
    for (const accept of ['*/*', 'application/*', 'text/html, */*;q=0.8', 'application/vnd.vendor.ma.credential-management-3.0+json, */*']) {
      expect({ accept, answer: run({ 'content-type': vendor, accept }).contentType }).toEqual({ accept, answer: vendor });
      expect({ accept, answer: run({ 'content-type': 'application/json', accept }).contentType }).toEqual({ accept, answer: 'application/scim+json' });
    }
    expect(run({ 'content-type': vendor, accept: `${vendor}, */*` }).contentType).toBe(vendor);
    expect(run({ 'content-type': vendor, accept: 'application/json, text/plain, */*' }).contentType).toBe('application/json');
    expect(run({ 'content-type': vendor, accept: 'application/scim+json, */*' }).contentType).toBe('application/scim+json');
  });

  it('refuses an Accept it cannot meet, including another vendor major version, with 406', () => {
    for (const accept of ['text/html', 'application/vnd.vendor.ma.credential-management-3.1+json']) {
      expect(run({ accept }).error).toMatchObject({ code: 'NOT_ACCEPTABLE' });
    }
  });
});
