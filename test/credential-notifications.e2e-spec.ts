import { p256Csr } from '@app/pki/testing';
import {
  FakeNotificationHub,
  TestApp,
  configureHubGateway,
  createCardholder,
  createIssuingOrganization,
  createTestApp,
  eventually,
  insertAuthenticator,
  insertCard,
  platformAdminToken,
} from '@app/testing';

/**
 * Credential notifications (issue 25 item 3; DECISIONS 10.6): a person's authenticators get the
 * `credential` template when one of their content requests is approved, denied or completed and when
 * their credentials are suspended or revoked, written in the transaction of that change: a change
 * that is refused leaves no notification.
 */

const SCIM = 'application/scim+json';
const REQUEST = 'urn:vendor:scim:api:cms:1.0:ContentRequest';
const SESSION = 'urn:vendor:scim:api:cms:1.0:SyncSession';
const ORG = 'pushcred';

describe('Credential notifications', () => {
  let t: TestApp;
  let admin: string;
  let tokens: Record<string, string>;
  let pkiOnly: string;
  let hub: FakeNotificationHub;

  beforeAll(async () => {
    t = await createTestApp();
    admin = await platformAdminToken(t.http);
    ({ tokens } = await createIssuingOrganization(t, admin, ORG, {
      issuer: 'Issuance',
      approver: 'Issuance',
      helpdesk: 'Help Desk',
      config: 'Administration',
    }));
    pkiOnly = (
      await t.http
        .post(`/admin/v1/organizations/${ORG}/device-policies`)
        .auth(admin, { type: 'bearer' })
        .send({ name: 'Badge', credentialTypes: ['PKI_CERTIFICATE'] })
    ).body.id;
    hub = await FakeNotificationHub.start();
    await configureHubGateway(t, tokens.config, ORG, hub, { templates: { credential: { title: 'Wallet', msg: '{{message}}' } } });
  });
  afterAll(async () => {
    await t.close();
    await hub.close();
  });

  const post = (path: string, body: unknown, token = tokens.issuer) =>
    t.http.post(path).auth(token, { type: 'bearer' }).set('Content-Type', SCIM).send(JSON.stringify(body));
  const request = (wallet: string, device: string) =>
    post('/aims/rs/scim/v2/ContentRequest', {
      schemas: [REQUEST],
      type: 'issuance',
      target: { device: { value: device }, devicePolicy: { value: pkiOnly } },
      wallet: { value: wallet },
    });
  const outbox = async (userId: string) =>
    (await t.db.query('SELECT id, cause, template, template_values, state FROM push_outbox WHERE user_id = $1 ORDER BY created_at, id', [userId])).rows;

  /** The pushes that reached the person's phone, in order: what each said. */
  async function pushesTo(handle: string, count: number) {
    await eventually(async () => hub.sends.filter((send) => send.handle === handle).length >= count, `${count} pushes to ${handle}`);
    return hub.sends.filter((send) => send.handle === handle).map((send) => JSON.parse(send.body));
  }

  it('approve, complete, suspend and revoke each tell the owner once, in words; a resume tells nothing', async () => {
    const cleo = await createCardholder(t, admin, ORG, 'cleo');
    await insertAuthenticator(t, ORG, cleo.id, { pushHandle: 'cleo-phone' });
    const card = await insertCard(t, ORG);

    const created = await request(cleo.wallet, card.id);
    expect(created.status).toBe(201);
    expect(created.body.status).toBe('requested');
    expect(await outbox(cleo.id)).toEqual([]);

    expect((await post(`/aims/rs/scim/v2/ContentRequest/${created.body.id}/approve`, {}, tokens.approver)).status).toBe(200);
    const [approved] = await pushesTo('cleo-phone', 1);
    expect(approved).toEqual({
      notification: { title: 'Wallet', body: 'Your issuance request was approved.' },
      data: {
        event: 'approved',
        subject: 'contentRequest',
        id: created.body.id,
        type: 'issuance',
        count: '0',
        message: 'Your issuance request was approved.',
        notificationId: (await outbox(cleo.id))[0].id,
        template: 'credential',
      },
      time_to_live: 3600,
    });

    const done = await post('/aims/rs/scim/v2/SyncSession', {
      schemas: [SESSION],
      contentRequest: { value: created.body.id },
      device: { ATR: card.ATR, CUID: card.CUID },
      results: [{ operation: 'GEN', status: 'SUCCESS', credentialType: 'PKI_CERTIFICATE', csr: (await p256Csr()).toString('base64') }],
    });
    expect(done.status).toBe(201);
    const credential = done.body.credentials[0].value;
    expect((await pushesTo('cleo-phone', 2))[1].data).toMatchObject({
      event: 'completed',
      subject: 'contentRequest',
      message: 'Your issuance request was completed.',
    });

    expect((await post(`/aims/rs/scim/v2/Device/${card.id}/suspend`, { reason: 'LOST' }, tokens.helpdesk)).status).toBe(200);
    expect((await pushesTo('cleo-phone', 3))[2].data).toMatchObject({
      event: 'suspended',
      subject: 'credential',
      id: credential,
      type: 'PKI_CERTIFICATE',
      count: '1',
      message: 'Your PKI_CERTIFICATE credential was suspended.',
    });
    expect((await post(`/aims/rs/scim/v2/Device/${card.id}/resume`, {}, tokens.helpdesk)).status).toBe(200);
    expect((await post(`/aims/rs/scim/v2/Device/${card.id}/revoke`, { reason: 'STOLEN' }, tokens.helpdesk)).status).toBe(200);
    expect((await pushesTo('cleo-phone', 4))[3].data).toMatchObject({
      event: 'revoked',
      subject: 'credential',
      id: credential,
      message: 'Your PKI_CERTIFICATE credential was revoked.',
    });

    const rows = await outbox(cleo.id);
    // One row each (the fake clock stands still, so their times are equal: compared as a set).
    expect(rows.map((row) => row.cause).sort()).toEqual(['content_request.approve', 'content_request.complete', 'credential.revoke', 'credential.suspend']);
    await eventually(async () => (await outbox(cleo.id)).every((row) => row.state === 'sent'), 'all sent');
    expect(hub.sends.filter((send) => send.handle === 'cleo-phone')).toHaveLength(4);
  });

  it('a denial tells the owner; a refused denial (four eyes) writes nothing', async () => {
    const dina = await createCardholder(t, admin, ORG, 'dina');
    await insertAuthenticator(t, ORG, dina.id, { pushHandle: 'dina-phone' });
    const card = await insertCard(t, ORG);
    const created = await request(dina.wallet, card.id);
    // The requester may not deny their own request: the change is refused, and so is its notification.
    expect((await post(`/aims/rs/scim/v2/ContentRequest/${created.body.id}/deny`, {}, tokens.issuer)).status).toBe(409);
    expect(await outbox(dina.id)).toEqual([]);
    expect((await post(`/aims/rs/scim/v2/ContentRequest/${created.body.id}/deny`, {}, tokens.approver)).status).toBe(200);
    const [denied] = await pushesTo('dina-phone', 1);
    expect(denied.data).toMatchObject({ event: 'denied', subject: 'contentRequest', id: created.body.id, message: 'Your issuance request was denied.' });
    expect((await outbox(dina.id)).map((row) => row.cause)).toEqual(['content_request.deny']);
  });

  it('a person without an authenticator is simply not told: the change goes through', async () => {
    const ezra = await createCardholder(t, admin, ORG, 'ezra');
    const card = await insertCard(t, ORG);
    const created = await request(ezra.wallet, card.id);
    expect((await post(`/aims/rs/scim/v2/ContentRequest/${created.body.id}/approve`, {}, tokens.approver)).status).toBe(200);
    expect(await outbox(ezra.id)).toEqual([]);
  });
});
