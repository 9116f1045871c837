import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { TestApp, createOrganization, createSystemAccount, createTestApp, platformAdminToken, tokenBySecret } from '@app/testing';

/**
 * POST /Device/.search (DECISIONS 9): the SCIM filter grammar on the documented Device attributes,
 * paging, sorting, attribute selection, bad filters, an injection attempt, and tenancy. The data set
 * is written straight into the database, so every expected answer is known.
 */

const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';
const LIST = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
const SCIM_ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const T0 = Date.parse('2026-05-01T10:00:00.000Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000);
const iso = (seconds: number) => at(seconds).toISOString();

type Name = 'd1' | 'd2' | 'd3' | 'd4' | 'd5' | 'd6';
interface Seed {
  status: string;
  reason: string;
  ids: [string, string][];
  owner?: 'alice' | 'bob_x' | 'bobax';
  created: number;
  modified?: number;
  issued?: number;
}

/** The data set: created one second apart, in name order. */
const DATA: Record<Name, Seed> = {
  d1: { status: 'AVAILABLE', reason: 'NONE', ids: [['3B00AA', '1001']], created: 1 },
  d2: { status: 'ISSUED', reason: 'NONE', ids: [['3B00BB', '1002']], owner: 'alice', created: 2, issued: 2 },
  d3: { status: 'ON_HOLD', reason: 'LOST', ids: [['3BFF00', '2001']], owner: 'bob_x', created: 3, modified: 10 },
  d4: {
    status: 'REVOKED',
    reason: 'STOLEN',
    ids: [
      ['3BFF01', '2002'],
      ['3C0000', '9999'],
    ],
    owner: 'bobax',
    created: 4,
  },
  d5: { status: 'TERMINATED', reason: 'UNASSIGNED', ids: [['3B00AA', '3001']], created: 5 },
  d6: { status: 'PRODUCED', reason: 'NONE', ids: [['AB12', '4001']], owner: 'alice', created: 6 },
};
const ALL: Name[] = ['d1', 'd2', 'd3', 'd4', 'd5', 'd6'];

describe('POST /Device/.search', () => {
  let t: TestApp;
  let token: string;
  const ids = {} as Record<Name, string>;
  const users: Record<string, string> = {};
  const nameOf = (id: string) => (Object.keys(ids) as Name[]).find((name) => ids[name] === id) ?? id;

  beforeAll(async () => {
    t = await createTestApp();
    const admin = await platformAdminToken(t.http);
    for (const org of ['srch', 'srch2']) await createOrganization(t.http, admin, org);
    const account = await createSystemAccount(t.http, admin, 'srch', { role: 'Help Desk' });
    token = await tokenBySecret(t.http, 'srch', account.clientId, account.secret);
    for (const userName of ['alice', 'bob_x', 'bobax']) {
      const response = await t.http.post('/admin/v1/organizations/srch/users').auth(admin, { type: 'bearer' }).send({ userName, role: 'Cardholder' });
      expect(response.status).toBe(201);
      users[userName] = response.body.id;
    }
    for (const name of ALL) {
      const seed = DATA[name];
      ids[name] = randomUUID();
      await t.db.query(
        'INSERT INTO devices (id, org_id, status, reason, owner_user_id, issued_at, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
        [
          ids[name],
          'srch',
          seed.status,
          seed.reason,
          seed.owner ? users[seed.owner] : null,
          seed.issued ? at(seed.issued) : null,
          at(seed.created),
          at(seed.modified ?? seed.created),
        ],
      );
      for (const [position, [atr, cuid]] of seed.ids.entries()) {
        await t.db.query('INSERT INTO device_external_ids (device_id, org_id, position, atr, cuid) VALUES ($1, $2, $3, $4, $5)', [
          ids[name],
          'srch',
          position + 1,
          atr,
          cuid,
        ]);
      }
    }
    // Another organization's device with a CUID and ATR of this one's: never in these answers.
    const theirs = randomUUID();
    await t.db.query("INSERT INTO devices (id, org_id, status, reason, created_at, updated_at) VALUES ($1, 'srch2', 'AVAILABLE', 'NONE', $2, $2)", [
      theirs,
      at(0),
    ]);
    await t.db.query("INSERT INTO device_external_ids (device_id, org_id, position, atr, cuid) VALUES ($1, 'srch2', 1, '3B00AA', '1001')", [theirs]);
  });
  afterAll(() => t.close());

  const search = (body: Record<string, unknown>) =>
    t.http
      .post('/aims/rs/scim/v2/Device/.search')
      .auth(token, { type: 'bearer' })
      .send({ schemas: [SEARCH], ...body });
  const found = (response: Response) => response.body.Resources.map((r: { id: string }) => nameOf(r.id));

  function expectList(response: Response, total: number, startIndex: number, names: Name[]): void {
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/scim\+json/);
    expect({ ...response.body, Resources: found(response) }).toEqual({
      schemas: [LIST],
      totalResults: total,
      itemsPerPage: names.length,
      startIndex,
      Resources: names,
    });
  }

  it('without a filter: every device of the organization, oldest first, in the full Device shape', async () => {
    const response = await search({});
    expectList(response, 6, 1, ALL);
    expect(response.body.Resources[1]).toEqual({
      id: ids.d2,
      schemas: ['urn:vendor:scim:api:cms:1.0:Device'],
      externalIds: [{ ATR: '3B00BB', CUID: '1002' }],
      status: { status: 'ISSUED', reason: 'NONE' },
      owner: { value: users.alice, display: 'alice', $ref: `https://api.example.test/aims/rs/scim/v2/Users/${users.alice}`, type: 'User' },
      issuanceDate: iso(2),
      meta: {
        resourceType: 'Device',
        created: iso(2),
        lastModified: iso(2),
        location: `https://api.example.test/aims/rs/scim/v2/Device/${ids.d2}`,
        version: '1',
      },
    });
  });

  const FILTERS: [string, () => string, Name[]][] = [
    // each operator
    ['eq', () => 'status.status eq "ISSUED"', ['d2']],
    ['eq, case-insensitive value', () => 'status.status eq "issued"', ['d2']],
    ['eq on a case-exact attribute', () => 'externalIds.CUID eq "9999"', ['d4']],
    ['ne', () => 'status.status ne "AVAILABLE"', ['d2', 'd3', 'd4', 'd5', 'd6']],
    ['co', () => 'externalIds.ATR co "ff"', ['d3', 'd4']],
    ['sw', () => 'externalIds.ATR sw "3b00"', ['d1', 'd2', 'd5']],
    ['ew', () => 'externalIds.ATR ew "AA"', ['d1', 'd5']],
    ['gt on text', () => 'externalIds.CUID gt "2001"', ['d4', 'd5', 'd6']],
    ['ge on text', () => 'externalIds.CUID ge "2001"', ['d3', 'd4', 'd5', 'd6']],
    ['lt on text', () => 'externalIds.CUID lt "1002"', ['d1']],
    ['le on text', () => 'externalIds.CUID le "1002"', ['d1', 'd2']],
    ['gt on a date-time', () => `meta.created gt "${iso(3)}"`, ['d4', 'd5', 'd6']],
    ['ge on a date-time', () => `meta.created ge "${iso(3)}"`, ['d3', 'd4', 'd5', 'd6']],
    ['lt on a date-time', () => `meta.created lt "${iso(2)}"`, ['d1']],
    ['le on a date-time, another zone', () => `meta.created le "2026-05-01T12:00:02.000+02:00"`, ['d1', 'd2']],
    ['gt on lastModified', () => `meta.lastModified gt "${iso(6)}"`, ['d3']],
    ['pr on a complex attribute', () => 'owner pr', ['d2', 'd3', 'd4', 'd6']],
    ['pr on a date-time', () => 'issuanceDate pr', ['d2']],
    ['eq null', () => 'issuanceDate eq null', ['d1', 'd3', 'd4', 'd5', 'd6']],
    ['eq on the owner reference', () => `owner.value eq "${users.alice}"`, ['d2', 'd6']],
    ['eq on id', () => `id eq "${ids.d3}"`, ['d3']],
    ['eq on the owner name, any case', () => 'owner.display eq "ALICE"', ['d2', 'd6']],
    ['status.reason', () => 'status.reason eq "LOST"', ['d3']],
    ['the schema URN prefix and any attribute case', () => 'urn:vendor:scim:api:cms:1.0:Device:STATUS.status eq "REVOKED"', ['d4']],
    // co/sw/ew match % and _ literally
    ['co with _ matches only _', () => 'owner.display co "b_x"', ['d3']],
    ['co with % matches only %', () => 'externalIds.CUID co "%"', []],
    ['sw with _ matches only _', () => 'owner.display sw "bob_"', ['d3']],
    // logic
    ['and', () => 'status.status eq "ISSUED" and owner.display eq "alice"', ['d2']],
    ['or', () => 'status.status eq "ISSUED" or status.status eq "PRODUCED"', ['d2', 'd6']],
    ['not', () => 'not (status.status eq "AVAILABLE")', ['d2', 'd3', 'd4', 'd5', 'd6']],
    ['not keeps devices without the attribute', () => 'not (owner.display eq "alice")', ['d1', 'd3', 'd4', 'd5']],
    ['parentheses', () => '(status.status eq "ISSUED" or status.status eq "ON_HOLD") and owner.display sw "bob"', ['d3']],
    ['and before or without parentheses', () => 'status.status eq "ISSUED" or status.status eq "ON_HOLD" and owner.display sw "bob"', ['d2', 'd3']],
    ['nested not and or', () => 'not (not (externalIds.ATR sw "3B") or status.status eq "AVAILABLE")', ['d2', 'd3', 'd4', 'd5']],
    // multi-valued: a value path holds both conditions on one {ATR, CUID}
    ['value path on one value', () => 'externalIds[ATR eq "3C0000" and CUID eq "9999"]', ['d4']],
    ['value path across two values finds nothing', () => 'externalIds[ATR eq "3BFF01" and CUID eq "9999"]', []],
    ['two sub-attribute filters may match two values', () => 'externalIds.ATR eq "3BFF01" and externalIds.CUID eq "9999"', ['d4']],
    ['pr on a multi-valued attribute', () => 'externalIds pr', ALL],
    // tenancy: srch2 has a device with CUID 1001 too
    ['another organization never appears', () => 'externalIds.CUID eq "1001"', ['d1']],
  ];

  it.each(FILTERS)('filter with %s', async (_case, filter, names) => {
    expectList(await search({ filter: filter() }), names.length, 1, names);
  });

  it('an injection attempt in a filter value finds nothing and breaks nothing', async () => {
    for (const filter of [
      `externalIds.CUID eq "1001' OR '1'='1"`,
      `owner.display eq "x'; DROP TABLE devices; --"`,
      `status.status co "%' OR 1=1 --"`,
      `owner.display sw "\\u0027) OR TRUE --"`,
      `externalIds[CUID eq "1\\" or \\"1\\"=\\"1"]`,
    ]) {
      expectList(await search({ filter }), 0, 1, []);
    }
    expectList(await search({}), 6, 1, ALL);
    expect((await t.db.query("SELECT count(*)::int AS n FROM devices WHERE org_id = 'srch'")).rows).toEqual([{ n: 6 }]);
  });

  it.each([
    ['status.status eq', /expected a value after "status.status eq"/],
    [
      'colour eq "red"',
      /"colour" is not an attribute of this resource that can be filtered; use one of id, externalIds.ATR, externalIds.CUID, status.status, status.reason, owner.value, owner.display, issuanceDate, meta.created, meta.lastModified/,
    ],
    ['meta.created gt "yesterday"', /"meta.created" is a date-time/],
    ['externalIds eq "1001"', /"externalIds" is a complex attribute; compare one of its sub-attributes/],
    ['status.status eq 5', /"status.status" is a string; put the value in double quotes/],
    ['meta.location eq "x"', /"meta.location" is returned but cannot be filtered on/],
    ['(status.status pr', /expected "\)", found the end of the filter/],
    ['status.status eq "x" garbage', /expected "and", "or" or the end of the filter, found "garbage"/],
    ["status.status eq 'x'", /unexpected character "'"/],
    ['externalIds[colour pr]', /"colour" is not an attribute of this resource inside externalIds\[...\]/],
    ['status[status pr]', /needs a multi-valued complex attribute; "status" is not one/],
    ['', /the filter is empty/],
  ])('a bad filter %j is 400 invalidFilter', async (filter, detail) => {
    const response = await search({ filter });
    expect({ status: response.status, body: response.body }).toEqual({
      status: 400,
      body: { schemas: [SCIM_ERROR], status: '400', scimType: 'invalidFilter', detail: expect.stringMatching(detail) },
    });
    expect(response.headers['content-type']).toMatch(/^application\/scim\+json/);
  });

  it.each([
    [{ startIndex: 1, count: 2 }, 1, ['d1', 'd2']],
    [{ startIndex: 0, count: 2 }, 1, ['d1', 'd2']],
    [{ startIndex: -3, count: 1 }, 1, ['d1']],
    [{ startIndex: 3, count: 2 }, 3, ['d3', 'd4']],
    [{ startIndex: 5, count: 5 }, 5, ['d5', 'd6']],
    [{ startIndex: 6 }, 6, ['d6']],
    [{ startIndex: 7 }, 7, []],
    [{ startIndex: 1000 }, 1000, []],
    [{ count: 0 }, 1, []],
    [{ count: -1 }, 1, []],
    [{ count: 5000 }, 1, ALL],
  ] as [Record<string, number>, number, Name[]][])('paging %j', async (page, startIndex, names) => {
    expectList(await search(page), 6, startIndex, names);
  });

  it('paging with a filter counts the filtered total', async () => {
    expectList(await search({ filter: 'owner pr', startIndex: 2, count: 2 }), 4, 2, ['d3', 'd4']);
  });

  it.each([
    [{ sortBy: 'meta.created', sortOrder: 'descending' }, ['d6', 'd5', 'd4', 'd3', 'd2', 'd1']],
    [{ sortBy: 'meta.created', sortOrder: 'ascending' }, ALL],
    [{ sortBy: 'status.status' }, ['d1', 'd2', 'd3', 'd6', 'd4', 'd5']],
    [{ sortBy: 'status.status', sortOrder: 'descending' }, ['d5', 'd4', 'd6', 'd3', 'd2', 'd1']],
    [{ sortBy: 'meta.lastModified', sortOrder: 'descending', count: 2 }, ['d3', 'd6']],
    [{ sortBy: 'STATUS.REASON', filter: 'status.reason ne "NONE"' }, ['d3', 'd4', 'd5']],
  ] as [Record<string, unknown>, Name[]][])('sort %j', async (body, names) => {
    const response = await search(body);
    expect(response.status).toBe(200);
    expect(found(response)).toEqual(names);
  });

  it('devices without the sort attribute come last, whichever the order', async () => {
    for (const sortOrder of ['ascending', 'descending']) {
      const response = await search({ sortBy: 'issuanceDate', sortOrder });
      expect(found(response)[0]).toBe('d2');
      expect(response.body.Resources).toHaveLength(6);
    }
  });

  it.each([
    [
      { sortBy: 'externalIds.CUID' },
      /sortBy "externalIds.CUID" is not an attribute this resource can be sorted by; use one of id, status.status, status.reason, owner.value, owner.display, issuanceDate, meta.created, meta.lastModified/,
    ],
    [{ sortBy: 'colour' }, /sortBy "colour"/],
    [{ sortBy: 'meta.created', sortOrder: 'sideways' }, /sortOrder must be "ascending" or "descending"/],
    [{ count: 'ten' }, /count: /],
    [{ attributes: ['colour'] }, /attributes: "colour" is not an attribute of this resource/],
    [{ attributes: ['status'], excludedAttributes: ['meta'] }, /not both/],
    [{ filter: 'status pr', where: '1=1' }, /attribute "where" is not part of this resource/],
  ])('refuses %j with 400 invalidValue', async (body, detail) => {
    const response = await search(body);
    expect({ status: response.status, body: response.body }).toEqual({
      status: 400,
      body: { schemas: [SCIM_ERROR], status: '400', scimType: 'invalidValue', detail: expect.stringMatching(detail) },
    });
  });

  it('refuses a body without the SearchRequest schema', async () => {
    const response = await t.http.post('/aims/rs/scim/v2/Device/.search').auth(token, { type: 'bearer' }).send({ filter: 'status pr' });
    expect(response.status).toBe(400);
    expect(response.body.detail).toMatch(/schemas: .*must contain "urn:ietf:params:scim:api:messages:2.0:SearchRequest"|schemas: .*expected array/);
  });

  it('attributes and excludedAttributes shape each resource', async () => {
    const only = await search({ filter: 'externalIds.CUID eq "9999"', attributes: ['externalIds.CUID', 'status.status'] });
    expect(only.body.Resources).toEqual([
      { id: ids.d4, schemas: ['urn:vendor:scim:api:cms:1.0:Device'], externalIds: [{ CUID: '2002' }, { CUID: '9999' }], status: { status: 'REVOKED' } },
    ]);
    const without = await search({ filter: 'externalIds.CUID eq "1001"', excludedAttributes: ['meta', 'externalIds.ATR'] });
    expect(without.body.Resources).toEqual([
      { id: ids.d1, schemas: ['urn:vendor:scim:api:cms:1.0:Device'], externalIds: [{ CUID: '1001' }], status: { status: 'AVAILABLE', reason: 'NONE' } },
    ]);
  });

  it('answers on the /aims/rs/scm/v2 alias, and 401 without a token', async () => {
    const alias = await t.http
      .post('/aims/rs/scm/v2/Device/.search')
      .auth(token, { type: 'bearer' })
      .send({ schemas: [SEARCH], count: 1 });
    expectList(alias, 6, 1, ['d1']);
    const anonymous = await t.http.post('/aims/rs/scim/v2/Device/.search').send({ schemas: [SEARCH] });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.schemas).toEqual([SCIM_ERROR]);
  });
});
