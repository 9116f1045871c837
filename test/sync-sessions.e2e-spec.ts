import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Pkcs11Hsm } from '@app/hsm';
import { simulateModuleFailure } from '@app/hsm/testing';
import { p256Csr } from '@app/pki/testing';
import {
  TestApp,
  createCardholder,
  createIssuingOrganization,
  createTestApp,
  expectScimError,
  insertCard,
  openssl,
  opensslCsr,
  platformAdminToken,
  tokenRequest,
} from '@app/testing';

/**
 * SyncSession and Credential (CREDENTIAL-MANAGEMENT.md "SyncSession", "PKI"; Issue 14): an approved
 * request executed from what the card reports, in one transaction: certificates from the card's CSR
 * (verified by openssl against the chain answered), OATH secrets returned once and stored sealed, the
 * device moved, the request completed; a failure changes nothing else; a bad CSR leaves the request
 * approved; exactly one of two sessions completes a request.
 */

const SCIM = 'application/scim+json';
const REQUEST = 'urn:vendor:scim:api:cms:1.0:ContentRequest';
const SESSION = 'urn:vendor:scim:api:cms:1.0:SyncSession';
const PASSWORD = 'correct horse battery staple';
const ORG = 'sync';

describe('SyncSession and Credential', () => {
  let t: TestApp;
  let admin: string;
  let tokens: Record<string, string>;
  let pkiAndTotp: string;
  let pkiOnly: string;
  const dir = join(process.env.TEST_RUN_DIR!, `sync-${randomBytes(4).toString('hex')}`);

  beforeAll(async () => {
    mkdirSync(dir, { recursive: true });
    t = await createTestApp();
    admin = await platformAdminToken(t.http);
    ({ tokens } = await createIssuingOrganization(t, admin, ORG, { issuer: 'Issuance', approver: 'Issuance', helpdesk: 'Help Desk' }));
    pkiAndTotp = (await adminCall('post', '/device-policies', { name: 'Badge and OTP', credentialTypes: ['PKI_CERTIFICATE', 'OATH_TOTP'] })).body.id;
    pkiOnly = (await adminCall('post', '/device-policies', { name: 'Badge', credentialTypes: ['PKI_CERTIFICATE'] })).body.id;
  });
  afterAll(() => t.close());

  const adminCall = (method: 'post' | 'put', path: string, body: unknown) =>
    t.http[method](`/admin/v1/organizations/${ORG}${path}`)
      .auth(admin, { type: 'bearer' })
      .send(body as object);
  const get = (path: string, token = tokens.helpdesk) => t.http.get(path).auth(token, { type: 'bearer' }).set('Accept', SCIM);
  const post = (path: string, body: unknown, token = tokens.issuer) =>
    t.http.post(path).auth(token, { type: 'bearer' }).set('Content-Type', SCIM).send(JSON.stringify(body));

  /** A card's P-256 CSR, base64 DER (the project's own test CSR). */
  const csr = async () => (await p256Csr()).toString('base64');

  const cardholder = (userName: string) =>
    createCardholder(t, admin, ORG, userName, { password: PASSWORD, emails: [{ value: `${userName}@example.com`, primary: true }] });
  const card = (status = 'AVAILABLE', owner: string | null = null) => insertCard(t, ORG, { status, owner });

  /** An issuance (or produce) request, approved by a second operator. */
  async function approvedIssuance(wallet: string, device: string, policy = pkiAndTotp, type = 'issuance'): Promise<string> {
    const created = await post('/aims/rs/scim/v2/ContentRequest', {
      schemas: [REQUEST],
      type,
      target: { device: { value: device }, devicePolicy: { value: policy } },
      wallet: { value: wallet },
    });
    expect(created.status).toBe(201);
    const approved = await post(`/aims/rs/scim/v2/ContentRequest/${created.body.id}/approve`, {}, tokens.approver);
    expect(approved.body.status).toBe('approved');
    return created.body.id;
  }

  const session = (request: string, device: { ATR: string; CUID: string }, results: unknown[], token = tokens.issuer, path = '/aims/rs/scim/v2/SyncSession') =>
    post(path, { schemas: [SESSION], contentRequest: { value: request }, device: { ATR: device.ATR, CUID: device.CUID }, results }, token);
  const success = (csrPem?: string) => [
    { operation: 'GENERATE_KEY', status: 'SUCCESS', credentialType: 'PKI_CERTIFICATE', ...(csrPem ? { csr: csrPem } : {}) },
    { operation: 'WRITE_OTP', status: 'SUCCESS', credentialType: 'OATH_TOTP' },
  ];
  const statusOf = async (table: 'devices' | 'content_requests', id: string) =>
    (await t.db.query(`SELECT status FROM ${table} WHERE id = $1`, [id])).rows[0].status;

  it('issuance end to end: the certificate verifies against the chain, the OATH secret comes once, the device is ISSUED', async () => {
    const jane = await cardholder('jane');
    const device = await card();
    const request = await approvedIssuance(jane.wallet, device.id);
    const done = await session(request, { ATR: '3b8f8001', CUID: device.CUID }, success(opensslCsr(dir)));
    expect(done.status).toBe(201);
    expect(done.body).toMatchObject({
      schemas: [SESSION],
      contentRequest: { value: request, status: 'completed' },
      device: { value: device.id, status: 'ISSUED', adminKey: expect.stringMatching(/^[0-9A-F]{48}$/) },
    });
    expect(t.logs.join('\n')).not.toContain(done.body.device.adminKey);
    const [pki, totp] = done.body.credentials;
    expect(pki).toMatchObject({
      type: 'PKI_CERTIFICATE',
      status: 'ISSUED',
      certificate: { value: expect.any(String), pem: expect.stringContaining('BEGIN CERTIFICATE') },
    });
    writeFileSync(join(dir, 'chain.pem'), pki.certificate.chain.join(''));
    writeFileSync(join(dir, 'leaf.pem'), pki.certificate.pem);
    expect(openssl('verify', '-CAfile', join(dir, 'chain.pem'), join(dir, 'leaf.pem')).trim()).toBe(`${join(dir, 'leaf.pem')}: OK`);
    expect(openssl('x509', '-in', join(dir, 'leaf.pem'), '-noout', '-subject')).toContain('CN = jane');
    expect(openssl('x509', '-in', join(dir, 'leaf.pem'), '-noout', '-ext', 'subjectAltName')).toContain('email:jane@example.com');

    expect(totp).toMatchObject({ type: 'OATH_TOTP', status: 'ISSUED', secret: expect.stringMatching(/^[A-Z2-7]{32}$/) });
    expect(totp.otpauthUri).toBe(`otpauth://totp/Organization%20sync:jane?secret=${totp.secret}&issuer=Organization%20sync&algorithm=SHA1&digits=6&period=30`);
    const stored = (await t.db.query('SELECT oath_secret, oath_key_id FROM credentials WHERE id = $1', [totp.value])).rows[0];
    expect(stored.oath_key_id).toEqual(expect.any(String));
    expect(stored.oath_secret.toString('latin1')).not.toContain(totp.secret);
    expect(t.logs.join('\n')).not.toContain(totp.secret);
    const audited = (await t.db.query('SELECT details::text AS d FROM audit_events WHERE org_id = $1', [ORG])).rows.map((r) => r.d).join('\n');
    expect(audited).toContain(totp.value);
    expect(audited).not.toContain(totp.secret);

    const read = await get(`/aims/rs/scim/v2/Credential/${totp.value}`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      id: totp.value,
      type: 'OATH_TOTP',
      status: 'ISSUED',
      device: { value: device.id },
      wallet: { value: jane.wallet },
      oath: { digits: 6, period: 30 },
    });
    expect(JSON.stringify(read.body)).not.toContain(totp.secret);
    const certificate = await get(`/credential-management/customer/${ORG}/credential/${pki.value}`);
    expect(certificate.body.certificate).toMatchObject({ value: pki.certificate.value, subject: expect.stringContaining('CN=jane') });
    const held = (await get(`/aims/rs/scim/v2/Wallet/${jane.wallet}`)).body.credentials.map((c: { value: string }) => c.value);
    expect(held.sort()).toEqual([pki.value, totp.value].sort());
    expect(await statusOf('devices', device.id)).toBe('ISSUED');

    const events = (
      await t.db.query('SELECT code FROM audit_events WHERE org_id = $1 AND correlation_id = $2 ORDER BY id', [ORG, done.headers['x-correlation-id']])
    ).rows.map((r) => r.code);
    expect(events).toEqual(expect.arrayContaining([60002, 20001, 20001, 10001, 30005]));
    const stats = await get('/aims/rs/scim/v2/Stats');
    expect(stats.body.credentials.ISSUED).toBeGreaterThanOrEqual(2);

    expectScimError(
      await session(request, device, success(await csr())),
      409,
      undefined,
      `Content request ${request} is completed; a sync session executes only an approved request.`,
    );
  });

  it('answers on the scm alias and the customer form too (vendor media type)', async () => {
    const ida = await cardholder('ida');
    const device = await card();
    const request = await approvedIssuance(ida.wallet, device.id, pkiOnly);
    const body = {
      schemas: [SESSION],
      contentRequest: { value: request },
      device: { ATR: device.ATR, CUID: device.CUID },
      results: [{ operation: 'GEN', status: 'SUCCESS', credentialType: 'PKI_CERTIFICATE', csr: await csr() }],
    };
    const vendor = 'application/vnd.vendor.ma.credential-management-2.2+json';
    const done = await t.http
      .post(`/credential-management/customer/${ORG}/syncsession`)
      .auth(tokens.issuer, { type: 'bearer' })
      .set('Content-Type', vendor)
      .send(JSON.stringify(body));
    expect(done.status).toBe(201);
    expect(done.headers['content-type']).toContain(vendor);
    expect(done.body).toMatchObject({ contentRequest: { status: 'completed' } });
    const credential = done.body.credentials[0].value;
    expect((await get(`/aims/rs/scm/v2/Credential/${credential}`)).body).toMatchObject({ id: credential, status: 'ISSUED' });
    expectScimError(await session(request, device, body.results, tokens.issuer, '/aims/rs/scm/v2/SyncSession'), 409, undefined, /is completed/);
  });

  it('an HSM fault while signing is a 503 with Retry-After; the request stays approved and completes once the HSM is back', async () => {
    const joe = await cardholder('joe');
    const device = await card();
    const request = await approvedIssuance(joe.wallet, device.id, pkiOnly);
    const results = [{ operation: 'GEN', status: 'SUCCESS', credentialType: 'PKI_CERTIFICATE', csr: await csr() }];
    simulateModuleFailure(t.app.get(Pkcs11Hsm), 'sessions-closed');
    const refused = await session(request, device, results);
    expect(refused.status).toBe(503);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '503' });
    expect(await statusOf('content_requests', request)).toBe('approved');
    expect(await statusOf('devices', device.id)).toBe('ASSIGNED');
    expect((await t.db.query('SELECT count(*)::int AS n FROM credentials WHERE device_id = $1', [device.id])).rows[0].n).toBe(0);
    let done = refused;
    for (let i = 0; i < 80 && done.status !== 201; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      done = await session(request, device, results);
    }
    expect(done.status).toBe(201);
    expect(done.body).toMatchObject({
      contentRequest: { status: 'completed' },
      device: { status: 'ISSUED', adminKey: expect.stringMatching(/^[0-9A-F]{48}$/) },
    });
  });

  it('of two concurrent sessions for one request exactly one completes it', async () => {
    const kim = await cardholder('kim');
    const device = await card();
    const request = await approvedIssuance(kim.wallet, device.id, pkiOnly);
    const answers = await Promise.all(
      [0, 1, 2].map(async () => session(request, device, [{ operation: 'GEN', status: 'SUCCESS', credentialType: 'PKI_CERTIFICATE', csr: await csr() }])),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409]);
    expect((await t.db.query('SELECT count(*)::int AS n FROM credentials WHERE content_request_id = $1', [request])).rows[0].n).toBe(1);
    expect((await t.db.query('SELECT count(*)::int AS n FROM issued_certificates WHERE user_id = $1', [kim.id])).rows[0].n).toBe(1);
  });

  it('a FAILURE fails the request and changes nothing else; retry, then success', async () => {
    const lia = await cardholder('lia');
    const device = await card();
    const request = await approvedIssuance(lia.wallet, device.id);
    const failed = await session(request, device, [{ operation: 'GENERATE_KEY', status: 'FAILURE', detail: 'card removed from the reader' }]);
    expect(failed.status).toBe(201);
    expect(failed.body).toMatchObject({ contentRequest: { status: 'failed' }, device: { value: device.id, status: 'ASSIGNED' }, credentials: [] });
    expect(failed.body.device).not.toHaveProperty('adminKey');
    expect((await get(`/aims/rs/scim/v2/ContentRequest/${request}`)).body).toMatchObject({
      status: 'failed',
      failure: { detail: 'card removed from the reader' },
    });
    expect((await t.db.query('SELECT count(*)::int AS n FROM credentials WHERE device_id = $1', [device.id])).rows[0].n).toBe(0);
    expect(await post(`/aims/rs/scim/v2/ContentRequest/${request}/retry`, {}, tokens.helpdesk)).toMatchObject({ status: 200 });
    expect((await session(request, device, success(await csr()))).body).toMatchObject({
      contentRequest: { status: 'completed' },
      device: { status: 'ISSUED', adminKey: expect.stringMatching(/^[0-9A-F]{48}$/) },
    });
  });

  it('a CSR the CA refuses, a missing result and the wrong card are refused; the request stays approved', async () => {
    const max = await cardholder('max');
    const device = await card();
    const request = await approvedIssuance(max.wallet, device.id);
    expectScimError(await session(request, device, success('not a csr')), 400, 'invalidValue', /^CSR_INVALID: /);
    expectScimError(await session(request, device, success()), 400, 'invalidValue', /^CSR_INVALID: the PKI_CERTIFICATE result needs csr/);
    expectScimError(
      await session(request, device, [success(await csr())[0]]),
      400,
      'invalidValue',
      'results hold no SUCCESS for the credential type OATH_TOTP of device policy "Badge and OTP"; report one per credential type.',
    );
    expectScimError(
      await session(request, device, success(opensslCsr(dir, { keyArgs: ['rsa:2048'] }))),
      400,
      'invalidValue',
      "CSR_KEY_POLICY: the CSR's key is RSA-2048, which CredentialPolicy keyAlgorithms (EC-P256, EC-P384, RSA-3072, RSA-4096) does not allow.",
    );
    expectScimError(
      await session(request, { ATR: device.ATR, CUID: '1' }, success(await csr())),
      409,
      undefined,
      `The card presented (ATR ${device.ATR}, CUID 1) is not device ${device.id}, the target of content request ${request}.`,
    );
    expectScimError(
      await post('/aims/rs/scim/v2/SyncSession', { schemas: [SESSION], contentRequest: { value: request }, device, results: [] }),
      400,
      'invalidValue',
      /results: must report at least one operation/,
    );
    expect(await statusOf('content_requests', request)).toBe('approved');
    expect(await statusOf('devices', device.id)).toBe('ASSIGNED');
    expect((await t.db.query('SELECT count(*)::int AS n FROM issued_certificates WHERE user_id = $1', [max.id])).rows[0].n).toBe(0);
    const waiting = await post('/aims/rs/scim/v2/ContentRequest', {
      schemas: [REQUEST],
      type: 'issuance',
      target: { device: { value: (await card()).id }, devicePolicy: { value: pkiOnly } },
      wallet: { value: max.wallet },
    });
    expectScimError(
      await session(waiting.body.id, device, success(await csr())),
      409,
      undefined,
      `Content request ${waiting.body.id} is requested; a sync session executes only an approved request.`,
    );
    expectScimError(
      await session(request, device, success(await csr()), tokens.helpdesk),
      403,
      undefined,
      'This entry point needs the permission syncSession.execute, which the role "Help Desk" does not grant.',
    );
  });

  it('produce leaves the device PRODUCED with its certificate on hold; update supersedes; recycle revokes and empties the wallet', async () => {
    const ned = await cardholder('ned');
    const produced = await card();
    const request = await approvedIssuance(ned.wallet, produced.id, pkiOnly, 'produce');
    const done = await session(request, produced, [{ operation: 'GEN', status: 'SUCCESS', credentialType: 'PKI_CERTIFICATE', csr: await csr() }]);
    expect(done.body).toMatchObject({
      device: { status: 'PRODUCED', adminKey: expect.stringMatching(/^[0-9A-F]{48}$/) },
      credentials: [{ type: 'PKI_CERTIFICATE', status: 'ON_HOLD' }],
    });
    const serial = (await t.db.query('SELECT certificate_serial FROM credentials WHERE id = $1', [done.body.credentials[0].value])).rows[0].certificate_serial;
    expect((await t.db.query('SELECT status, reason FROM issued_certificates WHERE serial = $1', [serial])).rows[0]).toEqual({
      status: 'on-hold',
      reason: 'certificateHold',
    });

    const issued = await card();
    await session(await approvedIssuance(ned.wallet, issued.id, pkiOnly), issued, [
      { operation: 'GEN', status: 'SUCCESS', credentialType: 'PKI_CERTIFICATE', csr: await csr() },
    ]);
    const first = (await t.db.query('SELECT id, certificate_serial FROM credentials WHERE device_id = $1', [issued.id])).rows[0];
    const update = await post('/aims/rs/scim/v2/ContentRequest', {
      schemas: [REQUEST],
      type: 'update',
      target: { device: { value: issued.id }, devicePolicy: { value: pkiAndTotp } },
    });
    expect(update.body.status).toBe('approved');
    const updated = await session(update.body.id, issued, success(await csr()));
    expect(updated.body).toMatchObject({
      contentRequest: { status: 'completed' },
      device: { status: 'ISSUED', adminKey: expect.stringMatching(/^[0-9A-F]{48}$/) },
    });
    expect(updated.body.credentials.map((c: { type: string }) => c.type)).toEqual(['PKI_CERTIFICATE', 'OATH_TOTP']);
    expect((await get(`/aims/rs/scim/v2/Credential/${first.id}`)).body).toMatchObject({ status: 'REVOKED', revocationReason: 'superseded' });
    expect((await t.db.query('SELECT status, reason FROM issued_certificates WHERE serial = $1', [first.certificate_serial])).rows[0]).toEqual({
      status: 'revoked',
      reason: 'superseded',
    });

    // The card is terminated (the device entry point), then recycled.
    await t.db.query("UPDATE devices SET status = 'TERMINATED', owner_user_id = NULL WHERE id = $1", [issued.id]);
    const recycle = await post(
      '/aims/rs/scim/v2/ContentRequest',
      { schemas: [REQUEST], type: 'recycle', target: { device: { value: issued.id } } },
      tokens.helpdesk,
    );
    const recycled = await session(recycle.body.id, issued, [{ operation: 'ERASE', status: 'SUCCESS' }]);
    expect(recycled.body).toMatchObject({ contentRequest: { status: 'completed' }, device: { status: 'AVAILABLE' }, credentials: [] });
    expect(recycled.body.device).not.toHaveProperty('adminKey');
    // Ordered by reason: the two credentials of the update share one transaction's timestamp, so
    // creation time does not order them.
    const left = (await t.db.query('SELECT status, wallet_id, revocation_reason FROM credentials WHERE device_id = $1 ORDER BY revocation_reason', [issued.id]))
      .rows;
    expect(left).toEqual([
      { status: 'REVOKED', wallet_id: null, revocation_reason: 'cessationOfOperation' },
      { status: 'REVOKED', wallet_id: null, revocation_reason: 'cessationOfOperation' },
      { status: 'REVOKED', wallet_id: null, revocation_reason: 'superseded' },
    ]);
    expect((await get(`/aims/rs/scim/v2/Wallet/${ned.wallet}`)).body.credentials).toHaveLength(1);
    const crl = await t.bare.get(`/pki/${ORG}/crl`).responseType('blob');
    writeFileSync(join(dir, 'crl.der'), crl.body as Buffer);
    const listed = openssl('crl', '-inform', 'DER', '-in', join(dir, 'crl.der'), '-noout', '-text');
    expect(listed).toContain(first.certificate_serial.toUpperCase());
  });

  it('credentials follow their device: suspend, resume, activate, wallet suspension, revoke, a forced user deletion', async () => {
    const certificateOf = async (credential: string) =>
      (
        await t.db.query(
          'SELECT i.status, i.reason FROM credentials c JOIN issued_certificates i ON i.org_id = c.org_id AND i.serial = c.certificate_serial WHERE c.id = $1',
          [credential],
        )
      ).rows[0];
    const credentialsOf = async (device: string) =>
      (await t.db.query('SELECT id, type, status, revocation_reason FROM credentials WHERE device_id = $1 ORDER BY type', [device])).rows;
    const act = (device: string, action: string, body: Record<string, string> = {}, token = tokens.helpdesk) =>
      post(`/aims/rs/scim/v2/Device/${device}/${action}`, body, token);

    const oda = await cardholder('oda');
    const device = await card();
    const done = await session(await approvedIssuance(oda.wallet, device.id), device, success(await csr()));
    const pki = done.body.credentials[0].value;
    expect((await act(device.id, 'suspend', { reason: 'LOST' })).status).toBe(200);
    expect((await credentialsOf(device.id)).map((c) => c.status)).toEqual(['ON_HOLD', 'ON_HOLD']);
    expect(await certificateOf(pki)).toEqual({ status: 'on-hold', reason: 'certificateHold' });
    expect((await act(device.id, 'resume')).status).toBe(200);
    expect((await credentialsOf(device.id)).map((c) => c.status)).toEqual(['ISSUED', 'ISSUED']);
    expect(await certificateOf(pki)).toEqual({ status: 'good', reason: null });

    expect((await post(`/aims/rs/scim/v2/Wallet/${oda.wallet}/suspend`, { reason: 'FORGOTTEN' }, tokens.helpdesk)).status).toBe(200);
    expect(await certificateOf(pki)).toEqual({ status: 'on-hold', reason: 'certificateHold' });
    expect((await post(`/aims/rs/scim/v2/Wallet/${oda.wallet}/resume`, {}, tokens.helpdesk)).status).toBe(200);
    expect((await get(`/aims/rs/scim/v2/Credential/${pki}`)).body.status).toBe('ISSUED');

    expect((await act(device.id, 'revoke', { reason: 'STOLEN' })).status).toBe(200);
    expect(await credentialsOf(device.id)).toEqual([
      expect.objectContaining({ type: 'OATH_TOTP', status: 'REVOKED', revocation_reason: 'keyCompromise' }),
      expect.objectContaining({ type: 'PKI_CERTIFICATE', status: 'REVOKED', revocation_reason: 'keyCompromise' }),
    ]);
    expect(await certificateOf(pki)).toEqual({ status: 'revoked', reason: 'keyCompromise' });
    const events = (await t.db.query('SELECT code FROM audit_events WHERE target = $1 ORDER BY id', [pki])).rows.map((r) => r.code);
    expect(events).toEqual([20001, 20003, 20004, 20003, 20004, 20002]);

    const produced = await card();
    const made = await session(await approvedIssuance(oda.wallet, produced.id, pkiOnly, 'produce'), produced, [
      { operation: 'GEN', status: 'SUCCESS', credentialType: 'PKI_CERTIFICATE', csr: await csr() },
    ]);
    expect((await act(produced.id, 'activate', {}, tokens.issuer)).status).toBe(200);
    expect(await certificateOf(made.body.credentials[0].value)).toEqual({ status: 'good', reason: null });
    expect((await get(`/aims/rs/scim/v2/Credential/${made.body.credentials[0].value}`)).body.status).toBe('ISSUED');

    const deleted = await t.http.delete(`/admin/v1/organizations/${ORG}/users/${oda.id}?force=true`).auth(admin, { type: 'bearer' });
    expect(deleted.status).toBe(204);
    expect(await credentialsOf(produced.id)).toEqual([expect.objectContaining({ status: 'REVOKED', revocation_reason: 'cessationOfOperation' })]);
    expect(await certificateOf(made.body.credentials[0].value)).toEqual({ status: 'revoked', reason: 'cessationOfOperation' });
  });

  it('an unlock pin for a card suspended since the request was made is refused (409 naming the status); the request stays approved', async () => {
    const pia = await cardholder('pia');
    const device = await card('ISSUED', pia.id);
    const request = await post(
      '/aims/rs/scim/v2/ContentRequest',
      { schemas: [REQUEST], type: 'unlock pin', target: { device: { value: device.id } } },
      tokens.helpdesk,
    );
    expect((await post(`/aims/rs/scim/v2/Device/${device.id}/suspend`, { reason: 'LOST' }, tokens.helpdesk)).status).toBe(200);
    expectScimError(
      await session(request.body.id, device, [{ operation: 'UNBLOCK_PIN', status: 'SUCCESS' }]),
      409,
      undefined,
      `Device ${device.id} is ON_HOLD; a "unlock pin" request completes only on a device that is ISSUED.`,
    );
    expect(await statusOf('content_requests', request.body.id)).toBe('approved');
  });

  it('an issuance whose request has lost its wallet is refused (409: cancel it), and nothing is issued', async () => {
    const walt = await cardholder('walt');
    const device = await card();
    const request = await approvedIssuance(walt.wallet, device.id, pkiOnly);
    // The API never makes such a request (an issuance names its wallet, and a deleted wallet takes its
    // requests with it); only the database can leave one, and the session must not issue to nobody.
    await t.db.query('UPDATE content_requests SET wallet_id = NULL WHERE id = $1', [request]);
    expectScimError(
      await session(request, device, [success(await csr())[0]]),
      409,
      undefined,
      `Content request ${request} has no wallet owner to issue to; cancel it.`,
    );
    expect(await statusOf('content_requests', request)).toBe('approved');
    expect(await statusOf('devices', device.id)).toBe('ASSIGNED');
    expect((await t.db.query('SELECT count(*)::int AS n FROM credentials WHERE content_request_id = $1', [request])).rows[0].n).toBe(0);
    expect((await t.db.query('SELECT count(*)::int AS n FROM issued_certificates WHERE user_id = $1', [walt.id])).rows[0].n).toBe(0);
  });

  it("a cardholder's own unlock pin runs through /Self/SyncSession and is audited as a PIN unlock", async () => {
    const uma = await cardholder('uma');
    const device = await card('ISSUED', uma.id);
    const grant = await tokenRequest(t.http, ORG, { grant_type: 'password', username: 'uma', password: PASSWORD });
    const token = grant.body.access_token;
    const request = await post(
      '/aims/rs/scim/v2/Self/ContentRequest',
      { schemas: [REQUEST], type: 'unlock pin', target: { device: { value: device.id } } },
      token,
    );
    expect(request.status).toBe(201);
    const done = await session(request.body.id, device, [{ operation: 'UNBLOCK_PIN', status: 'SUCCESS' }], token, '/aims/rs/scim/v2/Self/SyncSession');
    expect(done.status).toBe(201);
    expect(done.body).toMatchObject({ contentRequest: { status: 'completed' }, device: { status: 'ISSUED' }, credentials: [] });
    expect(done.body.device).not.toHaveProperty('adminKey');
    const codes = (await t.db.query('SELECT code FROM audit_events WHERE target = $1 ORDER BY id', [request.body.id])).rows.map((r) => r.code);
    expect(codes).toEqual([30001, 30005, 30009]);
    const other = await cardholder('vic');
    const theirs = await card('ISSUED', other.id);
    const theirRequest = await post(
      '/aims/rs/scim/v2/ContentRequest',
      { schemas: [REQUEST], type: 'unlock pin', target: { device: { value: theirs.id } } },
      tokens.helpdesk,
    );
    expectScimError(
      await session(theirRequest.body.id, theirs, [{ operation: 'UNBLOCK_PIN', status: 'SUCCESS' }], token, '/aims/rs/scim/v2/Self/SyncSession'),
      400,
      'invalidValue',
      `contentRequest ${theirRequest.body.id} does not exist in this organization.`,
    );
  });
});
