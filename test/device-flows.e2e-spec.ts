import { randomUUID } from 'node:crypto';
import { p256Csr } from '@app/pki/testing';
import { TestApp, createCardholder, createIssuingOrganization, createTestApp, insertCard, expectScimError, platformAdminToken } from '@app/testing';

/**
 * DeviceFlow (CREDENTIAL-MANAGEMENT.md "DeviceFlow"; DECISIONS 5.2; Issue 14): ASSISTED_ISSUANCE,
 * REISSUANCE and APPLICATIONS_UPDATE walked step by step, ENCODE through the sync-session code path,
 * a wrong step 409, ENCODE before approval 409, cancel.
 */

const SCIM = 'application/scim+json';
const FLOW = 'urn:vendor:scim:api:cms:1.0:DeviceFlow';
const ORG = 'flows';

describe('DeviceFlow', () => {
  let t: TestApp;
  let admin: string;
  let tokens: Record<string, string>;
  let policy: string;
  let printer: string;

  beforeAll(async () => {
    t = await createTestApp();
    admin = await platformAdminToken(t.http);
    ({ tokens } = await createIssuingOrganization(t, admin, ORG, { desk: 'Issuance', approver: 'Issuance', helpdesk: 'Help Desk' }));
    policy = (await adminCall('/device-policies', { name: 'Badge', credentialTypes: ['PKI_CERTIFICATE', 'OATH_HOTP'] })).body.id;
    printer = (await adminCall('/printers', { name: 'Front desk', model: 'CX-30' })).body.id;
  });
  afterAll(() => t.close());

  const adminCall = (path: string, body: unknown) =>
    t.http
      .post(`/admin/v1/organizations/${ORG}${path}`)
      .auth(admin, { type: 'bearer' })
      .send(body as object);
  const post = (path: string, body: unknown, token = tokens.desk) =>
    t.http.post(path).auth(token, { type: 'bearer' }).set('Content-Type', SCIM).send(JSON.stringify(body));

  /** The card's CSR (base64 DER), as a card makes one. */
  const csr = async () => (await p256Csr()).toString('base64');

  const cardholder = (userName: string) => createCardholder(t, admin, ORG, userName);
  const card = (status = 'AVAILABLE', owner: string | null = null) => insertCard(t, ORG, { status, owner });

  const encode = async (device: { ATR: string; CUID: string }) => ({
    step: 'ENCODE',
    device: { ATR: device.ATR, CUID: device.CUID },
    responses: [
      { operation: 'ENCODE_PKI_CERTIFICATE', status: 'SUCCESS', credentialType: 'PKI_CERTIFICATE', csr: await csr() },
      { operation: 'ENCODE_OATH_HOTP', status: 'SUCCESS', credentialType: 'OATH_HOTP' },
    ],
  });
  const start = (body: Record<string, unknown>, token = tokens.desk) => post('/aims/rs/scim/v2/DeviceFlow', { schemas: [FLOW], ...body }, token);

  it('ASSISTED_ISSUANCE with a printer: COLLECT_DATA, PRINT, ENCODE after approval; wrong steps are 409s', async () => {
    const ann = await cardholder('ann');
    const device = await card();
    const started = await start({
      type: 'ASSISTED_ISSUANCE',
      wallet: { value: ann.wallet },
      device: { value: device.id },
      devicePolicy: { value: policy },
      printer: { value: printer },
    });
    expect(started.status).toBe(201);
    const id = started.body.id;
    expect(started.headers.location).toBe(`https://api.example.test/aims/rs/scim/v2/DeviceFlow/${id}`);
    expect(started.body).toMatchObject({
      schemas: [FLOW],
      type: 'ASSISTED_ISSUANCE',
      status: 'IN_PROGRESS',
      steps: ['COLLECT_DATA', 'PRINT', 'ENCODE'],
      currentStep: 'COLLECT_DATA',
      wallet: { value: ann.wallet },
      device: { value: device.id },
      contentRequest: { status: 'requested' },
      responses: [],
      operations: [{ name: 'COLLECT_ENROLLMENT_DATA', type: 'COLLECT' }],
      meta: { resourceType: 'DeviceFlow', version: '1' },
    });
    const path = `/aims/rs/scim/v2/DeviceFlow/${id}`;
    expectScimError(
      await post(path, { step: 'PRINT', responses: [] }),
      409,
      undefined,
      `DeviceFlow ${id} is at step COLLECT_DATA; a response for PRINT is not expected (steps: COLLECT_DATA, PRINT, ENCODE).`,
    );
    const collected = await post(path, { step: 'COLLECT_DATA', responses: [{ name: 'employeeId', output: 'E-1001' }] });
    expect(collected.status).toBe(200);
    expect(collected.body).toMatchObject({
      currentStep: 'PRINT',
      responses: [{ step: 'COLLECT_DATA', name: 'employeeId', output: '(enrollment data)' }],
      operations: [{ name: 'PRINT_CARD', type: 'PRINT', payload: { printer: { value: printer, display: 'Front desk' }, layout: { userName: 'ann' } } }],
    });
    const enrollment = (await t.db.query('SELECT attributes FROM enrollment_data WHERE user_id = $1', [ann.id])).rows[0].attributes;
    expect(enrollment).toEqual([{ name: 'employeeId', value: 'E-1001' }]);
    const printed = await post(path, { step: 'PRINT', responses: [{ name: 'PRINT_CARD', output: 'printed' }] });
    expect(printed.body).toMatchObject({
      currentStep: 'ENCODE',
      operations: [
        { name: 'ENCODE_PKI_CERTIFICATE', payload: { credentialType: 'PKI_CERTIFICATE', respondWith: 'csr' } },
        { name: 'ENCODE_OATH_HOTP', payload: { digits: 6 } },
      ],
    });
    expectScimError(
      await post(path, await encode(device)),
      409,
      undefined,
      `DeviceFlow ${id} cannot encode yet: approval is pending (content request ${started.body.contentRequest.value} is requested; another operator approves it).`,
    );
    expect((await post(`/aims/rs/scim/v2/ContentRequest/${started.body.contentRequest.value}/approve`, {}, tokens.approver)).status).toBe(200);
    const encoded = await post(path, await encode(device));
    expect(encoded.status).toBe(200);
    expect(encoded.body).toMatchObject({ status: 'COMPLETED', contentRequest: { status: 'completed' }, operations: [] });
    expect(encoded.body.currentStep).toBeUndefined();
    expect(encoded.body.syncSession).toMatchObject({
      device: { status: 'ISSUED' },
      credentials: [{ type: 'PKI_CERTIFICATE' }, { type: 'OATH_HOTP', secret: expect.any(String) }],
    });
    expect(encoded.body.syncSession.credentials[1].otpauthUri).toMatch(/^otpauth:\/\/hotp\/.*&counter=0$/);
    expectScimError(
      await post(path, { step: 'ENCODE', device: { ATR: device.ATR, CUID: device.CUID }, responses: [{ operation: 'x', status: 'SUCCESS' }] }),
      409,
      undefined,
      `DeviceFlow ${id} is COMPLETED; it takes no more steps.`,
    );
    const codes = (await t.db.query('SELECT code FROM audit_events WHERE target = $1 ORDER BY id', [id])).rows.map((r) => r.code);
    expect(codes).toEqual([30011, 30012, 30012, 30012]);
  });

  it('APPLICATIONS_UPDATE is ENCODE only and Help Desk may run it; ASSISTED_ISSUANCE is Device Management only', async () => {
    const bo = await cardholder('bo');
    const device = await card('ISSUED', bo.id);
    expectScimError(
      await start(
        { type: 'ASSISTED_ISSUANCE', wallet: { value: bo.wallet }, device: { value: (await card()).id }, devicePolicy: { value: policy } },
        tokens.helpdesk,
      ),
      403,
      undefined,
      'This entry point needs the permission deviceFlow.issuance, which the role "Help Desk" does not grant.',
    );
    // The scm alias and the customer form answer as the canonical path does.
    const started = await post(
      '/aims/rs/scm/v2/DeviceFlow',
      { schemas: [FLOW], type: 'APPLICATIONS_UPDATE', wallet: { value: bo.wallet }, device: { value: device.id }, devicePolicy: { value: policy } },
      tokens.helpdesk,
    );
    expect(started.status).toBe(201);
    expect(started.body).toMatchObject({ steps: ['ENCODE'], currentStep: 'ENCODE', contentRequest: { status: 'approved' } });
    const encoded = await post(`/credential-management/customer/${ORG}/deviceflow/${started.body.id}`, await encode(device), tokens.helpdesk);
    expect(encoded.body).toMatchObject({ status: 'COMPLETED', syncSession: { device: { status: 'ISSUED' } } });
  });

  it('REISSUANCE revokes the old card with the reason, then issues on the new one; its inputs are checked', async () => {
    const cy = await cardholder('cy');
    const other = await cardholder('dee');
    const old = await card('ISSUED', cy.id);
    const theirs = await card('ISSUED', other.id);
    const fresh = await card();
    const base = { type: 'REISSUANCE', wallet: { value: cy.wallet }, device: { value: fresh.id }, devicePolicy: { value: policy } };
    expectScimError(await start(base), 400, 'invalidValue', 'A REISSUANCE flow needs oldDevice: {value: <device id>}, the card it replaces.');
    expectScimError(
      await start({ ...base, oldDevice: { value: theirs.id }, reason: 'LOST' }),
      400,
      'invalidValue',
      `oldDevice ${theirs.id} is not a device of wallet ${cy.wallet}.`,
    );
    const started = await start({ ...base, oldDevice: { value: old.id }, reason: 'LOST' });
    expect(started.status).toBe(201);
    expect(started.body).toMatchObject({ steps: ['COLLECT_DATA', 'ENCODE'], currentStep: 'COLLECT_DATA' });
    expect((await t.db.query('SELECT status, reason FROM devices WHERE id = $1', [old.id])).rows[0]).toEqual({ status: 'REVOKED', reason: 'LOST' });
    expect((await t.db.query('SELECT reason FROM content_requests WHERE id = $1', [started.body.contentRequest.value])).rows[0].reason).toBe('LOST');
  });

  it('cancel ends the flow and its request and gives the card back; a FAILURE at ENCODE fails the flow', async () => {
    const eve = await cardholder('eve');
    const device = await card();
    const started = await start({ type: 'ASSISTED_ISSUANCE', wallet: { value: eve.wallet }, device: { value: device.id }, devicePolicy: { value: policy } });
    const cancelled = await post(`/aims/rs/scim/v2/DeviceFlow/${started.body.id}`, { cancel: true });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'CANCELLED', contentRequest: { status: 'cancelled' }, operations: [] });
    expect((await t.db.query('SELECT status FROM devices WHERE id = $1', [device.id])).rows[0].status).toBe('AVAILABLE');
    expectScimError(await post(`/aims/rs/scim/v2/DeviceFlow/${started.body.id}`, { cancel: false }), 400, 'invalidValue', /cancel: must be true|step/);

    const again = await start({ type: 'ASSISTED_ISSUANCE', wallet: { value: eve.wallet }, device: { value: device.id }, devicePolicy: { value: policy } });
    await post(`/aims/rs/scim/v2/ContentRequest/${again.body.contentRequest.value}/approve`, {}, tokens.approver);
    const path = `/aims/rs/scim/v2/DeviceFlow/${again.body.id}`;
    await post(path, { step: 'COLLECT_DATA', responses: [] });
    const failed = await post(path, {
      step: 'ENCODE',
      device: { ATR: device.ATR, CUID: device.CUID },
      responses: [{ operation: 'ENCODE_PKI_CERTIFICATE', status: 'FAILURE', detail: 'card mute' }],
    });
    expect(failed.body).toMatchObject({ status: 'FAILED', contentRequest: { status: 'failed' }, syncSession: { credentials: [] } });
    const unknown = randomUUID();
    expectScimError(await post(`/aims/rs/scim/v2/DeviceFlow/${unknown}`, { cancel: true }), 404, undefined, `DeviceFlow ${unknown} does not exist.`);
  });
});
