import {
  FakeNotificationHub,
  TestApp,
  configureHubGateway,
  createOrganization,
  createSystemAccount,
  createTestApp,
  expectScimError,
  platformAdminToken,
  tokenBySecret,
} from '@app/testing';

/**
 * The test send of a push gateway (DECISIONS 10.7) against a fake hub, and the conditional change
 * of an organization's settings (If-Match, DECISIONS 11): what the portal's administration screens
 * need of the API (issue 37 item 3).
 */
describe('Push gateway test send; organization settings with If-Match', () => {
  let t: TestApp;
  let admin: string;
  let token: string;
  let helpDesk: string;
  const ORG = 'pts';
  const hubs: FakeNotificationHub[] = [];

  beforeAll(async () => {
    t = await createTestApp({ env: { PUSH_SEND_TIMEOUT_MS: '500' } });
    admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, ORG);
    const account = await createSystemAccount(t.http, admin, ORG, { role: 'Administration', organizationAdministrator: true });
    token = await tokenBySecret(t.http, ORG, account.clientId, account.secret);
    const desk = await createSystemAccount(t.http, admin, ORG, { role: 'Help Desk' });
    helpDesk = await tokenBySecret(t.http, ORG, desk.clientId, desk.secret);
  });
  afterAll(async () => {
    await t.close();
    await Promise.all(hubs.map((hub) => hub.close()));
  });

  async function hub(): Promise<FakeNotificationHub> {
    const started = await FakeNotificationHub.start();
    hubs.push(started);
    return started;
  }

  const testSend = (id: string, body: unknown = { pushHandle: 'fcm-token-of-my-phone' }, bearer = token) =>
    t.http
      .post(`/configuration/${ORG}/v2/DeliveryGateway/Push/${id}/test`)
      .auth(bearer, { type: 'bearer' })
      .set('Content-Type', 'application/scim+json')
      .send(JSON.stringify(body));
  const audited = async () =>
    (await t.db.query("SELECT target, outcome, details FROM audit_events WHERE org_id = $1 AND action = 'deliveryGateway.test' ORDER BY id", [ORG])).rows;

  it('sends one signed notification with the gateway template to the handle given, answers sent, queues nothing, and audits it without the handle', async () => {
    const fake = await hub();
    const id = await configureHubGateway(t, token, ORG, fake, { name: 'Test hub' });
    const outboxBefore = (await t.db.query('SELECT count(*)::int AS n FROM push_outbox WHERE org_id = $1', [ORG])).rows[0].n;
    const answer = await testSend(id);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ outcome: 'sent', status: 201, reason: 'sent', detail: 'The hub accepted the test notification (201).' });
    const [send] = await fake.waitForSends(1);
    expect(send).toMatchObject({ hub: 'wallet-hub', signatureValid: true, format: 'gcm', handle: 'fcm-token-of-my-phone', answered: 201 });
    expect(JSON.parse(send.body).notification).toEqual({ title: 'Credential', body: 'Your credential is test' });
    expect((await t.db.query('SELECT count(*)::int AS n FROM push_outbox WHERE org_id = $1', [ORG])).rows[0].n).toBe(outboxBefore);
    const events = await audited();
    expect(events).toEqual([{ target: id, outcome: 'success', details: { status: 201, reason: 'sent' } }]);
    expect(JSON.stringify(events)).not.toContain('fcm-token-of-my-phone');
  });

  it("answers the hub's refusal and a hub that does not answer with the reason's class, audited as failures", async () => {
    const fake = await hub();
    const id = await configureHubGateway(t, token, ORG, fake, { name: 'Refusing hub' });
    fake.answerNext({ status: 403 });
    const refused = await testSend(id);
    expect(refused.status).toBe(200);
    expect(refused.body).toEqual({ outcome: 'refused', status: 403, reason: 'rejected', detail: 'The hub refused the test notification with 403.' });
    fake.answerNext({ status: 503 });
    expect((await testSend(id)).body).toMatchObject({ outcome: 'refused', status: 503, reason: 'server' });
    fake.answerNext({ status: 201, hangMs: 2000 });
    const silent = await testSend(id);
    expect(silent.body).toEqual({ outcome: 'unreachable', status: null, reason: 'timeout', detail: 'timeout: no answer within 500 ms' });
    const failures = (await audited()).filter((event) => event.target === id);
    expect(failures.map((event) => [event.outcome, event.details.reason])).toEqual([
      ['failure', 'rejected'],
      ['failure', 'server'],
      ['failure', 'timeout'],
    ]);
  });

  it('bad input: 401, 403 without Manage OOB Adapter Configuration, 404 unknown gateway, 400 missing or odd handle, 409 a gateway without hub', async () => {
    const fake = await hub();
    const id = await configureHubGateway(t, token, ORG, fake, { name: 'Checked hub' });
    expect((await t.http.post(`/configuration/${ORG}/v2/DeliveryGateway/Push/${id}/test`).send({ pushHandle: 'x' })).status).toBe(401);
    expect((await testSend(id, undefined, helpDesk)).status).toBe(403);
    expectScimError(await testSend('999999'), 404, undefined, 'has no push delivery gateway "999999"');
    expectScimError(await testSend(id, {}), 400, 'invalidValue', 'pushHandle');
    expect((await testSend(id, { pushHandle: 'has space' })).status).toBe(400);
    expect((await testSend(id, { pushHandle: 'ok', extra: 1 })).body.detail).toContain('"extra"');
    // The default WNS gateway every organization starts with has no hub yet.
    const list = await t.http.get(`/configuration/${ORG}/v2/DeliveryGateway/Push`).auth(token, { type: 'bearer' });
    const bare = list.body.resources.find((gateway: { name: string }) => gateway.name === 'Default WNS gateway');
    expectScimError(await testSend(bare.id), 409, undefined, /has no hub; set it with PUT/);
    expect(fake.sends).toHaveLength(0);
  });

  it('PUT settings with If-Match: the current ETag proceeds and the answer carries the next; a stale one is 412 and changes nothing; a bad value is 400 naming the field', async () => {
    const read = await t.http.get(`/admin/v1/organizations/${ORG}`).auth(token, { type: 'bearer' });
    const etag = read.headers.etag;
    expect(etag).toBe(`W/"${read.body.meta.version}"`);
    const settings = `/admin/v1/organizations/${ORG}/settings`;
    const changed = await t.http
      .put(settings)
      .auth(token, { type: 'bearer' })
      .set('If-Match', etag)
      .send({ automaticDeviceCreation: true, applicationIdPolicy: 'any', accessTokenLifetime: 900 });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ automaticDeviceCreation: true, accessTokenLifetime: 900 });
    expect(changed.body.meta).toBeUndefined();
    expect(changed.headers.etag).toBe(`W/"${Number(read.body.meta.version) + 1}"`);
    const stale = await t.http
      .put(settings)
      .auth(token, { type: 'bearer' })
      .set('If-Match', etag)
      .send({ automaticDeviceCreation: false, applicationIdPolicy: 'any' });
    expectScimError(stale, 412, undefined, `ETag ${changed.headers.etag}`);
    const bad = await t.http
      .put(settings)
      .auth(token, { type: 'bearer' })
      .set('If-Match', changed.headers.etag)
      .send({ automaticDeviceCreation: true, applicationIdPolicy: 'any', accessTokenLifetime: 5 });
    expectScimError(bad, 400, 'invalidValue', /^Invalid settings: accessTokenLifetime: /);
    const after = await t.http.get(`/admin/v1/organizations/${ORG}`).auth(token, { type: 'bearer' });
    expect(after.body.settings).toMatchObject({ automaticDeviceCreation: true, accessTokenLifetime: 900 });
    expect(after.headers.etag).toBe(changed.headers.etag);
    // Without If-Match the change is unconditional, as before.
    expect((await t.http.put(settings).auth(token, { type: 'bearer' }).send({ automaticDeviceCreation: false, applicationIdPolicy: 'any' })).status).toBe(200);
  });
});
