import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import * as client from 'openid-client';
import {
  AuthenticatorApp,
  FakeNotificationHub,
  TestApp,
  configureHubGateway,
  createCardholder,
  createOrganization,
  createSystemAccount,
  createTestApp,
  freePort,
  makeCertificate,
  platformAdminToken,
  signAssertion,
  tokenBySecret,
  tokenRequest,
  uploadCertificate,
} from '@app/testing';

/**
 * Out-of-band approval with OpenID CIBA Core 1.0 (issue 25 item 4; DECISIONS 16). openid-client 6,
 * unchanged, discovers the backchannel endpoint, initiates, and polls the token endpoint while a
 * simulated authenticator app (a P-256 key registered through Self) gets the push through the
 * organization's gateway (a fake notification hub), reads the request and approves or denies it with its key; ping clients are notified on a loopback receiver. Every bad
 * input is a clear 4xx. The polling interval is 1 s here (BACKCHANNEL_POLL_INTERVAL_S).
 */

const ORG = 'ciba';
const PASSWORD = 'correct horse battery staple';
const CIBA_GRANT = 'urn:openid:params:grant-type:ciba';

interface Account {
  clientId: string;
  secret: string;
}

interface Ping {
  authorization: string | undefined;
  contentType: string | undefined;
  body: Record<string, unknown>;
}

describe('CIBA: out-of-band approval', () => {
  let t: TestApp;
  let base: string;
  let issuer: string;
  let admin: string;
  let poller: Account;
  let pinger: Account;
  let carla: { id: string; app: AuthenticatorApp };
  let receiver: Server;
  let receiverUrl: string;
  let hub: FakeNotificationHub;
  const pings: Ping[] = [];

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    issuer = `${base}/authentication/customer/${ORG}`;
    t = await createTestApp({ env: { AUTH_BASE_URL: base, PUBLIC_BASE_URL: base, BACKCHANNEL_POLL_INTERVAL_S: '1' } });
    await t.app.listen(port, '127.0.0.1');
    admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, ORG);
    // The organization's gateway for Android, pointing at a fake hub on loopback.
    hub = await FakeNotificationHub.start();
    const configuration = await createSystemAccount(t.http, admin, ORG, { role: 'Administration' });
    await configureHubGateway(t, await tokenBySecret(t.http, ORG, configuration.clientId, configuration.secret), ORG, hub);

    receiver = createServer((request: IncomingMessage, response) => {
      let text = '';
      request.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      request.on('end', () => {
        pings.push({ authorization: request.headers.authorization, contentType: request.headers['content-type'], body: JSON.parse(text) });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/ciba/notify`;

    poller = await cibaAccount({ tokenDeliveryMode: 'poll' });
    pinger = await cibaAccount({ tokenDeliveryMode: 'ping', clientNotificationEndpoint: receiverUrl });
    carla = await person('carla');
  });
  afterAll(async () => {
    await new Promise((resolve) => receiver.close(resolve));
    await t.close();
    await hub.close();
  });

  async function cibaAccount(backchannelAuthentication: Record<string, unknown> | null): Promise<Account> {
    const account = await createSystemAccount(t.http, admin, ORG, { role: 'Issuance' });
    const patched = await t.http
      .patch(`/admin/v1/organizations/${ORG}/system-accounts/${account.clientId}`)
      .auth(admin, { type: 'bearer' })
      .send({ backchannelAuthentication });
    expect(patched.status).toBe(200);
    expect(patched.body.backchannelAuthentication).toEqual(backchannelAuthentication);
    return account;
  }

  /** A cardholder with one authenticator app registered through Self. */
  async function person(userName: string, register = true): Promise<{ id: string; app: AuthenticatorApp }> {
    const { id } = await createCardholder(t, admin, ORG, userName, { password: PASSWORD });
    const app = new AuthenticatorApp();
    if (register) {
      const grant = await tokenRequest(t.http, ORG, { grant_type: 'password', username: userName, password: PASSWORD });
      expect(grant.status).toBe(200);
      await app.register(t.http, grant.body.access_token);
    }
    return { id, app };
  }

  async function discover(account: Account): Promise<client.Configuration> {
    return client.discovery(new URL(issuer), account.clientId, account.secret, client.ClientSecretPost(account.secret), {
      execute: [client.allowInsecureRequests],
    });
  }

  function initiate(account: Account, form: Record<string, string>) {
    return t.http
      .post(`/authentication/customer/${ORG}/backchannel-authentication`)
      .type('form')
      .send({ client_id: account.clientId, client_secret: account.secret, scope: 'openid', ...form });
  }

  function poll(account: Account, authReqId: string) {
    return tokenRequest(t.http, ORG, { grant_type: CIBA_GRANT, auth_req_id: authReqId, client_id: account.clientId, client_secret: account.secret });
  }

  /** What the push carried to the person's phones for their newest request: its id, as the app gets it. */
  async function pushedRequestId(userId: string): Promise<string> {
    // The newest by the request's own time (the suite's clock stands still, the database's does not).
    const { rows } = await t.db.query(
      `SELECT o.template, o.template_values, o.cause FROM push_outbox o JOIN backchannel_requests r ON r.id = (o.template_values->>'requestId')::uuid
        WHERE o.user_id = $1 AND o.template = 'challenge' ORDER BY r.created_at DESC LIMIT 1`,
      [userId],
    );
    expect(rows[0]).toMatchObject({ template: 'challenge', cause: 'backchannel.request' });
    return rows[0].template_values.requestId as string;
  }

  /** The hub's send that carried request `requestId` to the person's phone. */
  async function pushThroughHub(requestId: string) {
    for (let waited = 0; waited < 10_000; waited += 50) {
      const send = hub.sends.find((s) => s.body.includes(requestId));
      if (send) return send;
      await sleep(50);
    }
    throw new Error(`no push for request ${requestId} reached the hub`);
  }

  function decide(requestId: string, body: Record<string, unknown>) {
    return t.http.post(`/authentication/customer/${ORG}/backchannel-requests/${requestId}/decision`).send(body);
  }

  function read(requestId: string, headers: Record<string, string>) {
    return t.http.get(`/authentication/customer/${ORG}/backchannel-requests/${requestId}`).set(headers);
  }

  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('discovery advertises the backchannel endpoint, poll and ping, no user code, and the ciba grant', async () => {
    const metadata = (await discover(poller)).serverMetadata();
    expect(metadata.backchannel_authentication_endpoint).toBe(`${issuer}/backchannel-authentication`);
    expect(metadata.backchannel_token_delivery_modes_supported).toEqual(['poll', 'ping']);
    expect(metadata.backchannel_user_code_parameter_supported).toBe(false);
    expect(metadata.grant_types_supported).toContain(CIBA_GRANT);
  });

  it('poll mode with openid-client: initiate, the app reads and approves, the poll gets tokens for the person (amr hwk), once', async () => {
    const config = await discover(poller);
    const started = await client.initiateBackchannelAuthentication(config, {
      login_hint: 'carla',
      scope: 'openid',
      binding_message: 'Sign in to Billing: 4711',
    });
    expect(typeof started.auth_req_id).toBe('string');
    expect(started.auth_req_id.length).toBeGreaterThanOrEqual(43);
    expect(started.expires_in).toBe(300);
    expect(started.interval).toBe(1);
    // Stored only hashed.
    const stored = await t.db.query('SELECT count(*)::int AS n FROM backchannel_requests WHERE auth_req_id_hash::text LIKE $1', [`%${started.auth_req_id}%`]);
    expect(stored.rows[0].n).toBe(0);

    const requestId = await pushedRequestId(carla.id);
    const polling = client.pollBackchannelAuthenticationGrant(config, started);
    // The push reaches the hub, signed, with the challenge template rendered and the request's id for the app.
    const pushed = await pushThroughHub(requestId);
    expect(pushed.signatureValid).toBe(true);
    expect(pushed.format).toBe('gcm');
    expect(JSON.parse(pushed.body)).toMatchObject({
      notification: { body: 'Approve: Sign in to Billing: 4711' },
      data: { template: 'challenge', requestId, clientId: poller.clientId, bindingMessage: 'Sign in to Billing: 4711' },
    });
    expect(pushed.body).not.toContain(started.auth_req_id);
    await sleep(1_500);
    // Before the approval a poll is pending: openid-client has been told authorization_pending at least once.
    const shown = await read(requestId, carla.app.readHeaders(ORG, requestId));
    expect(shown.status).toBe(200);
    expect(shown.headers['cache-control']).toBe('no-store');
    expect(shown.body).toMatchObject({
      id: requestId,
      clientId: poller.clientId,
      scope: 'openid',
      bindingMessage: 'Sign in to Billing: 4711',
      state: 'pending',
      signingInputs: { approve: `ciba-approval.${ORG}.${requestId}.approve`, deny: `ciba-approval.${ORG}.${requestId}.deny` },
    });
    const approvedAt = Math.floor(Date.now() / 1000);
    const approved = await decide(requestId, carla.app.decision(ORG, requestId, 'approve'));
    expect(approved.status).toBe(200);
    expect(approved.body.state).toBe('approved');

    const tokens = await polling;
    // openid-client validated the id_token (iss, aud = Client ID, signature by a JWKS key, exp, iat).
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({ iss: issuer, sub: 'carla', aud: poller.clientId, amr: ['hwk'], org: ORG });
    expect(Math.abs((claims.auth_time as number) - approvedAt)).toBeLessThanOrEqual(2);
    const whoami = await fetch(`${issuer}/whoami`, { headers: { Authorization: `Bearer ${tokens.access_token}` } });
    expect(whoami.status).toBe(200);
    expect(await whoami.json()).toMatchObject({ userName: 'carla', org: ORG, role: 'Cardholder' });

    // Issued once: the auth_req_id is spent.
    const again = await poll(poller, started.auth_req_id);
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_grant');
    const events = await t.db.query(`SELECT action, actor, target, outcome FROM audit_events WHERE org_id = $1 AND action LIKE 'backchannel.%' ORDER BY id`, [
      ORG,
    ]);
    expect(events.rows).toEqual(
      expect.arrayContaining([
        { action: 'backchannel.request', actor: poller.clientId, target: 'carla', outcome: 'success' },
        { action: 'backchannel.approve', actor: 'carla', target: poller.clientId, outcome: 'success' },
      ]),
    );
  });

  it('a denial: openid-client stops polling with access_denied', async () => {
    const config = await discover(poller);
    const started = await client.initiateBackchannelAuthentication(config, { login_hint: 'carla', scope: 'openid' });
    const requestId = await pushedRequestId(carla.id);
    const denied = await decide(requestId, carla.app.decision(ORG, requestId, 'deny'));
    expect(denied.status).toBe(200);
    expect(denied.body.state).toBe('denied');
    const error = await client.pollBackchannelAuthenticationGrant(config, started).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(client.ResponseBodyError);
    expect((error as client.ResponseBodyError).error).toBe('access_denied');
    // A denied request cannot be approved afterwards.
    const late = await decide(requestId, carla.app.decision(ORG, requestId, 'approve'));
    expect(late.status).toBe(409);
    expect(late.body.detail).toMatch(/denied already/);
  });

  it('ping mode: the loopback receiver is pinged with the client notification token, then the token request succeeds', async () => {
    const config = await discover(pinger);
    const notificationToken = 'ping-token-0123456789abcdefghijklmnop';
    const started = await client.initiateBackchannelAuthentication(config, {
      login_hint: 'carla',
      scope: 'openid',
      client_notification_token: notificationToken,
    });
    const requestId = await pushedRequestId(carla.id);
    pings.length = 0;
    expect((await decide(requestId, carla.app.decision(ORG, requestId, 'approve'))).status).toBe(200);
    for (let waited = 0; pings.length === 0 && waited < 5_000; waited += 50) await sleep(50);
    expect(pings).toEqual([{ authorization: `Bearer ${notificationToken}`, contentType: 'application/json', body: { auth_req_id: started.auth_req_id } }]);
    // The audit records the outcome's class only (DECISIONS 16), the origin, never the token.
    const audited = await t.http.get(`/admin/v1/organizations/${ORG}/audit-events?code=94005`).auth(admin, { type: 'bearer' });
    const pinged = audited.body.Resources.find((event: { details: { requestId: string } }) => event.details.requestId === requestId);
    expect(pinged).toMatchObject({ outcome: 'success', details: { requestId, endpoint: new URL(receiverUrl).origin, result: 'http_204' } });
    expect(JSON.stringify(audited.body)).not.toContain(notificationToken);
    const tokens = await client.pollBackchannelAuthenticationGrant(config, started);
    expect(tokens.claims()).toMatchObject({ sub: 'carla', aud: pinger.clientId, amr: ['hwk'] });
    // A denial is pinged too; the token request then hears access_denied.
    const second = await initiate(pinger, { login_hint: 'carla', client_notification_token: notificationToken });
    const deniedId = await pushedRequestId(carla.id);
    pings.length = 0;
    expect((await decide(deniedId, carla.app.decision(ORG, deniedId, 'deny'))).status).toBe(200);
    for (let waited = 0; pings.length === 0 && waited < 5_000; waited += 50) await sleep(50);
    expect(pings.map((p) => p.body)).toEqual([{ auth_req_id: second.body.auth_req_id }]);
    expect((await poll(pinger, second.body.auth_req_id)).body.error).toBe('access_denied');
    // A ping client without its notification token is refused.
    const missing = await initiate(pinger, { login_hint: 'carla' });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('invalid_request');
    expect(missing.body.error_description).toMatch(/client_notification_token/);
  });

  it("RFC 7009: the client revokes the person's access token it got by CIBA; another client's revocation changes nothing", async () => {
    const started = await initiate(poller, { login_hint: 'carla' });
    expect(started.status).toBe(200);
    const requestId = await pushedRequestId(carla.id);
    expect((await decide(requestId, carla.app.decision(ORG, requestId, 'approve'))).status).toBe(200);
    const tokens = await poll(poller, started.body.auth_req_id);
    expect(tokens.status).toBe(200);
    const whoami = () => t.http.get(`/authentication/customer/${ORG}/whoami`).auth(tokens.body.access_token, { type: 'bearer' });
    const revokeAs = (account: Account) =>
      t.http
        .post(`/authentication/customer/${ORG}/revoke`)
        .type('form')
        .send({ token: tokens.body.access_token, client_id: account.clientId, client_secret: account.secret });
    expect((await whoami()).status).toBe(200);
    // Another client of the organization: 200, no effect (RFC 7009 2.2).
    expect((await revokeAs(pinger)).status).toBe(200);
    expect((await whoami()).status).toBe(200);
    // The client it was issued to: revoked at once, and audited with the client as actor.
    expect((await revokeAs(poller)).status).toBe(200);
    const refused = await whoami();
    expect(refused.status).toBe(401);
    expect(refused.headers['www-authenticate']).toMatch(/revoked/);
    const jti = JSON.parse(Buffer.from(tokens.body.access_token.split('.')[1], 'base64url').toString('utf8')).jti;
    const events = await t.db.query("SELECT actor FROM audit_events WHERE action = 'token.revoke' AND target = $1", [jti]);
    expect(events.rows).toEqual([{ actor: poller.clientId }]);
  });

  describe('bad input: a clear error, never a 500', () => {
    it('an unknown login_hint is unknown_user_id', async () => {
      for (const hint of ['nobody', 'not a user name!']) {
        const response = await initiate(poller, { login_hint: hint });
        expect(response.status).toBe(400);
        expect(response.headers['cache-control']).toBe('no-store');
        expect(response.body).toEqual({ error: 'unknown_user_id', error_description: expect.stringMatching(/login_hint/) });
      }
    });

    it('a person without an authenticator: invalid_request saying to register one; nothing stored, nothing pushed', async () => {
      const dora = await person('dora', false);
      const response = await initiate(poller, { login_hint: 'dora' });
      expect(response.status).toBe(400);
      expect(response.body.error).toBe('invalid_request');
      expect(response.body.error_description).toMatch(/no authenticator app/);
      expect((await t.db.query('SELECT count(*)::int AS n FROM backchannel_requests WHERE user_id = $1', [dora.id])).rows[0].n).toBe(0);
      expect((await t.db.query('SELECT count(*)::int AS n FROM push_outbox WHERE user_id = $1', [dora.id])).rows[0].n).toBe(0);
    });

    it('an oversized or ill-formed binding_message is invalid_binding_message', async () => {
      for (const message of ['x'.repeat(65), 'line\nbreak', ' leading space', 'tab\there', '<script>']) {
        const response = await initiate(poller, { login_hint: 'carla', binding_message: message });
        expect(response.status).toBe(400);
        expect(response.body.error).toBe('invalid_binding_message');
        expect(response.body.error_description).toMatch(/1-64 characters/);
      }
      // Combining marks alone, or not on a letter or digit, or stacked (#32 item 8).
      for (const message of ['\u0301\u0308\u0301', '\u0301', 'Pay \u0336\u0336 now', '\u0301abc', 'a\u0301\u0302\u0303\u0304\u0305\u0306', '!\u0301']) {
        const response = await initiate(poller, { login_hint: 'carla', binding_message: message });
        expect({ message, status: response.status, error: response.body.error }).toEqual({ message, status: 400, error: 'invalid_binding_message' });
        expect(response.body.error_description).toMatch(/must contain a letter or digit, and each combining mark/);
      }
      const fits = await initiate(poller, { login_hint: 'carla', binding_message: 'Überweisung 64,00 € an Müller (Nr. 4711)'.replace('€', 'EUR') });
      expect(fits.status).toBe(200);
      // Marks on their letters, decomposed (NFD) or in a script that writes them (Devanagari).
      for (const message of ['Mu\u0308ller 4711', 'नमस्ते 12']) {
        expect({ message, status: (await initiate(poller, { login_hint: 'carla', binding_message: message })).status }).toEqual({ message, status: 200 });
      }
    });

    it('scope without openid, user_code, other hints, and an account not enabled for CIBA', async () => {
      expect((await initiate(poller, { login_hint: 'carla', scope: 'profile' })).body.error).toBe('invalid_scope');
      expect((await initiate(poller, { login_hint: 'carla', user_code: '1234' })).body.error).toBe('invalid_request');
      expect((await initiate(poller, { login_hint_token: 'x' })).body.error).toBe('invalid_request');
      expect((await initiate(poller, { login_hint: 'carla', requested_expiry: '-5' })).body.error).toBe('invalid_request');
      const plain = await createSystemAccount(t.http, admin, ORG, { role: 'Issuance' });
      const refused = await initiate(plain, { login_hint: 'carla' });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toBe('unauthorized_client');
      const wrongSecret = await initiate({ clientId: poller.clientId, secret: 'wrong' }, { login_hint: 'carla' });
      expect(wrongSecret.status).toBe(401);
      expect(wrongSecret.body.error).toBe('invalid_client');
    });

    it('an operator cannot be signed in by a tap: access_denied', async () => {
      const created = await t.http
        .post(`/admin/v1/organizations/${ORG}/users`)
        .auth(admin, { type: 'bearer' })
        .send({ userName: 'otto', role: 'Help Desk', userType: 'operator' });
      expect(created.status).toBe(201);
      const response = await initiate(poller, { login_hint: 'otto' });
      expect(response.status).toBe(403);
      expect(response.body.error).toBe('access_denied');
      expect(response.body.error_description).toMatch(/cardholders only/);
    });

    it("a signature from another key, or by another person's authenticator, decides nothing", async () => {
      const started = await initiate(poller, { login_hint: 'carla' });
      const requestId = await pushedRequestId(carla.id);
      const stranger = new AuthenticatorApp();
      const forged = await decide(requestId, carla.app.decision(ORG, requestId, 'approve', stranger));
      expect(forged.status).toBe(403);
      expect(forged.body.detail).toMatch(/does not verify/);
      // Carla's key over the deny text does not approve.
      const swapped = await decide(requestId, { ...carla.app.decision(ORG, requestId, 'deny'), decision: 'approve' });
      expect(swapped.status).toBe(403);
      const erin = await person('erin');
      const otherPerson = await decide(requestId, erin.app.decision(ORG, requestId, 'approve'));
      expect(otherPerson.status).toBe(404);
      expect((await read(requestId, erin.app.readHeaders(ORG, requestId))).status).toBe(404);
      expect(
        (await read(requestId, { 'Authenticator-ID': carla.app.id, 'Authenticator-Signature': stranger.sign(`ciba-read.${ORG}.${requestId}`) })).status,
      ).toBe(403);
      expect((await read(requestId, {})).status).toBe(400);
      expect((await read('not-a-uuid', carla.app.readHeaders(ORG, 'not-a-uuid'))).status).toBe(404);
      expect((await decide(requestId, { authenticator: carla.app.id, decision: 'maybe', signature: 'x' })).status).toBe(400);
      expect((await decide(requestId, { ...carla.app.decision(ORG, requestId, 'approve'), signature: 'too-short' })).status).toBe(400);
      const pending = await poll(poller, started.body.auth_req_id);
      expect(pending.body.error).toBe('authorization_pending');
    });

    it('approval after expiry is a 409, and the poll says expired_token', async () => {
      const started = await initiate(poller, { login_hint: 'carla', requested_expiry: '1' });
      expect(started.status).toBe(200);
      expect(started.body.expires_in).toBe(1);
      const requestId = await pushedRequestId(carla.id);
      await sleep(1_200);
      const late = await decide(requestId, carla.app.decision(ORG, requestId, 'approve'));
      expect(late.status).toBe(409);
      expect(late.body.detail).toMatch(/expired at/);
      const polled = await poll(poller, started.body.auth_req_id);
      expect(polled.status).toBe(400);
      expect(polled.body.error).toBe('expired_token');
    });

    it('approved twice: the second is a 409; approved concurrently: exactly one wins', async () => {
      await initiate(poller, { login_hint: 'carla' });
      const first = await pushedRequestId(carla.id);
      expect((await decide(first, carla.app.decision(ORG, first, 'approve'))).status).toBe(200);
      const second = await decide(first, carla.app.decision(ORG, first, 'approve'));
      expect(second.status).toBe(409);
      expect(second.body.detail).toMatch(/approved already/);

      await initiate(poller, { login_hint: 'carla' });
      const raced = await pushedRequestId(carla.id);
      const answers = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          fetch(`${issuer}/backchannel-requests/${raced}/decision`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify(carla.app.decision(ORG, raced, i % 2 === 0 ? 'approve' : 'deny')),
          }),
        ),
      );
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses).toEqual([200, 409, 409, 409, 409, 409]);
      const decided = await t.db.query(
        `SELECT count(*)::int AS n FROM audit_events WHERE action IN ('backchannel.approve', 'backchannel.deny') AND details->>'requestId' = $1`,
        [raced],
      );
      expect(decided.rows[0].n).toBe(1);
    });

    it('across two instances on one database: decided once, and the tokens issued to one poll only', async () => {
      const second = await createTestApp({ databaseUrl: t.databaseUrl, shareHsmWith: t, env: { BACKCHANNEL_POLL_INTERVAL_S: '1' } });
      try {
        const instances = [t.http, second.http];
        const started = await initiate(poller, { login_hint: 'carla' });
        const requestId = await pushedRequestId(carla.id);
        const decisions = await Promise.all(
          Array.from({ length: 6 }, (_, i) =>
            instances[i % 2]
              .post(`/authentication/customer/${ORG}/backchannel-requests/${requestId}/decision`)
              .send(carla.app.decision(ORG, requestId, 'approve')),
          ),
        );
        expect(decisions.map((d) => d.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
        const form = { grant_type: CIBA_GRANT, auth_req_id: started.body.auth_req_id, client_id: poller.clientId, client_secret: poller.secret };
        const cibaIssues = async () =>
          (await t.db.query(`SELECT count(*)::int AS n FROM audit_events WHERE action = 'token.issue' AND details->>'method' = 'ciba'`)).rows[0].n as number;
        const issuedBefore = await cibaIssues();
        const polls = await Promise.all(Array.from({ length: 6 }, (_, i) => tokenRequest(instances[i % 2], ORG, form)));
        const issued = polls.filter((p) => p.status === 200);
        expect(issued).toHaveLength(1);
        expect(typeof issued[0].body.id_token).toBe('string');
        // The others were told the truth: already issued, or polled too soon.
        for (const refused of polls.filter((p) => p.status !== 200)) expect(['invalid_grant', 'slow_down']).toContain(refused.body.error);
        expect((await cibaIssues()) - issuedBefore).toBe(1);
      } finally {
        await second.close();
      }
    });

    it('at most 5 requests wait for one person at once, however many arrive together: then 429 with Retry-After', async () => {
      const fay = await person('fay');
      const answers = await Promise.all(Array.from({ length: 7 }, () => initiate(poller, { login_hint: 'fay' })));
      expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 429, 429]);
      for (const refused of answers.filter((a) => a.status === 429)) {
        expect(refused.body.error).toBe('temporarily_unavailable');
        expect(refused.body.error_description).toMatch(/already has 5 requests waiting/);
        expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      }
      expect((await t.db.query(`SELECT count(*)::int AS n FROM backchannel_requests WHERE user_id = $1`, [fay.id])).rows[0].n).toBe(5);
      // One decided: room for one more.
      const requestId = await pushedRequestId(fay.id);
      expect((await decide(requestId, fay.app.decision(ORG, requestId, 'deny'))).status).toBe(200);
      expect((await initiate(poller, { login_hint: 'fay' })).status).toBe(200);
    });

    it('slow_down when polled faster than the interval; another client gets invalid_grant; an unknown auth_req_id too', async () => {
      const started = await initiate(poller, { login_hint: 'carla' });
      const authReqId = started.body.auth_req_id;
      const first = await poll(poller, authReqId);
      expect(first.body.error).toBe('authorization_pending');
      const fast = await poll(poller, authReqId);
      expect(fast.status).toBe(400);
      expect(fast.body.error).toBe('slow_down');
      await sleep(1_050);
      expect((await poll(poller, authReqId)).body.error).toBe('authorization_pending');
      const other = await poll(pinger, authReqId);
      expect(other.status).toBe(400);
      expect(other.body).toEqual({ error: 'invalid_grant', error_description: expect.stringMatching(/another client/) });
      expect((await poll(poller, 'unknown-auth-req-id')).body.error).toBe('invalid_grant');
      expect((await tokenRequest(t.http, ORG, { grant_type: CIBA_GRANT, client_id: poller.clientId, client_secret: poller.secret })).body.error).toBe(
        'invalid_request',
      );
    });

    it('a client assertion whose aud is the backchannel authentication endpoint is accepted there (CIBA 7.1)', async () => {
      await person('hanna');
      const account = await cibaAccount({ tokenDeliveryMode: 'poll' });
      const certificate = await makeCertificate({ keyType: 'EC-P256' });
      expect((await uploadCertificate(t.http, admin, ORG, account.clientId, certificate.pem)).status).toBe(201);
      const endpoint = `${issuer}/backchannel-authentication`;
      const asserted = async (aud: string) =>
        t.http
          .post(`/authentication/customer/${ORG}/backchannel-authentication`)
          .type('form')
          .send({
            client_id: account.clientId,
            client_assertion: await signAssertion(certificate, account.clientId, aud, { now: t.clock.now() }),
            client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
            scope: 'openid',
            login_hint: 'hanna',
          });
      // The three audiences CIBA 7.1 names: the issuer, the token endpoint, the backchannel endpoint.
      for (const aud of [issuer, `${issuer}/token`, endpoint]) expect({ aud, status: (await asserted(aud)).status }).toEqual({ aud, status: 200 });
      expect((await asserted(`${issuer}/introspect`)).status).toBe(401);
    });

    it('a client whose CIBA registration was removed since it asked collects nothing: unauthorized_client', async () => {
      const greta = await person('greta');
      const account = await cibaAccount({ tokenDeliveryMode: 'poll' });
      const started = await initiate(account, { login_hint: 'greta' });
      expect(started.status).toBe(200);
      const requestId = await pushedRequestId(greta.id);
      expect((await decide(requestId, greta.app.decision(ORG, requestId, 'approve'))).status).toBe(200);
      const off = await t.http
        .patch(`/admin/v1/organizations/${ORG}/system-accounts/${account.clientId}`)
        .auth(admin, { type: 'bearer' })
        .send({ backchannelAuthentication: null });
      expect(off.status).toBe(200);
      const polled = await poll(account, started.body.auth_req_id);
      expect(polled.status).toBe(400);
      expect(polled.body).toEqual({ error: 'unauthorized_client', error_description: expect.stringMatching(/not enabled for CIBA/) });
      expect(polled.body.access_token).toBeUndefined();
    });

    it('the admin API refuses a ping registration without an https (or loopback) endpoint, and an endpoint for poll', async () => {
      const account = await createSystemAccount(t.http, admin, ORG, { role: 'Issuance' });
      const path = `/admin/v1/organizations/${ORG}/system-accounts/${account.clientId}`;
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ tokenDeliveryMode: 'ping' }, /clientNotificationEndpoint: is required for the ping mode/],
        [{ tokenDeliveryMode: 'ping', clientNotificationEndpoint: 'http://client.example.com/notify' }, /must use https/],
        [{ tokenDeliveryMode: 'ping', clientNotificationEndpoint: 'https://client.example.com/notify#x' }, /fragment/],
        [{ tokenDeliveryMode: 'poll', clientNotificationEndpoint: 'https://client.example.com/notify' }, /only for the ping mode/],
        [{ tokenDeliveryMode: 'push' }, /must be "poll" or "ping"/],
        // DECISIONS 16: whatever BACKCHANNEL_LOOPBACK_PINGS says (true here), never a private, link-local or shared address.
        ...['10.1.2.3', '169.254.169.254', '0.0.0.0', '[fd12::1]', '[::ffff:a9fe:a9fe]', '100.64.0.1'].map((host): [Record<string, unknown>, RegExp] => [
          { tokenDeliveryMode: 'ping', clientNotificationEndpoint: `https://${host}/notify` },
          /clientNotificationEndpoint: names a private, link-local, shared or reserved address/,
        ]),
      ];
      for (const [settings, detail] of cases) {
        const response = await t.http.patch(path).auth(admin, { type: 'bearer' }).send({ backchannelAuthentication: settings });
        expect(response.status).toBe(400);
        expect(response.body.detail).toMatch(detail);
      }
      const enabled = await t.http
        .patch(path)
        .auth(admin, { type: 'bearer' })
        .send({ backchannelAuthentication: { tokenDeliveryMode: 'ping', clientNotificationEndpoint: 'https://client.example.com/notify' } });
      expect(enabled.status).toBe(200);
      const read = await t.http.get(path).auth(admin, { type: 'bearer' });
      expect(read.body.backchannelAuthentication).toEqual({ tokenDeliveryMode: 'ping', clientNotificationEndpoint: 'https://client.example.com/notify' });
      const disabled = await t.http.patch(path).auth(admin, { type: 'bearer' }).send({ backchannelAuthentication: null });
      expect(disabled.body.backchannelAuthentication).toBeNull();

      // The grant rules of DECISIONS 5.3: a Help Desk organization administrator cannot enable CIBA on an Issuance account.
      const desk = await createSystemAccount(t.http, admin, ORG, { role: 'Help Desk', organizationAdministrator: true });
      const deskToken = await tokenBySecret(t.http, ORG, desk.clientId, desk.secret);
      const refused = await t.http
        .patch(path)
        .auth(deskToken, { type: 'bearer' })
        .send({ backchannelAuthentication: { tokenDeliveryMode: 'poll' } });
      expect(refused.status).toBe(403);
      expect(refused.body.detail).toMatch(/account-above-own/);
      expect((await t.http.get(path).auth(admin, { type: 'bearer' })).body.backchannelAuthentication).toBeNull();
    });
  });
});
