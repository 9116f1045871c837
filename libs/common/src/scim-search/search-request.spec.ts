import { DomainError } from '../domain-error';
import { SqlParameters } from './filter-sql';
import { ScimResourceDefinition } from './resource-definition';
import { SCIM_SEARCH_REQUEST_SCHEMA, projectResource, projectionFromQuery, searchFromBody, searchFromQuery, searchSql } from './search-request';

const THING: ScimResourceDefinition = {
  schema: 'urn:example:Thing',
  uniqueOrder: 't.id',
  defaultOrder: 't.created_at',
  attributes: {
    id: { type: 'string', column: 't.id::text', caseExact: true, returned: 'always' },
    label: { type: 'string', column: 't.label' },
    code: { type: 'string', column: 't.code', caseExact: true },
    size: { type: 'number', column: 't.size' },
    meta: { type: 'complex', subAttributes: { created: { type: 'dateTime', column: 't.created_at' }, location: { type: 'string' } } },
    tags: {
      type: 'complex',
      multiValued: { exists: (condition) => `EXISTS (SELECT 1 FROM tags g WHERE g.thing_id = t.id AND ${condition})` },
      subAttributes: { name: { type: 'string', column: 'g.name' }, weight: { type: 'number', column: 'g.weight' } },
    },
  },
};

const body = (fields: Record<string, unknown> = {}) => ({ schemas: [SCIM_SEARCH_REQUEST_SCHEMA], ...fields });

function refused(run: () => unknown): DomainError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    return error as DomainError;
  }
  throw new Error('accepted');
}

describe('SCIM search request', () => {
  it('defaults: no filter, startIndex 1, count 100, the default order', () => {
    const search = searchFromBody(body(), THING);
    expect(search).toEqual({
      filter: undefined,
      page: { startIndex: 1, count: 100 },
      sort: undefined,
      descending: false,
      attributes: undefined,
      excludedAttributes: undefined,
    });
    const params = new SqlParameters(['org']);
    expect(searchSql(search, THING, params)).toEqual({ where: 'TRUE', orderBy: 't.created_at, t.id', limit: '$2', offset: '$3', indexOrdered: false });
    expect(params.values).toEqual(['org', 100, 0]);
  });

  it.each([
    [{ startIndex: 0 }, { startIndex: 1, count: 100 }],
    [{ startIndex: -5 }, { startIndex: 1, count: 100 }],
    [
      { startIndex: 3, count: 2 },
      { startIndex: 3, count: 2 },
    ],
    [{ count: 0 }, { startIndex: 1, count: 0 }],
    [{ count: -1 }, { startIndex: 1, count: 0 }],
    [{ count: 1000 }, { startIndex: 1, count: 1000 }],
    [{ count: 1001 }, { startIndex: 1, count: 1000 }],
    [{ count: 99999 }, { startIndex: 1, count: 1000 }],
  ])('paging %j reads as %j', (fields, page) => {
    const search = searchFromBody(body(fields), THING);
    expect(search.page).toEqual(page);
    const params = new SqlParameters();
    searchSql(search, THING, params);
    expect(params.values).toEqual([page.count, page.startIndex - 1]);
  });

  it('sortBy and sortOrder: case-insensitive strings sort by lower(), a unique tie-breaker follows in the same direction', () => {
    const asc = searchFromBody(body({ sortBy: 'LABEL' }), THING);
    expect(asc.sort?.name).toBe('label');
    expect(searchSql(asc, THING, new SqlParameters()).orderBy).toBe('lower(t.label) ASC NULLS LAST, t.id ASC');
    const desc = searchFromBody(body({ sortBy: 'meta.created', sortOrder: 'descending' }), THING);
    expect(searchSql(desc, THING, new SqlParameters()).orderBy).toBe('t.created_at DESC NULLS LAST, t.id DESC');
    const exact = searchFromBody(body({ sortBy: 'code', sortOrder: 'Ascending' }), THING);
    expect(searchSql(exact, THING, new SqlParameters()).orderBy).toBe('t.code ASC NULLS LAST, t.id ASC');
  });

  it("a prefix-indexed attribute sorts in its index's order (lower-cased, code points), and says so for the count", () => {
    const indexed: ScimResourceDefinition = {
      ...THING,
      attributes: { ...THING.attributes, label: { type: 'string', column: 't.label', prefixIndexed: true } },
    };
    const asc = searchSql(searchFromBody(body({ sortBy: 'label' }), indexed), indexed, new SqlParameters());
    expect(asc).toMatchObject({ orderBy: 'lower(t.label) COLLATE "C" ASC, t.id ASC', indexOrdered: true });
    const desc = searchSql(searchFromBody(body({ sortBy: 'label', sortOrder: 'descending' }), indexed), indexed, new SqlParameters());
    expect(desc).toMatchObject({ orderBy: 'lower(t.label) COLLATE "C" DESC, t.id DESC', indexOrdered: true });
    expect(searchSql(searchFromBody(body({ sortBy: 'code' }), indexed), indexed, new SqlParameters()).indexOrdered).toBe(false);
    expect(searchSql(searchFromBody(body({ filter: 'label sw "a"' }), indexed), indexed, new SqlParameters()).indexOrdered).toBe(false);
  });

  it.each([
    [
      body({ sortBy: 'colour' }),
      'INVALID_VALUE',
      /sortBy "colour" is not an attribute this resource can be sorted by; use one of id, label, code, size, meta.created/,
    ],
    [body({ sortBy: 'tags.name' }), 'INVALID_VALUE', /sortBy "tags.name" is not an attribute/],
    [body({ sortBy: 'meta.location' }), 'INVALID_VALUE', /sortBy "meta.location"/],
    [body({ sortBy: 'label', sortOrder: 'up' }), 'INVALID_VALUE', /sortOrder must be "ascending" or "descending", not "up"/],
    [body({ attributes: ['label', 'colour', 'meta.nope'] }), 'INVALID_VALUE', /attributes: "colour", "meta.nope" are not attributes of this resource/],
    [body({ excludedAttributes: ['x'] }), 'INVALID_VALUE', /excludedAttributes: "x" is not an attribute/],
    [body({ attributes: ['label'], excludedAttributes: ['code'] }), 'INVALID_VALUE', /attributes or excludedAttributes, not both/],
    [body({ filter: 'label eq' }), 'INVALID_FILTER', /expected a value/],
    [body({ filter: '' }), 'INVALID_FILTER', /empty/],
    [body({ count: 1.5 }), 'INVALID_VALUE', /count: must be a whole number/],
    [body({ startIndex: '2' }), 'INVALID_VALUE', /startIndex/],
    [body({ filter: 5 }), 'INVALID_VALUE', /filter/],
    [body({ sortby: 'label' }), 'INVALID_VALUE', /attribute "sortby" is not part of this resource/],
    [{ filter: 'label pr' }, 'INVALID_VALUE', /schemas/],
    [{ schemas: ['urn:other'] }, 'INVALID_VALUE', /schemas: must contain "urn:ietf:params:scim:api:messages:2.0:SearchRequest"/],
    [[], 'INVALID_SYNTAX', /must be a JSON object/],
  ])('refuses %j', (request, code, detail) => {
    const error = refused(() => searchFromBody(request, THING));
    expect(error.code).toBe(code);
    expect(error.detail).toMatch(detail);
  });

  it('a filter in the body becomes the WHERE condition, before the paging placeholders', () => {
    const search = searchFromBody(body({ filter: 'label sw "a" and tags.weight gt 2', count: 5, startIndex: 11 }), THING);
    const params = new SqlParameters(['org']);
    expect(searchSql(search, THING, params)).toEqual({
      where: "((lower(t.label) LIKE lower($2::text) ESCAPE '\\') AND EXISTS (SELECT 1 FROM tags g WHERE g.thing_id = t.id AND (g.weight > $3::numeric)))",
      orderBy: 't.created_at, t.id',
      limit: '$4',
      offset: '$5',
      indexOrdered: false,
    });
    expect(params.values).toEqual(['org', 'a%', 2, 5, 10]);
  });

  it('query parameters: the same rules, numbers as text, attributes comma-separated', () => {
    const search = searchFromQuery(
      { filter: 'size ge 1', startIndex: '0', count: '5000', sortBy: 'size', sortOrder: 'descending', attributes: 'label, meta.created' },
      THING,
    );
    expect(search.page).toEqual({ startIndex: 1, count: 1000 });
    expect(search.descending).toBe(true);
    expect(search.attributes).toEqual(['label', 'meta.created']);
    expect(refused(() => searchFromQuery({ count: 'ten' }, THING)).detail).toMatch(/count must be a whole number/);
    expect(refused(() => searchFromQuery({ filter: ['a pr', 'b pr'] }, THING)).detail).toMatch(/filter must be given once/);
    expect(projectionFromQuery({}, THING)).toEqual({});
    expect(projectionFromQuery({ excludedAttributes: 'meta' }, THING)).toEqual({ attributes: undefined, excludedAttributes: ['meta'] });
  });

  describe('projection (RFC 7644 3.4.2.5)', () => {
    const resource = {
      schemas: ['urn:example:Thing'],
      id: '1',
      label: 'Red',
      code: 'R',
      meta: { created: '2026-01-01T00:00:00.000Z', location: 'https://x/1' },
      tags: [
        { name: 'a', weight: 1 },
        { name: 'b', weight: 2 },
      ],
    };

    it('without attributes or excludedAttributes the resource is unchanged', () => {
      expect(projectResource(resource, THING, {})).toBe(resource);
    });

    it('attributes keep id and schemas, whole attributes, and only the named sub-attributes', () => {
      expect(projectResource(resource, THING, { attributes: ['label', 'meta.location', 'tags.name'] })).toEqual({
        schemas: ['urn:example:Thing'],
        id: '1',
        label: 'Red',
        meta: { location: 'https://x/1' },
        tags: [{ name: 'a' }, { name: 'b' }],
      });
    });

    it('excludedAttributes drop attributes and sub-attributes, never id or schemas', () => {
      expect(projectResource(resource, THING, { excludedAttributes: ['id', 'schemas', 'code', 'tags', 'meta.created'] })).toEqual({
        schemas: ['urn:example:Thing'],
        id: '1',
        label: 'Red',
        meta: { location: 'https://x/1' },
      });
    });
  });
});
