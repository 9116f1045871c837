import { randomUUID } from 'node:crypto';
import { DEVICE_ACTIONS, DEVICE_LIFECYCLE, DEVICE_STATUSES, DeviceAction, DeviceStatus, nextStatus, transitionOf } from '@app/device';
import { TestApp, createOrganization, createSystemAccount, createTestApp, platformAdminToken, tokenBySecret } from '@app/testing';

/**
 * The device lifecycle of DECISIONS 8, walked from the table in libs/device: every Device entry
 * point in every status. Statuses that only content requests and sync sessions reach (ASSIGNED,
 * PRODUCED, ISSUED, ...) do not have entry points yet, so the devices are written straight into the
 * database in the status under test.
 */

const SCIM_ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const ISO_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ATR = '3B8F8001804F0CA000000306030001000000006A';

/** A reason each action accepts (suspend requires one). */
const REASON: Record<DeviceAction, string | undefined> = {
  activate: undefined,
  suspend: 'LOST',
  resume: undefined,
  revoke: 'STOLEN',
  terminate: undefined,
  delete: undefined,
};

describe('device lifecycle (DECISIONS 8)', () => {
  let t: TestApp;
  /** Administration holds every device permission (DECISIONS 5.2). */
  let token: string;
  let ownerId: string;
  let cuid = 0;

  beforeAll(async () => {
    t = await createTestApp();
    const admin = await platformAdminToken(t.http);
    await createOrganization(t.http, admin, 'life');
    const account = await createSystemAccount(t.http, admin, 'life', { role: 'Administration' });
    token = await tokenBySecret(t.http, 'life', account.clientId, account.secret);
    const owner = await t.http
      .post('/admin/v1/organizations/life/users')
      .auth(admin, { type: 'bearer' })
      .send({ userName: 'carla.holder', role: 'Cardholder', groups: ['g1'] });
    expect(owner.status).toBe(201);
    ownerId = owner.body.id;
  });
  afterAll(() => t.close());

  /** A device in `status`, as a content request or sync session would have left it; bound to a cardholder unless AVAILABLE. */
  async function seed(status: DeviceStatus, reason = 'NONE', created = new Date(t.clock.now().getTime() - 60_000)): Promise<string> {
    const id = randomUUID();
    const owner = status === 'AVAILABLE' || status === 'TERMINATED' ? null : ownerId;
    await t.db.query(
      'INSERT INTO devices (id, org_id, status, reason, owner_user_id, created_at, updated_at, version) VALUES ($1, $2, $3, $4, $5, $6, $6, 1)',
      [id, 'life', status, reason, owner, created],
    );
    await t.db.query('INSERT INTO device_external_ids (device_id, org_id, position, atr, cuid) VALUES ($1, $2, 1, $3, $4)', [id, 'life', ATR, String(++cuid)]);
    return id;
  }

  function act(id: string, action: DeviceAction, reason?: string) {
    if (action === 'delete') return t.http.delete(`/aims/rs/scim/v2/Device/${id}`).auth(token, { type: 'bearer' });
    const request = t.http.post(`/aims/rs/scim/v2/Device/${id}/${action}`).auth(token, { type: 'bearer' });
    return reason === undefined ? request : request.send({ reason });
  }

  const auditOf = async (id: string) => (await t.db.query('SELECT actor, action, outcome, details FROM audit_events WHERE target = $1 ORDER BY id', [id])).rows;

  const cases = DEVICE_STATUSES.flatMap((status) => DEVICE_ACTIONS.map((action) => [status, action, nextStatus(status, action)] as const));

  it('a device read is never served stale when a move names it in capitals (the cache key is the lower-case id)', async () => {
    const id = await seed('ISSUED');
    const read = () => t.http.get(`/aims/rs/scim/v2/Device/${id}`).auth(token, { type: 'bearer' });
    expect((await read()).body.status).toEqual({ status: 'ISSUED', reason: 'NONE' });
    expect((await act(id.toUpperCase(), 'suspend', 'LOST')).status).toBe(200);
    expect((await read()).body.status).toEqual({ status: 'ON_HOLD', reason: 'LOST' });
  });

  it('the walk covers every entry point in every status', () => {
    expect(cases).toHaveLength(DEVICE_STATUSES.length * DEVICE_ACTIONS.length);
    expect(cases.filter(([, , next]) => next !== undefined).map(([status, action]) => `${status} ${action}`)).toEqual([
      'AVAILABLE delete',
      'PRODUCED activate',
      'PRODUCED terminate',
      'ISSUED suspend',
      'ISSUED revoke',
      'ISSUED terminate',
      'ON_HOLD resume',
      'ON_HOLD revoke',
      'ON_HOLD terminate',
      'REVOKED terminate',
    ]);
  });

  it.each(cases.filter(([, , next]) => next !== undefined))('%s --%s--> %s', async (status, action, next) => {
    const id = await seed(status);
    t.clock.advance(1);
    const response = await act(id, action, REASON[action]);
    if (next === null) {
      expect(response.status).toBe(204);
      expect(await auditOf(id)).toEqual([
        {
          actor: expect.stringMatching(/^life-/),
          action: 'device.delete',
          outcome: 'success',
          details: { from: status, externalIds: [{ ATR, CUID: expect.any(String) }] },
        },
      ]);
      expect((await t.db.query('SELECT count(*)::int AS n FROM devices WHERE id = $1', [id])).rows).toEqual([{ n: 0 }]);
      return;
    }
    const transition = transitionOf(action);
    const reason = REASON[action] ?? transition.reason.default;
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/scim\+json/);
    expect(response.headers.etag).toBe('W/"2"');
    expect(response.body).toMatchObject({ id, status: { status: next, reason }, meta: { version: '2', lastModified: t.clock.now().toISOString() } });
    expect(response.body.meta.created).not.toBe(response.body.meta.lastModified);
    expect(response.body.meta.lastModified).toMatch(ISO_MS_UTC);
    // the owner goes with terminate; issuanceDate comes with activate
    if (transition.clearsOwner) expect(response.body.owner).toBeUndefined();
    else expect(response.body.owner).toMatchObject({ value: ownerId, display: 'carla.holder' });
    if (transition.setsIssuanceDate) expect(response.body.issuanceDate).toBe(t.clock.now().toISOString());
    else expect(response.body.issuanceDate).toBeUndefined();
    // a read shows the same, and the audit log has the move
    const read = await t.http.get(`/aims/rs/scim/v2/Device/${id}`).auth(token, { type: 'bearer' });
    expect(read.body).toEqual(response.body);
    expect(await auditOf(id)).toEqual([
      {
        actor: expect.stringMatching(/^life-/),
        action: `device.${action}`,
        outcome: 'success',
        details: { from: status, to: next, reason, ...(transition.clearsOwner ? { previousOwner: ownerId } : {}) },
      },
    ]);
  });

  it.each(cases.filter(([, , next]) => next === undefined))('%s --%s--> 409', async (status, action) => {
    const id = await seed(status, status === 'ON_HOLD' ? 'LOST' : 'NONE');
    const response = await act(id, action, REASON[action]);
    const allowed = transitionOf(action).from.join(' or ');
    expect({ status: response.status, body: response.body }).toEqual({
      status: 409,
      body: { schemas: [SCIM_ERROR], status: '409', detail: `Device ${id} is ${status}; ${action} applies only to a device that is ${allowed} (DECISIONS 8).` },
    });
    expect(response.headers['content-type']).toMatch(/^application\/scim\+json/);
    // nothing changed, nothing audited
    expect((await t.db.query('SELECT status, version FROM devices WHERE id = $1', [id])).rows).toEqual([{ status, version: 1 }]);
    expect(await auditOf(id)).toEqual([]);
  });

  it('every transition of the table that has no entry point is listed as the work of content requests or sync sessions', () => {
    expect(DEVICE_LIFECYCLE.filter((t) => !(DEVICE_ACTIONS as readonly string[]).includes(t.trigger)).map((t) => t.trigger)).toEqual([
      'bind',
      'unbind',
      'completeIssuance',
      'completeProduce',
      'recycle',
    ]);
  });

  describe('reasons (form field or JSON)', () => {
    it('suspend takes its reason as a form field, as JSON and as SCIM JSON', async () => {
      for (const [reason, send] of [
        ['LOST', (r: ReturnType<typeof act>) => r.type('form').send({ reason: 'LOST' })],
        ['STOLEN', (r: ReturnType<typeof act>) => r.send({ reason: 'STOLEN' })],
        [
          'DAMAGED',
          (r: ReturnType<typeof act>) =>
            r
              .set('Content-Type', 'application/scim+json')
              .send(JSON.stringify({ schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], reason: 'DAMAGED' })),
        ],
        ['FORGOTTEN', (r: ReturnType<typeof act>) => r.set('Content-Type', 'application/x-www-form-urlencoded; charset=utf-8').send('reason=FORGOTTEN')],
      ] as const) {
        const id = await seed('ISSUED');
        const response = await send(act(id, 'suspend'));
        expect({ reason, status: response.status, body: response.body.status }).toEqual({ reason, status: 200, body: { status: 'ON_HOLD', reason } });
        expect(response.headers['content-type']).toMatch(/^application\/scim\+json/);
      }
    });

    it.each([
      ['suspend', 'ISSUED', undefined, 'Invalid reason: suspend needs a reason: one of LOST, STOLEN, DAMAGED, FORGOTTEN.'],
      ['suspend', 'ISSUED', 'RENEW', 'Invalid reason: reason RENEW does not apply to suspend; use one of LOST, STOLEN, DAMAGED, FORGOTTEN.'],
      ['resume', 'ON_HOLD', 'LOST', 'Invalid reason: reason LOST does not apply to resume; use one of NONE.'],
      ['revoke', 'ISSUED', 'UNASSIGNED', 'Invalid reason: reason UNASSIGNED does not apply to revoke; use one of NONE, LOST, STOLEN, DAMAGED, RENEW, EXPIRED.'],
      ['suspend', 'ISSUED', 'lost', /reason: must be one of NONE, RECYCLE, ASSIGNED, LOST/],
      ['suspend', 'ISSUED', 7, /reason: must be one of/],
    ] as const)('%s from %s with reason %j: 400 naming the reason', async (action, status, reason, detail) => {
      const id = await seed(status);
      const response = await act(id, action, reason as string | undefined);
      expect({ status: response.status, body: response.body }).toEqual({
        status: 400,
        body: { schemas: [SCIM_ERROR], status: '400', scimType: 'invalidValue', detail: typeof detail === 'string' ? detail : expect.stringMatching(detail) },
      });
      expect((await t.db.query('SELECT status, version FROM devices WHERE id = $1', [id])).rows).toEqual([{ status, version: 1 }]);
    });

    it('refuses unknown attributes and a text body', async () => {
      const id = await seed('ISSUED');
      const extra = await act(id, 'suspend').send({ reason: 'LOST', note: 'x' });
      expect(extra.status).toBe(400);
      expect(extra.body.detail).toBe('Invalid action request: attribute "note" is not part of this resource.');
      const text = await act(id, 'suspend').set('Content-Type', 'text/plain').send('LOST');
      expect(text.status).toBe(415);
      expect(text.body.detail).toMatch(/Content-Type text\/plain is not accepted here/);
    });
  });

  it('a device goes ISSUED -> ON_HOLD -> ISSUED -> REVOKED -> TERMINATED, version and lastModified moving each time', async () => {
    const id = await seed('ISSUED');
    const steps: [DeviceAction, string | undefined, string, string][] = [
      ['suspend', 'FORGOTTEN', 'ON_HOLD', 'FORGOTTEN'],
      ['resume', undefined, 'ISSUED', 'NONE'],
      ['revoke', 'DAMAGED', 'REVOKED', 'DAMAGED'],
      ['terminate', 'DAMAGED', 'TERMINATED', 'DAMAGED'],
    ];
    let version = 1;
    for (const [action, reason, status, resulting] of steps) {
      t.clock.advance(2);
      const response = await act(id, action, reason);
      version += 1;
      expect({
        action,
        status: response.status,
        device: response.body.status,
        version: response.body.meta.version,
        lastModified: response.body.meta.lastModified,
      }).toEqual({
        action,
        status: 200,
        device: { status, reason: resulting },
        version: String(version),
        lastModified: t.clock.now().toISOString(),
      });
    }
    expect((await auditOf(id)).map((e) => e.action)).toEqual(['device.suspend', 'device.resume', 'device.revoke', 'device.terminate']);
  });

  it('the alias path moves devices too', async () => {
    const id = await seed('PRODUCED');
    const response = await t.http.post(`/aims/rs/scm/v2/Device/${id}/activate`).auth(token, { type: 'bearer' });
    expect(response.status).toBe(200);
    expect(response.body.status).toEqual({ status: 'ISSUED', reason: 'NONE' });
    expect(response.body.meta.location).toBe(`https://api.example.test/aims/rs/scim/v2/Device/${id}`);
  });

  describe('concurrent moves of one device serialise (no lost update)', () => {
    it('ten concurrent suspends: one 200, nine 409, version 2, one audit event', async () => {
      const id = await seed('ISSUED');
      const responses = await Promise.all(Array.from({ length: 10 }, () => act(id, 'suspend', 'LOST')));
      expect(responses.filter((r) => r.status === 200)).toHaveLength(1);
      const conflicts = responses.filter((r) => r.status === 409);
      expect(conflicts).toHaveLength(9);
      for (const conflict of conflicts)
        expect(conflict.body.detail).toBe(`Device ${id} is ON_HOLD; suspend applies only to a device that is ISSUED (DECISIONS 8).`);
      expect((await t.db.query('SELECT status, reason, version FROM devices WHERE id = $1', [id])).rows).toEqual([
        { status: 'ON_HOLD', reason: 'LOST', version: 2 },
      ]);
      expect(await auditOf(id)).toHaveLength(1);
    });

    it('revoke and terminate racing on one ISSUED device: both may succeed only in the order revoke, terminate; the version counts every success', async () => {
      for (let round = 0; round < 5; round++) {
        const id = await seed('ISSUED');
        const [revoke, terminate] = await Promise.all([act(id, 'revoke'), act(id, 'terminate')]);
        const successes = [revoke, terminate].filter((r) => r.status === 200).length;
        const [row] = (await t.db.query('SELECT status, version FROM devices WHERE id = $1', [id])).rows;
        expect(row.status).toBe('TERMINATED');
        expect(row.version).toBe(1 + successes);
        expect(terminate.status).toBe(200);
        if (revoke.status === 409) expect(revoke.body.detail).toMatch(/is TERMINATED; revoke applies only/);
        expect(await auditOf(id)).toHaveLength(successes);
      }
    });

    it('two concurrent deletes of one device: one 204, one 404', async () => {
      const id = await seed('AVAILABLE');
      const [first, second] = await Promise.all([act(id, 'delete'), act(id, 'delete')]);
      expect([first.status, second.status].sort()).toEqual([204, 404]);
    });
  });
});
