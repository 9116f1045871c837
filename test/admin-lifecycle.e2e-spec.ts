import { randomBytes, randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import {
  TestApp,
  TestCertificate,
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
  HttpMethod,
  adminCall,
  createAdminAndPlainAccounts,
} from '@app/testing';

/**
 * The deleting half of the admin API (DECISIONS 11): organizations (refused while they hold data,
 * or everything with force), system accounts, secrets (the end of a rotation with overlap) and
 * certificates; disabling and re-enabling (DECISIONS 4: a disabled account's tokens stop at once
 * and do not come back); the audit record of each change; and the OpenAPI description.
 */

const SCIM_ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const LIST_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
const AUTH_BASE_URL = 'https://auth.example.test';
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const PASSWORD = 'lifecycle-passphrase-0123';

/**
 * The audit record of an organization outlives it (DECISIONS 11, 11.2): its events, its chain's head
 * and its signed checkpoints, so that the chain still verifies after the deletion.
 */
const AUDIT_EVIDENCE = new Set(['audit_events', 'audit_chain_heads', 'audit_checkpoints', 'audit_prune_points']);
describe('admin API: deletions, rotation, disabling (DECISIONS 11, 4)', () => {
  let t: TestApp;
  let admin: string;
  let counter = 0;
  const newOrgId = (prefix = 'life') => `${prefix}_${++counter}_${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());
  beforeEach(async () => {
    admin = await platformAdminToken(t.http);
  });

  const call = (method: HttpMethod, path: string, token?: string) => adminCall(t.http, method, path, token);

  function expectNoContent(response: Response): void {
    expect(response.status).toBe(204);
    expect(response.text).toBe('');
    expect(response.headers['content-length'] ?? '0').toBe('0');
  }

  async function newOrg(prefix?: string): Promise<string> {
    const id = newOrgId(prefix);
    await createOrganization(t.http, admin, id);
    return id;
  }

  /** A new organization with an organization administrator and a plain account, with tokens. */
  const orgWithAccounts = async () => createAdminAndPlainAccounts(t.http, admin, await newOrg());

  const whoami = (org: string, token: string) => t.http.get(`/authentication/customer/${org}/whoami`).auth(token, { type: 'bearer' });

  async function expectTokenRefused(org: string, token: string, description: RegExp): Promise<void> {
    const response = await whoami(org, token);
    expect(response.status).toBe(401);
    expect(response.headers['www-authenticate']).toMatch(/^Bearer .*error="invalid_token"/);
    expect(response.headers['www-authenticate']).toMatch(description);
  }

  /** A stock device, as libs/device stores it (its table is the one the 409 counts). */
  async function insertDevice(org: string): Promise<string> {
    const id = randomUUID();
    const now = t.clock.now();
    await t.db.query("INSERT INTO devices (id, org_id, status, reason, created_at, updated_at) VALUES ($1, $2, 'AVAILABLE', 'NONE', $3, $3)", [id, org, now]);
    await t.db.query("INSERT INTO device_external_ids (device_id, org_id, position, atr, cuid) VALUES ($1, $2, 0, '3B8F8001', $3)", [
      id,
      org,
      String(Date.now()),
    ]);
    return id;
  }

  async function auditRows(org: string, action: string) {
    const { rows } = await t.db.query<{
      actor: string;
      target: string | null;
      outcome: string;
      source_address: string | null;
      details: Record<string, unknown>;
    }>('SELECT actor, target, outcome, source_address, details FROM audit_events WHERE org_id = $1 AND action = $2 ORDER BY id', [org, action]);
    return rows;
  }

  describe('DELETE /organizations/{org}', () => {
    it('an empty organization: 204, gone, audited; a second DELETE is 404', async () => {
      const org = await newOrg();
      expectNoContent(await call('delete', `/organizations/${org}`, admin));
      expectScimError(await call('get', `/organizations/${org}`, admin), 404, undefined, `Organization "${org}" does not exist`);
      expectScimError(await call('delete', `/organizations/${org}`, admin), 404, undefined, `Organization "${org}" does not exist`);
      expect(await auditRows(org, 'organization.delete')).toEqual([
        {
          actor: 'platform-admin',
          target: org,
          outcome: 'success',
          source_address: expect.any(String),
          details: { force: false, removed: { systemAccounts: 0, users: 0, devices: 0 } },
        },
      ]);
      // The id is free again.
      await createOrganization(t.http, admin, org);
    });

    it('409 while it has system accounts or users (the bootstrap-style {org}-admin counts too), and nothing is deleted', async () => {
      const withAccount = await newOrg();
      await createSystemAccount(t.http, admin, withAccount, { suffix: 'admin', role: 'Administration', organizationAdministrator: true });
      const refused = await call('delete', `/organizations/${withAccount}`, admin);
      expectScimError(refused, 409, undefined, `Organization "${withAccount}" still has 1 system account, 0 users, 0 devices`);
      expect(refused.body.detail).toContain('?force=true');
      expect((await call('get', `/organizations/${withAccount}/system-accounts/${withAccount}-admin`, admin)).status).toBe(200);

      const withUser = await newOrg();
      expect((await call('post', `/organizations/${withUser}/users`, admin).send({ userName: 'only.user', role: 'Cardholder' })).status).toBe(201);
      expectScimError(await call('delete', `/organizations/${withUser}?force=false`, admin), 409, undefined, '0 system accounts, 1 user, 0 devices');
      expect((await call('get', `/organizations/${withUser}/users`, admin)).body.totalResults).toBe(1);

      const withDevice = await newOrg();
      await insertDevice(withDevice);
      expectScimError(await call('delete', `/organizations/${withDevice}`, admin), 409, undefined, '0 system accounts, 0 users, 1 device');
      expect((await call('get', `/organizations/${withDevice}`, admin)).status).toBe(200);
    });

    it('the reserved organization "platform" cannot be deleted, not even with force', async () => {
      for (const query of ['', '?force=true']) {
        expectScimError(await call('delete', `/organizations/platform${query}`, admin), 409, undefined, 'cannot be deleted');
      }
      expect((await call('get', '/organizations/platform', admin)).status).toBe(200);
      expect((await whoami('platform', admin)).status).toBe(200);
    });

    it.each(['yes', '1', 'TRUE', ''])('?force=%s (anything but true or false) is a 400 naming force, and nothing is deleted', async (value) => {
      const org = await newOrg();
      await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
      expectScimError(await call('delete', `/organizations/${org}?force=${value}`, admin), 400, 'invalidValue', 'force must be true or false');
      expect((await call('get', `/organizations/${org}/system-accounts`, admin)).body.totalResults).toBe(1);
    });

    it('401 without a token; 403 for a non-administrator and for an organization administrator, even of that organization', async () => {
      const { org, orgAdminToken, plainToken } = await orgWithAccounts();
      const other = await orgWithAccounts();
      const anonymous = await call('delete', `/organizations/${org}?force=true`);
      expectScimError(anonymous, 401, undefined, /\S/);
      expect(anonymous.headers['www-authenticate']).toMatch(/^Bearer/);
      expectScimError(await call('delete', `/organizations/${org}?force=true`, plainToken), 403, undefined, /organization administrator/);
      expectScimError(await call('delete', `/organizations/${org}?force=true`, orgAdminToken), 403, undefined, /Only the platform administrator/);
      expectScimError(await call('delete', `/organizations/${org}?force=true`, other.orgAdminToken), 403, undefined, /Only the platform administrator/);
      // An unknown organization answers the organization administrator the same 403: existence is not revealed.
      expectScimError(
        await call('delete', `/organizations/${newOrgId('nowhere')}?force=true`, other.orgAdminToken),
        403,
        undefined,
        /Only the platform administrator/,
      );
      expect((await call('get', `/organizations/${org}/system-accounts`, admin)).body.totalResults).toBe(2);
    });

    it('404 for an unknown organization', async () => {
      const unknown = newOrgId('nowhere');
      expectScimError(await call('delete', `/organizations/${unknown}?force=true`, admin), 404, undefined, `Organization "${unknown}" does not exist`);
    });

    it('force=true removes every row of the organization in every table but audit_events; its tokens stop at once', async () => {
      const org = newOrgId('doomed');
      await createOrganization(t.http, admin, org, { applicationIdPolicy: 'any' });
      const base = `/organizations/${org}`;
      const tokenUrl = `${AUTH_BASE_URL}/authentication/customer/${org}/token`;
      // Accounts with secrets, a certificate, tokens and an assertion jti.
      const orgAdmin = await createSystemAccount(t.http, admin, org, { suffix: 'admin', role: 'Administration', organizationAdministrator: true });
      const robot = await createSystemAccount(t.http, admin, org, { suffix: 'robot', role: 'Issuance' });
      expect((await call('post', `${base}/system-accounts/${robot.clientId}/secrets`, admin).send({})).status).toBe(201);
      const robotCertificate = await makeCertificate();
      expect((await uploadCertificate(t.http, admin, org, robot.clientId, robotCertificate.pem)).status).toBe(201);
      const byAssertion = await tokenRequest(t.http, org, {
        grant_type: 'client_credentials',
        client_assertion: await signAssertion(robotCertificate, robot.clientId, tokenUrl, { now: t.clock.now() }),
      });
      expect(byAssertion.status).toBe(200);
      const orgAdminToken = await tokenBySecret(t.http, org, orgAdmin.clientId, orgAdmin.secret);
      // A failed attempt of a known account leaves a lockout counter.
      expect((await tokenRequest(t.http, org, { grant_type: 'client_credentials', client_id: robot.clientId, client_secret: 'wrong' })).status).toBe(401);
      // Users: an operator with a certificate and a token by assertion, a cardholder with a token by password.
      const operator = await call('post', `${base}/users`, admin).send({ userName: 'op.doomed', role: 'Help Desk', userType: 'operator' });
      expect(operator.status).toBe(201);
      const operatorCertificate = await makeCertificate();
      expect((await call('post', `${base}/users/${operator.body.id}/certificates`, admin).send({ pem: operatorCertificate.pem })).status).toBe(201);
      const operatorToken = await tokenRequest(t.http, org, {
        grant_type: JWT_BEARER,
        assertion: await signAssertion(operatorCertificate, 'op.doomed', tokenUrl, { now: t.clock.now() }),
      });
      expect(operatorToken.status).toBe(200);
      const cardholder = await call('post', `${base}/users`, admin).send({ userName: 'card.doomed', role: 'Cardholder', password: PASSWORD });
      expect(cardholder.status).toBe(201);
      const cardholderToken = await tokenRequest(t.http, org, { grant_type: 'password', username: 'card.doomed', password: PASSWORD });
      expect(cardholderToken.status).toBe(200);
      expect((await call('post', `${base}/applications`, admin).send({ applicationId: 'com.doomed.app' })).status).toBe(201);
      await insertDevice(org);
      // An audit stream destination (DECISIONS 11.4) with deliveries queued (siem.invalid never resolves: they stay pending).
      const destination = await call('post', `${base}/audit-destinations`, admin).send({ name: 'SIEM', type: 'syslog', host: 'siem.invalid' });
      expect(destination.status).toBe(201);
      for (const [token] of [[orgAdminToken], [byAssertion.body.access_token], [operatorToken.body.access_token], [cardholderToken.body.access_token]]) {
        expect((await whoami(org, token as string)).status).toBe(200);
      }

      // Every table the organization reached holds rows of it now, so the check below means something.
      const accountIds = (await t.db.query<{ id: string }>('SELECT id FROM system_accounts WHERE org_id = $1', [org])).rows.map((r) => r.id);
      const userIds = [operator.body.id as string, cardholder.body.id as string];
      const populated: [string, string, unknown][] = [
        ['system_accounts', 'org_id = $1', org],
        ['users', 'org_id = $1', org],
        ['certified_applications', 'org_id = $1', org],
        ['access_tokens', 'org_id = $1', org],
        ['client_secrets', 'account_id = ANY($1::uuid[])', accountIds],
        ['client_certificates', 'account_id = ANY($1::uuid[])', accountIds],
        ['assertion_jtis', 'account_id = ANY($1::uuid[])', accountIds],
        ['user_certificates', 'user_id = ANY($1::uuid[])', userIds],
        ['user_assertion_jtis', 'user_id = ANY($1::uuid[])', userIds],
        ['auth_failures', "starts_with(key, 'pair:' || $1 || '-')", org],
        ['devices', 'org_id = $1', org],
        ['device_external_ids', 'org_id = $1', org],
        ['audit_destinations', 'org_id = $1', org],
        ['audit_outbox', 'destination_id = $1', destination.body.id],
      ];
      for (const [table, condition, parameter] of populated) {
        const { rows } = await t.db.query(`SELECT count(*)::int AS n FROM ${table} WHERE ${condition}`, [parameter]);
        expect({ table, populated: rows[0].n > 0 }).toEqual({ table, populated: true });
      }

      // Needles: the organization id, and the id of every org-owned row that has a distinctive one
      // (UUIDs; found from the catalogue: every table with org_id and an id column), so that child
      // rows are found in any table. Small serial ids would match any row, and need no search: their
      // child tables carry org_id (checked below) or a foreign key (which leaves no orphan).
      const ownedTables = (
        await t.db.query<{ table_name: string; has_id: boolean }>(
          `SELECT c.table_name, EXISTS (SELECT 1 FROM information_schema.columns i WHERE i.table_schema = c.table_schema AND i.table_name = c.table_name AND i.column_name = 'id') AS has_id
             FROM information_schema.columns c JOIN information_schema.tables tb ON tb.table_schema = c.table_schema AND tb.table_name = c.table_name
            WHERE c.table_schema = current_schema() AND c.column_name = 'org_id' AND tb.table_type = 'BASE TABLE'`,
        )
      ).rows;
      expect(ownedTables.map((r) => r.table_name)).toEqual(
        expect.arrayContaining(['system_accounts', 'users', 'access_tokens', 'certified_applications', 'audit_events']),
      );
      const needles = [org, ...userIds, ...accountIds];
      for (const { table_name: table, has_id: hasId } of ownedTables) {
        if (!hasId || table === 'audit_events') continue;
        const { rows } = await t.db.query<{ id: string }>(`SELECT id::text AS id FROM "${table}" WHERE org_id = $1`, [org]);
        needles.push(...rows.map((r) => r.id).filter((id) => id.length >= 16));
      }
      const { rows: tokenRows } = await t.db.query<{ jti: string }>('SELECT jti::text AS jti FROM access_tokens WHERE org_id = $1', [org]);
      needles.push(...tokenRows.map((r) => r.jti), robotCertificate.thumbprint, operatorCertificate.thumbprint);

      const response = await call('delete', `${base}?force=true`, admin);
      expectNoContent(response);

      const tables = (
        await t.db.query<{ table_name: string }>(
          "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name",
        )
      ).rows.map((r) => r.table_name);
      expect(tables).toEqual(expect.arrayContaining(['organizations', 'client_secrets', 'user_assertion_jtis', 'auth_failures', 'audit_events']));
      for (const { table_name: table } of ownedTables) {
        if (AUDIT_EVIDENCE.has(table)) continue;
        const { rows } = await t.db.query(`SELECT count(*)::int AS n FROM "${table}" WHERE org_id = $1`, [org]);
        expect({ table, rows: rows[0].n }).toEqual({ table, rows: 0 });
      }
      for (const table of tables) {
        if (AUDIT_EVIDENCE.has(table)) continue;
        const { rows } = await t.db.query(
          `SELECT count(*)::int AS n FROM "${table}" t WHERE EXISTS (SELECT 1 FROM unnest($1::text[]) AS needle WHERE position(needle in row_to_json(t)::text) > 0)`,
          [needles],
        );
        expect({ table, rowsMentioningTheOrganization: rows[0].n }).toEqual({ table, rowsMentioningTheOrganization: 0 });
      }

      // The destination's queued deliveries went with it (no org_id of their own: a foreign key).
      expect((await t.db.query('SELECT count(*)::int AS n FROM audit_outbox WHERE destination_id = $1', [destination.body.id])).rows[0].n).toBe(0);

      // The audit events stay, with the record of the deletion.
      const kept = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_events WHERE org_id = $1', [org]);
      expect(kept.rows[0].n).toBeGreaterThan(10);
      expect(await auditRows(org, 'organization.delete')).toEqual([
        {
          actor: 'platform-admin',
          target: org,
          outcome: 'success',
          source_address: expect.any(String),
          details: { force: true, removed: { systemAccounts: 2, users: 2, devices: 1 } },
        },
      ]);

      // Tokens of the organization stop at once.
      for (const token of [orgAdminToken, byAssertion.body.access_token, operatorToken.body.access_token, cardholderToken.body.access_token]) {
        await expectTokenRefused(org, token as string, /error_description="[^"]*(not known|another organization)/);
      }
      expectScimError(await call('get', base, admin), 404, undefined, 'does not exist');
      const again = await tokenRequest(t.http, org, { grant_type: 'client_credentials', client_id: orgAdmin.clientId, client_secret: orgAdmin.secret });
      expect(again.status).toBe(401);
      expect(again.body).toEqual({ error: 'invalid_client', error_description: 'Client authentication failed.' });
    });
  });

  describe('DELETE /organizations/{org}/system-accounts/{clientId}', () => {
    it('204; the account, its secrets and certificates are gone, its live token stops at once, the Client ID is free again', async () => {
      const org = await newOrg();
      const account = await createSystemAccount(t.http, admin, org, { suffix: 'gone', role: 'Issuance' });
      const certificate = await makeCertificate();
      expect((await uploadCertificate(t.http, admin, org, account.clientId, certificate.pem)).status).toBe(201);
      const token = await tokenBySecret(t.http, org, account.clientId, account.secret);
      expect((await whoami(org, token)).status).toBe(200);
      const { rows } = await t.db.query<{ id: string }>('SELECT id FROM system_accounts WHERE client_id = $1', [account.clientId]);

      expectNoContent(await call('delete', `/organizations/${org}/system-accounts/${account.clientId}`, admin));
      await expectTokenRefused(org, token, /not known/);
      expectScimError(
        await call('get', `/organizations/${org}/system-accounts/${account.clientId}`, admin),
        404,
        undefined,
        `"${account.clientId}" does not exist`,
      );
      for (const table of ['client_secrets', 'client_certificates', 'access_tokens', 'assertion_jtis']) {
        const left = await t.db.query(`SELECT 1 FROM ${table} WHERE account_id = $1`, [rows[0].id]);
        expect({ table, rows: left.rows }).toEqual({ table, rows: [] });
      }
      const secretAgain = await tokenRequest(t.http, org, { grant_type: 'client_credentials', client_id: account.clientId, client_secret: account.secret });
      expect(secretAgain.status).toBe(401);
      expect(secretAgain.body).toEqual({ error: 'invalid_client', error_description: 'Client authentication failed.' });
      expect(await auditRows(org, 'system_account.delete')).toEqual([
        { actor: 'platform-admin', target: account.clientId, outcome: 'success', source_address: expect.any(String), details: { role: 'Issuance' } },
      ]);
      expectScimError(await call('delete', `/organizations/${org}/system-accounts/${account.clientId}`, admin), 404, undefined, 'does not exist');
      const recreated = await call('post', `/organizations/${org}/system-accounts`, admin).send({ suffix: 'gone', role: 'Help Desk' });
      expect(recreated.status).toBe(201);
    });

    it('the platform administrator account cannot be deleted (409), and stays usable', async () => {
      expectScimError(await call('delete', '/organizations/platform/system-accounts/platform-admin', admin), 409, undefined, 'platform administrator');
      expect((await whoami('platform', admin)).status).toBe(200);
    });

    it('an organization administrator deletes accounts of its own organization only: 404 for another or unknown org; 403 for a non-administrator; 401 without a token', async () => {
      const mine = await orgWithAccounts();
      const theirs = await orgWithAccounts();
      const victim = `/organizations/${theirs.org}/system-accounts/${theirs.plain.clientId}`;
      const other = await call('delete', victim, mine.orgAdminToken);
      const unknown = await call('delete', `/organizations/${newOrgId('nowhere')}/system-accounts/x-plain`, mine.orgAdminToken);
      expect(other.status).toBe(404);
      expect(other.body).toEqual({ schemas: [SCIM_ERROR], status: '404', detail: `Organization "${theirs.org}" does not exist.` });
      expect(unknown.status).toBe(404);
      expectScimError(
        await call('delete', `/organizations/${mine.org}/system-accounts/${theirs.plain.clientId}`, mine.orgAdminToken),
        404,
        undefined,
        'does not exist',
      );
      expectScimError(
        await call('delete', `/organizations/${theirs.org}/system-accounts/${theirs.orgAdmin.clientId}`, theirs.plainToken),
        403,
        undefined,
        /administrator/,
      );
      const anonymous = await call('delete', victim);
      expectScimError(anonymous, 401, undefined, /\S/);
      expect(anonymous.headers['www-authenticate']).toMatch(/^Bearer/);
      expect((await whoami(theirs.org, theirs.plainToken)).status).toBe(200);

      expectNoContent(await call('delete', `/organizations/${mine.org}/system-accounts/${mine.plain.clientId}`, mine.orgAdminToken));
      expect(await auditRows(mine.org, 'system_account.delete')).toEqual([
        { actor: mine.orgAdmin.clientId, target: mine.plain.clientId, outcome: 'success', source_address: expect.any(String), details: { role: 'Issuance' } },
      ]);
    });
  });

  describe('secrets: rotation with overlap and DELETE .../secrets/{id}', () => {
    it('both secrets work until the old one is revoked; then only the new one', async () => {
      const org = await newOrg();
      const account = await createSystemAccount(t.http, admin, org, { suffix: 'rotating', role: 'Issuance' });
      const path = `/organizations/${org}/system-accounts/${account.clientId}/secrets`;
      const form = (secret: string) => ({ grant_type: 'client_credentials', client_id: account.clientId, client_secret: secret });
      const [oldSecret] = (await call('get', path, admin)).body.Resources as { id: string }[];
      const created = await call('post', path, admin).send({});
      expect(created.status).toBe(201);
      const newSecret = created.body as { id: string; value: string };
      for (const value of [account.secret, newSecret.value]) expect((await tokenRequest(t.http, org, form(value))).status).toBe(200);
      // A token got with the old secret outlives the secret's revocation (revoking a credential is not revoking tokens).
      const tokenFromOld = await tokenBySecret(t.http, org, account.clientId, account.secret);
      expect((await whoami(org, tokenFromOld)).status).toBe(200);

      expectNoContent(await call('delete', `${path}/${oldSecret.id}`, admin));
      const refused = await tokenRequest(t.http, org, form(account.secret));
      expect(refused.status).toBe(401);
      expect(refused.body).toEqual({ error: 'invalid_client', error_description: 'Client authentication failed.' });
      expect((await tokenRequest(t.http, org, form(newSecret.value))).status).toBe(200);
      expect((await whoami(org, tokenFromOld)).status).toBe(200);

      const list = await call('get', path, admin);
      expect(list.status).toBe(200);
      expect(list.body).toEqual({
        schemas: [LIST_RESPONSE],
        totalResults: 1,
        itemsPerPage: 1,
        startIndex: 1,
        Resources: [expect.objectContaining({ id: newSecret.id })],
      });
      expect(await auditRows(org, 'client_secret.revoke')).toEqual([
        { actor: 'platform-admin', target: account.clientId, outcome: 'success', source_address: expect.any(String), details: { secretId: oldSecret.id } },
      ]);
      expectScimError(await call('delete', `${path}/${oldSecret.id}`, admin), 404, undefined, `has no secret "${oldSecret.id}"`);
    });

    it("404 for an unknown secret id, a malformed one, another account's secret, or an unknown account", async () => {
      const org = await newOrg();
      const a = await createSystemAccount(t.http, admin, org, { suffix: 'a', role: 'Issuance' });
      const b = await createSystemAccount(t.http, admin, org, { suffix: 'b', role: 'Issuance' });
      const [bSecret] = (await call('get', `/organizations/${org}/system-accounts/${b.clientId}/secrets`, admin)).body.Resources as { id: string }[];
      const base = `/organizations/${org}/system-accounts`;
      expectScimError(await call('delete', `${base}/${a.clientId}/secrets/${randomUUID()}`, admin), 404, undefined, 'has no secret');
      expectScimError(await call('delete', `${base}/${a.clientId}/secrets/not-a-uuid`, admin), 404, undefined, 'the path parameter secretId must be a UUID');
      expectScimError(await call('delete', `${base}/${a.clientId}/secrets/${bSecret.id}`, admin), 404, undefined, 'has no secret');
      expectScimError(await call('delete', `${base}/${org}-ghost/secrets/${bSecret.id}`, admin), 404, undefined, 'does not exist');
      expect((await tokenRequest(t.http, org, { grant_type: 'client_credentials', client_id: b.clientId, client_secret: b.secret })).status).toBe(200);
    });

    it('401 without a token, 403 for a non-administrator, 404 for an administrator of another organization', async () => {
      const mine = await orgWithAccounts();
      const theirs = await orgWithAccounts();
      const [secret] = (await call('get', `/organizations/${theirs.org}/system-accounts/${theirs.plain.clientId}/secrets`, admin)).body.Resources as {
        id: string;
      }[];
      const path = `/organizations/${theirs.org}/system-accounts/${theirs.plain.clientId}/secrets/${secret.id}`;
      expectScimError(await call('delete', path), 401, undefined, /\S/);
      expectScimError(await call('delete', path, theirs.plainToken), 403, undefined, /administrator/);
      expectScimError(await call('delete', path, mine.orgAdminToken), 404, undefined, 'does not exist');
      expect(
        (await tokenRequest(t.http, theirs.org, { grant_type: 'client_credentials', client_id: theirs.plain.clientId, client_secret: theirs.plain.secret }))
          .status,
      ).toBe(200);
    });
  });

  describe('DELETE .../certificates/{thumbprint}', () => {
    async function accountWithCertificate(org: string): Promise<{ clientId: string; certificate: TestCertificate }> {
      const account = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
      const certificate = await makeCertificate();
      expect((await uploadCertificate(t.http, admin, org, account.clientId, certificate.pem)).status).toBe(201);
      return { clientId: account.clientId, certificate };
    }

    it('204; assertions signed with its key stop working at once; the list is empty; audited', async () => {
      const org = await newOrg();
      const { clientId, certificate } = await accountWithCertificate(org);
      const tokenUrl = `${AUTH_BASE_URL}/authentication/customer/${org}/token`;
      const byAssertion = async () =>
        tokenRequest(t.http, org, {
          grant_type: 'client_credentials',
          client_assertion: await signAssertion(certificate, clientId, tokenUrl, { now: t.clock.now() }),
        });
      expect((await byAssertion()).status).toBe(200);
      const path = `/organizations/${org}/system-accounts/${clientId}/certificates`;
      expectNoContent(await call('delete', `${path}/${certificate.thumbprint}`, admin));
      const refused = await byAssertion();
      expect(refused.status).toBe(401);
      expect(refused.body).toEqual({ error: 'invalid_client', error_description: 'Client authentication failed.' });
      expect((await call('get', path, admin)).body).toEqual({ schemas: [LIST_RESPONSE], totalResults: 0, itemsPerPage: 0, startIndex: 1, Resources: [] });
      expect(await auditRows(org, 'client_certificate.delete')).toEqual([
        {
          actor: 'platform-admin',
          target: clientId,
          outcome: 'success',
          source_address: expect.any(String),
          details: { thumbprint: certificate.thumbprint, subject: expect.stringContaining('CN=') },
        },
      ]);
      expectScimError(await call('delete', `${path}/${certificate.thumbprint}`, admin), 404, undefined, `has no certificate "${certificate.thumbprint}"`);
      // Uploading it again restores it.
      expect((await uploadCertificate(t.http, admin, org, clientId, certificate.pem)).status).toBe(201);
      expect((await byAssertion()).status).toBe(200);
    });

    it("401, 403, 404 for another organization, an unknown account or another account's certificate", async () => {
      const mine = await orgWithAccounts();
      const theirs = await orgWithAccounts();
      const { clientId, certificate } = await accountWithCertificate(theirs.org);
      const other = await accountWithCertificate(theirs.org);
      const path = `/organizations/${theirs.org}/system-accounts/${clientId}/certificates/${certificate.thumbprint}`;
      expectScimError(await call('delete', path), 401, undefined, /\S/);
      expectScimError(await call('delete', path, theirs.plainToken), 403, undefined, /administrator/);
      expectScimError(await call('delete', path, mine.orgAdminToken), 404, undefined, 'does not exist');
      expectScimError(
        await call('delete', `/organizations/${theirs.org}/system-accounts/${theirs.org}-ghost/certificates/${certificate.thumbprint}`, admin),
        404,
        undefined,
        'does not exist',
      );
      expectScimError(
        await call('delete', `/organizations/${theirs.org}/system-accounts/${other.clientId}/certificates/${certificate.thumbprint}`, admin),
        404,
        undefined,
        'has no certificate',
      );
      expect((await call('get', `/organizations/${theirs.org}/system-accounts/${clientId}/certificates`, admin)).body.totalResults).toBe(1);
    });
  });

  describe('disabling and re-enabling (DECISIONS 4)', () => {
    it('a system account: disabling stops its live token at once; re-enabling does not revive it; a new token works', async () => {
      const org = await newOrg();
      const account = await createSystemAccount(t.http, admin, org, { role: 'Issuance' });
      const path = `/organizations/${org}/system-accounts/${account.clientId}`;
      const token = await tokenBySecret(t.http, org, account.clientId, account.secret);
      expect((await whoami(org, token)).status).toBe(200);

      expect((await call('patch', path, admin).send({ disabled: true })).status).toBe(200);
      await expectTokenRefused(org, token, /disabled/);
      const enabled = await call('patch', path, admin).send({ disabled: false });
      expect(enabled.status).toBe(200);
      expect(enabled.body.disabled).toBe(false);
      await expectTokenRefused(org, token, /revoked/);

      const fresh = await tokenBySecret(t.http, org, account.clientId, account.secret);
      expect((await whoami(org, fresh)).status).toBe(200);
      // A PATCH that does not re-enable revokes nothing.
      expect((await call('patch', path, admin).send({ description: 'still here', disabled: false })).status).toBe(200);
      expect((await whoami(org, fresh)).status).toBe(200);
      const updates = await auditRows(org, 'system_account.update');
      expect(updates.map((u) => u.details)).toEqual([
        { changes: { disabled: true } },
        { changes: { disabled: false }, revokedTokens: 1 },
        { changes: { description: 'still here', disabled: false } },
      ]);
    });

    it('a user: the same rule', async () => {
      const org = await newOrg();
      const created = await call('post', `/organizations/${org}/users`, admin).send({ userName: 'disabled.user', role: 'Cardholder', password: PASSWORD });
      expect(created.status).toBe(201);
      const path = `/organizations/${org}/users/${created.body.id}`;
      const grant = () => tokenRequest(t.http, org, { grant_type: 'password', username: 'disabled.user', password: PASSWORD });
      const token = (await grant()).body.access_token as string;
      expect((await whoami(org, token)).status).toBe(200);

      expect((await call('patch', path, admin).send({ disabled: true })).status).toBe(200);
      await expectTokenRefused(org, token, /disabled/);
      expect((await grant()).status).toBe(400);
      expect((await call('patch', path, admin).send({ disabled: false })).status).toBe(200);
      await expectTokenRefused(org, token, /revoked/);
      const fresh = await grant();
      expect(fresh.status).toBe(200);
      expect((await whoami(org, fresh.body.access_token)).status).toBe(200);
      const updates = await auditRows(org, 'user.update');
      expect(updates.map((u) => u.details)).toEqual([
        { userName: 'disabled.user', changed: ['disabled'], disabled: true },
        { userName: 'disabled.user', changed: ['disabled'], disabled: false, revokedTokens: 1 },
      ]);
    });
  });

  it('every admin change writes one audit record: organizations, settings, accounts, secrets, certificates, users, applications', async () => {
    const org = newOrgId('trail');
    const base = `/organizations/${org}`;
    expect((await call('post', '/organizations', admin).send({ id: org, name: 'Trail' })).status).toBe(201);
    expect((await call('patch', base, admin).send({ name: 'Trail 2' })).status).toBe(200);
    expect((await call('put', `${base}/settings`, admin).send({ automaticDeviceCreation: true, applicationIdPolicy: 'any' })).status).toBe(200);
    const account = await createSystemAccount(t.http, admin, org, { suffix: 'acct', role: 'Issuance' });
    expect((await call('patch', `${base}/system-accounts/${account.clientId}`, admin).send({ role: 'Help Desk' })).status).toBe(200);
    const secret = await call('post', `${base}/system-accounts/${account.clientId}/secrets`, admin).send({});
    expect((await call('delete', `${base}/system-accounts/${account.clientId}/secrets/${secret.body.id}`, admin)).status).toBe(204);
    const certificate = await makeCertificate();
    expect((await uploadCertificate(t.http, admin, org, account.clientId, certificate.pem)).status).toBe(201);
    expect((await call('delete', `${base}/system-accounts/${account.clientId}/certificates/${certificate.thumbprint}`, admin)).status).toBe(204);
    const user = await call('post', `${base}/users`, admin).send({ userName: 'trail.user', role: 'Cardholder' });
    expect((await call('patch', `${base}/users/${user.body.id}`, admin).send({ groups: ['g'] })).status).toBe(200);
    expect((await call('put', `${base}/users/${user.body.id}/password`, admin).send({ password: PASSWORD })).status).toBe(204);
    expect((await call('post', `${base}/users/${user.body.id}/certificates`, admin).send({ pem: (await makeCertificate()).pem })).status).toBe(201);
    expect((await call('delete', `${base}/users/${user.body.id}`, admin)).status).toBe(204);
    expect((await call('post', `${base}/applications`, admin).send({ applicationId: 'com.trail.app' })).status).toBe(201);
    expect((await call('delete', `${base}/applications/com.trail.app`, admin)).status).toBe(204);
    expect((await call('delete', `${base}/system-accounts/${account.clientId}`, admin)).status).toBe(204);
    expect((await call('delete', base, admin)).status).toBe(204);

    const { rows } = await t.db.query<{ action: string; actor: string; outcome: string }>(
      "SELECT action, actor, outcome FROM audit_events WHERE org_id = $1 AND action NOT LIKE 'token.%' ORDER BY id",
      [org],
    );
    expect(rows.map((r) => r.action)).toEqual([
      'organization.create',
      'organization.update',
      'organization.settings.update',
      'system_account.create',
      'system_account.update',
      'client_secret.create',
      'client_secret.revoke',
      'client_certificate.upload',
      'client_certificate.delete',
      'user.create',
      'user.update',
      'user.password.set',
      'user.certificate.enroll',
      'user.delete',
      'application.certify',
      'application.uncertify',
      'system_account.delete',
      'organization.delete',
    ]);
    expect(new Set(rows.map((r) => `${r.actor} ${r.outcome}`))).toEqual(new Set(['platform-admin success']));
    const logs = t.logs.join('');
    for (const value of [account.secret, secret.body.value as string, PASSWORD]) {
      expect((await t.db.query('SELECT id FROM audit_events a WHERE position($1 in row_to_json(a)::text) > 0', [value])).rows).toEqual([]);
      expect(logs).not.toContain(value);
    }
  });

  describe('OpenAPI (/api-docs-json)', () => {
    it('describes every admin route with a summary and the administration tag; bodies carry their schema', async () => {
      const response = await t.http.get('/api-docs-json');
      expect(response.status).toBe(200);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      const paths = response.body.paths as Record<
        string,
        Record<
          string,
          { summary?: string; tags?: string[]; requestBody?: { content: Record<string, { schema: Record<string, unknown> }> }; parameters?: { name: string }[] }
        >
      >;
      const expected: [string, string][] = [
        ['post', '/admin/v1/organizations'],
        ['get', '/admin/v1/organizations'],
        ['get', '/admin/v1/organizations/{org}'],
        ['patch', '/admin/v1/organizations/{org}'],
        ['delete', '/admin/v1/organizations/{org}'],
        ['put', '/admin/v1/organizations/{org}/settings'],
        ['post', '/admin/v1/organizations/{org}/system-accounts'],
        ['get', '/admin/v1/organizations/{org}/system-accounts'],
        ['get', '/admin/v1/organizations/{org}/system-accounts/{clientId}'],
        ['patch', '/admin/v1/organizations/{org}/system-accounts/{clientId}'],
        ['delete', '/admin/v1/organizations/{org}/system-accounts/{clientId}'],
        ['post', '/admin/v1/organizations/{org}/system-accounts/{clientId}/secrets'],
        ['get', '/admin/v1/organizations/{org}/system-accounts/{clientId}/secrets'],
        ['delete', '/admin/v1/organizations/{org}/system-accounts/{clientId}/secrets/{secretId}'],
        ['post', '/admin/v1/organizations/{org}/system-accounts/{clientId}/certificates'],
        ['get', '/admin/v1/organizations/{org}/system-accounts/{clientId}/certificates'],
        ['delete', '/admin/v1/organizations/{org}/system-accounts/{clientId}/certificates/{thumbprint}'],
        ['post', '/admin/v1/organizations/{org}/users'],
        ['get', '/admin/v1/organizations/{org}/users'],
        ['get', '/admin/v1/organizations/{org}/users/{id}'],
        ['patch', '/admin/v1/organizations/{org}/users/{id}'],
        ['delete', '/admin/v1/organizations/{org}/users/{id}'],
        ['post', '/admin/v1/organizations/{org}/users/{id}/certificates'],
        ['put', '/admin/v1/organizations/{org}/users/{id}/password'],
        ['post', '/admin/v1/organizations/{org}/applications'],
        ['get', '/admin/v1/organizations/{org}/applications'],
        ['delete', '/admin/v1/organizations/{org}/applications/{applicationId}'],
        ['get', '/admin/v1/organizations/{org}/audit-events'],
      ];
      for (const [method, path] of expected) {
        const operation = paths[path]?.[method];
        expect({ method, path, summary: operation?.summary, tags: operation?.tags }).toEqual({
          method,
          path,
          summary: expect.stringMatching(/\S/),
          tags: ['administration'],
        });
      }
      const createAccount = paths['/admin/v1/organizations/{org}/system-accounts'].post.requestBody!.content['application/json'].schema;
      expect(createAccount).toMatchObject({
        type: 'object',
        required: ['role'],
        properties: { suffix: { type: 'string' }, role: { type: 'string' }, organizationAdministrator: { type: 'boolean' } },
      });
      expect(createAccount.example).toEqual(expect.objectContaining({ role: 'Issuance' }));
      expect(Object.keys(paths['/admin/v1/organizations/{org}/system-accounts/{clientId}/certificates'].post.requestBody!.content)).toEqual(
        expect.arrayContaining(['application/x-pem-file', 'text/plain', 'application/json']),
      );
      const auditParameters = paths['/admin/v1/organizations/{org}/audit-events'].get.parameters!.map((p) => p.name);
      expect(auditParameters).toEqual(expect.arrayContaining(['from', 'to', 'actor', 'action', 'target', 'outcome', 'startIndex', 'count']));
      expect(paths['/admin/v1/organizations/{org}'].delete.parameters!.map((p) => p.name)).toContain('force');
    });
  });
});
