import dns from 'node:dns';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { DataCipher } from '@app/common';
import { AppConfig } from '@app/config';
import { PushNotifications } from '@app/delivery-gateway';
import { Database } from '@app/persistence';
import {
  AuthenticatorApp,
  TestApp,
  createCardholder,
  createOrganization,
  createSystemAccount,
  createTestApp,
  eventually,
  expectScimError,
  insertAuthenticator,
  platformAdminToken,
  tokenBySecret,
  tokenRequest,
} from '@app/testing';

const ORG = 'outbound';
const GATEWAY_URN = 'urn:vendor:scim:api:idp:2.0:DeliveryGateway:Push';
const POLICY_URN = 'urn:vendor:scim:api:idp:2.0:Policy:Authenticator';
const PASSWORD = 'correct horse battery staple';
/** A name of no special form that resolves to loopback here (as a hostile DNS entry would), through a test lookup. */
const INSIDE_NAME = 'hub.inside.test';

/**
 * Outbound calls an organization can aim (issue 32 items 1 and 2; DECISIONS 10.2, 16), with
 * PUSH_LOOPBACK_HUBS and BACKCHANNEL_LOOPBACK_PINGS false, against a listener on loopback that counts
 * every connection: no spelling of loopback, and no name that resolves there, reaches it; create
 * and replace of a push gateway and a CIBA registration refuse such endpoints with a 400 naming the
 * setting; what was stored before is refused when sending, and tenants see a coarse class.
 */
describe('Outbound calls to addresses inside', () => {
  let t: TestApp;
  let admin: string;
  let config: string;
  let listener: Server;
  let port: number;
  let connections = 0;
  let lookup: jest.SpyInstance;

  beforeAll(async () => {
    listener = createServer((_request, response) => response.writeHead(201).end());
    listener.on('connection', () => connections++);
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    port = (listener.address() as AddressInfo).port;
    const real = dns.lookup;
    lookup = jest
      .spyOn(dns, 'lookup')
      .mockImplementation(((host: string, options: object, callback: (...args: unknown[]) => void) =>
        host === INSIDE_NAME || host === `ping.${INSIDE_NAME}`
          ? callback(null, [{ address: '127.0.0.1', family: 4 }])
          : real(host, options, callback)) as unknown as typeof dns.lookup);
    // The breaker stays closed through the refusals, so that each spelling gets its attempt.
    t = await createTestApp({ env: { PUSH_LOOPBACK_HUBS: 'false', BACKCHANNEL_LOOPBACK_PINGS: 'false', PUSH_BREAKER_FAILURES: '100' } });
    admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, ORG);
    const account = await createSystemAccount(t.http, admin, ORG, { role: 'Administration' });
    config = await tokenBySecret(t.http, ORG, account.clientId, account.secret);
  });
  afterAll(async () => {
    lookup.mockRestore();
    await t.close();
    listener.closeAllConnections();
    await new Promise((resolve) => listener.close(resolve));
  });

  const LOOPBACK_SPELLINGS = ['2130706433', '127.1', '0x7f000001', '[::ffff:7f00:1]', '127.0.0.1', '[::1]', 'localhost'];
  const INSIDE_ADDRESSES = [
    '0.0.0.0',
    '[::]',
    '10.0.0.1',
    '172.16.5.4',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '[fd00::1]',
    '[fe80::1]',
    '[::ffff:a9fe:a9fe]',
    '0xa9fea9fe',
  ];
  const connectionString = (host: string) => `Endpoint=sb://${host}:${port}/;SharedAccessKeyName=Full;SharedAccessKey=c2VjcmV0LWtleS1vZi10aGUtaHVi`;

  function createGateway(endpointHost: string, name = `hub ${endpointHost}`) {
    return t.http
      .post(`/configuration/${ORG}/v2/DeliveryGateway/Push?api-version=3`)
      .auth(config, { type: 'bearer' })
      .set('Content-Type', 'application/scim+json')
      .send(
        JSON.stringify({
          schemas: [GATEWAY_URN],
          type: 'CLOUD_GCM_PUSH',
          name,
          hub: 'wallet-hub',
          connectionString: connectionString(endpointHost),
          supportedOperatingSystems: ['Android'],
        }),
      );
  }

  function replaceGateway(id: string, endpointHost: string) {
    return t.http
      .put(`/configuration/${ORG}/v2/DeliveryGateway/Push/${id}?api-version=3`)
      .auth(config, { type: 'bearer' })
      .set('Content-Type', 'application/scim+json')
      .send(JSON.stringify({ schemas: [GATEWAY_URN], connectionString: connectionString(endpointHost) }));
  }

  it('a push gateway whose endpoint is loopback in any spelling, or private, link-local or shared, is a 400 at create and at replace', async () => {
    const kept = await createGateway('ns.servicebus.windows.net', 'kept');
    expect(kept.status).toBe(201);
    for (const host of LOOPBACK_SPELLINGS) {
      for (const response of [await createGateway(host), await replaceGateway(kept.body.id, host)]) {
        expectScimError(
          response,
          400,
          'invalidValue',
          'Invalid push delivery gateway: connectionString: Endpoint names a loopback address, which only PUSH_LOOPBACK_HUBS=true allows',
        );
      }
    }
    for (const host of INSIDE_ADDRESSES) {
      for (const response of [await createGateway(host), await replaceGateway(kept.body.id, host)]) {
        expectScimError(response, 400, 'invalidValue', 'connectionString: Endpoint names a private, link-local, shared or reserved address');
      }
    }
    const read = await t.http.get(`/configuration/${ORG}/v2/DeliveryGateway/Push/${kept.body.id}?api-version=3`).auth(config, { type: 'bearer' });
    expect(read.body.meta.version).toBe('1');
    expect(connections).toBe(0);
  });

  describe('sending', () => {
    let gatewayId: string;
    let userCount = 0;

    beforeAll(async () => {
      // A name is not resolved at create: the gateway is accepted, and decided when connecting.
      const created = await createGateway(INSIDE_NAME, 'resolves inside');
      expect(created.status).toBe(201);
      gatewayId = created.body.id;
      const policy = await t.http
        .post(`/configuration/${ORG}/v2/Policy/Authenticator`)
        .auth(config, { type: 'bearer' })
        .set('Content-Type', 'application/scim+json')
        .send(JSON.stringify({ schemas: [POLICY_URN], name: 'Outbound policy', deliveryGateways: [{ value: gatewayId }] }));
      expect(policy.status).toBe(201);
    });

    /** One notification to a fresh person; answers the administrators' view of it after its first attempt. */
    async function sendOne(): Promise<Record<string, unknown>> {
      const { id: userId } = await createCardholder(t, admin, ORG, `person${++userCount}`);
      await insertAuthenticator(t, ORG, userId);
      await t.app
        .get(Database)
        .transaction((tx) => t.app.get(PushNotifications).enqueue({ org: ORG, userId, template: 'credential', values: {}, cause: 'test.outbound' }, tx));
      await eventually(
        async () => (await t.db.query('SELECT last_error FROM push_outbox WHERE user_id = $1', [userId])).rows[0]?.last_error != null,
        'one attempt',
      );
      const view = await t.http.get(`/configuration/${ORG}/v2/DeliveryGateway/Notifications?userId=${userId}`).auth(config, { type: 'bearer' });
      expect(view.status).toBe(200);
      return view.body.Resources[0];
    }

    const REFUSED = {
      state: 'pending',
      attempts: 1,
      lastStatus: null,
      lastError: 'address_not_allowed: the endpoint is not a public address (loopback only with PUSH_LOOPBACK_HUBS=true); nothing was sent',
    };

    it('a name that resolves to loopback is refused when connecting; the view shows the coarse class', async () => {
      expect(await sendOne()).toMatchObject({ ...REFUSED, gateway: { value: gatewayId } });
      expect(lookup).toHaveBeenCalledWith(INSIDE_NAME, expect.anything(), expect.any(Function));
      expect(connections).toBe(0);
    });

    it('an endpoint stored before the rule, in any spelling of loopback or 0.0.0.0, is refused when sending', async () => {
      // Written as the service seals it, as if created before create refused it.
      const cipher = new DataCipher(t.app.get(AppConfig).dataEncryptionKeys);
      for (const host of ['2130706433', '127.1', '0x7f000001', '[::ffff:7f00:1]', '0.0.0.0', '127.0.0.1']) {
        const sealed = cipher.seal(connectionString(host), `push-delivery-gateway:${ORG}:${gatewayId}:connectionString`);
        await t.db.query('UPDATE push_delivery_gateways SET connection_string_key_id = $1, connection_string_sealed = $2 WHERE id = $3', [
          sealed.keyId,
          sealed.sealed,
          gatewayId,
        ]);
        expect([host, await sendOne()]).toEqual([host, expect.objectContaining(REFUSED)]);
      }
      expect(connections).toBe(0);
    });
  });

  describe('CIBA pings', () => {
    const systemAccounts = `/admin/v1/organizations/${ORG}/system-accounts`;
    const ping = (clientNotificationEndpoint: string) => ({ backchannelAuthentication: { tokenDeliveryMode: 'ping', clientNotificationEndpoint } });

    it('a notification endpoint on loopback in any spelling, or private or link-local, is a 400 at registration (create and update)', async () => {
      const account = await createSystemAccount(t.http, admin, ORG, { role: 'Issuance' });
      const cases: [string, RegExp][] = [
        ...[
          ...LOOPBACK_SPELLINGS.map((host) => `https://${host}:${port}/notify`),
          `http://127.0.0.1:${port}/notify`,
          `http://127.1:${port}/notify`,
          `http://localhost:${port}/notify`,
          `http://[::1]:${port}/notify`,
        ].map((endpoint): [string, RegExp] => [
          endpoint,
          /backchannelAuthentication\.clientNotificationEndpoint: names a loopback address, which only BACKCHANNEL_LOOPBACK_PINGS=true allows/,
        ]),
        ...INSIDE_ADDRESSES.map(
          (host) => [`https://${host}/notify`, /clientNotificationEndpoint: names a private, link-local, shared or reserved address/] as [string, RegExp],
        ),
      ];
      for (const [endpoint, detail] of cases) {
        const created = await t.http
          .post(systemAccounts)
          .auth(admin, { type: 'bearer' })
          .send({ role: 'Issuance', ...ping(endpoint) });
        expect([endpoint, created.status, created.body.detail]).toEqual([endpoint, 400, expect.stringMatching(detail)]);
        const updated = await t.http.patch(`${systemAccounts}/${account.clientId}`).auth(admin, { type: 'bearer' }).send(ping(endpoint));
        expect([endpoint, updated.status, updated.body.detail]).toEqual([endpoint, 400, expect.stringMatching(detail)]);
      }
      const read = await t.http.get(`${systemAccounts}/${account.clientId}`).auth(admin, { type: 'bearer' });
      expect(read.body.backchannelAuthentication).toBeNull();
      expect(connections).toBe(0);
    });

    it('the ping to a name that resolves inside, or to a loopback literal stored before the rule, is refused when sending; the audit records the class only', async () => {
      const pinger = await createSystemAccount(t.http, admin, ORG, { role: 'Issuance', ...ping(`https://ping.${INSIDE_NAME}:${port}/notify`) });
      await createCardholder(t, admin, ORG, 'carla', { password: PASSWORD });
      const grant = await tokenRequest(t.http, ORG, { grant_type: 'password', username: 'carla', password: PASSWORD });
      expect(grant.status).toBe(200);
      const app = await new AuthenticatorApp().register(t.http, grant.body.access_token);

      /** A ping request approved by carla; `reseal` rewrites its sealed endpoint first (as if registered before the rule). */
      async function approved(reseal?: string): Promise<string> {
        const started = await t.http.post(`/authentication/customer/${ORG}/backchannel-authentication`).type('form').send({
          client_id: pinger.clientId,
          client_secret: pinger.secret,
          scope: 'openid',
          login_hint: 'carla',
          client_notification_token: 'notify-token-0123456789',
        });
        expect(started.status).toBe(200);
        const { rows } = await t.db.query(
          `SELECT r.id FROM backchannel_requests r WHERE r.client_id = $1 AND r.state = 'pending' ORDER BY r.created_at DESC LIMIT 1`,
          [pinger.clientId],
        );
        const requestId = rows[0].id as string;
        if (reseal) {
          const cipher = new DataCipher(t.app.get(AppConfig).dataEncryptionKeys);
          const sealed = cipher.seal(
            JSON.stringify({ endpoint: reseal, clientNotificationToken: 'notify-token-0123456789', authReqId: started.body.auth_req_id }),
            `backchannel-ping:${requestId}`,
          );
          await t.db.query('UPDATE backchannel_requests SET ping_sealed = $1 WHERE id = $2', [
            JSON.stringify({ keyId: sealed.keyId, sealed: sealed.sealed.toString('base64') }),
            requestId,
          ]);
        }
        const decided = await t.http
          .post(`/authentication/customer/${ORG}/backchannel-requests/${requestId}/decision`)
          .send(app.decision(ORG, requestId, 'approve'));
        expect(decided.status).toBe(200);
        return requestId;
      }

      async function pingEvent(requestId: string): Promise<Record<string, unknown>> {
        let event: Record<string, unknown> | undefined;
        await eventually(async () => {
          const events = await t.http.get(`/admin/v1/organizations/${ORG}/audit-events?code=94005`).auth(admin, { type: 'bearer' });
          event = events.body.Resources.find((e: { details: { requestId: string } }) => e.details.requestId === requestId);
          return event !== undefined;
        }, 'the ping audited');
        return event!;
      }

      const byName = await approved();
      expect(await pingEvent(byName)).toMatchObject({
        action: 'backchannel.ping',
        outcome: 'failure',
        details: { requestId: byName, endpoint: `https://ping.${INSIDE_NAME}:${port}`, result: 'address_not_allowed' },
      });
      for (const endpoint of [
        `http://127.1:${port}/notify`,
        `http://2130706433:${port}/notify`,
        `http://[::ffff:7f00:1]:${port}/notify`,
        `https://169.254.169.254/latest`,
      ]) {
        const requestId = await approved(endpoint);
        const event = await pingEvent(requestId);
        expect([endpoint, event.outcome, event.details]).toEqual([
          endpoint,
          'failure',
          { requestId, endpoint: new URL(endpoint).origin, result: 'address_not_allowed' },
        ]);
      }
      expect(connections).toBe(0);
    });
  });
});
