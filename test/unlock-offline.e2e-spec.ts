import { createCipheriv, createHash } from 'node:crypto';
import { KeyStore, KeyStoreError } from '@app/hsm';
import { p256Csr } from '@app/pki/testing';
import {
  TestApp,
  createCardholder,
  createIssuingOrganization,
  createTestApp,
  expectScimError,
  insertCard,
  platformAdminToken,
  tokenRequest,
} from '@app/testing';

/**
 * Offline PIN unlock (DECISIONS 17.1): an `unlock pin` request carrying the card's challenge is
 * answered with the minidriver's response, 3DES-ECB under the card's administration key, itself
 * 3DES-ECB of SHA-256("card admin key" 0x00 CUID)[0..24] under the HSM's CARD_ADMIN_MASTER_KEY.
 */

const SCIM = 'application/scim+json';
const SCHEMA = 'urn:vendor:scim:api:cms:1.0:ContentRequest';
const PASSWORD = 'correct horse battery staple';
const ORG = 'unl';
const PATH = '/aims/rs/scim/v2/ContentRequest';
const SESSION = 'urn:vendor:scim:api:cms:1.0:SyncSession';

describe('offline unlock PIN (challenge and response)', () => {
  let t: TestApp;
  let admin: string;
  const tokens: Record<string, string> = {};
  const accounts: Record<string, string> = {};

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
    await createIssuingOrganization(t, admin, 'unlother', {});
  });
  afterAll(() => t.close());

  const post = (body: unknown, token = tokens.helpdesk, path = PATH) =>
    t.http.post(path).auth(token, { type: 'bearer' }).set('Content-Type', SCIM).send(JSON.stringify(body));
  const unlock = (device: string, challenge: string, extra: Record<string, unknown> = {}) => ({
    schemas: [SCHEMA],
    type: 'unlock pin',
    target: { device: { value: device } },
    parameters: [{ id: 'challenge', value: challenge, type: 'string', encoding: 'hex', ...extra }],
  });
  const issuedCard = async (userName: string, org = ORG) => {
    const owner = await createCardholder(t, admin, org, userName, { password: PASSWORD });
    return { owner, card: await insertCard(t, org, { status: 'ISSUED', owner: owner.id }) };
  };

  /** What the card client writes to the card at encoding, and what the minidriver computes: done here without the service's code. */
  const expectedResponse = async (cuid: string, challenge: string) => {
    const data = createHash('sha256').update(`card admin key\0${cuid}`).digest().subarray(0, 24);
    const cardKey = await t.app.get(KeyStore).encryptDes3('CARD_ADMIN_MASTER_KEY', data);
    expect(cardKey).toHaveLength(24);
    const cipher = createCipheriv('des-ede3-ecb', cardKey, null).setAutoPadding(false);
    return Buffer.concat([cipher.update(Buffer.from(challenge, 'hex')), cipher.final()])
      .toString('hex')
      .toUpperCase();
  };

  it('answers the response once, completes the request, audits the unlock without the challenge or the response, stores neither', async () => {
    const { card } = await issuedCard('ana');
    const challenge = '0123456789abcdef';
    const res = await post(unlock(card.id, challenge));
    expect(res.status).toBe(201);
    const response = await expectedResponse(card.CUID, challenge);
    expect(response).toMatch(/^[0-9A-F]{16}$/);
    expect(res.body).toMatchObject({
      type: 'unlock pin',
      status: 'completed',
      parameters: [{ id: 'response', value: response, type: 'string', encoding: 'hex' }],
    });
    expect(res.headers.location).toMatch(new RegExp(`${PATH}/${res.body.id}$`));

    const read = await t.http.get(`${PATH}/${res.body.id}`).auth(tokens.helpdesk, { type: 'bearer' }).set('Accept', SCIM);
    expect(read.status).toBe(200);
    expect(read.body.status).toBe('completed');
    expect(JSON.stringify(read.body)).not.toMatch(new RegExp(`${challenge}|${response}`, 'i'));

    const events = (await t.db.query('SELECT code, action, actor, details::text AS details FROM audit_events WHERE target = $1 ORDER BY id', [res.body.id]))
      .rows;
    expect(events.map((e) => `${e.code} ${e.action} ${e.actor}`)).toEqual([
      `30001 content_request.create ${accounts.helpdesk}`,
      `30005 content_request.complete ${accounts.helpdesk}`,
      `30009 content_request.unlock_pin ${accounts.helpdesk}`,
    ]);
    for (const event of events) expect(event.details).not.toMatch(new RegExp(`${challenge}|${response}`, 'i'));
    const stored = (await t.db.query('SELECT parameters::text AS parameters FROM content_requests WHERE id = $1', [res.body.id])).rows[0];
    expect(stored.parameters).toBe('[]');

    // The same card, another challenge: another response; another card, the same challenge: another response.
    const again = await post(unlock(card.id, 'FFFFFFFFFFFFFFFF'));
    expect(again.status).toBe(201);
    expect(again.body.parameters[0].value).toBe(await expectedResponse(card.CUID, 'FFFFFFFFFFFFFFFF'));
    const other = await issuedCard('bea');
    const theirs = await post(unlock(other.card.id, challenge), tokens.issuer);
    expect(theirs.status).toBe(201);
    expect(theirs.body.parameters[0].value).toBe(await expectedResponse(other.card.CUID, challenge));
    expect(theirs.body.parameters[0].value).not.toBe(response);
  });

  it('one master key: generated at first use, found again after (the same diversification each time)', async () => {
    const first = await t.app.get(KeyStore).encryptDes3('CARD_ADMIN_MASTER_KEY', Buffer.alloc(8));
    expect(await t.app.get(KeyStore).encryptDes3('CARD_ADMIN_MASTER_KEY', Buffer.alloc(8))).toEqual(first);
  });

  it('refuses a challenge that is not 16 hexadecimal digits, or not hex-encoded (400), and stores nothing', async () => {
    const { card } = await issuedCard('cai');
    for (const bad of ['0123456789abcde', '0123456789abcdef0', '0123456789abcdeg', '', ' 0123456789abcdef']) {
      expectScimError(
        await post(unlock(card.id, bad)),
        400,
        'invalidValue',
        "parameters: the challenge must be 16 hexadecimal digits (the 8 bytes the person's screen shows).",
      );
    }
    expectScimError(
      await post(unlock(card.id, '0123456789abcdef', { encoding: 'base64' })),
      400,
      'invalidValue',
      'parameters: the challenge\'s encoding must be "hex", not "base64".',
    );
    expect((await t.db.query('SELECT count(*)::int AS n FROM content_requests WHERE device_id = $1', [card.id])).rows[0].n).toBe(0);
  });

  it("a device that is not an issued card (409), another organization's (400, as an unknown one), a cardholder (403 here, 400 on Self)", async () => {
    const stock = await insertCard(t, ORG, { status: 'AVAILABLE' });
    const notIssued = await post(unlock(stock.id, '0123456789abcdef'));
    expect(notIssued.status).toBe(409);
    const { card: foreign } = await issuedCard('dan', 'unlother');
    expectScimError(
      await post(unlock(foreign.id, '0123456789abcdef')),
      400,
      'invalidValue',
      `target.device ${foreign.id} does not exist in this organization.`,
    );

    expectScimError(
      await post(unlock(foreign.id, '0123456789abcdef'), tokens.cardholderAccount),
      403,
      undefined,
      'This entry point needs the permission contentRequest.unlockPin.create, which the role "Cardholder" does not grant.',
    );
    const { card: mine } = await issuedCard('eve');
    const grant = await tokenRequest(t.http, ORG, { grant_type: 'password', username: 'eve', password: PASSWORD });
    expectScimError(
      await post(unlock(mine.id, '0123456789abcdef'), grant.body.access_token, '/aims/rs/scim/v2/Self/ContentRequest'),
      400,
      'invalidValue',
      'parameters: a challenge is answered to an operator at the desk, not to the cardholder.',
    );
    // An open online unlock on the card: the offline one is refused as any second request (409), nothing answered.
    const online = await post({ schemas: [SCHEMA], type: 'unlock pin', target: { device: { value: mine.id } } });
    expect(online.status).toBe(201);
    const busy = await post(unlock(mine.id, '0123456789abcdef'));
    expect(busy.status).toBe(409);
    expect(JSON.stringify(busy.body)).not.toMatch(/response/);
  });

  describe('the card client learns the admin key at encoding (SyncSession device.adminKey)', () => {
    const policies: Record<string, string> = {};
    beforeAll(async () => {
      for (const [name, credentialTypes] of [
        ['Badge', ['PKI_CERTIFICATE']],
        ['OTP token', ['OATH_TOTP']],
      ] as const) {
        const created = await t.http.post(`/admin/v1/organizations/${ORG}/device-policies`).auth(admin, { type: 'bearer' }).send({ name, credentialTypes });
        expect(created.status).toBe(201);
        policies[name] = created.body.id;
      }
    });

    /** An approved issuance (or update) of `card` under `policy`, then the card client's sync session. */
    const encode = async (
      card: { id: string; ATR: string; CUID: string },
      policy: string,
      options: { wallet?: string; type?: string; token?: string; path?: string } = {},
    ) => {
      const type = options.type ?? 'issuance';
      const created = await post(
        {
          schemas: [SCHEMA],
          type,
          target: { device: { value: card.id }, devicePolicy: { value: policy } },
          ...(options.wallet ? { wallet: { value: options.wallet } } : {}),
        },
        tokens.issuer,
      );
      expect(created.status).toBe(201);
      if (created.body.status === 'requested') expect((await post({}, tokens.approver, `${PATH}/${created.body.id}/approve`)).status).toBe(200);
      const oath = policy === policies['OTP token'];
      const results = [
        oath
          ? { operation: 'WRITE_OTP', status: 'SUCCESS', credentialType: 'OATH_TOTP' }
          : { operation: 'GENERATE_KEY', status: 'SUCCESS', credentialType: 'PKI_CERTIFICATE', csr: (await p256Csr()).toString('base64') },
      ];
      return post(
        { schemas: [SESSION], contentRequest: { value: created.body.id }, device: { ATR: card.ATR, CUID: card.CUID }, results },
        options.token ?? tokens.issuer,
        options.path ?? '/aims/rs/scim/v2/SyncSession',
      );
    };
    const des3 = (key: Buffer, challenge: string) => {
      const cipher = createCipheriv('des-ede3-ecb', key, null).setAutoPadding(false);
      return Buffer.concat([cipher.update(Buffer.from(challenge, 'hex')), cipher.final()])
        .toString('hex')
        .toUpperCase();
    };

    it('encode a card, keep device.adminKey; the desk later answers a challenge with 3DES-ECB(adminKey, challenge)', async () => {
      const owner = await createCardholder(t, admin, ORG, 'fay', { password: PASSWORD });
      const card = await insertCard(t, ORG);
      const encoded = await encode(card, policies.Badge, { wallet: owner.wallet });
      expect(encoded.status).toBe(201);
      expect(encoded.headers['cache-control']).toBe('no-store');
      expect(encoded.headers.pragma).toBe('no-cache');
      expect(encoded.body).toMatchObject({
        contentRequest: { status: 'completed' },
        device: { value: card.id, status: 'ISSUED', adminKey: expect.stringMatching(/^[0-9A-F]{48}$/) },
      });
      const adminKey: string = encoded.body.device.adminKey;
      expect(adminKey).toBe(
        (await t.app.get(KeyStore).encryptDes3('CARD_ADMIN_MASTER_KEY', createHash('sha256').update(`card admin key\0${card.CUID}`).digest().subarray(0, 24)))
          .toString('hex')
          .toUpperCase(),
      );

      // Later, at their PC: the minidriver's challenge, answered at the desk.
      const challenge = 'A1B2C3D4E5F60718';
      const answered = await post(unlock(card.id, challenge));
      expect(answered.status).toBe(201);
      expect(answered.body.parameters).toEqual([{ id: 'response', value: des3(Buffer.from(adminKey, 'hex'), challenge), type: 'string', encoding: 'hex' }]);

      // An update of the card answers the same key again; nothing keeps it: not the log, the audit, the tables.
      const updated = await encode(card, policies.Badge, { type: 'update' });
      expect(updated.status).toBe(201);
      expect(updated.body.device).toEqual({ value: card.id, status: 'ISSUED', $ref: expect.any(String), adminKey });
      expect(t.logs.join('\n')).not.toMatch(new RegExp(adminKey, 'i'));
      const kept = await t.db.query(
        `SELECT (SELECT string_agg(details::text, ' ') FROM audit_events WHERE org_id = $1) AS audit,
                (SELECT string_agg(results::text, ' ') FROM sync_sessions WHERE org_id = $1) AS sessions,
                (SELECT string_agg(parameters::text, ' ') FROM content_requests WHERE org_id = $1) AS requests`,
        [ORG],
      );
      expect(JSON.stringify(kept.rows[0])).not.toMatch(new RegExp(adminKey, 'i'));
    });

    it('no admin key for an OTP token (a policy of OATH types only), nor to a cardholder running their own encoding (/Self)', async () => {
      const owner = await createCardholder(t, admin, ORG, 'gil', { password: PASSWORD });
      const token = await insertCard(t, ORG);
      const otp = await encode(token, policies['OTP token'], { wallet: owner.wallet });
      expect(otp.status).toBe(201);
      expect(otp.body.device).toEqual({ value: token.id, status: 'ISSUED', $ref: expect.any(String) });
      expect(otp.body.credentials[0].secret).toEqual(expect.any(String));

      const card = await insertCard(t, ORG);
      const cardholder = (await tokenRequest(t.http, ORG, { grant_type: 'password', username: 'gil', password: PASSWORD })).body.access_token;
      const own = await encode(card, policies.Badge, { wallet: owner.wallet, token: cardholder, path: '/aims/rs/scim/v2/Self/SyncSession' });
      expect(own.status).toBe(201);
      expect(own.body.device).toEqual({ value: card.id, status: 'ISSUED', $ref: expect.any(String) });
    });

    it('a token holding two master keys: a 500 naming what to fix (not the generic unexpected-error answer); nothing is kept, the request stays approved', async () => {
      // What the HSM adapter throws then (libs/hsm/src/pkcs11-secret-key.spec.ts makes the two keys in a real token).
      const twoKeys = () => new KeyStoreError('KEY_UNUSABLE', '2 DES3 secret keys are labelled "CARD_ADMIN_MASTER_KEY" on token "test"; keep exactly one');
      const detail = (message: string) =>
        `Card administration keys cannot be computed: ${message}. An HSM administrator must fix the token (DECISIONS 17.1); until then PIN unlock by challenge and the encoding of smart cards fail.`;
      const keys = t.app.get(KeyStore);
      const spy = jest.spyOn(keys, 'encryptDes3');
      try {
        const { card } = await issuedCard('hal');
        spy.mockRejectedValueOnce(twoKeys());
        expectScimError(await post(unlock(card.id, '0123456789abcdef')), 500, undefined, detail(twoKeys().message));
        expect((await t.db.query('SELECT count(*)::int AS n FROM content_requests WHERE device_id = $1', [card.id])).rows[0].n).toBe(0);

        const owner = await createCardholder(t, admin, ORG, 'ivy', { password: PASSWORD });
        const fresh = await insertCard(t, ORG);
        spy.mockRejectedValueOnce(twoKeys());
        const refused = await encode(fresh, policies.Badge, { wallet: owner.wallet });
        expectScimError(refused, 500, undefined, detail(twoKeys().message));
        const request = (await t.db.query('SELECT status FROM content_requests WHERE device_id = $1', [fresh.id])).rows[0];
        expect(request.status).toBe('approved');
        expect((await t.db.query('SELECT status FROM devices WHERE id = $1', [fresh.id])).rows[0].status).toBe('ASSIGNED');
      } finally {
        spy.mockRestore();
      }
    });
  });
});
