import { connectionStringParts, connectionStringProblem } from './connection-string';

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

describe('connectionStringParts: the endpoint host as the request reads it (DECISIONS 10.2)', () => {
  const parts = (endpoint: string) => connectionStringParts(`Endpoint=${endpoint};SharedAccessKeyName=n;SharedAccessKey=k`);

  it.each([
    ['sb://2130706433:4711/', '127.0.0.1', '127.0.0.1:4711'],
    ['sb://127.1:4711/', '127.0.0.1', '127.0.0.1:4711'],
    ['sb://0x7f000001:4711/', '127.0.0.1', '127.0.0.1:4711'],
    ['sb://[::ffff:127.0.0.1]:4711/', '[::ffff:7f00:1]', '[::ffff:7f00:1]:4711'],
    ['sb://NS.ServiceBus.Windows.net/', 'ns.servicebus.windows.net', 'ns.servicebus.windows.net'],
    // A port the https parser would drop as its default stays: a loopback hub is reached over plain http.
    ['sb://127.0.0.1:443/', '127.0.0.1', '127.0.0.1:443'],
  ])('%s is %s', (endpoint, hostname, host) => {
    expect(parts(endpoint)).toMatchObject({ hostname, host });
  });

  it('refuses an endpoint whose host an https URL cannot hold', () => {
    expect(connectionStringProblem('Endpoint=sb://a%zz/;SharedAccessKeyName=n;SharedAccessKey=k')).toMatch(/Endpoint must be an sb:\/\/ URL with a host name/);
  });
});
