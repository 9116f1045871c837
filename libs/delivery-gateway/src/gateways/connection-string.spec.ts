import { connectionStringProblem } from './connection-string';

describe('connection string format (DECISIONS 10)', () => {
  const key = 'tT0pSecretKeyValue+with/base64==';

  it.each([
    `Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=${key};`,
    `Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Listen;SharedAccessKey=${key}`,
    `SharedAccessKey=${key};Endpoint=sb://ns.example.net;SharedAccessKeyName=n;EntityPath=hub;`,
  ])('accepts %s', (value) => {
    expect(connectionStringProblem(value)).toBeUndefined();
  });

  it.each([
    ['', /must not be empty/],
    ['just text', /part 1 is not a Key=Value pair/],
    [`Endpoint=sb://ns/;SharedAccessKeyName=n;;SharedAccessKey=${key};`, /part 3 is not a Key=Value pair/],
    [`Endpoint=sb://ns/;SharedAccessKeyName=;SharedAccessKey=${key};`, /part 2 is not a Key=Value pair/],
    [`Endpoint=sb://ns/;SharedAccessKey=${key};`, /lacks SharedAccessKeyName/],
    ['Endpoint=sb://ns/;', /lacks SharedAccessKeyName, SharedAccessKey/],
    [`Endpoint=https://ns.example.net/;SharedAccessKeyName=n;SharedAccessKey=${key};`, /Endpoint must be an sb:\/\/ URL/],
    [`Endpoint=sb://;SharedAccessKeyName=n;SharedAccessKey=${key};`, /Endpoint must be an sb:\/\/ URL/],
    [`Endpoint=sb://a/;endpoint=sb://b/;SharedAccessKeyName=n;SharedAccessKey=${key};`, /has endpoint twice/],
    [`Endpoint=sb://ns/;SharedAccessKeyName=n;SharedAccessKey=${'x'.repeat(2100)};`, /at most 2048/],
    [`Endpoint=sb://ns/;SharedAccessKeyName=n;SharedAccessKey=a\nb;`, /control characters/],
  ])('refuses %j', (value, problem) => {
    const found = connectionStringProblem(value);
    expect(found).toMatch(problem);
    expect(found).not.toContain(key);
  });
});
