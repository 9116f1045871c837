import type { Response } from 'supertest';
import { TestApp, createOrganization, createSystemAccount, createTestApp, platformAdminToken, tokenBySecret, expectScimError } from '@app/testing';

/**
 * Push delivery gateways and authenticator-policy bindings (interface "Push delivery gateways",
 * "Versioning"; DECISIONS 1, 2, 6, 7, 10), driven over HTTP as an integrator would.
 */

const GATEWAY_SCHEMA = 'urn:vendor:scim:api:idp:2.0:DeliveryGateway:Push';
const POLICY_SCHEMA = 'urn:vendor:scim:api:idp:2.0:Policy:Authenticator';
const SCIM_ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const LIST_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
const PUBLIC_BASE_URL = 'https://api.example.test';
const ISO_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SCIM_JSON = /^application\/scim\+json/;
const ROLES = ['Administration', 'Help Desk', 'Issuance', 'Cardholder'] as const;
type Role = (typeof ROLES)[number];
const ORG = 'gw';
const OTHER = 'gw_other';

let secretCounter = 0;
/** A well-formed connection string with a key no other test uses, so leaks are attributable. */
function connectionString(): { value: string; key: string } {
  const key = `SeCrEtKeY${++secretCounter}${'x'.repeat(20)}AbC=`;
  return {
    key,
    value: `Endpoint=sb://ns${secretCounter}.servicebus.windows.net/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=${key};`,
  };
}

describe('push delivery gateways (DECISIONS 10)', () => {
  let t: TestApp;
  const tokens = {} as Record<Role | 'other', string>;
  let nameCounter = 0;
  const uniqueName = (prefix = 'Gateway') => `${prefix} ${++nameCounter}`;

  beforeAll(async () => {
    t = await createTestApp();
    const admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, ORG);
    await createOrganization(t.http, admin, OTHER);
    for (const role of ROLES) {
      const account = await createSystemAccount(t.http, admin, ORG, { role });
      tokens[role] = await tokenBySecret(t.http, ORG, account.clientId, account.secret);
    }
    const other = await createSystemAccount(t.http, admin, OTHER, { role: 'Administration' });
    tokens.other = await tokenBySecret(t.http, OTHER, other.clientId, other.secret);
  });
  afterAll(() => t.close());

  const gateways = (org = ORG, query = '') => `/configuration/${org}/v2/DeliveryGateway/Push${query}`;
  const gateway = (id: string, org = ORG, query = '') => `/configuration/${org}/v2/DeliveryGateway/Push/${id}${query}`;
  const policies = (org = ORG) => `/configuration/${org}/v2/Policy/Authenticator`;
  const policy = (id: string, org = ORG) => `/configuration/${org}/v2/Policy/Authenticator/${id}`;

  type Method = 'get' | 'post' | 'put' | 'delete';
  function call(method: Method, path: string, token: string = tokens.Administration) {
    return t.http[method](path).auth(token, { type: 'bearer' });
  }

  function meta(id: string, version: string, org = ORG) {
    return {
      resourceType: 'Push Delivery Gateway',
      created: expect.stringMatching(ISO_MS_UTC),
      lastModified: expect.stringMatching(ISO_MS_UTC),
      location: `${PUBLIC_BASE_URL}/configuration/${org}/v2/DeliveryGateway/Push/${id}`,
      version,
    };
  }

  /** A full version-3 gateway body. */
  function fullBody(overrides: Record<string, unknown> = {}) {
    return {
      schemas: [GATEWAY_SCHEMA],
      type: 'CLOUD_GCM_PUSH',
      name: uniqueName(),
      hub: 'android-hub',
      connectionString: connectionString().value,
      notificationTimeToLive: '3600',
      supportedOperatingSystems: ['Android'],
      appId: 'com.example.wallet',
      notes: 'Created by the e2e suite',
      messageTemplates: { credential: { msg: 'Your credential is ready', title: 'Credential' }, challenge: { msg: 'Approve the sign-in' } },
      ...overrides,
    };
  }

  async function createGateway(body: Record<string, unknown> = fullBody(), org = ORG, token = tokens.Administration): Promise<Response> {
    const response = await call('post', gateways(org, '?api-version=3'), token).send(body);
    if (response.status !== 201) throw new Error(`create gateway failed: ${response.status} ${JSON.stringify(response.body)}`);
    return response;
  }

  async function defaultsOf(org: string, token: string): Promise<Record<string, { id: string; name: string }>> {
    const list = await call('get', gateways(org), token);
    const defaults = list.body.resources.filter((g: { name: string }) => g.name.startsWith('Default '));
    return Object.fromEntries(defaults.map((g: { type: string; id: string; name: string }) => [g.type, { id: g.id, name: g.name }]));
  }

  describe('lifecycle', () => {
    it('create -> get (no connectionString) -> list -> GET-then-PUT -> delete -> 404', async () => {
      const secret = connectionString();
      const body = fullBody({ connectionString: secret.value });
      const created = await call('post', gateways(ORG, '?api-version=3')).set('Content-Type', 'application/scim+json').send(JSON.stringify(body));
      expect(created.status).toBe(201);
      expect(created.headers['content-type']).toMatch(SCIM_JSON);
      expect(created.headers['cache-control']).toBe('no-store');
      expect(created.headers.etag).toBe('W/"1"');
      const id = created.body.id as string;
      expect(id).toMatch(/^\d+$/);
      expect(created.body).toEqual({
        schemas: [GATEWAY_SCHEMA],
        id,
        type: 'CLOUD_GCM_PUSH',
        name: body.name,
        hub: 'android-hub',
        connectionString: secret.value,
        notificationTimeToLive: '3600',
        supportedOperatingSystems: ['Android'],
        appId: 'com.example.wallet',
        messageTemplates: body.messageTemplates,
        notes: 'Created by the e2e suite',
        meta: meta(id, '1'),
      });
      expect(created.headers.location).toBe(created.body.meta.location);
      expect(created.body.meta.created).toBe(t.clock.now().toISOString());

      const read = await call('get', gateway(id, ORG, '?api-version=3'));
      expect(read.status).toBe(200);
      expect(read.headers['content-type']).toMatch(SCIM_JSON);
      expect(read.headers.etag).toBe('W/"1"');
      const { connectionString: _echoed, ...withoutSecret } = created.body;
      expect(read.body).toEqual(withoutSecret);
      expect(read.text).not.toContain(secret.key);

      const list = await call('get', gateways(ORG, '?api-version=3'));
      expect(list.status).toBe(200);
      expect(list.headers['content-type']).toMatch(SCIM_JSON);
      expect(Object.keys(list.body).sort()).toEqual(['resources', 'schemas', 'totalResults']);
      expect(list.body.schemas).toEqual([LIST_RESPONSE]);
      expect(list.body.totalResults).toBe(list.body.resources.length);
      expect(list.body.resources).toContainEqual(withoutSecret);
      expect(list.text).not.toContain(secret.key);

      // GET, change what is needed, PUT the answer back as it is: type, id, meta and no connectionString.
      t.clock.advance(60);
      const replaced = await call('put', gateway(id, ORG, '?api-version=3'))
        .set('If-Match', read.headers.etag)
        .send({ ...read.body, name: `${body.name} renamed`, notes: 'Moved to the new hub', hub: 'android-hub-2' });
      expect(replaced.status).toBe(200);
      expect(replaced.headers['content-type']).toMatch(SCIM_JSON);
      expect(replaced.headers['cache-control']).toBe('no-store');
      expect(replaced.headers.etag).toBe('W/"2"');
      expect(replaced.body).toEqual({
        ...created.body,
        name: `${body.name} renamed`,
        notes: 'Moved to the new hub',
        hub: 'android-hub-2',
        connectionString: secret.value,
        meta: { ...meta(id, '2'), created: created.body.meta.created, lastModified: t.clock.now().toISOString() },
      });
      expect(replaced.headers.location).toBeUndefined();

      const deleted = await call('delete', gateway(id));
      expect(deleted.status).toBe(204);
      expect(deleted.text).toBe('');
      expect(deleted.headers['content-type']).toBeUndefined();

      expectScimError(await call('get', gateway(id)), 404, undefined, `Tenant "${ORG}" has no push delivery gateway "${id}"`);
      expectScimError(await call('put', gateway(id)).send({ schemas: [GATEWAY_SCHEMA] }), 404, undefined, 'has no push delivery gateway');
      expectScimError(await call('delete', gateway(id)), 404, undefined, 'has no push delivery gateway');

      const audit = await t.db.query<{ action: string; actor: string; outcome: string; details: unknown }>(
        `SELECT action, actor, outcome, details FROM audit_events WHERE org_id = $1 AND target = $2 AND action LIKE 'deliveryGateway.%' ORDER BY id`,
        [ORG, id],
      );
      expect(audit.rows.map((r) => [r.action, r.outcome])).toEqual([
        ['deliveryGateway.create', 'success'],
        ['deliveryGateway.replace', 'success'],
        ['deliveryGateway.delete', 'success'],
      ]);
      expect(audit.rows[0].actor).toMatch(/^gw-OSRV\d{9}$/);
      expect(JSON.stringify(audit.rows)).not.toContain(secret.key);
      expect(t.logs.join('')).not.toContain(secret.key);
    });

    it('a create needs only schemas, type and name; unset attributes are left out, the time to live defaults to one day', async () => {
      const name = uniqueName('Minimal');
      const created = await call('post', gateways(ORG, '?api-version=3')).send({ schemas: [GATEWAY_SCHEMA], type: 'CLOUD_APNS_PUSH', name });
      expect(created.status).toBe(201);
      expect(created.body).toEqual({
        schemas: [GATEWAY_SCHEMA],
        id: expect.stringMatching(/^\d+$/),
        type: 'CLOUD_APNS_PUSH',
        name,
        notificationTimeToLive: '86400',
        supportedOperatingSystems: [],
        meta: meta(created.body.id, '1'),
      });
      expect(created.headers['cache-control']).toBe('no-store');
    });

    it('PUT keeps attributes left out, null clears optional ones, and messageTemplates parts are kept or cleared one by one', async () => {
      const created = await createGateway();
      const id = created.body.id;
      const kept = await call('put', gateway(id, ORG, '?api-version=3')).send({ schemas: [GATEWAY_SCHEMA], messageTemplates: { challenge: null } });
      expect(kept.status).toBe(200);
      expect(kept.body).toEqual({
        ...created.body,
        messageTemplates: { credential: created.body.messageTemplates.credential },
        meta: { ...created.body.meta, version: '2', lastModified: expect.stringMatching(ISO_MS_UTC) },
      });

      const cleared = await call('put', gateway(id, ORG, '?api-version=3')).send({
        schemas: [GATEWAY_SCHEMA],
        hub: null,
        connectionString: null,
        notificationTimeToLive: null,
        supportedOperatingSystems: null,
        appId: null,
        notes: null,
        messageTemplates: null,
      });
      expect(cleared.status).toBe(200);
      expect(cleared.body).toEqual({
        schemas: [GATEWAY_SCHEMA],
        id,
        type: 'CLOUD_GCM_PUSH',
        name: created.body.name,
        notificationTimeToLive: '86400',
        supportedOperatingSystems: [],
        meta: { ...created.body.meta, version: '3', lastModified: expect.stringMatching(ISO_MS_UTC) },
      });
      const { rows } = await t.db.query('SELECT connection_string_key_id, connection_string_sealed FROM push_delivery_gateways WHERE id = $1', [id]);
      expect(rows).toEqual([{ connection_string_key_id: null, connection_string_sealed: null }]);

      const secret = connectionString();
      const again = await call('put', gateway(id)).send({ schemas: [GATEWAY_SCHEMA], type: 'CLOUD_GCM_PUSH', connectionString: secret.value });
      expect(again.status).toBe(200);
      expect(again.body.connectionString).toBe(secret.value);
      expect(again.body.meta.version).toBe('4');
    });

    it('the connection string is stored sealed (AES-256-GCM, key id beside it), never as plain text', async () => {
      const secret = connectionString();
      const created = await createGateway(fullBody({ connectionString: secret.value }));
      const { rows } = await t.db.query<{ row: string; key_id: string; sealed: Buffer }>(
        'SELECT row_to_json(g)::text AS row, connection_string_key_id AS key_id, connection_string_sealed AS sealed FROM push_delivery_gateways g WHERE org_id = $1 AND id = $2',
        [ORG, created.body.id],
      );
      expect(rows).toHaveLength(1);
      expect(rows[0].key_id).toBe('k1');
      // iv (12) || tag (16) || ciphertext of the same length as the plain text
      expect(rows[0].sealed).toHaveLength(12 + 16 + Buffer.byteLength(secret.value));
      for (const text of [rows[0].row, rows[0].sealed.toString('latin1'), rows[0].sealed.toString('hex')]) {
        expect(text).not.toContain(secret.key);
        expect(text).not.toContain('SharedAccessKey');
        expect(text).not.toContain('servicebus');
      }
      const everything = await t.db.query<{ dump: string }>(`SELECT string_agg(row_to_json(g)::text, '') AS dump FROM push_delivery_gateways g`);
      expect(everything.rows[0].dump).not.toContain(secret.key);
    });
  });

  describe('default gateways', () => {
    it('every new tenant starts with three default gateways, one per type, without a connection string', async () => {
      const list = await call('get', gateways(OTHER, '?api-version=2'), tokens.other);
      expect(list.status).toBe(200);
      expect(list.body).toEqual({
        schemas: [LIST_RESPONSE],
        totalResults: 3,
        resources: [
          {
            schemas: [GATEWAY_SCHEMA],
            id: expect.any(String),
            type: 'CLOUD_WNS_PUSH',
            name: 'Default WNS gateway',
            notificationTimeToLive: '86400',
            supportedOperatingSystems: ['WINDOWS', 'WINDOWS10', 'WINDOWS11'],
            meta: expect.objectContaining({ version: '1' }),
          },
          {
            schemas: [GATEWAY_SCHEMA],
            id: expect.any(String),
            type: 'CLOUD_GCM_PUSH',
            name: 'Default GCM gateway',
            notificationTimeToLive: '86400',
            supportedOperatingSystems: ['Android'],
            meta: expect.objectContaining({ version: '1' }),
          },
          {
            schemas: [GATEWAY_SCHEMA],
            id: expect.any(String),
            type: 'CLOUD_APNS_PUSH',
            name: 'Default APNS gateway',
            notificationTimeToLive: '86400',
            supportedOperatingSystems: ['iOS12', 'iOS13'],
            meta: expect.objectContaining({ version: '1' }),
          },
        ],
      });
      for (const resource of list.body.resources) expect(resource.meta).toEqual(meta(resource.id, '1', OTHER));
      // The platform organization, created at bootstrap, has them too.
      const { rows } = await t.db.query(`SELECT type FROM push_delivery_gateways WHERE org_id = 'platform' AND is_default ORDER BY id`);
      expect(rows.map((r) => r.type)).toEqual(['CLOUD_WNS_PUSH', 'CLOUD_GCM_PUSH', 'CLOUD_APNS_PUSH']);
    });

    it('a default gateway cannot be deleted (409), nor change type or name (400 mutability); the rest is configurable', async () => {
      const defaults = await defaultsOf(ORG, tokens.Administration);
      const wns = defaults.CLOUD_WNS_PUSH;
      expectScimError(
        await call('delete', gateway(wns.id)),
        409,
        undefined,
        `Push delivery gateway ${wns.id} ("Default WNS gateway") is a default gateway of tenant "${ORG}" and cannot be deleted`,
      );
      expectScimError(
        await call('put', gateway(wns.id)).send({ schemas: [GATEWAY_SCHEMA], type: 'CLOUD_GCM_PUSH' }),
        400,
        'mutability',
        `type cannot change: push delivery gateway ${wns.id} is CLOUD_WNS_PUSH`,
      );
      expectScimError(
        await call('put', gateway(wns.id)).send({ schemas: [GATEWAY_SCHEMA], name: 'My WNS' }),
        400,
        'mutability',
        `name of a default gateway cannot change: push delivery gateway ${wns.id} stays "Default WNS gateway"`,
      );

      const read = await call('get', gateway(wns.id, ORG, '?api-version=3'));
      const secret = connectionString();
      const configured = await call('put', gateway(wns.id, ORG, '?api-version=3')).send({
        ...read.body,
        hub: 'windows-hub',
        connectionString: secret.value,
        supportedOperatingSystems: ['WINDOWS11'],
        messageTemplates: { credential: { msg: 'Ready' } },
        notes: 'configured',
      });
      expect(configured.status).toBe(200);
      expect(configured.body).toEqual({
        ...read.body,
        hub: 'windows-hub',
        connectionString: secret.value,
        supportedOperatingSystems: ['WINDOWS11'],
        messageTemplates: { credential: { msg: 'Ready' } },
        notes: 'configured',
        meta: { ...read.body.meta, version: String(Number(read.body.meta.version) + 1), lastModified: expect.stringMatching(ISO_MS_UTC) },
      });
      const still = await call('get', gateway(wns.id));
      expect(still.status).toBe(200);
      expect(still.body.name).toBe('Default WNS gateway');
      expect(still.body.connectionString).toBeUndefined();
    });
  });

  describe('validation (400 naming the field and what is allowed)', () => {
    const gcm = () => ({ schemas: [GATEWAY_SCHEMA], type: 'CLOUD_GCM_PUSH', name: uniqueName('Valid') });

    it.each<[string, () => Record<string, unknown>, string]>([
      ['schemas missing', () => ({ type: 'CLOUD_GCM_PUSH', name: 'x' }), `schemas: is required and must hold "${GATEWAY_SCHEMA}"`],
      [
        'schemas without the gateway URN',
        () => ({ ...gcm(), schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'] }),
        `schemas: must hold "${GATEWAY_SCHEMA}"`,
      ],
      ['type missing', () => ({ schemas: [GATEWAY_SCHEMA], name: 'x' }), 'type: is required, one of CLOUD_WNS_PUSH, CLOUD_GCM_PUSH, CLOUD_APNS_PUSH'],
      [
        'type unknown',
        () => ({ ...gcm(), type: 'CLOUD_FCM_PUSH' }),
        'type: "CLOUD_FCM_PUSH" is not a gateway type; allowed: CLOUD_WNS_PUSH, CLOUD_GCM_PUSH, CLOUD_APNS_PUSH',
      ],
      ['name missing', () => ({ schemas: [GATEWAY_SCHEMA], type: 'CLOUD_GCM_PUSH' }), 'name: is required (a name of 1-128 characters)'],
      ['name blank', () => ({ ...gcm(), name: '   ' }), 'name: must be a name of 1-128 characters'],
      ['name too long', () => ({ ...gcm(), name: 'n'.repeat(129) }), 'name: must be a name of 1-128 characters'],
      ['name not a string', () => ({ ...gcm(), name: 42 }), 'name: must be a name of 1-128 characters'],
      ['hub too long', () => ({ ...gcm(), hub: 'h'.repeat(261) }), 'hub: must be a notification hub name or path of 1-260 characters'],
      ['hub empty', () => ({ ...gcm(), hub: '' }), 'hub: must be a notification hub name or path of 1-260 characters'],
      [
        'connectionString not pairs',
        () => ({ ...gcm(), connectionString: 'secret-without-structure' }),
        'connectionString: part 1 is not a Key=Value pair; the format is Endpoint=sb://',
      ],
      [
        'connectionString without SharedAccessKey',
        () => ({ ...gcm(), connectionString: 'Endpoint=sb://ns.example.net/;SharedAccessKeyName=Full;' }),
        'connectionString: lacks SharedAccessKey',
      ],
      [
        'connectionString with an https endpoint',
        () => ({ ...gcm(), connectionString: 'Endpoint=https://ns.example.net/;SharedAccessKeyName=Full;SharedAccessKey=abc=;' }),
        'connectionString: Endpoint must be an sb:// URL',
      ],
      [
        'connectionString not a string',
        () => ({ ...gcm(), connectionString: { Endpoint: 'sb://x' } }),
        'connectionString: must be a string of Key=Value; pairs',
      ],
      [
        'notificationTimeToLive a number',
        () => ({ ...gcm(), notificationTimeToLive: 3600 }),
        'notificationTimeToLive: must be a string holding a whole number of seconds from 0 to 2419200',
      ],
      [
        'notificationTimeToLive negative',
        () => ({ ...gcm(), notificationTimeToLive: '-5' }),
        'notificationTimeToLive: must be a string holding a whole number of seconds',
      ],
      [
        'notificationTimeToLive a duration',
        () => ({ ...gcm(), notificationTimeToLive: '1h' }),
        'notificationTimeToLive: must be a string holding a whole number of seconds',
      ],
      [
        'notificationTimeToLive too long',
        () => ({ ...gcm(), notificationTimeToLive: '2419201' }),
        'notificationTimeToLive: must be a string holding a whole number of seconds from 0 to 2419200',
      ],
      [
        'supportedOperatingSystems unknown',
        () => ({ ...gcm(), supportedOperatingSystems: ['Android', 'Linux'] }),
        'supportedOperatingSystems.1: "Linux" is not a supported operating system; allowed: WINDOWS, WINDOWS10, WINDOWS11, Android, iOS12, iOS13',
      ],
      [
        'supportedOperatingSystems wrong case',
        () => ({ ...gcm(), supportedOperatingSystems: ['android'] }),
        'supportedOperatingSystems.0: "android" is not a supported operating system',
      ],
      [
        'supportedOperatingSystems twice',
        () => ({ ...gcm(), supportedOperatingSystems: ['iOS13', 'iOS13'] }),
        'supportedOperatingSystems: lists an operating system twice',
      ],
      [
        'supportedOperatingSystems not an array',
        () => ({ ...gcm(), supportedOperatingSystems: 'Android' }),
        'supportedOperatingSystems: must be an array of operating systems from WINDOWS',
      ],
      ['appId empty', () => ({ ...gcm(), appId: '' }), 'appId: must be an application id of 1-256 characters'],
      ['appId too long', () => ({ ...gcm(), appId: 'a'.repeat(257) }), 'appId: must be an application id of 1-256 characters'],
      ['notes too long', () => ({ ...gcm(), notes: 'n'.repeat(4001) }), 'notes: must be free text of at most 4000 characters'],
      [
        'template without msg',
        () => ({ ...gcm(), messageTemplates: { credential: { title: 'Only a title' } } }),
        'messageTemplates.credential.msg: is required (the message text, 1-2048 characters)',
      ],
      [
        'template msg empty',
        () => ({ ...gcm(), messageTemplates: { challenge: { msg: '' } } }),
        'messageTemplates.challenge.msg: must be the message text, 1-2048 characters',
      ],
      [
        'template msg too long',
        () => ({ ...gcm(), messageTemplates: { credential: { msg: 'm'.repeat(2049) } } }),
        'messageTemplates.credential.msg: must be the message text, 1-2048 characters',
      ],
      [
        'template title too long',
        () => ({ ...gcm(), messageTemplates: { credential: { msg: 'm', title: 't'.repeat(257) } } }),
        'messageTemplates.credential.title: must be a title of 1-256 characters',
      ],
      ['template of an unknown kind', () => ({ ...gcm(), messageTemplates: { reminder: { msg: 'm' } } }), 'attribute "reminder" is not part of this resource'],
      [
        'template attribute unknown',
        () => ({ ...gcm(), messageTemplates: { credential: { msg: 'm', body: 'b' } } }),
        'attribute "body" is not part of this resource',
      ],
      ['attribute unknown', () => ({ ...gcm(), colour: 'blue' }), 'attribute "colour" is not part of this resource'],
    ])('POST: %s', async (_case, body, detail) => {
      const response = await call('post', gateways(ORG, '?api-version=3')).send(body());
      expectScimError(response, 400, 'invalidValue', detail);
    });

    it('never quotes a refused connection string back', async () => {
      const leaked = 'Endpoint=sb://ns.example.net/;SharedAccessKeyName=Full;SharedAccessKey=DoNotEchoMe;Broken';
      const response = await call('post', gateways(ORG, '?api-version=3')).send({ ...gcm(), connectionString: leaked });
      expectScimError(response, 400, 'invalidValue', 'connectionString: part 4 is not a Key=Value pair');
      expect(response.text).not.toContain('DoNotEchoMe');
      expect(t.logs.join('')).not.toContain('DoNotEchoMe');
    });

    it('a body that is not a JSON object is a 400 invalidSyntax', async () => {
      expectScimError(await call('post', gateways()).send([gcm()]), 400, 'invalidSyntax', 'must be a JSON object');
      expectScimError(await call('post', gateways()).set('Content-Type', 'application/json').send('{"schemas": ['), 400, 'invalidSyntax', 'not valid JSON');
    });

    it('names are unique per tenant, ignoring case (409 uniqueness), also between two concurrent creates; other tenants may reuse them', async () => {
      const name = uniqueName('Unique');
      await createGateway(fullBody({ name }));
      expectScimError(
        await call('post', gateways(ORG, '?api-version=3')).send(fullBody({ name: name.toUpperCase() })),
        409,
        'uniqueness',
        `Tenant "${ORG}" already has a push delivery gateway named "${name.toUpperCase()}"`,
      );
      const other = await createGateway(fullBody({ name }), OTHER, tokens.other);
      expect(other.body.name).toBe(name);

      const raced = uniqueName('Raced');
      const both = await Promise.all([0, 1].map(() => call('post', gateways()).send({ schemas: [GATEWAY_SCHEMA], type: 'CLOUD_WNS_PUSH', name: raced })));
      expect(both.map((r) => r.status).sort()).toEqual([201, 409]);
      expect(both.find((r) => r.status === 409)!.body.scimType).toBe('uniqueness');

      const renamed = await createGateway(fullBody());
      expectScimError(await call('put', gateway(renamed.body.id)).send({ schemas: [GATEWAY_SCHEMA], name }), 409, 'uniqueness', `named "${name}"`);
    });

    it('PUT: schemas required, type absent or unchanged (else 400 mutability), name cannot be cleared, and every field is checked as on create', async () => {
      const created = await createGateway();
      const id = created.body.id;
      expectScimError(await call('put', gateway(id)).send({ name: 'x' }), 400, 'invalidValue', `schemas: is required and must hold "${GATEWAY_SCHEMA}"`);
      expectScimError(
        await call('put', gateway(id)).send({ schemas: [GATEWAY_SCHEMA], type: 'CLOUD_APNS_PUSH' }),
        400,
        'mutability',
        `type cannot change: push delivery gateway ${id} is CLOUD_GCM_PUSH`,
      );
      expectScimError(await call('put', gateway(id)).send({ schemas: [GATEWAY_SCHEMA], name: null }), 400, 'invalidValue', 'name: cannot be cleared');
      expectScimError(
        await call('put', gateway(id, ORG, '?api-version=2')).send({ schemas: [GATEWAY_SCHEMA], supportedOperatingSystems: ['Tizen'] }),
        400,
        'invalidValue',
        'supportedOperatingSystems.0: "Tizen" is not a supported operating system',
      );
      expectScimError(
        await call('put', gateway(id)).send({ schemas: [GATEWAY_SCHEMA], connectionString: 'Endpoint=sb://x/' }),
        400,
        'invalidValue',
        'connectionString: lacks SharedAccessKeyName, SharedAccessKey',
      );
      const unchanged = await call('get', gateway(id));
      expect(unchanged.body.meta.version).toBe('1');
      const same = await call('put', gateway(id)).send({ schemas: [GATEWAY_SCHEMA], type: 'CLOUD_GCM_PUSH', name: created.body.name });
      expect(same.status).toBe(200);
      expect(same.body.meta.version).toBe('2');
    });
  });

  describe('api-version', () => {
    it.each(['0', '4', '3.0', 'latest', ''])('api-version=%j is a 400 saying what is allowed', async (value) => {
      const response = await call('get', gateways(ORG, `?api-version=${value}`));
      expectScimError(response, 400, 'invalidValue', `api-version must be 1, 2 or 3 (3 is the latest; without it, 1 applies); got "${value}"`);
    });

    it('an unsupported api-version is refused on every operation', async () => {
      const created = await createGateway();
      for (const request of [
        call('get', gateway(created.body.id, ORG, '?api-version=9')),
        call('post', gateways(ORG, '?api-version=9')).send(fullBody()),
        call('put', gateway(created.body.id, ORG, '?api-version=9')).send({ schemas: [GATEWAY_SCHEMA] }),
        call('delete', gateway(created.body.id, ORG, '?api-version=9')),
      ]) {
        expectScimError(await request, 400, 'invalidValue', 'api-version must be 1, 2 or 3');
      }
      expect((await call('get', gateway(created.body.id))).status).toBe(200);
    });

    it('a later-version attribute without its api-version is a 400 naming the attribute and the version to use', async () => {
      const base = { schemas: [GATEWAY_SCHEMA], type: 'CLOUD_GCM_PUSH', name: uniqueName('Versioned') };
      expectScimError(
        await call('post', gateways()).send({ ...base, supportedOperatingSystems: ['Android'] }),
        400,
        'invalidValue',
        'Attribute "supportedOperatingSystems" (api-version=2) is not part of api-version=1; send the request with ?api-version=2',
      );
      expectScimError(
        await call('post', gateways(ORG, '?api-version=1')).send({ ...base, appId: 'a' }),
        400,
        'invalidValue',
        '"appId" (api-version=2) is not part of api-version=1',
      );
      expectScimError(
        await call('post', gateways(ORG, '?api-version=2')).send({ ...base, appId: 'a', messageTemplates: { credential: { msg: 'm' } } }),
        400,
        'invalidValue',
        'Attribute "messageTemplates" (api-version=3) is not part of api-version=2; send the request with ?api-version=3',
      );
      expectScimError(
        await call('post', gateways()).send({ ...base, notes: 'n', appId: 'a' }),
        400,
        'invalidValue',
        'Attributes "notes" (api-version=3), "appId" (api-version=2) are not part of api-version=1; send the request with ?api-version=3',
      );
      const created = await createGateway();
      expectScimError(
        await call('put', gateway(created.body.id, ORG, '?api-version=2')).send({ schemas: [GATEWAY_SCHEMA], notes: 'n' }),
        400,
        'invalidValue',
        '"notes" (api-version=3)',
      );
      const v2 = await call('post', gateways(ORG, '?api-version=2')).send({ ...base, supportedOperatingSystems: ['Android'], appId: 'com.example' });
      expect(v2.status).toBe(201);
    });

    it('answers carry the attributes of the requested version only, and a version-1 replace keeps later attributes', async () => {
      const created = await createGateway();
      const id = created.body.id;
      const v1 = await call('get', gateway(id));
      const v1Explicit = await call('get', gateway(id, ORG, '?api-version=1'));
      const v2 = await call('get', gateway(id, ORG, '?api-version=2'));
      const v3 = await call('get', gateway(id, ORG, '?api-version=3'));
      const common = {
        schemas: [GATEWAY_SCHEMA],
        id,
        type: 'CLOUD_GCM_PUSH',
        name: created.body.name,
        hub: 'android-hub',
        notificationTimeToLive: '3600',
        meta: created.body.meta,
      };
      expect(v1.body).toEqual(common);
      expect(v1Explicit.body).toEqual(common);
      expect(v2.body).toEqual({ ...common, supportedOperatingSystems: ['Android'], appId: 'com.example.wallet' });
      expect(v3.body).toEqual({ ...v2.body, messageTemplates: created.body.messageTemplates, notes: 'Created by the e2e suite' });
      const list = await call('get', gateways(ORG, '?api-version=1'));
      expect(list.body.resources).toContainEqual(common);

      const put = await call('put', gateway(id)).send({ ...v1.body, hub: 'v1-hub' });
      expect(put.status).toBe(200);
      expect(put.body).toEqual({
        ...common,
        hub: 'v1-hub',
        connectionString: created.body.connectionString,
        meta: { ...common.meta, version: '2', lastModified: expect.any(String) },
      });
      const after = await call('get', gateway(id, ORG, '?api-version=3'));
      expect(after.body).toEqual({ ...v3.body, hub: 'v1-hub', meta: put.body.meta });
    });
  });

  describe('ETag and If-Match', () => {
    it('a stale If-Match is a 412; a current one (weak or strong) or * proceeds; a malformed one is a 400', async () => {
      const created = await createGateway();
      const id = created.body.id;
      const first = await call('put', gateway(id))
        .set('If-Match', 'W/"1"')
        .send({ schemas: [GATEWAY_SCHEMA], hub: 'one' });
      expect(first.status).toBe(200);
      expect(first.headers.etag).toBe('W/"2"');
      expectScimError(
        await call('put', gateway(id))
          .set('If-Match', 'W/"1"')
          .send({ schemas: [GATEWAY_SCHEMA], hub: 'stale' }),
        412,
        undefined,
        `Push delivery gateway ${id} has changed: its current version is 2 (ETag W/"2")`,
      );
      expect(
        (
          await call('put', gateway(id))
            .set('If-Match', '"2"')
            .send({ schemas: [GATEWAY_SCHEMA], hub: 'two' })
        ).headers.etag,
      ).toBe('W/"3"');
      expect(
        (
          await call('put', gateway(id))
            .set('If-Match', 'W/"1", W/"3"')
            .send({ schemas: [GATEWAY_SCHEMA], hub: 'three' })
        ).headers.etag,
      ).toBe('W/"4"');
      expect(
        (
          await call('put', gateway(id))
            .set('If-Match', '*')
            .send({ schemas: [GATEWAY_SCHEMA], hub: 'any' })
        ).headers.etag,
      ).toBe('W/"5"');
      expectScimError(
        await call('put', gateway(id))
          .set('If-Match', '5')
          .send({ schemas: [GATEWAY_SCHEMA] }),
        400,
        'invalidValue',
        'The header If-Match must be "*" or a list of entity tags',
      );
      const read = await call('get', gateway(id));
      expect(read.headers.etag).toBe('W/"5"');
      expect(read.body.hub).toBe('any');
    });

    it('If-Match is checked after authorization and before the body', async () => {
      const created = await createGateway();
      const id = created.body.id;
      expectScimError(
        await call('put', gateway(id)).set('If-Match', 'W/"7"').send({ type: 'nonsense', colour: 'blue' }),
        412,
        undefined,
        'its current version is 1',
      );
      expectScimError(
        await call('put', gateway(id), tokens['Help Desk'])
          .set('If-Match', 'W/"7"')
          .send({ schemas: [GATEWAY_SCHEMA] }),
        403,
        undefined,
        'oobAdapterConfiguration.manage',
      );
      expectScimError(
        await call('put', gateway(id, OTHER), tokens.Administration)
          .set('If-Match', 'W/"7"')
          .send({ schemas: [GATEWAY_SCHEMA] }),
        403,
        undefined,
        `Tenant "${OTHER}"`,
      );
      expectScimError(await call('delete', gateway(id)).set('If-Match', 'W/"7"'), 412, undefined, 'its current version is 1');
      expect((await call('delete', gateway(id)).set('If-Match', 'W/"1"')).status).toBe(204);
    });

    it('two concurrent replaces with the same If-Match: one 200, one 412', async () => {
      const created = await createGateway();
      const id = created.body.id;
      const responses = await Promise.all(
        ['left', 'right'].map((hub) =>
          call('put', gateway(id))
            .set('If-Match', created.headers.etag)
            .send({ schemas: [GATEWAY_SCHEMA], hub }),
        ),
      );
      expect(responses.map((r) => r.status).sort()).toEqual([200, 412]);
      const winner = responses.find((r) => r.status === 200)!;
      expect(winner.headers.etag).toBe('W/"2"');
      expect(responses.find((r) => r.status === 412)!.body.detail).toContain('its current version is 2');
      const read = await call('get', gateway(id));
      expect(read.body.hub).toBe(winner.body.hub);
      expect(read.body.meta.version).toBe('2');
    });

    it('concurrent replaces without If-Match both land, one after the other', async () => {
      const created = await createGateway();
      const id = created.body.id;
      const responses = await Promise.all([
        call('put', gateway(id)).send({ schemas: [GATEWAY_SCHEMA], hub: 'hub-a' }),
        call('put', gateway(id, ORG, '?api-version=3')).send({ schemas: [GATEWAY_SCHEMA], notes: 'notes-b' }),
      ]);
      expect(responses.map((r) => r.status)).toEqual([200, 200]);
      expect(responses.map((r) => r.body.meta.version).sort()).toEqual(['2', '3']);
      const read = await call('get', gateway(id, ORG, '?api-version=3'));
      expect(read.body).toMatchObject({ hub: 'hub-a', notes: 'notes-b', meta: { version: '3' } });
    });
  });

  describe('tenancy', () => {
    it("another organization's gateway id under your own tenant is a 404, as an unknown id is", async () => {
      const theirs = await createGateway(fullBody(), OTHER, tokens.other);
      const id = theirs.body.id;
      expectScimError(await call('get', gateway(id)), 404, undefined, `Tenant "${ORG}" has no push delivery gateway "${id}"`);
      expectScimError(await call('put', gateway(id)).send({ schemas: [GATEWAY_SCHEMA], hub: 'mine' }), 404, undefined, 'has no push delivery gateway');
      expectScimError(await call('delete', gateway(id)), 404, undefined, 'has no push delivery gateway');
      expect((await call('get', gateways(ORG))).body.resources.map((g: { id: string }) => g.id)).not.toContain(id);
      expectScimError(await call('get', gateway('99999999')), 404, undefined, 'has no push delivery gateway');
      // A value that cannot be an id at all stops at the shared parameter check (Issue 16), which names the parameter.
      for (const malformed of ['abc', '0', '99999999999999999999999']) {
        expectScimError(await call('get', gateway(malformed)), 404, undefined, `Nothing is named "${malformed}": the path parameter id must be a number`);
      }
      const untouched = await call('get', gateway(id, OTHER), tokens.other);
      expect(untouched.status).toBe(200);
      expect(untouched.body.hub).toBe('android-hub');
    });

    it('another tenant in the path is a 403, on every operation', async () => {
      const theirs = await createGateway(fullBody(), OTHER, tokens.other);
      for (const request of [
        call('get', gateways(OTHER)),
        call('get', gateway(theirs.body.id, OTHER)),
        call('post', gateways(OTHER)).send({ schemas: [GATEWAY_SCHEMA], type: 'CLOUD_GCM_PUSH', name: 'intruder' }),
        call('put', gateway(theirs.body.id, OTHER)).send({ schemas: [GATEWAY_SCHEMA], hub: 'intruder' }),
        call('delete', gateway(theirs.body.id, OTHER)),
        call('get', gateways('no_such_org')),
        call('get', policies(OTHER)),
      ]) {
        expectScimError(await request, 403, undefined, `this token acts only in tenant "${ORG}"`);
      }
      expect((await call('get', gateway(theirs.body.id, OTHER), tokens.other)).body.hub).toBe('android-hub');
    });
  });

  describe('permissions per default role (reads: Read reference data; writes: also Manage OOB Adapter Configuration)', () => {
    const expected: Record<Role, { read: number; write: boolean }> = {
      Administration: { read: 200, write: true },
      'Help Desk': { read: 200, write: false },
      Issuance: { read: 200, write: false },
      Cardholder: { read: 403, write: false },
    };

    it.each(ROLES)('%s', async (role) => {
      const token = tokens[role];
      const { read, write } = expected[role];
      const target = await createGateway();
      const id = target.body.id;
      const boundPolicy = await call('post', policies()).send({ schemas: [POLICY_SCHEMA], name: uniqueName('Policy') });
      const requests: [string, () => Promise<Response>, number][] = [
        ['GET all', () => call('get', gateways(), token), read],
        ['GET one', () => call('get', gateway(id), token), read],
        ['POST', () => call('post', gateways(), token).send({ schemas: [GATEWAY_SCHEMA], type: 'CLOUD_GCM_PUSH', name: uniqueName(role) }), write ? 201 : 403],
        ['PUT', () => call('put', gateway(id), token).send({ schemas: [GATEWAY_SCHEMA], hub: role }), write ? 200 : 403],
        ['GET policies', () => call('get', policies(), token), read],
        ['GET policy', () => call('get', policy(boundPolicy.body.id), token), read],
        ['POST policy', () => call('post', policies(), token).send({ schemas: [POLICY_SCHEMA], name: uniqueName(role) }), write ? 201 : 403],
        ['PUT policy', () => call('put', policy(boundPolicy.body.id), token).send({ schemas: [POLICY_SCHEMA], description: role }), write ? 200 : 403],
        ['DELETE policy', () => call('delete', policy(boundPolicy.body.id), token), write ? 204 : 403],
        ['DELETE', () => call('delete', gateway(id), token), write ? 204 : 403],
      ];
      for (const [operation, send, status] of requests) {
        const response = await send();
        expect({ role, operation, status: response.status }).toEqual({ role, operation, status });
        if (status === 403) {
          expect(response.body.schemas).toEqual([SCIM_ERROR]);
          const missing = read === 403 ? 'referenceData.read' : 'oobAdapterConfiguration.manage';
          expect(response.body.detail).toContain(`needs the permission ${missing}, which the role "${role}" does not grant`);
        }
      }
      if (!write) expect((await call('get', gateway(id))).body.hub).toBe('android-hub');
    });

    it('without a token: 401; without Application-ID: 400; another media type: 415', async () => {
      const unauthenticated = await t.http.get(gateways());
      expect(unauthenticated.status).toBe(401);
      expect(unauthenticated.body.schemas).toEqual([SCIM_ERROR]);
      const bare = await t.bare.get(gateways()).auth(tokens.Administration, { type: 'bearer' });
      expectScimError(bare, 400, 'invalidValue', 'The header Application-ID is required');
      const wrongType = await call('post', gateways()).set('Content-Type', 'text/plain').send('schemas');
      expectScimError(wrongType, 415, undefined, 'Content-Type text/plain is not accepted here');
      const json = await call('get', gateways()).set('Accept', 'application/json');
      expect(json.status).toBe(200);
      expect(json.headers['content-type']).toMatch(/^application\/json/);
    });
  });

  describe('authenticator policies (the delivery-gateway binding)', () => {
    function policyMeta(id: string, version: string) {
      return {
        resourceType: 'Authenticator Policy',
        created: expect.stringMatching(ISO_MS_UTC),
        lastModified: expect.stringMatching(ISO_MS_UTC),
        location: `${PUBLIC_BASE_URL}/configuration/${ORG}/v2/Policy/Authenticator/${id}`,
        version,
      };
    }

    it('binds gateways in priority order; a bound gateway cannot be deleted (409 naming the policy); unbound it can', async () => {
      const defaults = await defaultsOf(ORG, tokens.Administration);
      const mine = await createGateway();
      const name = uniqueName('Mobile sign-in');
      const created = await call('post', policies()).send({
        schemas: [POLICY_SCHEMA],
        name,
        description: 'Push first to Android, then Windows',
        deliveryGateways: [{ value: mine.body.id }, { value: defaults.CLOUD_WNS_PUSH.id, display: 'ignored' }],
      });
      expect(created.status).toBe(201);
      expect(created.headers['content-type']).toMatch(SCIM_JSON);
      expect(created.headers.etag).toBe('W/"1"');
      const id = created.body.id;
      expect(created.body).toEqual({
        schemas: [POLICY_SCHEMA],
        id: expect.stringMatching(/^\d+$/),
        name,
        description: 'Push first to Android, then Windows',
        deliveryGateways: [
          { value: mine.body.id, display: mine.body.name },
          { value: defaults.CLOUD_WNS_PUSH.id, display: 'Default WNS gateway' },
        ],
        meta: policyMeta(id, '1'),
      });
      expect(created.headers.location).toBe(created.body.meta.location);

      const read = await call('get', policy(id));
      expect(read.status).toBe(200);
      expect(read.headers.etag).toBe('W/"1"');
      expect(read.body).toEqual(created.body);
      const list = await call('get', policies());
      expect(list.status).toBe(200);
      expect(list.body).toEqual({
        schemas: [LIST_RESPONSE],
        totalResults: expect.any(Number),
        itemsPerPage: expect.any(Number),
        startIndex: 1,
        Resources: expect.arrayContaining([created.body]),
      });

      expectScimError(
        await call('delete', gateway(mine.body.id)),
        409,
        undefined,
        `Push delivery gateway ${mine.body.id} ("${mine.body.name}") is still bound to authenticator policy "${name}" (id ${id})`,
      );

      // GET-then-PUT with the order reversed, then without the gateway.
      const reordered = await call('put', policy(id))
        .set('If-Match', read.headers.etag)
        .send({ ...read.body, deliveryGateways: [...read.body.deliveryGateways].reverse() });
      expect(reordered.status).toBe(200);
      expect(reordered.headers.etag).toBe('W/"2"');
      expect(reordered.body).toEqual({
        ...created.body,
        deliveryGateways: [...created.body.deliveryGateways].reverse(),
        meta: { ...policyMeta(id, '2'), created: created.body.meta.created },
      });
      const kept = await call('put', policy(id)).send({ schemas: [POLICY_SCHEMA], description: null });
      expect(kept.body).toEqual({
        schemas: [POLICY_SCHEMA],
        id,
        name,
        deliveryGateways: reordered.body.deliveryGateways,
        meta: expect.objectContaining({ version: '3' }),
      });
      const unbound = await call('put', policy(id)).send({ schemas: [POLICY_SCHEMA], deliveryGateways: [{ value: defaults.CLOUD_WNS_PUSH.id }] });
      expect(unbound.status).toBe(200);
      expect(unbound.body.deliveryGateways).toEqual([{ value: defaults.CLOUD_WNS_PUSH.id, display: 'Default WNS gateway' }]);
      expect((await call('delete', gateway(mine.body.id))).status).toBe(204);

      const deleted = await call('delete', policy(id));
      expect(deleted.status).toBe(204);
      expect(deleted.text).toBe('');
      expectScimError(await call('get', policy(id)), 404, undefined, `Tenant "${ORG}" has no authenticator policy "${id}"`);
      const audit = await t.db.query<{ action: string }>(
        `SELECT action FROM audit_events WHERE org_id = $1 AND target = $2 AND action LIKE 'authenticatorPolicy.%' ORDER BY id`,
        [ORG, id],
      );
      expect(audit.rows.map((r) => r.action)).toEqual([
        'authenticatorPolicy.create',
        'authenticatorPolicy.replace',
        'authenticatorPolicy.replace',
        'authenticatorPolicy.replace',
        'authenticatorPolicy.delete',
      ]);
    });

    it('display follows the gateway name; the 409 names every policy that still binds the gateway', async () => {
      const mine = await createGateway();
      const first = await call('post', policies()).send({ schemas: [POLICY_SCHEMA], name: uniqueName('First'), deliveryGateways: [{ value: mine.body.id }] });
      const second = await call('post', policies()).send({ schemas: [POLICY_SCHEMA], name: uniqueName('Second'), deliveryGateways: [{ value: mine.body.id }] });
      await call('put', gateway(mine.body.id)).send({ schemas: [GATEWAY_SCHEMA], name: `${mine.body.name} (renamed)` });
      expect((await call('get', policy(first.body.id))).body.deliveryGateways).toEqual([{ value: mine.body.id, display: `${mine.body.name} (renamed)` }]);
      expectScimError(
        await call('delete', gateway(mine.body.id)),
        409,
        undefined,
        `still bound to authenticator policies "${first.body.name}" (id ${first.body.id}), "${second.body.name}" (id ${second.body.id})`,
      );
    });

    it.each<[string, (ids: { mine: string; theirs: string }) => unknown, string]>([
      ['an unknown gateway', () => [{ value: '99999999' }], 'deliveryGateways[0].value: "99999999" is not a push delivery gateway of tenant "gw"'],
      ["another tenant's gateway", ({ mine, theirs }) => [{ value: mine }, { value: theirs }], 'deliveryGateways[1].value: "'],
      ['a gateway listed twice', ({ mine }) => [{ value: mine }, { value: mine }], 'deliveryGateways[1].value: gateway "'],
      ['a value that is not an id', () => [{ value: 'android' }], 'deliveryGateways[0].value: "android" is not a push delivery gateway'],
      ['a numeric value', ({ mine }) => [{ value: Number(mine) }], 'deliveryGateways.0.value: must be the id (a string) of a push delivery gateway'],
      ['a reference without value', () => [{ display: 'x' }], 'deliveryGateways.0.value: is required'],
      ['not an array', ({ mine }) => ({ value: mine }), 'deliveryGateways: must be an array of {value, display} gateway references'],
    ])('a binding to %s is a 400 naming it', async (_case, list, detail) => {
      const mine = await createGateway();
      const theirs = await createGateway(fullBody(), OTHER, tokens.other);
      const ids = { mine: mine.body.id as string, theirs: theirs.body.id as string };
      const response = await call('post', policies()).send({ schemas: [POLICY_SCHEMA], name: uniqueName('Bad binding'), deliveryGateways: list(ids) });
      expectScimError(response, 400, 'invalidValue', detail);
      if (_case === "another tenant's gateway") expect(response.body.detail).toContain(`"${ids.theirs}" is not a push delivery gateway of tenant "gw"`);
    });

    it('validates the policy: schemas, name (required, unique per tenant), If-Match, ids', async () => {
      expectScimError(await call('post', policies()).send({ name: 'x' }), 400, 'invalidValue', `schemas: is required and must hold "${POLICY_SCHEMA}"`);
      expectScimError(await call('post', policies()).send({ schemas: [POLICY_SCHEMA] }), 400, 'invalidValue', 'name: is required');
      expectScimError(
        await call('post', policies()).send({ schemas: [POLICY_SCHEMA], name: 'x', priority: 1 }),
        400,
        'invalidValue',
        'attribute "priority" is not part of this resource',
      );
      const name = uniqueName('Policy');
      const created = await call('post', policies()).send({ schemas: [POLICY_SCHEMA], name });
      expect(created.status).toBe(201);
      expectScimError(
        await call('post', policies()).send({ schemas: [POLICY_SCHEMA], name: name.toLowerCase() }),
        409,
        'uniqueness',
        `already has an authenticator policy named "${name.toLowerCase()}"`,
      );
      expectScimError(
        await call('put', policy(created.body.id))
          .set('If-Match', 'W/"9"')
          .send({ schemas: [POLICY_SCHEMA] }),
        412,
        undefined,
        'its current version is 1',
      );
      expectScimError(
        await call('put', policy(created.body.id)).send({ schemas: [POLICY_SCHEMA], name: null }),
        400,
        'invalidValue',
        'name: cannot be cleared',
      );
      expectScimError(await call('delete', policy(created.body.id)).set('If-Match', 'W/"9"'), 412, undefined, 'its current version is 1');
      expectScimError(await call('get', policy('987654321')), 404, undefined, 'has no authenticator policy "987654321"');
      expectScimError(await call('get', policy('abc')), 404, undefined, 'Nothing is named "abc": the path parameter id must be a number');
      const theirs = await call('post', policies(OTHER), tokens.other).send({ schemas: [POLICY_SCHEMA], name });
      expect(theirs.status).toBe(201);
      expectScimError(await call('get', policy(theirs.body.id)), 404, undefined, 'has no authenticator policy');
    });

    it('deleting an organization removes its gateways, policies and bindings', async () => {
      const admin = await platformAdminToken(t.http);
      await createOrganization(t.http, admin, 'gw_gone');
      const account = await createSystemAccount(t.http, admin, 'gw_gone', { role: 'Administration' });
      const token = await tokenBySecret(t.http, 'gw_gone', account.clientId, account.secret);
      const bound = await createGateway(fullBody(), 'gw_gone', token);
      const created = await call('post', policies('gw_gone'), token).send({
        schemas: [POLICY_SCHEMA],
        name: 'Doomed',
        deliveryGateways: [{ value: bound.body.id }],
      });
      expect(created.status).toBe(201);
      await t.db.query(`DELETE FROM organizations WHERE id = 'gw_gone'`);
      for (const table of ['push_delivery_gateways', 'authenticator_policies', 'authenticator_policy_gateways']) {
        const { rows } = await t.db.query(`SELECT count(*)::int AS n FROM ${table} WHERE org_id = 'gw_gone'`);
        expect({ table, n: rows[0].n }).toEqual({ table, n: 0 });
      }
    });
  });
  it('the list and GET read from memory follow a create, replace and delete made on another instance within a second (change feed)', async () => {
    const second = await createTestApp({ databaseUrl: t.databaseUrl, shareHsmWith: t });
    try {
      const elsewhere = (method: Method, path: string) => second.http[method](path).auth(tokens.Administration, { type: 'bearer' });
      const names = async () => ((await call('get', gateways())).body.resources as { name: string }[]).map((g) => g.name);
      /** Polls this instance until `seen` holds, for at most a second. */
      const within = async (seen: () => Promise<boolean>) => {
        const deadline = Date.now() + 1000;
        let ok = await seen();
        while (!ok && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 20));
          ok = await seen();
        }
        return ok;
      };
      await names();
      await names();
      const body = fullBody();
      const created = await elsewhere('post', gateways(ORG, '?api-version=3')).send(body);
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      expect(await within(async () => (await names()).includes(body.name as string))).toBe(true);
      expect((await call('get', gateway(id))).body.name).toBe(body.name);
      const renamed = `${body.name} renamed`;
      expect((await elsewhere('put', gateway(id)).send({ schemas: [GATEWAY_SCHEMA], name: renamed })).status).toBe(200);
      expect(await within(async () => (await call('get', gateway(id))).body.name === renamed)).toBe(true);
      expect((await elsewhere('delete', gateway(id))).status).toBe(204);
      expect(await within(async () => (await call('get', gateway(id))).status === 404)).toBe(true);
      expect(await names()).not.toContain(renamed);
    } finally {
      await second.close();
    }
  });
});
