import { TestApp, createOrganization, createSystemAccount, createTestApp, platformAdminToken, tokenBySecret } from '@app/testing';

/**
 * DECISIONS 10: connection strings are sealed with the keyring DATA_ENCRYPTION_KEYS, the first key
 * seals, every key opens, so keys rotate by restarting with `new,old`. One app at a time, on one
 * database, as an operator would restart the service.
 */

const GATEWAY_SCHEMA = 'urn:vendor:scim:api:idp:2.0:DeliveryGateway:Push';
const SCIM_ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const OLD = `old:${Buffer.alloc(32, 11).toString('base64')}`;
const NEW = `new:${Buffer.alloc(32, 22).toString('base64')}`;
const ORG = 'rotation';

const connection = (key: string) => `Endpoint=sb://rotation.servicebus.windows.net/;SharedAccessKeyName=Full;SharedAccessKey=${key};`;

describe('connection strings across a key rotation', () => {
  let account: { clientId: string; secret: string };

  /** Boots the service on the same database with a keyring, runs `work`, and stops it. */
  async function withApp(databaseUrl: string | undefined, keys: string, work: (t: TestApp, call: Caller) => Promise<void>): Promise<string> {
    const t = await createTestApp({ ...(databaseUrl ? { databaseUrl } : {}), env: { DATA_ENCRYPTION_KEYS: keys } });
    try {
      if (!account) {
        const admin = await platformAdminToken(t.http);
        await createOrganization(t.http, admin, ORG);
        account = await createSystemAccount(t.http, admin, ORG, { role: 'Administration' });
      }
      const token = await tokenBySecret(t.http, ORG, account.clientId, account.secret);
      const call: Caller = (method, path) => t.http[method](`/configuration/${ORG}/v2/DeliveryGateway/Push${path}`).auth(token, { type: 'bearer' });
      await work(t, call);
      return t.databaseUrl;
    } finally {
      await t.close();
    }
  }
  type Caller = (method: 'get' | 'post' | 'put', path: string) => ReturnType<TestApp['http']['get']>;

  async function keyIdOf(t: TestApp, id: string): Promise<string> {
    const { rows } = await t.db.query<{ key_id: string }>(
      'SELECT connection_string_key_id AS key_id FROM push_delivery_gateways WHERE org_id = $1 AND id = $2',
      [ORG, id],
    );
    return rows[0].key_id;
  }

  async function versionOf(t: TestApp, id: string): Promise<number> {
    const { rows } = await t.db.query<{ version: number }>('SELECT version FROM push_delivery_gateways WHERE org_id = $1 AND id = $2', [ORG, id]);
    return rows[0].version;
  }

  it('a key missing from the ring is a clear 409 on replace (reads never need it); after a restart with `new,old` every value is sealed with the new key, and the old key can go', async () => {
    const ids: Record<string, string> = {};
    const databaseUrl = await withApp(undefined, OLD, async (t, call) => {
      for (const name of ['first', 'second']) {
        const created = await call('post', '').send({
          schemas: [GATEWAY_SCHEMA],
          type: 'CLOUD_GCM_PUSH',
          name,
          connectionString: connection(`${name}KeyValue=`),
        });
        expect(created.status).toBe(201);
        expect(created.body.connectionString).toBe(connection(`${name}KeyValue=`));
        ids[name] = created.body.id;
        expect(await keyIdOf(t, created.body.id)).toBe('old');
      }
    });

    // The operator put the new key in and forgot to keep the old one.
    await withApp(databaseUrl, NEW, async (t, call) => {
      const refused = await call('put', `/${ids.first}`).send({ schemas: [GATEWAY_SCHEMA], hub: 'lost' });
      expect(refused.status).toBe(409);
      expect(refused.headers['content-type']).toMatch(/^application\/scim\+json/);
      expect(refused.body).toEqual({
        schemas: [SCIM_ERROR],
        status: '409',
        detail: `The stored connectionString of push delivery gateway ${ids.first} was sealed with the key "old", which DATA_ENCRYPTION_KEYS no longer holds; send a new connectionString in this replace.`,
      });
      const read = await call('get', `/${ids.first}`);
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({ id: ids.first, name: 'first', meta: { version: '1' } });
      expect(read.body.connectionString).toBeUndefined();
      expect((await call('get', '')).status).toBe(200);
      // A replace with a new connection string repairs the gateway.
      const fixed = await call('put', `/${ids.second}`).send({ schemas: [GATEWAY_SCHEMA], connectionString: connection('secondNewKey=') });
      expect(fixed.status).toBe(200);
      expect(fixed.body.connectionString).toBe(connection('secondNewKey='));
      expect(await keyIdOf(t, ids.second)).toBe('new');
      expect(await keyIdOf(t, ids.first)).toBe('old');
      const logs = t.logs.join('');
      expect(logs).toContain('no longer holds');
      expect(logs).toContain(`"id":"${ids.first}","keyId":"old"`);
    });

    // Restarted with `new,old`: values sealed with the old key open, and are sealed again with the new one at start.
    await withApp(databaseUrl, `${NEW},${OLD}`, async (t, call) => {
      expect(await keyIdOf(t, ids.first)).toBe('new');
      expect(await versionOf(t, ids.first)).toBe(1);
      const replaced = await call('put', `/${ids.first}`).send({ schemas: [GATEWAY_SCHEMA], hub: 'rotated' });
      expect(replaced.status).toBe(200);
      expect(replaced.headers['cache-control']).toBe('no-store');
      expect(replaced.body).toMatchObject({ id: ids.first, hub: 'rotated', connectionString: connection('firstKeyValue='), meta: { version: '2' } });
      const created = await call('post', '').send({
        schemas: [GATEWAY_SCHEMA],
        type: 'CLOUD_WNS_PUSH',
        name: 'third',
        connectionString: connection('thirdKeyValue='),
      });
      expect(created.status).toBe(201);
      expect(created.body.connectionString).toBe(connection('thirdKeyValue='));
      ids.third = created.body.id;
      expect(await keyIdOf(t, ids.third)).toBe('new');
    });

    // The old key is gone for good: everything still opens.
    await withApp(databaseUrl, NEW, async (t, call) => {
      for (const [name, value] of [
        ['first', 'firstKeyValue='],
        ['second', 'secondNewKey='],
        ['third', 'thirdKeyValue='],
      ]) {
        const replaced = await call('put', `/${ids[name]}`).send({ schemas: [GATEWAY_SCHEMA] });
        expect({ name, status: replaced.status, connectionString: replaced.body.connectionString }).toEqual({
          name,
          status: 200,
          connectionString: connection(value),
        });
      }
      const { rows } = await t.db.query<{ row: string }>('SELECT row_to_json(g)::text AS row FROM push_delivery_gateways g WHERE org_id = $1', [ORG]);
      for (const { row } of rows) expect(row).not.toMatch(/KeyValue|NewKey/);
      expect(t.logs.join('')).not.toMatch(/KeyValue=|NewKey=/);
    });
  });
});
