import { randomUUID } from 'node:crypto';
import { ContentRequestSweepJob } from '@app/credential-management';
import {
  TestApp,
  createOrganization,
  createSystemAccount,
  createCardholder,
  createIssuingOrganization,
  createTestApp,
  expectScimError,
  insertCard,
  makeCertificate,
  platformAdminToken,
  signAssertion,
  tokenBySecret,
  tokenRequest,
  operatorDependentScopeFile,
} from '@app/testing';

/**
 * ContentRequest (CREDENTIAL-MANAGEMENT.md "ContentRequest lifecycle"; DECISIONS 5.2; Issue 14):
 * creation with each of its checks, four eyes, every move of the lifecycle table and the illegal
 * ones, PATCH, expiry on read and by the sweep, validate, .search, the cardholder's own requests, and
 * a device policy that an open request names.
 */

const SCIM = 'application/scim+json';
const BASE = 'https://api.example.test';
const SCHEMA = 'urn:vendor:scim:api:cms:1.0:ContentRequest';
const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const PASSWORD = 'correct horse battery staple';
const ORG = 'crq';

describe('ContentRequest', () => {
  let t: TestApp;
  let admin: string;
  const tokens: Record<string, string> = {};
  const accounts: Record<string, string> = {};
  let policy: string;

  beforeAll(async () => {
    t = await createTestApp();
    admin = await platformAdminToken(t.http);
    const issuing = await createIssuingOrganization(t, admin, ORG, {
      issuer: 'Issuance',
      approver: 'Issuance',
      helpdesk: 'Help Desk',
      cardholderAccount: 'Cardholder',
    });
    Object.assign(tokens, issuing.tokens);
    Object.assign(accounts, issuing.clientIds);
    // An organization without a CA, for the 409 of an issuance that needs certificates.
    await createOrganization(t.http, admin, 'crqnoca');
    const noca = await createSystemAccount(t.http, admin, 'crqnoca', { role: 'Issuance' });
    tokens.noca = await tokenBySecret(t.http, 'crqnoca', noca.clientId, noca.secret);
    policy = (await adminCall('post', `/${ORG}/device-policies`, { name: 'Badge', credentialTypes: ['PKI_CERTIFICATE'] })).body.id;
  });
  afterAll(() => t.close());

  const adminCall = (method: 'get' | 'post' | 'put' | 'patch' | 'delete', path: string, body?: unknown) => {
    const request = t.http[method](`/admin/v1/organizations${path}`).auth(admin, { type: 'bearer' });
    return body === undefined ? request : request.send(body as object);
  };
  const get = (path: string, token = tokens.helpdesk) => t.http.get(path).auth(token, { type: 'bearer' }).set('Accept', SCIM);
  const post = (path: string, body: unknown, token = tokens.issuer) =>
    t.http.post(path).auth(token, { type: 'bearer' }).set('Content-Type', SCIM).send(JSON.stringify(body));
  const patch = (path: string, body: unknown, token = tokens.helpdesk) =>
    t.http.patch(path).auth(token, { type: 'bearer' }).set('Content-Type', SCIM).send(JSON.stringify(body));
  const remove = (path: string, token = tokens.helpdesk) => t.http.delete(path).auth(token, { type: 'bearer' });

  const cardholder = (userName: string, org = ORG) => createCardholder(t, admin, org, userName, { password: PASSWORD });
  const device = async (status = 'AVAILABLE', owner: string | null = null, atr = '3B8F8001', org = ORG) =>
    (await insertCard(t, org, { status, owner, atr })).id;

  const deviceRow = async (id: string) => (await t.db.query('SELECT status, reason, owner_user_id FROM devices WHERE id = $1', [id])).rows[0];
  const issuance = (wallet: string, target: string, extra: Record<string, unknown> = {}, policyId = policy) => ({
    schemas: [SCHEMA],
    type: 'issuance',
    target: { device: { value: target }, devicePolicy: { value: policyId } },
    wallet: { value: wallet },
    ...extra,
  });
  const eventsOf = async (target: string) =>
    (await t.db.query('SELECT code, action, actor FROM audit_events WHERE target = $1 ORDER BY id', [target])).rows.map(
      (r) => `${r.code} ${r.action} ${r.actor}`,
    );

  describe('issuance, four eyes and the device it binds', () => {
    it('creates (201, Location, the resource), binds the device to the owner, and is approved by a second operator only', async () => {
      const jane = await cardholder('jane');
      const card = await device();
      const created = await post('/aims/rs/scim/v2/ContentRequest', issuance(jane.wallet, card, { parameters: [{ id: 'layout', value: 'blue' }] }));
      expect(created.status).toBe(201);
      const id = created.body.id;
      expect(created.headers.location).toBe(`${BASE}/aims/rs/scim/v2/ContentRequest/${id}`);
      expect(created.body).toEqual({
        schemas: [SCHEMA],
        id,
        type: 'issuance',
        status: 'requested',
        target: {
          device: { value: card, $ref: `${BASE}/aims/rs/scim/v2/Device/${card}`, type: 'Device' },
          devicePolicy: { value: policy, display: 'Badge', $ref: `${BASE}/aims/rs/scim/v2/DevicePolicy/${policy}`, type: 'DevicePolicy' },
        },
        wallet: { value: jane.wallet, display: 'jane', $ref: `${BASE}/aims/rs/scim/v2/Wallet/${jane.wallet}`, type: 'Wallet' },
        reason: 'NONE',
        parameters: [{ id: 'layout', value: 'blue' }],
        requestedBy: accounts.issuer,
        expiresAt: expect.any(String),
        meta: {
          resourceType: 'ContentRequest',
          created: expect.any(String),
          lastModified: expect.any(String),
          location: created.headers.location,
          version: '1',
        },
      });
      const lifetime = Date.parse(created.body.expiresAt) - Date.parse(created.body.meta.created);
      expect(lifetime).toBe(7 * 24 * 3600_000);
      expect(await deviceRow(card)).toEqual({ status: 'ASSIGNED', reason: 'ASSIGNED', owner_user_id: jane.id });
      expect((await get(`/aims/rs/scim/v2/Wallet/${jane.wallet}`)).body.devices).toEqual([expect.objectContaining({ value: card, display: 'ASSIGNED' })]);

      expectScimError(
        await post(`/aims/rs/scim/v2/ContentRequest/${id}/approve`, {}),
        409,
        undefined,
        `Content request ${id} was requested by ${accounts.issuer}; another operator must approve it (four eyes).`,
      );
      const approved = await post(`/credential-management/customer/${ORG}/contentrequest/${id}/approve`, {}, tokens.approver);
      expect(approved.status).toBe(200);
      expect(approved.body).toMatchObject({ id, status: 'approved', approvedBy: accounts.approver, meta: { version: '2' } });
      expectScimError(
        await post(`/aims/rs/scm/v2/ContentRequest/${id}/approve`, {}, tokens.approver),
        409,
        undefined,
        `Content request ${id} is approved; approve applies only to a request that is requested.`,
      );
      expect(await eventsOf(id)).toEqual([`30001 content_request.create ${accounts.issuer}`, `30002 content_request.approve ${accounts.approver}`]);
      expect(await eventsOf(card)).toEqual([`10003 device.assign ${accounts.issuer}`]);
      const byCode = await t.http.get(`/admin/v1/organizations/${ORG}/audit-events?code=30002`).auth(admin, { type: 'bearer' });
      expect(byCode.body.Resources.map((e: { target: string; code: number }) => [e.target, e.code])).toContainEqual([id, 30002]);
    });

    it("the wallet's owner cannot approve a request for their own wallet", async () => {
      const owner = await adminCall('post', `/${ORG}/users`, { userName: 'olga.operator', role: 'Issuance' });
      const [wallet] = (await t.db.query('SELECT id FROM wallets WHERE owner_user_id = $1', [owner.body.id])).rows;
      const created = await post('/aims/rs/scim/v2/ContentRequest', issuance(wallet.id, await device()));
      // An operator's role signs in with its certificate, never a password alone (DECISIONS 3.5).
      const certificate = await makeCertificate();
      expect((await adminCall('post', `/${ORG}/users/${owner.body.id}/certificates`, { pem: certificate.pem })).status).toBe(201);
      const grant = await tokenRequest(t.http, ORG, {
        grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
        assertion: await signAssertion(certificate, 'olga.operator', `https://auth.example.test/authentication/customer/${ORG}/token`, { now: t.clock.now() }),
      });
      expect(grant.status).toBe(200);
      expectScimError(
        await post(`/aims/rs/scim/v2/ContentRequest/${created.body.id}/approve`, {}, grant.body.access_token),
        409,
        undefined,
        `Content request ${created.body.id} is for your own wallet; another operator must approve it (four eyes).`,
      );
    });

    it('a policy without approval starts approved; produce binds too', async () => {
      const quick = (await adminCall('post', `/${ORG}/device-policies`, { name: 'Quick', requiresApproval: false })).body.id;
      const kim = await cardholder('kim');
      const created = await post('/aims/rs/scim/v2/ContentRequest', issuance(kim.wallet, await device(), { type: 'produce' }, quick));
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ type: 'produce', status: 'approved' });
      expect(created.body.approvedBy).toBeUndefined();
    });

    it('creating needs the permission of the type: issuance is Device Management only; recycle and unlock pin are Help Desk too', async () => {
      const ida = await cardholder('ida');
      expectScimError(
        await post('/aims/rs/scim/v2/ContentRequest', issuance(ida.wallet, await device()), tokens.helpdesk),
        403,
        undefined,
        'This entry point needs the permission contentRequest.issuance.create, which the role "Help Desk" does not grant.',
      );
      const stock = await device('TERMINATED');
      const recycle = await post(
        '/aims/rs/scim/v2/ContentRequest',
        { schemas: [SCHEMA], type: 'recycle', target: { device: { value: stock } } },
        tokens.helpdesk,
      );
      expect(recycle.status).toBe(201);
      expect(recycle.body).toMatchObject({ type: 'recycle', status: 'approved', target: { device: { value: stock } } });
      expect(recycle.body.wallet).toBeUndefined();
      expect(await deviceRow(stock)).toMatchObject({ status: 'TERMINATED' });
      expectScimError(
        await post('/aims/rs/scim/v2/ContentRequest/.search', { schemas: [SEARCH] }, tokens.cardholderAccount),
        403,
        undefined,
        'This entry point needs the permission contentRequest.search, which the role "Cardholder" does not grant.',
      );
    });
  });

  describe('checks on creation', () => {
    it.each([
      [{ type: 'issuance', target: { device: { value: 'x' } } }, /target.device.value: must be the id of a device \(a UUID\)/],
      [{ type: 'lend' }, /type: must be one of "issuance", "produce", "recycle", "unlock pin", "update"/],
      [{ type: 'issuance', colour: 'red' }, /attribute "colour" is not part of this resource/],
      [{ type: 'issuance', reason: 'BORED' }, /reason: must be one of NONE, LOST, STOLEN, DAMAGED, FORGOTTEN, RENEW, EXPIRED/],
      [{ type: 'issuance', expiresAt: 'tomorrow' }, /expiresAt: must be a date-time with a time zone/],
    ])('a malformed body is a 400 saying what is wrong: %j', async (change, detail) => {
      const body = { ...issuance(randomUUID(), randomUUID()), ...change };
      const answer = await post('/aims/rs/scim/v2/ContentRequest', body);
      expectScimError(answer, 400, 'invalidValue', detail);
    });

    it.each(['pin', 'newPIN', 'user_puk', 'adminPassword', 'passphrase', 'clientSecret', 'privateKey', 'otpSeed', 'OTP', 'pin-code', 'puk.code'])(
      'a parameter named like a secret (%s) is a 400 naming it: a PIN never travels in parameters, which are stored and shown as given',
      async (id) => {
        const body = {
          ...issuance(randomUUID(), randomUUID()),
          parameters: [
            { id: 'layout', value: 'blue' },
            { id, value: '123456' },
          ],
        };
        expectScimError(
          await post('/aims/rs/scim/v2/ContentRequest', body),
          400,
          'invalidValue',
          `parameters.1.id: "${id}" names a secret (a PIN, PUK, password, passphrase, secret, key, seed or one-time password); parameters are stored and shown as given, so no secret belongs in them`,
        );
      },
    );

    it('names that merely mention a secret word are accepted: pin-letter, keyType, pinLength, seedVersion', async () => {
      const named = await cardholder('param.names');
      const parameters = ['pin-letter', 'keyType', 'pinLength', 'seedVersion', 'layout'].map((id) => ({ id, value: 'x' }));
      const created = await post('/aims/rs/scim/v2/ContentRequest', issuance(named.wallet, await device(), { parameters }));
      expect(created.status).toBe(201);
      expect(created.body.parameters).toEqual(parameters);
    });

    it('references that do not exist, and what the type needs, are 400s naming them', async () => {
      const lia = await cardholder('lia');
      const card = await device();
      const missing = randomUUID();
      expectScimError(
        await post('/aims/rs/scim/v2/ContentRequest', issuance(missing, card)),
        400,
        'invalidValue',
        `wallet ${missing} does not exist in this organization.`,
      );
      expectScimError(
        await post('/aims/rs/scim/v2/ContentRequest', issuance(lia.wallet, missing)),
        400,
        'invalidValue',
        `target.device ${missing} does not exist in this organization.`,
      );
      expectScimError(
        await post('/aims/rs/scim/v2/ContentRequest', issuance(lia.wallet, card, {}, missing)),
        400,
        'invalidValue',
        `target.devicePolicy ${missing} does not exist in this organization.`,
      );
      const { wallet: _wallet, ...noWallet } = issuance(lia.wallet, card);
      expectScimError(await post('/aims/rs/scim/v2/ContentRequest', noWallet), 400, 'invalidValue', /An issuance request needs wallet: \{value: <wallet id>\}/);
      expectScimError(
        await post('/aims/rs/scim/v2/ContentRequest', { ...issuance(lia.wallet, card), target: { device: { value: card } } }),
        400,
        'invalidValue',
        /An issuance request needs target.devicePolicy/,
      );
      expect(await deviceRow(card)).toEqual({ status: 'AVAILABLE', reason: 'NONE', owner_user_id: null });
    });

    it('the device must be AVAILABLE, of a type the policy allows, for a user of its groups; expiresAt only earlier', async () => {
      const max = await cardholder('max');
      const issued = await device('ISSUED', max.id);
      expectScimError(
        await post('/aims/rs/scim/v2/ContentRequest', issuance(max.wallet, issued)),
        409,
        undefined,
        `Device ${issued} is ISSUED; a "issuance" request needs a device that is AVAILABLE.`,
      );
      const piv = (await adminCall('post', `/${ORG}/device-policies`, { name: 'PIV only', deviceTypes: ['3B8F80018031'] })).body.id;
      const other = await device('AVAILABLE', null, '3BFF9600');
      expectScimError(
        await post('/aims/rs/scim/v2/ContentRequest', issuance(max.wallet, other, {}, piv)),
        400,
        'invalidValue',
        `Device policy "PIV only" allows the device types 3B8F80018031 (ATR prefixes); device ${other} has the ATR 3BFF9600, which matches none.`,
      );
      const group = await adminCall('post', `/${ORG}/groups`, { displayName: 'Engineering', members: [] });
      const engineers = (await adminCall('post', `/${ORG}/device-policies`, { name: 'Engineers', groups: [group.body.id] })).body.id;
      expectScimError(
        await post('/aims/rs/scim/v2/ContentRequest', issuance(max.wallet, other, {}, engineers)),
        403,
        undefined,
        'Device policy "Engineers" is for the groups Engineering; max is in no group.',
      );
      const late = new Date(Date.now() + 8 * 24 * 3600_000).toISOString();
      expectScimError(
        await post('/aims/rs/scim/v2/ContentRequest', issuance(max.wallet, other, { expiresAt: late })),
        400,
        'invalidValue',
        /expiresAt .* is later than a "issuance" request may stay open/,
      );
      expectScimError(
        await post('/aims/rs/scim/v2/ContentRequest', issuance(max.wallet, other, { expiresAt: '2020-01-01T00:00:00Z' })),
        400,
        'invalidValue',
        'expiresAt 2020-01-01T00:00:00Z is not in the future.',
      );
      const soon = new Date(t.clock.now().getTime() + 3600_000).toISOString();
      const earlier = await post('/aims/rs/scim/v2/ContentRequest', issuance(max.wallet, other, { expiresAt: soon }));
      expect(earlier.status).toBe(201);
      expect(earlier.body.expiresAt).toBe(soon);
    });

    it("the wallet's device limit, a suspended wallet and a missing CA are 409s that say what to do", async () => {
      const ned = await cardholder('ned');
      expect((await adminCall('put', `/${ORG}/wallet-policy`, { maxDevicesPerWallet: 1 })).status).toBe(200);
      try {
        await device('ISSUED', ned.id);
        expectScimError(
          await post('/aims/rs/scim/v2/ContentRequest', issuance(ned.wallet, await device())),
          409,
          undefined,
          `Wallet ${ned.wallet} holds 1 device, the most WalletPolicy maxDevicesPerWallet (1) allows; terminate or recycle one first.`,
        );
      } finally {
        expect((await adminCall('put', `/${ORG}/wallet-policy`, {})).status).toBe(200);
      }
      expect((await post(`/aims/rs/scim/v2/Wallet/${ned.wallet}/suspend`, { reason: 'LOST' }, tokens.helpdesk)).status).toBe(200);
      expectScimError(
        await post('/aims/rs/scim/v2/ContentRequest', issuance(ned.wallet, await device())),
        409,
        undefined,
        `Wallet ${ned.wallet} is SUSPENDED; resume it before issuing to it.`,
      );

      const noCaPolicy = (await adminCall('post', '/crqnoca/device-policies', { name: 'Badge' })).body.id;
      const otto = await cardholder('otto', 'crqnoca');
      expectScimError(
        await post('/aims/rs/scim/v2/ContentRequest', issuance(otto.wallet, await device('AVAILABLE', null, '3B00', 'crqnoca'), {}, noCaPolicy), tokens.noca),
        409,
        undefined,
        'Organization "crqnoca" has no CA to issue from; create one with POST /admin/v1/organizations/crqnoca/ca.',
      );
    });

    it('more concurrent creations than the database pool has connections all complete (no transaction waits for a second connection)', async () => {
      const many = await Promise.all(Array.from({ length: 30 }, (_, i) => cardholder(`pool.${i}`)));
      const cards = await Promise.all(many.map(() => device()));
      const started = Date.now();
      const answers = await Promise.all(many.map((holder, i) => post('/aims/rs/scim/v2/ContentRequest', issuance(holder.wallet, cards[i]))));
      expect(answers.map((a) => a.status)).toEqual(many.map(() => 201));
      // A transaction that needs a second connection from an exhausted pool waits for the 3 s connect timeout.
      expect(Date.now() - started).toBeLessThan(3000);
    });

    it('one open request per device: of 8 concurrent creations one is 201, the others 409 naming it', async () => {
      const pia = await cardholder('pia');
      const card = await device();
      const answers = await Promise.all(Array.from({ length: 8 }, () => post('/aims/rs/scim/v2/ContentRequest', issuance(pia.wallet, card))));
      expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
      const winner = answers.find((a) => a.status === 201)!.body.id;
      const loser = answers.find((a) => a.status === 409)!;
      expect(loser.body.detail).toMatch(new RegExp(`^Device ${card} (already has an open content request|is ASSIGNED)`));
      const rows = await t.db.query('SELECT id FROM content_requests WHERE device_id = $1', [card]);
      expect(rows.rows.map((r) => r.id)).toEqual([winner]);
    });

    it('a second request on an issued device, which keeps its status, is a 409 naming the open one, and the first is untouched', async () => {
      const ivo = await cardholder('ivo');
      const issued = await device('ISSUED', ivo.id);
      const unlock = { schemas: [SCHEMA], type: 'unlock pin', target: { device: { value: issued } } };
      const first = await post('/aims/rs/scim/v2/ContentRequest', unlock, tokens.helpdesk);
      expect(first.status).toBe(201);
      expectScimError(
        await post('/aims/rs/scim/v2/ContentRequest', unlock, tokens.helpdesk),
        409,
        undefined,
        `Device ${issued} already has an open content request, request ${first.body.id} (approved); cancel it or wait for it to end.`,
      );
      const rows = await t.db.query('SELECT id, status FROM content_requests WHERE device_id = $1', [issued]);
      expect(rows.rows).toEqual([{ id: first.body.id, status: 'approved' }]);
      expect(await deviceRow(issued)).toMatchObject({ status: 'ISSUED', owner_user_id: ivo.id });
    });
  });

  describe('moves', () => {
    it('deny and cancel give the device back; DELETE cancels (204); a finished request refuses every move with its status', async () => {
      const ona = await cardholder('ona');
      const first = await device();
      const denied = await post('/aims/rs/scim/v2/ContentRequest', issuance(ona.wallet, first));
      expect((await post(`/aims/rs/scim/v2/ContentRequest/${denied.body.id}/deny`, {}, tokens.approver)).body).toMatchObject({ status: 'denied' });
      expect(await deviceRow(first)).toEqual({ status: 'AVAILABLE', reason: 'UNASSIGNED', owner_user_id: null });

      const cancelled = await post('/aims/rs/scim/v2/ContentRequest', issuance(ona.wallet, first));
      expect(cancelled.status).toBe(201);
      await post(`/aims/rs/scim/v2/ContentRequest/${cancelled.body.id}/approve`, {}, tokens.approver);
      const cancel = await post(`/aims/rs/scim/v2/ContentRequest/${cancelled.body.id}/cancel`, {}, tokens.helpdesk);
      expect(cancel.status).toBe(200);
      expect(cancel.body).toMatchObject({ status: 'cancelled', approvedBy: accounts.approver });
      expect(await deviceRow(first)).toMatchObject({ status: 'AVAILABLE', owner_user_id: null });

      const deleted = await post('/aims/rs/scim/v2/ContentRequest', issuance(ona.wallet, first));
      const gone = await remove(`/aims/rs/scim/v2/ContentRequest/${deleted.body.id}`);
      expect(gone.status).toBe(204);
      expect((await get(`/aims/rs/scim/v2/ContentRequest/${deleted.body.id}`)).body).toMatchObject({ status: 'cancelled' });
      expect(await deviceRow(first)).toMatchObject({ status: 'AVAILABLE' });
      expect(await eventsOf(first)).toEqual([
        `10003 device.assign ${accounts.issuer}`,
        `10002 device.update ${accounts.approver}`,
        `10003 device.assign ${accounts.issuer}`,
        `10002 device.update ${accounts.helpdesk}`,
        `10003 device.assign ${accounts.issuer}`,
        `10002 device.update ${accounts.helpdesk}`,
      ]);

      for (const [action, detail] of [
        ['approve', 'approve applies only to a request that is requested'],
        ['deny', 'deny applies only to a request that is requested'],
        ['cancel', 'cancel applies only to a request that is requested or approved or failed'],
        ['retry', 'retry applies only to a request that is failed'],
      ]) {
        expectScimError(
          await post(`/aims/rs/scim/v2/ContentRequest/${denied.body.id}/${action}`, {}, tokens.approver),
          409,
          undefined,
          `Content request ${denied.body.id} is denied; ${detail}.`,
        );
      }
      expectScimError(
        await remove(`/aims/rs/scim/v2/ContentRequest/${denied.body.id}`),
        409,
        undefined,
        `Content request ${denied.body.id} is denied; DELETE applies only to a request that is requested or approved or failed.`,
      );
      expectScimError(await post(`/aims/rs/scim/v2/ContentRequest/${denied.body.id}/cancel`, { why: 'x' }), 400, 'invalidValue', /attribute "why" is not part/);
      const unknown = randomUUID();
      expectScimError(await get(`/aims/rs/scim/v2/ContentRequest/${unknown}`), 404, undefined, `Content request ${unknown} does not exist.`);
    });

    it('retry reopens a failed request and clears its failure; cancel ends a failed one and frees its device', async () => {
      const pat = await cardholder('pat');
      const card = await device();
      const created = await post('/aims/rs/scim/v2/ContentRequest', issuance(pat.wallet, card));
      await post(`/aims/rs/scim/v2/ContentRequest/${created.body.id}/approve`, {}, tokens.approver);
      // A sync session's failure (its entry point comes with SyncSession): the row as it leaves it.
      await t.db.query("UPDATE content_requests SET status = 'failed', failure_detail = 'card removed' WHERE id = $1", [created.body.id]);
      expect((await get(`/aims/rs/scim/v2/ContentRequest/${created.body.id}`)).body).toMatchObject({ status: 'failed', failure: { detail: 'card removed' } });
      const retried = await post(`/aims/rs/scim/v2/ContentRequest/${created.body.id}/retry`, {}, tokens.helpdesk);
      expect(retried.status).toBe(200);
      expect(retried.body.status).toBe('approved');
      expect(retried.body.failure).toBeUndefined();
      await t.db.query("UPDATE content_requests SET status = 'failed', failure_detail = 'again' WHERE id = $1", [created.body.id]);
      expect((await post(`/aims/rs/scim/v2/ContentRequest/${created.body.id}/cancel`, {}, tokens.helpdesk)).body.status).toBe('cancelled');
      expect(await deviceRow(card)).toMatchObject({ status: 'AVAILABLE', owner_user_id: null });
    });

    it('PATCH changes reason, parameters and expiresAt while requested, with If-Match; other attributes and later statuses are refused', async () => {
      const quinn = await cardholder('quinn');
      const created = await post('/aims/rs/scim/v2/ContentRequest', issuance(quinn.wallet, await device()));
      const path = `/aims/rs/scim/v2/ContentRequest/${created.body.id}`;
      const changed = await patch(path, {
        schemas: [PATCH_OP],
        Operations: [
          { op: 'replace', path: 'reason', value: 'DAMAGED' },
          { op: 'add', path: 'parameters', value: [{ id: 'pin-letter', value: 'mail' }] },
        ],
      });
      expect(changed.status).toBe(200);
      expect(changed.body).toMatchObject({ reason: 'DAMAGED', parameters: [{ id: 'pin-letter', value: 'mail' }], meta: { version: '2' } });
      expectScimError(
        await patch(path, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'reason', value: 'LOST' }] }).set('If-Match', 'W/"1"'),
        412,
        undefined,
        /its current version is 2/,
      );
      expectScimError(
        await patch(path, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'status', value: 'approved' }] }),
        400,
        'mutability',
        'Only reason, parameters and expiresAt can be changed with PATCH; status cannot.',
      );
      expectScimError(
        await patch(path, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'reason', value: 'BORED' }] }),
        400,
        'invalidValue',
        /reason: must be one of/,
      );
      expectScimError(
        await patch(path, { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'parameters', value: [{ id: 'newPin', value: '1234' }] }] }),
        400,
        'invalidValue',
        /parameters.1.id: "newPin" names a secret/,
      );
      await post(`${path}/approve`, {}, tokens.approver);
      expectScimError(
        await patch(path, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'reason', value: 'LOST' }] }),
        409,
        undefined,
        `Content request ${created.body.id} is approved; PATCH applies only to a request that is requested.`,
      );
      expect(await eventsOf(created.body.id)).toEqual([
        `30001 content_request.create ${accounts.issuer}`,
        `30010 content_request.update ${accounts.helpdesk}`,
        `30002 content_request.approve ${accounts.approver}`,
      ]);
    });

    it('expires when read past expiresAt and by the sweep, releasing bound devices; a move of an expired one says so', async () => {
      const rae = await cardholder('rae');
      const read = await device();
      const swept = await device();
      const one = await post('/aims/rs/scim/v2/ContentRequest', issuance(rae.wallet, read));
      const two = await post('/aims/rs/scim/v2/ContentRequest', issuance(rae.wallet, swept));
      const issued = await device('ISSUED', rae.id);
      const pin = await post(
        '/aims/rs/scim/v2/ContentRequest',
        { schemas: [SCHEMA], type: 'unlock pin', target: { device: { value: issued } } },
        tokens.helpdesk,
      );
      expect(pin.status).toBe(201);
      expect(Date.parse(pin.body.expiresAt) - Date.parse(pin.body.meta.created)).toBe(10 * 60_000);
      expect(pin.body.wallet).toMatchObject({ value: rae.wallet, display: 'rae' });

      const start = t.clock.now();
      try {
        t.clock.advance(11 * 60);
        // The unlock-pin request is read past its 10 minutes: expired, audited by the system.
        expect((await get(`/aims/rs/scim/v2/ContentRequest/${pin.body.id}`)).body).toMatchObject({ status: 'expired' });
        expectScimError(
          await post(`/aims/rs/scim/v2/ContentRequest/${pin.body.id}/cancel`, {}, tokens.helpdesk),
          409,
          undefined,
          `Content request ${pin.body.id} is expired; cancel applies only to a request that is requested or approved or failed.`,
        );
        t.clock.advance(7 * 24 * 3600);
        expect(await t.app.get(ContentRequestSweepJob).runOnce()).toBeGreaterThanOrEqual(2);
      } finally {
        t.clock.set(start);
      }
      expect((await get(`/aims/rs/scim/v2/ContentRequest/${one.body.id}`)).body.status).toBe('expired');
      expect((await get(`/aims/rs/scim/v2/ContentRequest/${two.body.id}`)).body.status).toBe('expired');
      expect(await deviceRow(read)).toMatchObject({ status: 'AVAILABLE', owner_user_id: null });
      expect(await deviceRow(swept)).toMatchObject({ status: 'AVAILABLE', owner_user_id: null });
      expect(await deviceRow(issued)).toMatchObject({ status: 'ISSUED', owner_user_id: rae.id });
      expect(await eventsOf(pin.body.id)).toEqual([`30001 content_request.create ${accounts.helpdesk}`, '30008 content_request.expire system']);
      expect(await t.app.get(ContentRequestSweepJob).runOnce()).toBe(0);
    });
  });

  describe('validate and .search', () => {
    it('validate answers the end state of an update request and stores nothing; other types are a 400', async () => {
      const sam = await cardholder('sam');
      const card = await device('ISSUED', sam.id);
      const both = (await adminCall('post', `/${ORG}/device-policies`, { name: 'Both', credentialTypes: ['PKI_CERTIFICATE', 'OATH_TOTP'] })).body.id;
      const body = { schemas: [SCHEMA], type: 'update', target: { device: { value: card }, devicePolicy: { value: both } } };
      const predicted = await post('/aims/rs/scim/v2/ContentRequest/validate', body);
      expect(predicted.status).toBe(200);
      expect(predicted.body).toEqual({
        device: { value: card, status: 'ISSUED' },
        credentials: [
          { type: 'PKI_CERTIFICATE', status: 'ISSUED' },
          { type: 'OATH_TOTP', status: 'ISSUED' },
        ],
      });
      expect((await t.db.query('SELECT count(*)::int AS n FROM content_requests WHERE device_id = $1', [card])).rows[0].n).toBe(0);
      expectScimError(
        await post('/aims/rs/scim/v2/ContentRequest/validate', { ...body, type: 'issuance' }),
        400,
        'invalidValue',
        /Only "update" requests can be validated/,
      );
      expectScimError(
        await post('/aims/rs/scim/v2/ContentRequest/validate', body, tokens.helpdesk),
        403,
        undefined,
        'This entry point needs the permission contentRequest.validate, which the role "Help Desk" does not grant.',
      );
    });

    it('.search filters on the documented attributes and pages', async () => {
      const tia = await cardholder('tia');
      const card = await device();
      const created = await post('/aims/rs/scim/v2/ContentRequest', issuance(tia.wallet, card));
      const found = await post(
        '/aims/rs/scim/v2/ContentRequest/.search',
        {
          schemas: [SEARCH],
          filter: `target.device.value eq "${card}" and status eq "requested" and wallet.value eq "${tia.wallet}" and requestedBy eq "${accounts.issuer}"`,
        },
        tokens.helpdesk,
      );
      expect(found.status).toBe(200);
      expect(found.body).toMatchObject({ totalResults: 1, Resources: [{ id: created.body.id, type: 'issuance' }] });
      const page = await post(
        '/aims/rs/scim/v2/ContentRequest/.search',
        { schemas: [SEARCH], filter: 'type eq "issuance"', count: 2, sortBy: 'meta.created' },
        tokens.helpdesk,
      );
      expect(page.body.itemsPerPage).toBe(2);
      expect(page.body.totalResults).toBeGreaterThan(2);
      expectScimError(
        await post('/aims/rs/scim/v2/ContentRequest/.search', { schemas: [SEARCH], filter: 'target.device.id eq "x"' }, tokens.helpdesk),
        400,
        'invalidFilter',
        /"target.device.id" is not an attribute/,
      );
    });
  });

  describe("a cardholder's own requests (/Self/ContentRequest)", () => {
    it('unlock pin and recycle of their own devices only; .search shows theirs; cancel', async () => {
      const uma = await cardholder('uma');
      const vic = await cardholder('vic');
      const mine = await device('ISSUED', uma.id);
      const theirs = await device('ISSUED', vic.id);
      const grant = await tokenRequest(t.http, ORG, { grant_type: 'password', username: 'uma', password: PASSWORD });
      const token = grant.body.access_token;
      const unlock = (target: string, type = 'unlock pin') =>
        post('/aims/rs/scim/v2/Self/ContentRequest', { schemas: [SCHEMA], type, target: { device: { value: target } } }, token);
      const created = await unlock(mine);
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ type: 'unlock pin', status: 'approved', requestedBy: 'uma', wallet: { value: uma.wallet } });
      expectScimError(await unlock(theirs), 404, undefined, `Device ${theirs} is not one of your devices.`);
      expectScimError(
        await unlock(mine, 'issuance'),
        400,
        'invalidValue',
        'A cardholder may ask for "unlock pin" or "recycle" requests on their own devices, not "issuance".',
      );
      await post('/aims/rs/scim/v2/ContentRequest', { schemas: [SCHEMA], type: 'unlock pin', target: { device: { value: theirs } } }, tokens.helpdesk);
      const own = await post('/credential-management/customer/crq/self/contentrequest/.search', { schemas: [SEARCH] }, token);
      expect(own.status).toBe(200);
      expect(own.body.Resources.map((r: { id: string }) => r.id)).toEqual([created.body.id]);
      const cancelled = await post(`/aims/rs/scim/v2/Self/ContentRequest/${created.body.id}/cancel`, {}, token);
      expect(cancelled.status).toBe(200);
      expect(cancelled.body.status).toBe('cancelled');
      const vicsRequest = (await t.db.query('SELECT id FROM content_requests WHERE device_id = $1', [theirs])).rows[0].id;
      expectScimError(
        await post(`/aims/rs/scim/v2/Self/ContentRequest/${vicsRequest}/cancel`, {}, token),
        404,
        undefined,
        `Content request ${vicsRequest} does not exist.`,
      );
    });
  });

  it('Stats counts the requests by status, zeros included', async () => {
    const stored = (await t.db.query('SELECT status, count(*)::int AS n FROM content_requests WHERE org_id = $1 GROUP BY status', [ORG])).rows;
    expect(stored.length).toBeGreaterThan(3);
    const expected = {
      requested: 0,
      approved: 0,
      completed: 0,
      denied: 0,
      cancelled: 0,
      failed: 0,
      expired: 0,
      ...Object.fromEntries(stored.map((r) => [r.status, r.n])),
    };
    const stats = await get('/aims/rs/scim/v2/Stats');
    expect(stats.status).toBe(200);
    expect(stats.body.contentRequests).toEqual(expected);
  });

  it('a device policy named by an open request is not deleted (409); once the request ends it is', async () => {
    const used = (await adminCall('post', `/${ORG}/device-policies`, { name: 'In use' })).body.id;
    const wes = await cardholder('wes');
    const created = await post('/aims/rs/scim/v2/ContentRequest', issuance(wes.wallet, await device(), {}, used));
    expectScimError(
      await adminCall('delete', `/${ORG}/device-policies/${used}`),
      409,
      undefined,
      'Device policy "In use" is named by 1 open content request; cancel it or let it complete before deleting the policy.',
    );
    await post(`/aims/rs/scim/v2/ContentRequest/${created.body.id}/cancel`, {}, tokens.helpdesk);
    expect((await adminCall('delete', `/${ORG}/device-policies/${used}`)).status).toBe(204);
    const after = await get(`/aims/rs/scim/v2/ContentRequest/${created.body.id}`);
    expect(after.body.status).toBe('cancelled');
    expect(after.body.target.devicePolicy).toBeUndefined();
  });
});

/**
 * CREDENTIAL-MANAGEMENT.md "Operator Dependent": an operator whose role is Operator Dependent
 * reaches the content requests and credentials of its groups' users only; the others are 404, left
 * out of .search, unknown as a target, and not counted by Stats.
 */
describe('ContentRequest and Credential for an Operator Dependent operator', () => {
  let t: TestApp;
  let admin: string;
  let desk: string;
  let operator: string;

  beforeAll(async () => {
    const file = operatorDependentScopeFile('content-requests-operator-dependent.properties');
    t = await createTestApp({ env: { SCOPE_ASSIGNMENT_FILE: file } });
    admin = await platformAdminToken(t.http);
    ({
      tokens: { desk },
    } = await createIssuingOrganization(t, admin, 'crqod', { desk: 'Administration' }));
    // An operator signs in with an enrolled certificate (RFC 7523 jwt-bearer), as in test/device.
    const olga = await createCardholder(t, admin, 'crqod', 'olga.op', { role: 'Desk East', userType: 'operator', groups: ['east'] });
    const certificate = await makeCertificate();
    const enrolled = await t.http
      .post(`/admin/v1/organizations/crqod/users/${olga.id}/certificates`)
      .auth(admin, { type: 'bearer' })
      .set('Content-Type', 'application/x-pem-file')
      .send(certificate.pem);
    expect(enrolled.status).toBe(201);
    const grant = await tokenRequest(t.http, 'crqod', {
      grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
      assertion: await signAssertion(certificate, 'olga.op', 'https://auth.example.test/authentication/customer/crqod/token', { now: t.clock.now() }),
    });
    expect(grant.status).toBe(200);
    operator = grant.body.access_token;
  });
  afterAll(() => t.close());

  const send = (method: 'get' | 'post', path: string, token: string, body?: unknown) => {
    const request = t.http[method](path).auth(token, { type: 'bearer' }).set('Content-Type', SCIM);
    return body === undefined ? request : request.send(JSON.stringify(body));
  };

  it("reaches its groups' requests and credentials only; Stats counts only them", async () => {
    const east = await createCardholder(t, admin, 'crqod', 'eve.east', { groups: ['east'] });
    const west = await createCardholder(t, admin, 'crqod', 'will.west', { groups: ['west'] });
    const eastCard = await insertCard(t, 'crqod', { status: 'ISSUED', owner: east.id });
    const westCard = await insertCard(t, 'crqod', { status: 'ISSUED', owner: west.id });
    const unlock = (card: string, token: string) =>
      send('post', '/aims/rs/scim/v2/ContentRequest', token, { schemas: [SCHEMA], type: 'unlock pin', target: { device: { value: card } } });
    const eastRequest = (await unlock(eastCard.id, desk)).body.id;
    const westRequest = (await unlock(westCard.id, desk)).body.id;
    const credentials: Record<string, string> = {};
    for (const [name, holder, card] of [
      ['east', east, eastCard],
      ['west', west, westCard],
    ] as const) {
      credentials[name] = randomUUID();
      await t.db.query(
        "INSERT INTO credentials (id, org_id, type, status, device_id, wallet_id, created_at, updated_at) VALUES ($1, 'crqod', 'STATIC_PASSWORD', 'ISSUED', $2, $3, now(), now())",
        [credentials[name], card.id, holder.wallet],
      );
    }

    expect((await send('get', `/aims/rs/scim/v2/ContentRequest/${eastRequest}`, operator)).status).toBe(200);
    expectScimError(
      await send('get', `/aims/rs/scim/v2/ContentRequest/${westRequest}`, operator),
      404,
      undefined,
      `Content request ${westRequest} does not exist.`,
    );
    expectScimError(
      await send('post', `/aims/rs/scim/v2/ContentRequest/${westRequest}/cancel`, operator, {}),
      404,
      undefined,
      `Content request ${westRequest} does not exist.`,
    );
    const found = await send('post', '/aims/rs/scim/v2/ContentRequest/.search', operator, { schemas: [SEARCH] });
    expect(found.body.Resources.map((r: { id: string }) => r.id)).toEqual([eastRequest]);
    expectScimError(await unlock(westCard.id, operator), 400, 'invalidValue', `target.device ${westCard.id} does not exist in this organization.`);

    expect((await send('get', `/aims/rs/scim/v2/Credential/${credentials.east}`, operator)).status).toBe(200);
    expectScimError(
      await send('get', `/aims/rs/scim/v2/Credential/${credentials.west}`, operator),
      404,
      undefined,
      `Credential ${credentials.west} does not exist.`,
    );
    const stats = await send('get', '/aims/rs/scim/v2/Stats', operator);
    expect(stats.body.contentRequests).toMatchObject({ approved: 1 });
    expect(stats.body.credentials).toEqual({ ISSUED: 1, ON_HOLD: 0, REVOKED: 0 });
    const all = await send('get', '/aims/rs/scim/v2/Stats', desk);
    expect(all.body.contentRequests).toMatchObject({ approved: 2 });
    expect(all.body.credentials).toEqual({ ISSUED: 2, ON_HOLD: 0, REVOKED: 0 });
  });
});
