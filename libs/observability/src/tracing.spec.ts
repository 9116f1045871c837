import { annotateRequest, redactAttributes, traced, tracingEnabled } from './tracing';

describe('tracing (DECISIONS 13.2)', () => {
  it('off: the helpers call through and load nothing', async () => {
    expect(tracingEnabled()).toBe(false);
    const work = jest.fn(async () => 42);
    await expect(traced('hsm.sign', { 'hsm.key_label': 'JWT_KEY' }, work)).resolves.toBe(42);
    expect(work).toHaveBeenCalledTimes(1);
    expect(() => annotateRequest('GET', '/x', 'id')).not.toThrow();
    expect(Object.keys(require.cache).filter((path) => /@opentelemetry\/(sdk|instrumentation|exporter)/.test(path))).toEqual([]);
  });

  it('a server span: addresses, agents, headers and the query go; the raw path becomes the route template', () => {
    const attributes: Record<string, unknown> = {
      'http.route': '/admin/v1/organizations/:org/users/:id',
      'http.target': '/admin/v1/organizations/acme/users/alice.smith?access_token=abc',
      'url.path': '/admin/v1/organizations/acme/users/alice.smith',
      'url.query': 'access_token=abc',
      'http.url': 'http://api.example/admin/v1/organizations/acme/users/alice.smith?access_token=abc',
      'url.full': 'http://api.example/x?y=z',
      'client.address': '203.0.113.7',
      'net.peer.ip': '203.0.113.7',
      'network.peer.address': '203.0.113.7',
      'user_agent.original': 'Mozilla/5.0',
      'http.user_agent': 'Mozilla/5.0',
      'http.request.header.authorization': ['Bearer abc'],
      'http.request.method': 'GET',
      'http.response.status_code': 200,
      'app.correlation_id': 'c0ffee',
    };
    redactAttributes(attributes, true);
    expect(attributes).toEqual({
      'http.route': '/admin/v1/organizations/:org/users/:id',
      'http.target': '/admin/v1/organizations/:org/users/:id',
      'url.path': '/admin/v1/organizations/:org/users/:id',
      'http.request.method': 'GET',
      'http.response.status_code': 200,
      'app.correlation_id': 'c0ffee',
    });
  });

  it('a client span (a push hub) keeps only the origin; a database span loses its user and values, keeps its statement', () => {
    const client: Record<string, unknown> = {
      'http.url': 'https://hub.example:8443/send/tok_secret?key=k',
      'url.full': 'not a url',
      'server.address': 'hub.example',
    };
    redactAttributes(client, false);
    expect(client).toEqual({ 'http.url': 'https://hub.example:8443', 'server.address': 'hub.example' });
    const db: Record<string, unknown> = {
      'db.system': 'postgresql',
      'db.statement': 'SELECT * FROM users WHERE id = $1',
      'db.user': 'app',
      'db.connection_string': 'postgresql://db:5432/app',
      'db.postgresql.values': ['alice'],
      'db.query.parameter.0': 'alice',
    };
    redactAttributes(db, false);
    expect(db).toEqual({ 'db.system': 'postgresql', 'db.statement': 'SELECT * FROM users WHERE id = $1' });
  });
});
