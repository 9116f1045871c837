import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DomainError } from '@app/common';
import { TestApp, createOrganization, createSystemAccount, createTestApp, platformAdminToken, tokenBySecret } from '@app/testing';
import { buildProgram } from '../apps/cli/src/main';

/**
 * Bulk device import (DECISIONS 11 `POST /admin/v1/organizations/{org}/devices/import`, and the
 * command line `device import <org> <file>`) for organizations that keep automatic creation off:
 * JSON or CSV, one transaction, a report line per input line, idempotent for devices already there.
 */

const SCIM_ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';

describe('device import', () => {
  let t: TestApp;
  let admin: string;
  let issuance: string;
  let orgAdmin: string;
  let otherOrgAdmin: string;

  beforeAll(async () => {
    t = await createTestApp();
    admin = await platformAdminToken(t.http);
    for (const org of ['imp', 'imp2', 'cli']) await createOrganization(t.http, admin, org);
    const account = await createSystemAccount(t.http, admin, 'imp', { role: 'Issuance' });
    issuance = await tokenBySecret(t.http, 'imp', account.clientId, account.secret);
    const own = await createSystemAccount(t.http, admin, 'imp', { role: 'Administration', organizationAdministrator: true });
    orgAdmin = await tokenBySecret(t.http, 'imp', own.clientId, own.secret);
    const other = await createSystemAccount(t.http, admin, 'imp2', { role: 'Administration', organizationAdministrator: true });
    otherOrgAdmin = await tokenBySecret(t.http, 'imp2', other.clientId, other.secret);
  });
  afterAll(() => t.close());

  const importJson = (org: string, body: unknown, token = admin) =>
    t.http
      .post(`/admin/v1/organizations/${org}/devices/import`)
      .auth(token, { type: 'bearer' })
      .send(body as object);
  const importCsv = (org: string, csv: string, token = admin) =>
    t.http.post(`/admin/v1/organizations/${org}/devices/import`).auth(token, { type: 'bearer' }).set('Content-Type', 'text/csv').send(csv);
  const devicesOf = async (org: string) =>
    (
      await t.db.query(
        'SELECT e.atr, e.cuid, d.status, d.reason FROM devices d JOIN device_external_ids e ON e.device_id = d.id WHERE d.org_id = $1 ORDER BY e.cuid',
        [org],
      )
    ).rows;

  it('a JSON array: valid lines are created AVAILABLE in one go, bad lines are reported, and a re-run changes nothing', async () => {
    const body = [
      { ATR: '3B00AA', CUID: '5001' },
      { atr: '3b00bb', cuid: '5002' },
      { ATR: '3BZZ', CUID: '5003' },
      { ATR: '3B00CC' },
      { ATR: '3B00DD', CUID: '5001' },
      'not an object',
      { ATR: '3B00EE', CUID: '5006', colour: 'red' },
    ];
    const response = await importJson('imp', body);
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.body).toEqual({
      total: 7,
      created: 2,
      present: 0,
      failed: 5,
      lines: [
        { line: 1, ATR: '3B00AA', CUID: '5001', outcome: 'created', id: expect.stringMatching(UUID) },
        { line: 2, ATR: '3B00BB', CUID: '5002', outcome: 'created', id: expect.stringMatching(UUID) },
        { line: 3, CUID: '5003', outcome: 'failed', detail: 'ATR must be hexadecimal text of even length, 2 to 33 bytes (4 to 66 hex digits)' },
        { line: 4, ATR: '3B00CC', outcome: 'failed', detail: 'CUID is missing' },
        { line: 5, ATR: '3B00DD', CUID: '5001', outcome: 'failed', detail: 'CUID 5001 repeats line 1' },
        { line: 6, outcome: 'failed', detail: 'is not an {ATR, CUID} object' },
        { line: 7, outcome: 'failed', detail: '"colour" is not part of {ATR, CUID}' },
      ],
    });
    expect(await devicesOf('imp')).toEqual([
      { atr: '3B00AA', cuid: '5001', status: 'AVAILABLE', reason: 'NONE' },
      { atr: '3B00BB', cuid: '5002', status: 'AVAILABLE', reason: 'NONE' },
    ]);
    // the imported devices are ordinary devices of the organization
    const read = await t.http.get(`/aims/rs/scim/v2/Device/${response.body.lines[0].id}`).auth(issuance, { type: 'bearer' });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ externalIds: [{ ATR: '3B00AA', CUID: '5001' }], status: { status: 'AVAILABLE', reason: 'NONE' } });
    // audited: one create per device and the import itself
    const audit = await t.db.query("SELECT action, target, details FROM audit_events WHERE org_id = 'imp' AND action LIKE 'device.%' ORDER BY id");
    expect(audit.rows).toEqual([
      { action: 'device.create', target: response.body.lines[0].id, details: { via: 'import', externalIds: [{ ATR: '3B00AA', CUID: '5001' }] } },
      { action: 'device.create', target: response.body.lines[1].id, details: { via: 'import', externalIds: [{ ATR: '3B00BB', CUID: '5002' }] } },
      { action: 'device.import', target: 'imp', details: { total: 7, created: 2, present: 0, failed: 5 } },
    ]);

    const again = await importJson('imp', body);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ total: 7, created: 0, present: 2, failed: 5 });
    expect(again.body.lines.slice(0, 2)).toEqual([
      { line: 1, ATR: '3B00AA', CUID: '5001', outcome: 'present', id: response.body.lines[0].id },
      { line: 2, ATR: '3B00BB', CUID: '5002', outcome: 'present', id: response.body.lines[1].id },
    ]);
    expect(await devicesOf('imp')).toHaveLength(2);
  });

  it("CSV: header in either order, CRLF, blank lines, quotes and semicolons; line numbers are the file's", async () => {
    const csv = ['CUID;ATR', '6001;3B0011', '', '"6002","3b0022"', '6003,3B00,extra', '6004', 'abc,3B0055', '5001,3B0099', '6001,3B0011', ''].join('\r\n');
    const response = await importCsv('imp', csv);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      total: 7,
      created: 2,
      present: 0,
      failed: 5,
      lines: [
        { line: 2, ATR: '3B0011', CUID: '6001', outcome: 'created', id: expect.stringMatching(UUID) },
        { line: 4, ATR: '3B0022', CUID: '6002', outcome: 'created', id: expect.stringMatching(UUID) },
        { line: 5, outcome: 'failed', detail: 'has 3 fields; a line is ATR,CUID' },
        { line: 6, outcome: 'failed', detail: 'has 1 field; a line is ATR,CUID' },
        { line: 7, ATR: '3B0055', outcome: 'failed', detail: 'CUID must be 1 to 64 decimal digits' },
        // 5001 is stored with ATR 3B00AA (previous test)
        {
          line: 8,
          ATR: '3B0099',
          CUID: '5001',
          outcome: 'failed',
          id: expect.stringMatching(UUID),
          detail: expect.stringMatching(/^CUID 5001 is already registered with ATR 3B00AA \(device [0-9a-f-]{36}\)$/),
        },
        { line: 9, ATR: '3B0011', CUID: '6001', outcome: 'failed', detail: 'CUID 6001 repeats line 2' },
      ],
    });
  });

  it('CSV without a header reads ATR,CUID; the organization administrator imports into its own organization only', async () => {
    const response = await importCsv('imp', '3B0077,7001\n3B0078,7002\n', orgAdmin);
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ total: 2, created: 2, present: 0, failed: 0 });
    expect(response.body.lines.map((l: { line: number; ATR: string; CUID: string }) => [l.line, l.ATR, l.CUID])).toEqual([
      [1, '3B0077', '7001'],
      [2, '3B0078', '7002'],
    ]);
    const foreign = await importCsv('imp', '3B0079,7003\n', otherOrgAdmin);
    expect({ status: foreign.status, body: foreign.body }).toEqual({
      status: 404,
      body: { schemas: [SCIM_ERROR], status: '404', detail: 'Organization "imp" does not exist.' },
    });
  });

  it('automatic creation stays off for the organization: POST /Device is still 403 while imported devices are searchable', async () => {
    const create = await t.http
      .post('/aims/rs/scim/v2/Device')
      .auth(issuance, { type: 'bearer' })
      .send({ schemas: ['urn:vendor:scim:api:cms:1.0:Device'], externalIds: [{ ATR: '3B00', CUID: '8001' }] });
    expect(create.status).toBe(403);
    expect(create.body.detail).toMatch(/devices come in through the bulk import/);
    const found = await t.http
      .post('/aims/rs/scim/v2/Device/.search')
      .auth(issuance, { type: 'bearer' })
      .send({ schemas: [SEARCH], filter: 'externalIds.CUID sw "700"' });
    expect(found.body.totalResults).toBe(2);
  });

  it.each([
    ['a JSON object', (org: string) => importJson(org, { ATR: '3B00', CUID: '1' }), 400, 'invalidSyntax', 'A JSON import is an array of {ATR, CUID} objects.'],
    ['an empty array', (org: string) => importJson(org, []), 400, 'invalidValue', 'The import holds no devices.'],
    ['an empty CSV', (org: string) => importCsv(org, 'ATR,CUID\n\n'), 400, 'invalidValue', 'The import holds no devices.'],
    [
      'more than 10000 devices',
      (org: string) =>
        importJson(
          org,
          Array.from({ length: 10_001 }, (_, i) => ({ ATR: '3B00', CUID: String(i) })),
        ),
      400,
      'invalidValue',
      'The import holds 10001 devices; at most 10000 per request, so split it.',
    ],
    [
      'another media type',
      (org: string) =>
        t.http.post(`/admin/v1/organizations/${org}/devices/import`).auth(admin, { type: 'bearer' }).set('Content-Type', 'application/xml').send('<devices/>'),
      415,
      undefined,
      'Send the devices as a JSON array of {ATR, CUID} (application/json) or as CSV lines ATR,CUID (text/csv).',
    ],
  ])('refuses %s', async (_case, send, status, scimType, detail) => {
    const response = await send('imp2');
    expect({ status: response.status, body: response.body }).toEqual({
      status,
      body: { schemas: [SCIM_ERROR], status: String(status), ...(scimType ? { scimType } : {}), detail },
    });
    expect(await devicesOf('imp2')).toEqual([]);
  });

  it('refuses callers that are not administrators (403), no token (401), and an unknown organization (404)', async () => {
    const notAdmin = await importCsv('imp', '3B00,1\n', issuance);
    expect(notAdmin.status).toBe(403);
    expect(notAdmin.body.detail).toMatch(/needs an organization administrator/);
    const anonymous = await t.http.post('/admin/v1/organizations/imp/devices/import').set('Content-Type', 'text/csv').send('3B00,1\n');
    expect(anonymous.status).toBe(401);
    const unknown = await importCsv('nosuchorg', '3B00,1\n');
    expect({ status: unknown.status, detail: unknown.body.detail }).toEqual({ status: 404, detail: 'Organization "nosuchorg" does not exist.' });
  });

  it('concurrent imports of one file: every device once, the other run reports it present', async () => {
    const csv = Array.from({ length: 50 }, (_, i) => `3B00${String(i).padStart(2, '0')},9${String(i).padStart(3, '0')}`).join('\n');
    const [a, b] = await Promise.all([importCsv('imp2', csv), importCsv('imp2', csv)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.created + b.body.created).toBe(50);
    expect(a.body.present + b.body.present).toBe(50);
    expect(a.body.failed + b.body.failed).toBe(0);
    expect(await devicesOf('imp2')).toHaveLength(50);
  });

  describe('command line: device import <org> <file>', () => {
    const saved = { ...process.env };
    const dir = join(process.env.TEST_RUN_DIR!, 'device-import');
    let output: string[];

    beforeAll(() => {
      mkdirSync(dir, { recursive: true });
      // Configured like the service under test (the command line reads the environment).
      Object.assign(process.env, {
        NODE_ENV: 'test',
        LOG_LEVEL: 'silent',
        DATABASE_URL: t.databaseUrl,
        DATA_DIR: process.env.TEST_RUN_DIR,
        SECRET_PEPPER: 'test-pepper-0123456789abcdef0123456789abcdef',
        DATA_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
        PKCS11_MODULE: process.env.TEST_PKCS11_MODULE,
        PKCS11_TOKEN_LABEL: process.env.TEST_PKCS11_TOKEN_LABEL,
        PKCS11_PIN: process.env.TEST_PKCS11_PIN,
      });
    });
    afterAll(() => {
      for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
      Object.assign(process.env, saved);
    });
    beforeEach(() => {
      output = [];
      jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
        output.push(String(chunk));
        return true;
      });
    });
    afterEach(() => jest.restoreAllMocks());

    const run = (...args: string[]) => buildProgram().parseAsync(['node', 'platform', 'device', 'import', ...args]);
    const report = () => JSON.parse(output.join(''));

    it('imports a CSV file, prints the report, and a re-run reports every device present', async () => {
      const file = join(dir, 'devices.csv');
      writeFileSync(file, 'ATR,CUID\n3B00A1,1101\n3B00A2,1102\n');
      await run('cli', file);
      expect(report()).toMatchObject({
        total: 2,
        created: 2,
        present: 0,
        failed: 0,
        lines: [
          { line: 2, outcome: 'created' },
          { line: 3, outcome: 'created' },
        ],
      });
      output = [];
      await run('cli', file);
      expect(report()).toMatchObject({ total: 2, created: 0, present: 2, failed: 0 });
      expect(await devicesOf('cli')).toEqual([
        { atr: '3B00A1', cuid: '1101', status: 'AVAILABLE', reason: 'NONE' },
        { atr: '3B00A2', cuid: '1102', status: 'AVAILABLE', reason: 'NONE' },
      ]);
      const audit = await t.db.query("SELECT actor, action FROM audit_events WHERE org_id = 'cli' AND action = 'device.import'");
      expect(audit.rows).toEqual([
        { actor: 'cli', action: 'device.import' },
        { actor: 'cli', action: 'device.import' },
      ]);
    });

    it('imports a JSON file; a refused line prints the report and fails the command (exit 1), the other lines are imported', async () => {
      const file = join(dir, 'devices.json');
      writeFileSync(
        file,
        JSON.stringify([
          { ATR: '3B00B1', CUID: '1201' },
          { ATR: 'XYZ', CUID: '1202' },
        ]),
      );
      const failure = await run('cli', file).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(DomainError);
      expect((failure as DomainError).detail).toBe('1 of 2 lines were refused (see the report); the other lines were imported.');
      expect(report()).toMatchObject({
        total: 2,
        created: 1,
        failed: 1,
        lines: [
          { line: 1, outcome: 'created' },
          { line: 2, outcome: 'failed' },
        ],
      });
      expect((await devicesOf('cli')).map((d) => d.cuid)).toContain('1201');
    });

    it('refuses a file it cannot read, JSON that does not parse, and an unknown organization', async () => {
      const missing = await run('cli', join(dir, 'nope.csv')).catch((error: unknown) => error);
      expect((missing as DomainError).detail).toMatch(/^Cannot read .*nope.csv: ENOENT/);
      const broken = join(dir, 'broken.json');
      writeFileSync(broken, '[{"ATR": ');
      expect(((await run('cli', broken).catch((error: unknown) => error)) as DomainError).detail).toMatch(/starts like a JSON array but is not valid JSON/);
      const file = join(dir, 'one.csv');
      writeFileSync(file, '3B00C1,1301\n');
      expect(((await run('nosuchorg', file).catch((error: unknown) => error)) as DomainError).detail).toBe('Organization "nosuchorg" does not exist.');
    });
  });
});
