import { createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { AUDIT_CATALOGUE } from '@app/audit';
import {
  PLATFORM_ADMIN_SECRET,
  TestApp,
  createOrganization,
  createSystemAccount,
  createTestApp,
  makeCertificate,
  platformAdminToken,
  signAssertion,
  tokenBySecret,
  tokenRequest,
  uploadCertificate,
  expectScimError,
  cookiePair,
  errorText,
  hiddenField,
} from '@app/testing';

/**
 * The audit log (DECISIONS 11): GET /admin/v1/organizations/{org}/audit-events with its filters and
 * paging, confined like the rest of the admin API; and the security events the token service writes
 * into it (token issued, authentication failed, lockout, token revoked, certificate expired in use),
 * none of which may ever carry a secret.
 */

const SCIM_ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const LIST_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
const ISO_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const AUTH_BASE_URL = 'https://auth.example.test';
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const FAILURE_LIMIT = 3;

interface AuditItem {
  id: string;
  occurred: string;
  org: string | null;
  actor: string;
  action: string;
  code: number;
  target: string | null;
  outcome: 'success' | 'failure';
  sourceAddress: string | null;
  correlationId: string | null;
  details: Record<string, unknown>;
}

describe('audit log (DECISIONS 11)', () => {
  let t: TestApp;
  let admin: string;
  let counter = 0;
  /** Every secret and password this suite uses: none may reach the audit log or the logs. */
  const secretsUsed = new Set<string>([PLATFORM_ADMIN_SECRET]);
  const newOrgId = (prefix = 'aud') => `${prefix}_${++counter}_${randomBytes(3).toString('hex')}`;
  /** Each test sends from its own address (X-Forwarded-For from a trusted proxy), so lockout counters never meet. */
  const newAddress = () => `203.0.113.${++counter}`;

  beforeAll(async () => {
    t = await createTestApp({ env: { AUTH_FAILURE_LIMIT: String(FAILURE_LIMIT), TRUSTED_PROXIES: '127.0.0.1,::1,::ffff:127.0.0.1' } });
  });
  afterAll(() => t.close());
  beforeEach(async () => {
    admin = await platformAdminToken(t.http);
  });

  function events(org: string, query = '', token = admin) {
    return t.http.get(`/admin/v1/organizations/${org}/audit-events${query}`).auth(token, { type: 'bearer' });
  }

  async function account(org: string, body: Record<string, unknown>) {
    const created = await createSystemAccount(t.http, admin, org, body);
    secretsUsed.add(created.secret);
    return created;
  }

  async function orgWithAdmin() {
    const org = newOrgId();
    await createOrganization(t.http, admin, org);
    const orgAdmin = await account(org, { suffix: 'admin', role: 'Administration', organizationAdministrator: true });
    return { org, orgAdmin, orgAdminToken: await tokenBySecret(t.http, org, orgAdmin.clientId, orgAdmin.secret) };
  }

  const secretGrant = (org: string, clientId: string, secret: string, address: string) => {
    secretsUsed.add(secret);
    return tokenRequest(t.http, org, { grant_type: 'client_credentials', client_id: clientId, client_secret: secret }).set('X-Forwarded-For', address);
  };

  /**
   * What the log keeps of an identity that names no account (DECISIONS 11), computed here as an
   * investigator holding SECRET_PEPPER would: its shape, its length and an HMAC-SHA-256 under the key
   * HKDF derives from the pepper with the label `audit-claimed-identity/v1`, 16 hex digits.
   */
  function unverified(shape: 'unknown' | 'malformed', text: string): string {
    const key = Buffer.from(hkdfSync('sha256', t.config.secretPepper, Buffer.alloc(0), 'audit-claimed-identity/v1', 32));
    return `<${shape}: ${[...text].length} chars, #${createHmac('sha256', key).update(text, 'utf8').digest('hex').slice(0, 16)}>`;
  }

  async function stored(org: string | null, action: string) {
    const { rows } = await t.db.query<{
      actor: string;
      target: string | null;
      outcome: string;
      source_address: string | null;
      details: Record<string, unknown>;
    }>(`SELECT actor, target, outcome, source_address, details FROM audit_events WHERE org_id IS NOT DISTINCT FROM $1 AND action = $2 ORDER BY id`, [
      org,
      action,
    ]);
    return rows;
  }

  describe('GET /organizations/{org}/audit-events', () => {
    it("a ListResponse of the organization's events, newest first, each {id, occurred, org, actor, action, code, target, outcome, sourceAddress, correlationId, details}", async () => {
      const org = newOrgId();
      const address = newAddress();
      const created = await t.http
        .post('/admin/v1/organizations')
        .auth(admin, { type: 'bearer' })
        .set('X-Forwarded-For', address)
        .send({ id: org, name: 'Audited' });
      expect(created.status).toBe(201);
      t.clock.advance(1);
      const account = await t.http
        .post(`/admin/v1/organizations/${org}/system-accounts`)
        .auth(admin, { type: 'bearer' })
        .set('X-Forwarded-For', address)
        .send({ suffix: 'one', role: 'Issuance' })
        .expect(201);

      const response = await events(org);
      expect(response.status).toBe(200);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.body).toEqual({ schemas: [LIST_RESPONSE], totalResults: 2, itemsPerPage: 2, startIndex: 1, Resources: expect.any(Array) });
      const [newest, oldest] = response.body.Resources as AuditItem[];
      expect(newest).toEqual({
        id: expect.stringMatching(/^\d+$/),
        occurred: t.clock.now().toISOString(),
        org,
        actor: 'platform-admin',
        action: 'system_account.create',
        code: 71001,
        target: `${org}-one`,
        outcome: 'success',
        sourceAddress: address,
        correlationId: account.headers['x-correlation-id'],
        details: { role: 'Issuance', organizationAdministrator: false },
      });
      expect(oldest).toEqual({
        id: expect.stringMatching(/^\d+$/),
        occurred: new Date(t.clock.now().getTime() - 1000).toISOString(),
        org,
        actor: 'platform-admin',
        action: 'organization.create',
        code: 70001,
        target: org,
        outcome: 'success',
        sourceAddress: address,
        correlationId: created.headers['x-correlation-id'],
        details: {},
      });
      expect(created.headers['x-correlation-id']).toMatch(/^[0-9a-f-]{36}$/);
      expect(Number(newest.id)).toBeGreaterThan(Number(oldest.id));
    });

    it('code filters by the numeric event code (docs/audit-events.md), also for the events the token service batches; a code that is not a number is a 400', async () => {
      const { org } = await orgWithAdmin();
      const robot = await account(org, { suffix: 'robot', role: 'Issuance' });
      const address = newAddress();
      const issued = await secretGrant(org, robot.clientId, robot.secret, address);
      expect(issued.status).toBe(200);
      const refused = await secretGrant(org, robot.clientId, 'not-the-secret', address);
      expect(refused.status).toBe(401);

      const tokens = await events(org, `?code=80001&actor=${robot.clientId}`);
      expect(tokens.status).toBe(200);
      expect(tokens.body.Resources.map((e: AuditItem) => [e.action, e.code, e.actor, e.correlationId])).toEqual([
        ['token.issue', 80001, robot.clientId, issued.headers['x-correlation-id']],
      ]);
      const failures = await events(org, '?code=80003');
      expect(failures.body.Resources.map((e: AuditItem) => [e.action, e.code, e.outcome, e.correlationId])).toEqual([
        ['authentication.fail', 80003, 'failure', refused.headers['x-correlation-id']],
      ]);
      const accounts = await events(org, '?code=71001&actor=platform-admin');
      expect(accounts.body.totalResults).toBe(2);
      expect(accounts.body.Resources.every((e: AuditItem) => e.action === 'system_account.create')).toBe(true);
      expect((await events(org, '?code=99999')).body.totalResults).toBe(0);

      const bad = await events(org, '?code=token.issue');
      expectScimError(bad, 400, 'invalidValue', 'code: must be an event code');
      // The reason names where the codes are listed through the API, never a file of the repository.
      expect(bad.body.detail).toContain('GET /admin/v1/audit-actions lists them');
      expect(bad.body.detail).not.toMatch(/\.md\b|docs\//);
    });

    it('filters: from (inclusive), to (exclusive), actor, action (exact or prefix*), target, outcome; paging with startIndex and count', async () => {
      const { org, orgAdmin, orgAdminToken } = await orgWithAdmin();
      const start = t.clock.now();
      const ids: string[] = [];
      for (const suffix of ['a1', 'b2', 'c3']) {
        t.clock.advance(60);
        const response = await t.http
          .post(`/admin/v1/organizations/${org}/system-accounts`)
          .auth(orgAdminToken, { type: 'bearer' })
          .send({ suffix, role: 'Issuance' });
        expect(response.status).toBe(201);
        secretsUsed.add(response.body.secret.value);
        ids.push(response.body.clientId);
      }
      t.clock.advance(60);
      expect(
        (await t.http.patch(`/admin/v1/organizations/${org}/system-accounts/${ids[0]}`).auth(orgAdminToken, { type: 'bearer' }).send({ role: 'Help Desk' }))
          .status,
      ).toBe(200);
      expect((await secretGrant(org, ids[1], 'not-the-secret', newAddress())).status).toBe(401);

      const list = async (query: string) => {
        const response = await events(org, query);
        expect(response.status).toBe(200);
        return response.body as { totalResults: number; itemsPerPage: number; startIndex: number; Resources: AuditItem[] };
      };
      const at = (seconds: number) => encodeURIComponent(new Date(start.getTime() + seconds * 1000).toISOString());

      const creates = await list(`?actor=${orgAdmin.clientId}&action=system_account.create`);
      expect(creates.Resources.map((e) => e.target)).toEqual([...ids].reverse());
      expect(creates.totalResults).toBe(3);

      const window = await list(`?from=${at(120)}&to=${at(180)}&action=system_account.create`);
      expect(window.Resources.map((e) => e.target)).toEqual([ids[1]]);
      const fromOnly = await list(`?from=${at(120)}&action=system_account.*`);
      expect(fromOnly.Resources.map((e) => `${e.action} ${e.target}`)).toEqual([
        `system_account.update ${ids[0]}`,
        `system_account.create ${ids[2]}`,
        `system_account.create ${ids[1]}`,
      ]);
      // An offset form of the same instant selects the same events.
      const offsetForm = encodeURIComponent(new Date(start.getTime() + 120_000).toISOString().replace('Z', '+00:00'));
      expect((await list(`?from=${offsetForm}&action=system_account.*`)).Resources).toEqual(fromOnly.Resources);

      const byTarget = await list(`?target=${ids[0]}`);
      expect(byTarget.Resources.map((e) => e.action)).toEqual(['system_account.update', 'system_account.create']);
      const failures = await list('?outcome=failure');
      expect(failures.Resources).toEqual([expect.objectContaining({ action: 'authentication.fail', actor: ids[1], target: ids[1], outcome: 'failure' })]);
      const successes = await list('?outcome=success');
      expect(successes.Resources.every((e) => e.outcome === 'success')).toBe(true);

      const all = await list('');
      const page = await list('?startIndex=2&count=2');
      expect(page).toEqual({ schemas: [LIST_RESPONSE], totalResults: all.totalResults, itemsPerPage: 2, startIndex: 2, Resources: all.Resources.slice(1, 3) });
      const countOnly = await list('?count=0&action=system_account.create');
      expect(countOnly).toEqual({ schemas: [LIST_RESPONSE], totalResults: 4, itemsPerPage: 0, startIndex: 1, Resources: [] });
      const none = await list(`?actor=nobody&from=${at(0)}`);
      expect(none).toEqual({ schemas: [LIST_RESPONSE], totalResults: 0, itemsPerPage: 0, startIndex: 1, Resources: [] });
    });

    it('q finds free text in the actor, the target or the details, in any case, with % and _ taken literally; it combines with the other filters', async () => {
      const { org, orgAdmin, orgAdminToken } = await orgWithAdmin();
      const created: string[] = [];
      for (const suffix of ['Harbour7', 'harbourX', 'Quay5']) {
        const response = await t.http
          .post(`/admin/v1/organizations/${org}/system-accounts`)
          .auth(orgAdminToken, { type: 'bearer' })
          .send({ suffix, role: 'Issuance' });
        expect(response.status).toBe(201);
        secretsUsed.add(response.body.secret.value);
        created.push(response.body.clientId);
      }
      const list = async (query: string) => {
        const response = await events(org, query);
        expect(response.status).toBe(200);
        return response.body as { totalResults: number; Resources: AuditItem[] };
      };
      // The target, in any case.
      const harbour = await list('?q=HARBOUR&action=system_account.create');
      expect(harbour.Resources.map((e) => e.target).sort()).toEqual([created[0], created[1]].sort());
      expect(harbour.totalResults).toBe(2);
      // The actor: every event the organization's administrator caused.
      const byActor = await list(`?q=${encodeURIComponent(orgAdmin.clientId.toUpperCase())}`);
      expect(byActor.totalResults).toBeGreaterThanOrEqual(3);
      expect(
        byActor.Resources.every(
          (e) =>
            e.actor === orgAdmin.clientId ||
            e.target === orgAdmin.clientId ||
            JSON.stringify(e.details).toLowerCase().includes(orgAdmin.clientId.toLowerCase()),
        ),
      ).toBe(true);
      // % and _ are literal characters, not wildcards: as wildcards both would find the two 'harbour' accounts.
      expect((await list(`?q=${encodeURIComponent('harbou_')}&action=system_account.create`)).totalResults).toBe(0);
      expect((await list(`?q=${encodeURIComponent('har%our')}&action=system_account.create`)).totalResults).toBe(0);
      // The details: a word found only there (the role given, `{"role": "Issuance"}`).
      const issuance = await list('?q=issuanc&action=system_account.create');
      expect(issuance.Resources.map((e) => e.target).sort()).toEqual([...created].sort());
      expect(issuance.Resources.every((e) => e.details.role === 'Issuance')).toBe(true);
      // Nothing matches: an empty list, not an error.
      expect(await list('?q=no-such-words-here')).toEqual(expect.objectContaining({ totalResults: 0, Resources: [] }));
    });

    it.each<[string, string]>([
      ['from=yesterday', 'from'],
      ['from=2030-01-01', 'from'],
      ['to=2030-13-01T00:00:00Z', 'to'],
      ['from=2030-01-02T00:00:00Z&to=2030-01-01T00:00:00Z', 'from must be earlier than to'],
      ['from=2030-01-01T00:00:00Z&to=2030-01-01T00:00:00Z', 'from must be earlier than to'],
      ['outcome=maybe', 'outcome'],
      ['action=Not%20An%20Action', 'action'],
      ['action=*', 'action'],
      ['actor=', 'actor'],
      [`target=${'x'.repeat(257)}`, 'target'],
      ['actr=platform-admin', '"actr"'],
      ['outcome=success&outcome=failure', 'outcome may be given once'],
      ['count=abc', 'count'],
      ['startIndex=first', 'startIndex'],
      ['q=a', 'q: must be at least 2 characters'],
      ['q=%20%20', 'q: must be at least 2 characters'],
      [`q=${'y'.repeat(101)}`, 'q: must be at most 100 characters'],
      ['q=ab&q=cd', 'q may be given once'],
    ])('?%s is a 400 naming the problem', async (query, detail) => {
      const response = await events('platform', `?${query}`);
      expectScimError(response, 400, 'invalidValue', detail);
    });

    it('GET /admin/v1/audit-actions: the whole catalogue in code order, each {action, code, group, description}; administrators only (401, 403)', async () => {
      const { org, orgAdminToken } = await orgWithAdmin();
      const plain = await account(org, { suffix: 'reader', role: 'Issuance' });
      const listed = await t.http.get('/admin/v1/audit-actions').auth(orgAdminToken, { type: 'bearer' });
      expect(listed.status).toBe(200);
      expect(listed.headers['content-type']).toMatch(/^application\/json/);
      expect(listed.body.schemas).toEqual([LIST_RESPONSE]);
      const catalogue = Object.entries(AUDIT_CATALOGUE).sort(([, a], [, b]) => a.code - b.code);
      expect(listed.body.totalResults).toBe(catalogue.length);
      expect(listed.body.Resources).toHaveLength(catalogue.length);
      expect(listed.body.Resources[0]).toEqual({ action: 'device.create', code: 10000, group: 'device', description: 'Device created' });
      expect(listed.body.Resources).toContainEqual({
        action: 'content_request.approve',
        code: 30002,
        group: 'content_request',
        description: 'Content request approved',
      });
      expect(listed.body.Resources.map((a: { code: number }) => a.code)).toEqual(catalogue.map(([, entry]) => entry.code));
      expect((await t.http.get('/admin/v1/audit-actions').auth(admin, { type: 'bearer' })).status).toBe(200);
      const anonymous = await t.http.get('/admin/v1/audit-actions');
      expectScimError(anonymous, 401, undefined, /\S/);
      const refused = await t.http.get('/admin/v1/audit-actions').auth(await tokenBySecret(t.http, org, plain.clientId, plain.secret), { type: 'bearer' });
      expectScimError(refused, 403, undefined, /administrator/);
    });

    it('401 without a token; 403 for a non-administrator; an organization administrator reads its own organization only (the same 404 for another or an unknown one)', async () => {
      const mine = await orgWithAdmin();
      const theirs = await orgWithAdmin();
      const plain = await account(mine.org, { suffix: 'plain', role: 'Issuance' });
      const plainToken = await tokenBySecret(t.http, mine.org, plain.clientId, plain.secret);

      const anonymous = await t.http.get(`/admin/v1/organizations/${mine.org}/audit-events`);
      expectScimError(anonymous, 401, undefined, /\S/);
      expect(anonymous.headers['www-authenticate']).toMatch(/^Bearer/);
      expectScimError(await events(mine.org, '', plainToken), 403, undefined, /organization administrator/);

      const own = await events(mine.org, '', mine.orgAdminToken);
      expect(own.status).toBe(200);
      expect((own.body.Resources as AuditItem[]).every((e) => e.org === mine.org)).toBe(true);
      expect((own.body.Resources as AuditItem[]).map((e) => e.action)).toEqual(
        expect.arrayContaining(['organization.create', 'system_account.create', 'token.issue']),
      );

      const unknown = newOrgId('nowhere');
      const answer = async (org: string) => {
        const response = await events(org, '', mine.orgAdminToken);
        return { status: response.status, body: JSON.parse(JSON.stringify(response.body).replaceAll(org, '<org>')) as unknown };
      };
      const other = await answer(theirs.org);
      expect(other).toEqual({ status: 404, body: { schemas: [SCIM_ERROR], status: '404', detail: 'Organization "<org>" does not exist.' } });
      expect(await answer(unknown)).toEqual(other);
      // A filter does not open another organization either.
      expect((await events(theirs.org, `?actor=${theirs.orgAdmin.clientId}`, mine.orgAdminToken)).status).toBe(404);
    });

    it("the platform administrator reads any organization's events, also after the organization was deleted; one that never existed is a 404", async () => {
      const { org, orgAdminToken } = await orgWithAdmin();
      expect((await events(org)).status).toBe(200);
      expect((await t.http.delete(`/admin/v1/organizations/${org}?force=true`).auth(admin, { type: 'bearer' })).status).toBe(204);
      const after = await events(org, '?action=organization.*');
      expect(after.status).toBe(200);
      expect((after.body.Resources as AuditItem[]).map((e) => e.action)).toEqual(['organization.delete', 'organization.create']);
      expect((after.body.Resources as AuditItem[])[0].details).toEqual({ force: true, removed: { systemAccounts: 1, users: 0, devices: 0 } });
      // The deleted organization's administrator holds nothing any more.
      expect((await events(org, '', orgAdminToken)).status).toBe(401);
      expectScimError(await events('not-an-org-id'), 404, undefined, 'Nothing is named "not-an-org-id": the path parameter org must be an organization id');
      const never = newOrgId('never');
      expectScimError(await events(never), 404, undefined, `Organization "${never}" does not exist.`);
    });
  });

  describe('security events', () => {
    it("admin access denied: a non-administrator (403) and an organization administrator reaching into another organization (404), recorded for the caller's organization", async () => {
      const mine = await orgWithAdmin();
      const theirs = await orgWithAdmin();
      const plain = await account(mine.org, { suffix: 'plain', role: 'Issuance' });
      const plainToken = await tokenBySecret(t.http, mine.org, plain.clientId, plain.secret);
      const address = newAddress();
      const forbidden = await t.http
        .get(`/admin/v1/organizations/${mine.org}/system-accounts?count=5`)
        .auth(plainToken, { type: 'bearer' })
        .set('X-Forwarded-For', address);
      expect(forbidden.status).toBe(403);
      const elsewhere = await t.http
        .delete(`/admin/v1/organizations/${theirs.org}/system-accounts/${theirs.orgAdmin.clientId}`)
        .auth(mine.orgAdminToken, { type: 'bearer' })
        .set('X-Forwarded-For', address);
      expect(elsewhere.status).toBe(404);
      const notPlatform = await t.http
        .post('/admin/v1/organizations')
        .auth(mine.orgAdminToken, { type: 'bearer' })
        .set('X-Forwarded-For', address)
        .send({ id: newOrgId(), name: 'x' });
      expect(notPlatform.status).toBe(403);

      expect(await stored(mine.org, 'admin.access_denied')).toEqual([
        {
          actor: plain.clientId,
          target: `/admin/v1/organizations/${mine.org}/system-accounts`,
          outcome: 'failure',
          source_address: address,
          details: { method: 'GET', route: '/admin/v1/organizations/:org/system-accounts', status: 403 },
        },
        {
          actor: mine.orgAdmin.clientId,
          target: `/admin/v1/organizations/${theirs.org}/system-accounts/${theirs.orgAdmin.clientId}`,
          outcome: 'failure',
          source_address: address,
          details: { method: 'DELETE', route: '/admin/v1/organizations/:org/system-accounts/:clientId', status: 404 },
        },
        {
          actor: mine.orgAdmin.clientId,
          target: '/admin/v1/organizations',
          outcome: 'failure',
          source_address: address,
          details: { method: 'POST', route: '/admin/v1/organizations', status: 403 },
        },
      ]);
      // The other organization's log learns nothing of the attempt.
      expect(await stored(theirs.org, 'admin.access_denied')).toEqual([]);
      // Refusals that are not about access (a 404 for an unknown account of one's own organization) are not security events.
      expect(
        (await t.http.get(`/admin/v1/organizations/${mine.org}/system-accounts/${mine.org}-ghost`).auth(mine.orgAdminToken, { type: 'bearer' })).status,
      ).toBe(404);
      expect((await stored(mine.org, 'admin.access_denied')).length).toBe(3);
    });

    it('token issued and token revoked, with the client, the source address and the jti', async () => {
      const { org } = await orgWithAdmin();
      const robot = await account(org, { suffix: 'robot', role: 'Issuance' });
      const address = newAddress();
      const issued = await secretGrant(org, robot.clientId, robot.secret, address);
      expect(issued.status).toBe(200);
      const jti = JSON.parse(Buffer.from(issued.body.access_token.split('.')[1], 'base64url').toString()).jti as string;
      expect(await stored(org, 'token.issue')).toContainEqual({
        actor: robot.clientId,
        target: robot.clientId,
        outcome: 'success',
        source_address: address,
        details: expect.objectContaining({ jti }),
      });

      const revoked = await t.http
        .post(`/authentication/customer/${org}/revoke`)
        .type('form')
        .set('X-Forwarded-For', address)
        .send({ token: issued.body.access_token, client_id: robot.clientId, client_secret: robot.secret });
      expect(revoked.status).toBe(200);
      expect(await stored(org, 'token.revoke')).toEqual([{ actor: robot.clientId, target: jti, outcome: 'success', source_address: address, details: {} }]);
    });

    it('authentication failed: a wrong secret (body or Basic) and an unknown Client ID, as failure events of the organization that name the claimed client, never the secret', async () => {
      const { org, orgAdminToken } = await orgWithAdmin();
      const robot = await account(org, { suffix: 'robot', role: 'Issuance' });
      const address = newAddress();
      const nearMiss = `${robot.secret.slice(0, -2)}xy`;
      expect((await secretGrant(org, robot.clientId, nearMiss, address)).status).toBe(401);
      const basic = await tokenRequest(t.http, org, { grant_type: 'client_credentials' })
        .set('X-Forwarded-For', address)
        .set('Authorization', `Basic ${Buffer.from(`${robot.clientId}:wrong-basic-secret`).toString('base64')}`);
      secretsUsed.add('wrong-basic-secret');
      expect(basic.status).toBe(401);
      expect((await secretGrant(org, `${org}-ghost`, 'ghost-secret-value', address)).status).toBe(401);

      expect(await stored(org, 'authentication.fail')).toEqual([
        {
          actor: robot.clientId,
          target: robot.clientId,
          outcome: 'failure',
          source_address: address,
          details: { reason: 'wrong_secret', method: 'client_secret_post' },
        },
        {
          actor: robot.clientId,
          target: robot.clientId,
          outcome: 'failure',
          source_address: address,
          details: { reason: 'wrong_secret', method: 'client_secret_basic' },
        },
        {
          actor: unverified('unknown', `${org}-ghost`),
          target: unverified('unknown', `${org}-ghost`),
          outcome: 'failure',
          source_address: address,
          details: { reason: 'unknown_client', method: 'client_secret_post' },
        },
      ]);
      // The organization administrator sees them through the API.
      const listed = await events(org, '?action=authentication.fail', orgAdminToken);
      expect(listed.status).toBe(200);
      expect(listed.body.totalResults).toBe(3);

      // A failure at an organization that does not exist is recorded without an organization.
      const nowhere = newOrgId('nowhere');
      expect((await secretGrant(nowhere, `${nowhere}-x`, 'nowhere-secret', address)).status).toBe(401);
      expect(await stored(null, 'authentication.fail')).toContainEqual({
        actor: unverified('unknown', `${nowhere}-x`),
        target: unverified('unknown', `${nowhere}-x`),
        outcome: 'failure',
        source_address: address,
        details: { reason: 'unknown_client', method: 'client_secret_post' },
      });
    });

    it('authentication failed for users: a wrong password and an assertion signed by a foreign key', async () => {
      const { org } = await orgWithAdmin();
      const password = 'user-password-for-audit';
      secretsUsed.add(password);
      const cardholder = await t.http
        .post(`/admin/v1/organizations/${org}/users`)
        .auth(admin, { type: 'bearer' })
        .send({ userName: 'card.audit', role: 'Cardholder', password });
      expect(cardholder.status).toBe(201);
      const operator = await t.http
        .post(`/admin/v1/organizations/${org}/users`)
        .auth(admin, { type: 'bearer' })
        .send({ userName: 'op.audit', role: 'Help Desk', userType: 'operator' });
      const certificate = await makeCertificate();
      expect(
        (
          await t.http
            .post(`/admin/v1/organizations/${org}/users/${operator.body.id}/certificates`)
            .auth(admin, { type: 'bearer' })
            .send({ pem: certificate.pem })
        ).status,
      ).toBe(201);
      const address = newAddress();
      secretsUsed.add('wrong-user-password');
      const wrong = await tokenRequest(t.http, org, { grant_type: 'password', username: 'card.audit', password: 'wrong-user-password' }).set(
        'X-Forwarded-For',
        address,
      );
      expect(wrong.status).toBe(400);
      const foreign = await signAssertion(await makeCertificate(), 'op.audit', `${AUTH_BASE_URL}/authentication/customer/${org}/token`, { now: t.clock.now() });
      expect((await tokenRequest(t.http, org, { grant_type: JWT_BEARER, assertion: foreign }).set('X-Forwarded-For', address)).status).toBe(400);
      expect(await stored(org, 'authentication.fail')).toEqual([
        { actor: 'card.audit', target: 'card.audit', outcome: 'failure', source_address: address, details: { reason: 'wrong_password', method: 'password' } },
        { actor: 'op.audit', target: 'op.audit', outcome: 'failure', source_address: address, details: { reason: 'bad_signature', method: 'jwt_bearer' } },
      ]);
      const right = await tokenRequest(t.http, org, { grant_type: 'password', username: 'card.audit', password }).set('X-Forwarded-For', address);
      expect(right.status).toBe(200);
      expect(await stored(org, 'token.issue')).toContainEqual({
        actor: 'card.audit',
        target: 'card.audit',
        outcome: 'success',
        source_address: address,
        details: expect.objectContaining({ method: 'password' }),
      });
    });

    it('a claimed id of neither the Client ID nor the userName form (a secret typed into the identity field) is recorded by its shape, length and keyed hash', async () => {
      const { org } = await orgWithAdmin();
      const address = newAddress();
      const typedSecret = 'correct horse battery staple! 2026';
      secretsUsed.add(typedSecret);
      expect((await secretGrant(org, typedSecret, 'some-secret-value', address)).status).toBe(401);
      const password = await tokenRequest(t.http, org, { grant_type: 'password', username: 'Ünïcode passphrase', password: 'wrong' }).set(
        'X-Forwarded-For',
        address,
      );
      expect(password.status).toBe(400);
      const tooLong = 'a'.repeat(130);
      expect((await secretGrant(org, tooLong, 'some-secret-value', address)).status).toBe(401);
      // An unknown id of a valid form is no account either: its shape, length and keyed hash, which tell repeated tries apart.
      expect((await secretGrant(org, `${org}-ghost`, 'some-secret-value', address)).status).toBe(401);
      const failure = (claimed: string, reason: string, method: string) => ({
        actor: claimed,
        target: claimed,
        outcome: 'failure',
        source_address: address,
        details: { reason, method },
      });
      expect(await stored(org, 'authentication.fail')).toEqual([
        failure(unverified('malformed', typedSecret), 'unknown_client', 'client_secret_post'),
        failure(unverified('malformed', 'Ünïcode passphrase'), 'wrong_password', 'password'),
        failure(unverified('malformed', tooLong), 'unknown_client', 'client_secret_post'),
        failure(unverified('unknown', `${org}-ghost`), 'unknown_client', 'client_secret_post'),
      ]);
    });

    it('secrets typed as client_id (form, Basic, assertion), username (password grant, login page, jwt-bearer) or login_hint (CIBA) reach no audit row; an existing account is still named', async () => {
      const { org } = await orgWithAdmin();
      const robot = await account(org, { suffix: 'robot', role: 'Issuance' });
      const ciba = await account(org, { suffix: 'ciba', role: 'Issuance' });
      const enabled = await t.http
        .patch(`/admin/v1/organizations/${org}/system-accounts/${ciba.clientId}`)
        .auth(admin, { type: 'bearer' })
        .send({ backchannelAuthentication: { tokenDeliveryMode: 'poll' } });
      expect(enabled.status).toBe(200);
      const person = await t.http
        .post(`/admin/v1/organizations/${org}/users`)
        .auth(admin, { type: 'bearer' })
        .send({ userName: 'dora.audit', role: 'Cardholder', password: 'dora-password-for-audit' });
      expect(person.status).toBe(201);
      secretsUsed.add('dora-password-for-audit');
      // Secrets as the service makes them (base64url, 256 bits): they pass the Client ID or userName form.
      const typed = Array.from({ length: 7 }, () => randomBytes(32).toString('base64url'));
      const asClientId = `${org}-${randomBytes(24).toString('hex')}`;
      for (const secret of [...typed, asClientId]) secretsUsed.add(secret);
      const address = newAddress();
      const wrong = 'not-the-secret-at-all';
      secretsUsed.add(wrong);

      expect((await secretGrant(org, typed[0], wrong, address)).status).toBe(401);
      expect((await secretGrant(org, asClientId, wrong, address)).status).toBe(401);
      const basic = await tokenRequest(t.http, org, { grant_type: 'client_credentials' })
        .set('X-Forwarded-For', address)
        .set('Authorization', `Basic ${Buffer.from(`${typed[1]}:${wrong}`).toString('base64')}`);
      expect(basic.status).toBe(401);
      // The same secret again: the same hash, so repeated attempts are told apart without the text.
      expect((await secretGrant(org, typed[0], wrong, address)).status).toBe(401);
      const tokenUrl = `${AUTH_BASE_URL}/authentication/customer/${org}/token`;
      const clientAssertion = await signAssertion(await makeCertificate(), typed[2], tokenUrl, { now: t.clock.now() });
      const asserted = await tokenRequest(t.http, org, { grant_type: 'client_credentials', client_assertion: clientAssertion }).set('X-Forwarded-For', address);
      expect(asserted.status).toBe(401);
      const password = await tokenRequest(t.http, org, { grant_type: 'password', username: typed[3], password: wrong }).set('X-Forwarded-For', address);
      expect(password.status).toBe(400);
      const userAssertion = await signAssertion(await makeCertificate(), typed[4], tokenUrl, { now: t.clock.now() });
      expect((await tokenRequest(t.http, org, { grant_type: JWT_BEARER, assertion: userAssertion }).set('X-Forwarded-For', address)).status).toBe(400);
      const hint = await t.http
        .post(`/authentication/customer/${org}/backchannel-authentication`)
        .set('X-Forwarded-For', address)
        .type('form')
        .send({ client_id: ciba.clientId, client_secret: ciba.secret, scope: 'openid', login_hint: typed[5] });
      expect(hint.status).toBe(400);
      expect(hint.body.error).toBe('unknown_user_id');
      const login = `/authentication/customer/${org}/login`;
      const form = await t.bare.get(login);
      expect(form.status).toBe(200);
      const page = await t.bare
        .post(login)
        .set({ Cookie: cookiePair(form.headers['set-cookie'], '__Host-Http-login-form')!, Origin: AUTH_BASE_URL, 'X-Forwarded-For': address })
        .type('form')
        .send({ form_token: hiddenField(form.text, 'form_token')!, step: 'password', userName: typed[6], password: wrong });
      expect(page.status).toBe(200);
      expect(errorText(page.text)).toContain('The sign-in did not succeed');
      // Existing accounts with a wrong secret or password are named, as before.
      expect((await secretGrant(org, robot.clientId, wrong, address)).status).toBe(401);
      expect(
        (await tokenRequest(t.http, org, { grant_type: 'password', username: 'dora.audit', password: wrong }).set('X-Forwarded-For', address)).status,
      ).toBe(400);

      const names = async (action: string) => (await stored(org, action)).map((row) => [row.actor, row.target, row.details.reason]);
      expect(await names('authentication.fail')).toEqual([
        [unverified('unknown', typed[0]), unverified('unknown', typed[0]), 'unknown_client'],
        [unverified('unknown', asClientId), unverified('unknown', asClientId), 'unknown_client'],
        [unverified('unknown', typed[1]), unverified('unknown', typed[1]), 'unknown_client'],
        [unverified('unknown', typed[0]), unverified('unknown', typed[0]), 'unknown_client'],
        [unverified('unknown', typed[2]), unverified('unknown', typed[2]), 'unknown_client'],
        [unverified('unknown', typed[3]), unverified('unknown', typed[3]), 'wrong_password'],
        [unverified('unknown', typed[4]), unverified('unknown', typed[4]), 'unknown_user'],
        [robot.clientId, robot.clientId, 'wrong_secret'],
        ['dora.audit', 'dora.audit', 'wrong_password'],
      ]);
      // An investigator finds the repeated tries of one text by its recorded form.
      const repeated = await events(org, `?action=authentication.fail&actor=${encodeURIComponent(unverified('unknown', typed[0]))}`);
      expect(repeated.status).toBe(200);
      expect(repeated.body.totalResults).toBe(2);
      expect(await names('backchannel.request_refused')).toEqual([[ciba.clientId, unverified('unknown', typed[5]), 'unknownUser']]);
      expect(await names('sign_in.fail')).toEqual([[unverified('unknown', typed[6]), unverified('unknown', typed[6]), 'wrong_password']]);
      // The whole of every row, as JSON: none holds any of the secrets sent.
      for (const secret of [...typed, asClientId]) {
        const found = await t.db.query('SELECT action FROM audit_events a WHERE position($1 in row_to_json(a)::text) > 0', [secret]);
        expect({ secret, rows: found.rows }).toEqual({ secret, rows: [] });
      }
    });

    it('lockout: one event when the failures reach the limit, then 429s (not audited one by one); other addresses are not locked', async () => {
      const { org, orgAdminToken } = await orgWithAdmin();
      const robot = await account(org, { suffix: 'robot', role: 'Issuance' });
      const address = newAddress();
      for (let i = 0; i < FAILURE_LIMIT; i++) expect((await secretGrant(org, robot.clientId, `wrong-${i}`, address)).status).toBe(401);
      for (let i = 0; i < 2; i++) {
        const locked = await secretGrant(org, robot.clientId, robot.secret, address);
        expect(locked.status).toBe(429);
        expect(locked.headers['retry-after']).toMatch(/^\d+$/);
      }
      expect(await stored(org, 'authentication.lockout')).toEqual([
        {
          actor: 'system',
          target: robot.clientId,
          outcome: 'failure',
          source_address: address,
          details: { scope: 'identity and address', failures: FAILURE_LIMIT, windowSeconds: 300 },
        },
      ]);
      expect((await stored(org, 'authentication.fail')).length).toBe(FAILURE_LIMIT);
      expect((await secretGrant(org, robot.clientId, robot.secret, newAddress())).status).toBe(200);
      const listed = await events(org, '?action=authentication.lockout', orgAdminToken);
      expect(listed.body.Resources).toEqual([
        expect.objectContaining({ actor: 'system', action: 'authentication.lockout', target: robot.clientId, outcome: 'failure', sourceAddress: address }),
      ]);
    });

    it('certificate expired in use: an assertion signed by a certificate past notAfter, for a client and for a user', async () => {
      const { org } = await orgWithAdmin();
      const robot = await account(org, { suffix: 'robot', role: 'Issuance' });
      const tokenUrl = `${AUTH_BASE_URL}/authentication/customer/${org}/token`;
      const notAfter = new Date(t.clock.now().getTime() + 3600_000);
      const clientCertificate = await makeCertificate({ notAfter });
      expect((await uploadCertificate(t.http, admin, org, robot.clientId, clientCertificate.pem)).status).toBe(201);
      const operator = await t.http
        .post(`/admin/v1/organizations/${org}/users`)
        .auth(admin, { type: 'bearer' })
        .send({ userName: 'op.expiring', role: 'Help Desk', userType: 'operator' });
      const userCertificate = await makeCertificate({ notAfter });
      expect(
        (
          await t.http
            .post(`/admin/v1/organizations/${org}/users/${operator.body.id}/certificates`)
            .auth(admin, { type: 'bearer' })
            .send({ pem: userCertificate.pem })
        ).status,
      ).toBe(201);
      const address = newAddress();
      const clientAssertion = async () =>
        tokenRequest(t.http, org, {
          grant_type: 'client_credentials',
          client_assertion: await signAssertion(clientCertificate, robot.clientId, tokenUrl, { now: t.clock.now() }),
        }).set('X-Forwarded-For', address);
      expect((await clientAssertion()).status).toBe(200);
      expect(await stored(org, 'certificate.expired_use')).toEqual([]);

      t.clock.advance(7200);
      const refused = await clientAssertion();
      expect(refused.status).toBe(401);
      expect(refused.body).toEqual({ error: 'invalid_client', error_description: expect.stringMatching(/expired/) });
      const userRefused = await tokenRequest(t.http, org, {
        grant_type: JWT_BEARER,
        assertion: await signAssertion(userCertificate, 'op.expiring', tokenUrl, { now: t.clock.now() }),
      }).set('X-Forwarded-For', address);
      expect(userRefused.status).toBe(400);
      expect(userRefused.body.error).toBe('invalid_grant');

      const expiredDetails = (thumbprint: string) => ({
        thumbprint,
        notAfter: expect.stringMatching(ISO_MS_UTC),
        expiresAt: expect.stringMatching(ISO_MS_UTC),
      });
      expect(await stored(org, 'certificate.expired_use')).toEqual([
        { actor: robot.clientId, target: robot.clientId, outcome: 'failure', source_address: address, details: expiredDetails(clientCertificate.thumbprint) },
        { actor: 'op.expiring', target: 'op.expiring', outcome: 'failure', source_address: address, details: expiredDetails(userCertificate.thumbprint) },
      ]);
      expect(await stored(org, 'authentication.fail')).toEqual([
        {
          actor: robot.clientId,
          target: robot.clientId,
          outcome: 'failure',
          source_address: address,
          details: { reason: 'certificate_expired', method: 'private_key_jwt' },
        },
        {
          actor: 'op.expiring',
          target: 'op.expiring',
          outcome: 'failure',
          source_address: address,
          details: { reason: 'certificate_expired', method: 'jwt_bearer' },
        },
      ]);
    });
  });

  // Last: it searches everything the suite wrote.
  it('no secret or password used in this suite appears anywhere in the audit table or the logs', async () => {
    expect(secretsUsed.size).toBeGreaterThan(10);
    const { rows } = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_events');
    expect(rows[0].n).toBeGreaterThan(50);
    const logs = t.logs.join('');
    expect(logs.length).toBeGreaterThan(0);
    for (const value of secretsUsed) {
      const found = await t.db.query('SELECT id FROM audit_events a WHERE position($1 in row_to_json(a)::text) > 0', [value]);
      expect({ value, rows: found.rows }).toEqual({ value, rows: [] });
      expect({ value, inLogs: logs.includes(value) }).toEqual({ value, inLogs: false });
    }
  });
});
