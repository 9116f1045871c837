import { p256Csr } from '@app/pki/testing';
import { SECRET_ANSWER } from '@app/common';
import type { Response } from 'supertest';
import {
  AuthenticatorApp,
  TestApp,
  createCardholder,
  createIssuingOrganization,
  createSystemAccount,
  createTestApp,
  insertCard,
  platformAdminToken,
  registeredRoutes,
  tokenRequest,
} from '@app/testing';

/**
 * Answers that carry secret material are never stored by a cache (DECISIONS 6; Issue 22 item 6):
 * every route marked @AnswersWithSecrets() is driven to a success answer here, which must say
 * `Cache-Control: no-store` and `Pragma: no-cache` and hold the secret that makes the mark needed;
 * and every route whose documented answer names a secret-like attribute must carry the mark.
 */

const ORG = 'secrets';
const SCIM = 'application/scim+json';
const REQUEST = 'urn:vendor:scim:api:cms:1.0:ContentRequest';
const SESSION = 'urn:vendor:scim:api:cms:1.0:SyncSession';
const FLOW = 'urn:vendor:scim:api:cms:1.0:DeviceFlow';
const PASSWORD = 'correct horse battery staple';

/** Attribute names of a documented answer that hold secret material. */
const SECRET_NAME = /secret|password|otpauth|connectionString|^(access|refresh|id)_token$|private_?key|^adminKey$|^pin$|^puk$/i;

interface Schema {
  properties?: Record<string, Schema>;
  items?: Schema;
}

/** The secret-like attribute names anywhere in a documented schema. */
function secretNames(schema: Schema | undefined): string[] {
  if (!schema) return [];
  return [
    ...Object.entries(schema.properties ?? {}).flatMap(([name, inner]) => [...(SECRET_NAME.test(name) ? [name] : []), ...secretNames(inner)]),
    ...secretNames(schema.items),
  ];
}

describe('answers that carry secrets (DECISIONS 6)', () => {
  let t: TestApp;
  let admin: string;
  let tokens: Record<string, string>;
  let policy: string;

  beforeAll(async () => {
    t = await createTestApp();
    admin = await platformAdminToken(t.http);
    ({ tokens } = await createIssuingOrganization(t, admin, ORG, { issuer: 'Issuance', approver: 'Issuance', configuration: 'Administration' }));
    policy = (await adminCall('post', '/device-policies').send({ name: 'Badge and OTP', credentialTypes: ['PKI_CERTIFICATE', 'OATH_TOTP'] })).body.id;
  });
  afterAll(() => t.close());

  const adminCall = (method: 'post' | 'put', path: string) => t.http[method](`/admin/v1/organizations/${ORG}${path}`).auth(admin, { type: 'bearer' });
  const post = (path: string, body: unknown, token = tokens.issuer) =>
    t.http.post(path).auth(token, { type: 'bearer' }).set('Content-Type', SCIM).send(JSON.stringify(body));
  const cardResults = async () => [
    { operation: 'GENERATE_KEY', status: 'SUCCESS', credentialType: 'PKI_CERTIFICATE', csr: (await p256Csr()).toString('base64') },
    { operation: 'WRITE_OTP', status: 'SUCCESS', credentialType: 'OATH_TOTP' },
  ];

  /** An approved issuance of a fresh card to a new cardholder of ORG. */
  async function approvedIssuance(userName: string) {
    const holder = await createCardholder(t, admin, ORG, userName, { password: PASSWORD });
    const card = await insertCard(t, ORG);
    const created = await post('/aims/rs/scim/v2/ContentRequest', {
      schemas: [REQUEST],
      type: 'issuance',
      target: { device: { value: card.id }, devicePolicy: { value: policy } },
      wallet: { value: holder.wallet },
    });
    expect((await post(`/aims/rs/scim/v2/ContentRequest/${created.body.id}/approve`, {}, tokens.approver)).status).toBe(200);
    return { request: created.body.id as string, card };
  }

  const oathSeed = (credentials: { type: string; secret?: string }[]) => credentials.find((c) => c.type === 'OATH_TOTP')?.secret;

  const gatewayBody = (name: string) => ({
    schemas: ['urn:vendor:scim:api:idp:2.0:DeliveryGateway:Push'],
    type: 'CLOUD_GCM_PUSH',
    name,
    hub: 'android-hub',
    connectionString: 'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Full;SharedAccessKey=SeCrEtKeYxxxxxxxxxxxxxxxxxxxxAbC=;',
    notificationTimeToLive: '3600',
    supportedOperatingSystems: ['Android'],
    appId: 'com.example.wallet',
    messageTemplates: { credential: { msg: 'Your credential is ready', title: 'Credential' } },
  });

  /** For each marked handler: a call that succeeds, and the secret its answer holds (or every one, when it holds several). */
  const exercises: Record<string, () => Promise<{ response: Response; secret: unknown }>> = {
    'SystemAccountsController.create': async () => {
      const response = await adminCall('post', '/system-accounts').send({ role: 'Issuance' });
      return { response, secret: response.body.secret?.value };
    },
    'SystemAccountsController.createSecret': async () => {
      const { clientId } = await createSystemAccount(t.http, admin, ORG, { role: 'Issuance' });
      const response = await adminCall('post', `/system-accounts/${clientId}/secrets`).send({});
      return { response, secret: response.body.value };
    },
    'PushGatewayController.create': async () => {
      const response = await t.http
        .post(`/configuration/${ORG}/v2/DeliveryGateway/Push?api-version=3`)
        .auth(tokens.configuration, { type: 'bearer' })
        .send(gatewayBody('Created'));
      return { response, secret: response.body.connectionString };
    },
    'PushGatewayController.replace': async () => {
      const path = `/configuration/${ORG}/v2/DeliveryGateway/Push`;
      const created = await t.http.post(`${path}?api-version=3`).auth(tokens.configuration, { type: 'bearer' }).send(gatewayBody('Replaced'));
      const response = await t.http
        .put(`${path}/${created.body.id}?api-version=3`)
        .auth(tokens.configuration, { type: 'bearer' })
        .set('If-Match', created.headers.etag)
        .send(gatewayBody('Replaced again'));
      return { response, secret: response.body.connectionString };
    },
    'ContentRequestsController.create': async () => {
      // An offline PIN unlock: the response to the card's challenge, answered once (DECISIONS 17.1).
      const holder = await createCardholder(t, admin, ORG, 'ula');
      const card = await insertCard(t, ORG, { status: 'ISSUED', owner: holder.id });
      const response = await post('/aims/rs/scim/v2/ContentRequest', {
        schemas: [REQUEST],
        type: 'unlock pin',
        target: { device: { value: card.id } },
        wallet: { value: holder.wallet },
        parameters: [{ id: 'challenge', value: '0123456789ABCDEF', type: 'string', encoding: 'hex' }],
      });
      return { response, secret: response.body.parameters?.find((p: { id: string }) => p.id === 'response')?.value };
    },
    'OrganizationAuditDestinationsController.create': async () => {
      // A webhook destination's signing secret, shown once (DECISIONS 11.4).
      const response = await t.http
        .post(`/admin/v1/organizations/${ORG}/audit-destinations`)
        .auth(admin, { type: 'bearer' })
        .send({ name: 'siem', type: 'webhook', url: 'https://siem.example.com/hook' });
      return { response, secret: response.body.secret };
    },
    'PlatformAuditDestinationsController.create': async () => {
      const response = await t.http
        .post('/admin/v1/audit-destinations')
        .auth(admin, { type: 'bearer' })
        .send({ name: 'platform siem', type: 'webhook', url: 'https://siem.example.com/platform' });
      return { response, secret: response.body.secret };
    },
    'SyncSessionsController.execute': async () => {
      const { request, card } = await approvedIssuance('ann');
      const response = await post('/aims/rs/scim/v2/SyncSession', {
        schemas: [SESSION],
        contentRequest: { value: request },
        device: { ATR: card.ATR, CUID: card.CUID },
        results: await cardResults(),
      });
      // The OATH seed, and the smart card's admin key (DECISIONS 17.1).
      return { response, secret: [oathSeed(response.body.credentials ?? []), response.body.device?.adminKey] };
    },
    'SelfController.syncSession': async () => {
      // A cardholder runs the issuance of its own card: the OATH seed comes in this answer.
      const { request, card } = await approvedIssuance('bea');
      const cardholder = (await tokenRequest(t.http, ORG, { grant_type: 'password', username: 'bea', password: PASSWORD })).body.access_token;
      const response = await post(
        '/aims/rs/scim/v2/Self/SyncSession',
        { schemas: [SESSION], contentRequest: { value: request }, device: { ATR: card.ATR, CUID: card.CUID }, results: await cardResults() },
        cardholder,
      );
      return { response, secret: oathSeed(response.body.credentials ?? []) };
    },
    'DeviceFlowsController.continue': async () => {
      const holder = await createCardholder(t, admin, ORG, 'cy');
      const card = await insertCard(t, ORG, { status: 'ISSUED', owner: holder.id });
      const started = await post('/aims/rs/scim/v2/DeviceFlow', {
        schemas: [FLOW],
        type: 'APPLICATIONS_UPDATE',
        wallet: { value: holder.wallet },
        device: { value: card.id },
        devicePolicy: { value: policy },
      });
      const response = await post(`/aims/rs/scim/v2/DeviceFlow/${started.body.id}`, {
        step: 'ENCODE',
        device: { ATR: card.ATR, CUID: card.CUID },
        responses: (await cardResults()).map(({ operation, ...rest }) => ({ ...rest, operation: `ENCODE_${operation}` })),
      });
      return { response, secret: [oathSeed(response.body.syncSession?.credentials ?? []), response.body.syncSession?.device?.adminKey] };
    },
    'TokenController.token': async () => {
      const { clientId, secret } = await createSystemAccount(t.http, admin, ORG, { role: 'Issuance' });
      const response = await tokenRequest(t.http, ORG, { grant_type: 'client_credentials', client_id: clientId, client_secret: secret });
      return { response, secret: response.body.access_token };
    },
    'TokenController.positioningToken': async () => {
      const { clientId, secret } = await createSystemAccount(t.http, admin, ORG, { role: 'Issuance' });
      const response = await t.http
        .post(`/oip/authentication/customer/${ORG}/token`)
        .set('X-Request-ID', ORG)
        .type('form')
        .send({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret });
      return { response, secret: response.body.access_token };
    },
    'TokenController.backchannelAuthentication': async () => {
      // CIBA (DECISIONS 16): the auth_req_id is what the client presents at the token endpoint.
      const { clientId, secret } = await createSystemAccount(t.http, admin, ORG, {
        role: 'Issuance',
        backchannelAuthentication: { tokenDeliveryMode: 'poll' },
      });
      await createCardholder(t, admin, ORG, 'dee', { password: PASSWORD });
      const person = (await tokenRequest(t.http, ORG, { grant_type: 'password', username: 'dee', password: PASSWORD })).body.access_token;
      await new AuthenticatorApp().register(t.http, person);
      const response = await t.http
        .post(`/authentication/customer/${ORG}/backchannel-authentication`)
        .type('form')
        .send({ client_id: clientId, client_secret: secret, login_hint: 'dee', scope: 'openid' });
      return { response, secret: response.body.auth_req_id };
    },
  };

  it('every marked route answers no-store and no-cache with its secret; every route documenting a secret is marked', async () => {
    const routes = registeredRoutes(t);
    const marked = [...new Set(routes.filter((r) => r.metadata<boolean>(SECRET_ANSWER)).map((r) => r.handler))].sort();
    expect(marked).toEqual(Object.keys(exercises).sort());

    const answers: Record<string, unknown> = {};
    for (const [handler, exercise] of Object.entries(exercises)) {
      const { response, secret } = await exercise();
      answers[handler] = {
        status: response.status,
        cacheControl: response.headers['cache-control'],
        pragma: response.headers.pragma,
        secret: (Array.isArray(secret) ? secret : [secret]).every((s) => typeof s === 'string' && s.length > 0)
          ? 'present'
          : JSON.stringify(response.body).slice(0, 300),
      };
    }
    const expected = (status: number) => ({ status, cacheControl: 'no-store', pragma: 'no-cache', secret: 'present' });
    expect(answers).toEqual({
      'SystemAccountsController.create': expected(201),
      'SystemAccountsController.createSecret': expected(201),
      'PushGatewayController.create': expected(201),
      'PushGatewayController.replace': expected(200),
      'ContentRequestsController.create': expected(201),
      'OrganizationAuditDestinationsController.create': expected(201),
      'PlatformAuditDestinationsController.create': expected(201),
      'SyncSessionsController.execute': expected(201),
      'SelfController.syncSession': expected(201),
      'DeviceFlowsController.continue': expected(200),
      'TokenController.token': expected(200),
      'TokenController.positioningToken': expected(200),
      'TokenController.backchannelAuthentication': expected(200),
    });

    // A new route whose documented answer holds a secret cannot forget the mark.
    const document = (await t.http.get('/api-docs-json')).body as {
      paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema?: Schema }> }> }>>;
    };
    const byOperation = new Map(routes.map((r) => [`${r.method.toLowerCase()} ${r.path.replace(/:([A-Za-z]+)/g, '{$1}')}`, r]));
    const documented = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.entries(operations)
        .filter(([, operation]) =>
          Object.entries(operation.responses).some(
            ([status, answer]) => /^2/.test(status) && Object.values(answer.content ?? {}).some((media) => secretNames(media.schema).length > 0),
          ),
        )
        .map(([method]) => byOperation.get(`${method} ${path}`)!),
    );
    expect(documented.length).toBeGreaterThan(0);
    expect(documented.filter((r) => !r.metadata<boolean>(SECRET_ANSWER)).map((r) => r.route)).toEqual([]);
  });
});
