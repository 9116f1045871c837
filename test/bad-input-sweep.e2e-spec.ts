import { randomBytes, randomUUID } from 'node:crypto';
import { Validator } from '@seriousme/openapi-schema-validator';
import { PATH_FORMATS, ParameterFormat, commonErrorStatuses, pathFormatOf, routeFamilyOf } from '@app/common';
import { TestApp, createAdminAndPlainAccounts, createOrganization, createTestApp, platformAdminToken, registeredRoutes } from '@app/testing';

interface Operation {
  method: string;
  path: string;
  responses: Record<string, unknown>;
  hasBody: boolean;
  /** The formats the route declares for its path parameters (@PathFormats), beside the defaults by name. */
  formats: Record<string, ParameterFormat> | undefined;
}

/** Values no path parameter can hold, each a class of the attacker's sweep (Issue 16). */
const BAD_PATH_VALUES = [
  '%00',
  'a%00b',
  '..%2F..',
  '..%2F..%2Fetc%2Fpasswd',
  'x'.repeat(5000),
  "'%20OR%20'1'%3D'1",
  '%ED%A0%80',
  '%F0%9F%98%80',
  '-1',
  '%20',
  '%2e%2e',
];

/** Query strings of the same sweep: paging out of range, broken SCIM filters, NUL bytes, repeated and oversized values. */
const BAD_QUERIES = [
  'startIndex=-1&count=-5',
  'startIndex=99999999999999999999999&count=1e308',
  'count=abc&startIndex=%00',
  'filter=userName%20eq',
  'filter=%28%28%28%28',
  'filter=a%20eq%20%22%00%22',
  "filter=userName%20eq%20%22'%20OR%20'1'%3D'1%22",
  // Date-times Date.parse takes and PostgreSQL refuses (Issue 22 item 7).
  'filter=meta.created%20gt%20%222026-02-30T00%3A00%3A00Z%22',
  'filter=meta.lastModified%20lt%20%220000-01-01T00%3A00%3A00Z%22',
  'attributes=%00&excludedAttributes=__proto__',
  `filter=${'a'.repeat(10000)}`,
  'force=%ED%A0%80&api-version=%00',
  'code=1e999&from=%00',
];

/** Bodies of the sweep: [content type, raw body]. */
const BAD_BODIES: [string, string][] = [
  ['application/json', '{'],
  ['application/json', '{"a":'.repeat(2000) + '1' + '}'.repeat(2000)],
  ['application/json', '['.repeat(50000) + ']'.repeat(50000)],
  ['application/json', '{"__proto__":{"isAdmin":true},"constructor":{"prototype":{"x":1}}}'],
  ['application/json', '{"name":"a\\u0000b","id":"\\u0000","value":"\\u0000"}'],
  ['application/json', '{"name":"\\ud800","displayName":"\\udfff"}'],
  ['application/json', JSON.stringify({ name: 'x'.repeat(900 * 1024) })],
  ['application/json', '[]'],
  ['application/json', 'null'],
  ['application/json', '"a string"'],
  ['application/json', '12345678901234567890123'],
  ['application/scim+json', '{"schemas":["urn:ietf:params:scim:api:messages:2.0:SearchRequest"],"filter":"meta.created gt \\"2026-02-30T00:00:00Z\\""}'],
  ['application/scim+json', '{"schemas":["urn:ietf:params:scim:api:messages:2.0:SearchRequest"],"filter":"meta.lastModified lt \\"0000-01-01T00:00:00Z\\""}'],
  ['application/scim+json', '{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","path":"a[b eq \\"c\\"","value":1}]}'],
  ['application/x-www-form-urlencoded', 'grant_type=client_credentials&client_id=%00&client_secret=%00'],
  ['text/plain', 'hello'],
  ['application/xml', '<?xml version="1.0"?><a>&lt;</a>'],
  ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\nb\r\n--x--'],
  ['application/json; charset=utf-16', '{}'],
];

/** Each sweep sends every route its bad values, thousands of requests: ~5-18 s alone, longer beside other suites on a slow host. */
const SWEEP_BUDGET_MS = 120_000;

/**
 * Every operation of the OpenAPI document the service serves, sent the inputs of the attacker's
 * sweep of Issue 16: malformed path ids, query values and bodies. No answer may be a 5xx other
 * than 501 and 503, and every status an operation answers must be declared in the document. New
 * routes are covered without editing this test; the request count is bounded by the tables above.
 */
describe('bad-input sweep over the OpenAPI document', () => {
  let t: TestApp;
  let operations: Operation[];
  let org: string;
  let platformToken: string;
  let orgToken: string;
  /** The OpenAPI document as served. */
  let served: unknown;

  beforeAll(async () => {
    t = await createTestApp();
    platformToken = await platformAdminToken(t.http);
    org = `sweep_${randomBytes(3).toString('hex')}`;
    await createOrganization(t.http, platformToken, org);
    ({ orgAdminToken: orgToken } = await createAdminAndPlainAccounts(t.http, platformToken, org));
    served = (await t.http.get('/api-docs-json')).body;
    const document = served as {
      paths: Record<string, Record<string, { responses: Record<string, unknown>; requestBody?: unknown }>>;
    };
    const declared = new Map(
      registeredRoutes(t).map((route) => [
        `${route.method.toLowerCase()} ${route.path.replace(/:([A-Za-z]+)/g, '{$1}')}`,
        route.metadata<Record<string, ParameterFormat>>(PATH_FORMATS),
      ]),
    );
    operations = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({
        method,
        path,
        responses: operation.responses,
        hasBody: method !== 'get' && method !== 'delete',
        formats: declared.get(`${method} ${path}`),
      })),
    );
  });
  afterAll(() => t.close());

  /** A value of the parameter's declared format that names nothing (or this suite's organization). */
  function validValue(operation: Operation, name: string): string {
    if (name === 'org' || name === 'tenant') return org;
    const format = pathFormatOf(name, operation.formats);
    switch (format) {
      case 'clientId':
        return `${org}-nobody`;
      case 'numericId':
        return '987654321';
      case 'thumbprint':
      case 'keyId':
      case 'enrolmentLink':
        return 'A'.repeat(43);
      case 'applicationId':
        return 'com.example.nothing';
      case 'uuid':
        return randomUUID();
      case 'ocspRequest':
        return 'MEIwQDA-MDwwOjAJBgUrDgMCGgUABBQ';
      case 'resourceTypeName':
        return 'Nothing';
      case 'globalPolicyId':
        return 'global';
      case 'schemaUrn':
        return 'urn:example:nothing';
      default:
        throw new Error(`${operation.method} ${operation.path}: path parameter ${name} has no declared format (@PathFormats)`);
    }
  }

  function url(operation: Operation, replace?: { name: string; value: string }): string {
    return operation.path.replace(/\{([^}]+)\}/g, (_, name: string) => (replace?.name === name ? replace.value : validValue(operation, name)));
  }

  function send(operation: Operation, target: string, body?: [string, string]) {
    const token = operation.path.startsWith('/admin/') ? platformToken : orgToken;
    let call = t.http[operation.method as 'get'](target).auth(token, { type: 'bearer' });
    if (body) call = call.set('Content-Type', body[0]).send(body[1]);
    return call;
  }

  async function sweep(requests: { operation: Operation; target: string; body?: [string, string] }[]) {
    const problems: string[] = [];
    for (const { operation, target, body } of requests) {
      const response = await send(operation, target, body);
      const shown = `${operation.method.toUpperCase()} ${target.slice(0, 120)}${body ? ` [${body[0]}: ${body[1].slice(0, 60)}]` : ''}`;
      if (response.status >= 500 && response.status !== 501 && response.status !== 503)
        problems.push(`${shown} -> ${response.status} ${JSON.stringify(response.body).slice(0, 200)}`);
      else if (!(String(response.status) in operation.responses)) problems.push(`${shown} -> ${response.status}, which the OpenAPI document does not declare`);
    }
    return problems;
  }

  it('every path parameter of every route has a declared format (a new route without one fails here)', () => {
    const undeclared = registeredRoutes(t).flatMap((route) =>
      [...route.path.matchAll(/:([A-Za-z]+)/g)]
        .filter(([, name]) => pathFormatOf(name, route.metadata<Record<string, ParameterFormat>>(PATH_FORMATS)) === undefined)
        .map(([, name]) => `${route.route} :${name}`),
    );
    expect(undeclared).toEqual([]);
  });

  it('every credential-management route documents its success answer, and every write its request body (Issue 12)', () => {
    const document = served as {
      paths: Record<
        string,
        Record<string, { responses: Record<string, { content?: Record<string, { schema?: unknown }> }>; requestBody?: { content?: unknown } }>
      >;
    };
    const credentialManagement =
      /^\/(?:aims\/rs\/scim\/v2\/(?!Device)|admin\/v1\/organizations\/\{org\}\/(?:groups|device-policies|printers|credential-policy|wallet-policy))/;
    const missing: string[] = [];
    for (const [path, methods] of Object.entries(document.paths).filter(([path]) => credentialManagement.test(path))) {
      for (const [method, operation] of Object.entries(methods)) {
        const success = Object.entries(operation.responses).filter(([status]) => /^2/.test(status));
        const documented = success.some(([status, answer]) => status === '204' || Object.values(answer.content ?? {}).some((media) => media.schema));
        const notImplemented = operation.responses['501'] !== undefined && /\/Self\//.test(path) && success.length === 0;
        if (!documented && !notImplemented) missing.push(`${method} ${path}: no success answer schema`);
        if (
          ['post', 'put', 'patch'].includes(method) &&
          !path.endsWith('/resume') &&
          operation.requestBody?.content === undefined &&
          !/\/Self\/(?:Device|DeviceFlow)/.test(path)
        ) {
          missing.push(`${method} ${path}: no request body`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('the served OpenAPI document is valid (checked by @seriousme/openapi-schema-validator against the OpenAPI 3 schema)', async () => {
    const result = await new Validator().validate(served as Record<string, unknown>);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('the document lists the operations of every family, each declaring the errors every route can give', () => {
    expect(operations.length).toBeGreaterThan(40);
    for (const operation of operations) {
      const declared = Object.keys(operation.responses);
      const oauth = routeFamilyOf(operation.path.replace(/\{[^}]+\}/g, 'x')).oauthErrors;
      expect({
        operation: `${operation.method} ${operation.path}`,
        missing: commonErrorStatuses(operation.method, oauth).filter((s) => !declared.includes(s)),
      }).toEqual({
        operation: `${operation.method} ${operation.path}`,
        missing: [],
      });
    }
  });

  it(
    'malformed path parameters: never a 5xx, and a value that cannot exist is a 404 naming the parameter',
    async () => {
      const requests = operations.flatMap((operation) =>
        [...operation.path.matchAll(/\{([^}]+)\}/g)].flatMap(([, name]) =>
          BAD_PATH_VALUES.map((value) => ({ operation, target: url(operation, { name, value }) })),
        ),
      );
      expect(requests.length).toBeGreaterThan(200);
      expect(await sweep(requests)).toEqual([]);
      // The shared check names the parameter in the route family's error body.
      const device = await t.http.get(`/aims/rs/scim/v2/Device/a%00b`).auth(orgToken, { type: 'bearer' });
      expect(device.status).toBe(404);
      expect(device.body.detail).toContain('the path parameter id must be a UUID');
      const account = await t.http.delete(`/admin/v1/organizations/${org}/system-accounts/%00`).auth(platformToken, { type: 'bearer' });
      expect(account.status).toBe(404);
      expect(account.body.detail).toContain('the path parameter clientId must be a Client ID');
      // Longer than any id: 414 in the family's error body.
      const long = await t.http.get(`/aims/rs/scim/v2/Device/${'x'.repeat(5000)}`).auth(orgToken, { type: 'bearer' });
      expect({ status: long.status, schemas: long.body.schemas }).toEqual({ status: 414, schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'] });
    },
    SWEEP_BUDGET_MS,
  );

  it(
    'malformed query values: never a 5xx; a NUL byte is a 400 naming the parameter',
    async () => {
      const requests = operations.flatMap((operation) => BAD_QUERIES.map((query) => ({ operation, target: `${url(operation)}?${query}` })));
      expect(await sweep(requests)).toEqual([]);
      const nul = await t.http.get(`/admin/v1/organizations/${org}/audit-events?actor=a%00b`).auth(platformToken, { type: 'bearer' });
      expect(nul.status).toBe(400);
      expect(nul.body.detail).toBe('Query parameter actor contains a NUL character (\\u0000); remove it.');
      const impossibleDay = await t.http
        .get(`/admin/v1/organizations/${org}/groups?filter=${encodeURIComponent('meta.created gt "2026-02-30T00:00:00Z"')}`)
        .auth(platformToken, { type: 'bearer' });
      expect(impossibleDay.status).toBe(400);
      expect(impossibleDay.body.scimType).toBe('invalidFilter');
      expect(impossibleDay.body.detail).toContain('"2026-02-30T00:00:00Z" is not a real one (2026-02 has no day 30)');
      // The edges the filter takes are ones PostgreSQL takes too.
      for (const edge of ['meta.created gt "0001-01-01T00:00:00+14:59"', 'meta.created lt "9999-12-31T23:59:59.999999999-14:59"']) {
        const answer = await t.http.get(`/admin/v1/organizations/${org}/groups?filter=${encodeURIComponent(edge)}`).auth(platformToken, { type: 'bearer' });
        expect({ edge, status: answer.status }).toEqual({ edge, status: 200 });
      }
    },
    SWEEP_BUDGET_MS,
  );

  it(
    'the routes the OpenAPI document leaves out (the hosted login page, its stylesheet) get the same sweep: never a 5xx',
    async () => {
      const documented = new Set(operations.map((operation) => `${operation.method} ${operation.path}`));
      const hidden: Operation[] = registeredRoutes(t)
        .filter((route) => ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(route.method))
        .map((route) => ({
          method: route.method.toLowerCase(),
          path: route.path.replace(/:([A-Za-z]+)/g, '{$1}'),
          responses: {},
          hasBody: route.method !== 'GET' && route.method !== 'DELETE',
          formats: route.metadata<Record<string, ParameterFormat>>(PATH_FORMATS),
        }))
        .filter((operation) => !documented.has(`${operation.method} ${operation.path}`) && !operation.path.startsWith('/api-docs'));
      expect(hidden.map((operation) => `${operation.method} ${operation.path}`)).toEqual(
        expect.arrayContaining(['get /authentication/customer/{org}/login', 'post /authentication/customer/{org}/login']),
      );
      const requests: { operation: Operation; target: string; body?: [string, string] }[] = hidden.flatMap((operation) => [
        ...[...operation.path.matchAll(/\{([^}]+)\}/g)].flatMap(([, name]) =>
          BAD_PATH_VALUES.map((value) => ({ operation, target: url(operation, { name, value }) })),
        ),
        ...BAD_QUERIES.map((query) => ({ operation, target: `${url(operation)}?${query}` })),
        ...(operation.hasBody ? BAD_BODIES.map((body) => ({ operation, target: url(operation), body })) : []),
      ]);
      const problems: string[] = [];
      for (const { operation, target, body } of requests) {
        const response = await send(operation, target, body);
        if (response.status >= 500 && response.status !== 501 && response.status !== 503) {
          problems.push(
            `${operation.method.toUpperCase()} ${target.slice(0, 120)}${body ? ` [${body[0]}: ${body[1].slice(0, 60)}]` : ''} -> ${response.status}`,
          );
        }
      }
      expect(problems).toEqual([]);
    },
    SWEEP_BUDGET_MS,
  );

  it(
    'an empty body is no body, whatever its Content-Type says: a route refuses it only when it refuses a request without one (issue 27)',
    async () => {
      // A route that needs a body refuses both alike (400, or 415 where the type decides the format;
      // the detail may name the type sent) and changes nothing; one that takes none may act on the
      // first call and answer 409 to the next, so only whether the request is refused is compared.
      const refused = (status: number) => status === 400 || status === 415;
      const differences: string[] = [];
      const writes = operations.filter((operation) => operation.method !== 'get');
      for (const operation of writes) {
        const target = url(operation);
        const answers: { contentType: string; status: number; detail: string }[] = [];
        for (const contentType of ['application/scim+json', 'application/json', undefined]) {
          let call = t.http[operation.method as 'post'](target).auth(operation.path.startsWith('/admin/') ? platformToken : orgToken, { type: 'bearer' });
          if (contentType) call = call.set('Content-Type', contentType).send('');
          const { status, body } = await call;
          answers.push({ contentType: contentType ?? 'none', status, detail: String(body?.detail ?? body?.error_description ?? '') });
        }
        const none = answers[2];
        if (answers.some(({ status }) => (status >= 500 && status !== 501 && status !== 503) || refused(status) !== refused(none.status))) {
          differences.push(`${operation.method.toUpperCase()} ${target}: ${answers.map((a) => `${a.contentType} ${a.status} ${a.detail}`).join(' | ')}`);
        }
      }
      expect(writes.length).toBeGreaterThan(80);
      expect(differences).toEqual([]);
    },
    SWEEP_BUDGET_MS,
  );

  it(
    'every write of the administration API refuses a form-encoded or multipart body with a 415 naming application/json (issue 32 item 8)',
    async () => {
      const writes = operations.filter((operation) => operation.hasBody && operation.path.startsWith('/admin/v1/'));
      expect(writes.length).toBeGreaterThan(30);
      const wrong: string[] = [];
      for (const operation of writes) {
        for (const [type, body] of [
          ['application/x-www-form-urlencoded', 'name=Renamed&role=Issuance'],
          ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="name"\r\n\r\nRenamed\r\n--x--'],
        ]) {
          const answer = await send(operation, url(operation), [type, body]);
          const media = type.split(';')[0];
          const expected = `Content-Type ${media} is not accepted by the administration API; send the body as application/json.`;
          if (answer.status !== 415 || answer.body.detail !== expected)
            wrong.push(`${operation.method.toUpperCase()} ${operation.path} [${media}] -> ${answer.status} ${String(answer.body?.detail).slice(0, 120)}`);
        }
      }
      expect(wrong).toEqual([]);
    },
    SWEEP_BUDGET_MS,
  );

  it(
    'malformed bodies and content types: never a 5xx; a NUL byte or a lone surrogate is a 400 naming the attribute',
    async () => {
      const requests = operations
        .filter((operation) => operation.hasBody)
        .flatMap((operation) => BAD_BODIES.map((body) => ({ operation, target: url(operation), body })));
      expect(requests.length).toBeGreaterThan(200);
      expect(await sweep(requests)).toEqual([]);
      // A system account whose description is sent as written (escapes included), not re-encoded by the client.
      const createAccount = (rawBody: string) =>
        t.http
          .post(`/admin/v1/organizations/${org}/system-accounts`)
          .auth(platformToken, { type: 'bearer' })
          .set('Content-Type', 'application/json')
          .send(rawBody);
      const nul = await createAccount('{"role":"Issuance","description":"a\\u0000b"}');
      expect(nul.status).toBe(400);
      expect(nul.body.detail).toBe("The request body's attribute description contains a NUL character (\\u0000); remove it.");
      const surrogate = await createAccount('{"role":"Issuance","description":"\\ud800"}');
      expect(surrogate.status).toBe(400);
      expect(surrogate.body.detail).toContain('attribute description contains a lone UTF-16 surrogate');
      const yearZero = await t.http
        .post('/aims/rs/scim/v2/Users/.search')
        .auth(orgToken, { type: 'bearer' })
        .set('Content-Type', 'application/scim+json')
        .send(JSON.stringify({ schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'], filter: 'meta.created gt "0000-01-01T00:00:00Z"' }));
      expect(yearZero.status).toBe(400);
      expect(yearZero.body.scimType).toBe('invalidFilter');
      expect(yearZero.body.detail).toContain('"0000-01-01T00:00:00Z" is not a real one (there is no year 0000)');
      // Endpoints aimed inside the service's network (issue 32; DECISIONS 10.2, 16), in the spellings
      // of the assessment: a 400 naming the attribute, whatever the loopback switches say (on here).
      for (const host of ['0.0.0.0', '0x0a000001', '169.254.169.254', '[::ffff:a9fe:a9fe]', '[fd00::1]', '100.64.0.1', '3232235777']) {
        const gateway = await t.http
          .post(`/configuration/${org}/v2/DeliveryGateway/Push`)
          .auth(orgToken, { type: 'bearer' })
          .set('Content-Type', 'application/scim+json')
          .send(
            JSON.stringify({
              schemas: ['urn:vendor:scim:api:idp:2.0:DeliveryGateway:Push'],
              type: 'CLOUD_GCM_PUSH',
              name: `inside ${host}`,
              connectionString: `Endpoint=sb://${host}:443/;SharedAccessKeyName=n;SharedAccessKey=k`,
            }),
          );
        expect([host, gateway.status, gateway.body.detail]).toEqual([
          host,
          400,
          expect.stringContaining('connectionString: Endpoint names a private, link-local'),
        ]);
        const ping = await createAccount(
          JSON.stringify({ role: 'Issuance', backchannelAuthentication: { tokenDeliveryMode: 'ping', clientNotificationEndpoint: `https://${host}/notify` } }),
        );
        expect([host, ping.status, ping.body.detail]).toEqual([
          host,
          400,
          expect.stringContaining('backchannelAuthentication.clientNotificationEndpoint: names a private, link-local'),
        ]);
      }
    },
    SWEEP_BUDGET_MS,
  );
});
