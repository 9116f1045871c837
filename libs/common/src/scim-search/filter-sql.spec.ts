import { DomainError } from '../domain-error';
import { parseFilter } from './filter-parser';
import { SqlParameters, compileFilter, escapeLike } from './filter-sql';
import { ScimResourceDefinition } from './resource-definition';

/** A resource shaped like the device: scalars, a single-valued complex, a multi-valued complex. */
const THING: ScimResourceDefinition = {
  schema: 'urn:example:Thing',
  uniqueOrder: 't.id',
  attributes: {
    id: { type: 'string', column: 't.id::text', caseExact: true, returned: 'always' },
    label: { type: 'string', column: 't.label' },
    code: { type: 'string', column: 't.code', caseExact: true },
    size: { type: 'number', column: 't.size' },
    active: { type: 'boolean', column: 't.active' },
    notes: { type: 'string' },
    meta: { type: 'complex', subAttributes: { created: { type: 'dateTime', column: 't.created_at' }, location: { type: 'string' } } },
    tags: {
      type: 'complex',
      multiValued: { exists: (condition) => `EXISTS (SELECT 1 FROM tags g WHERE g.thing_id = t.id AND ${condition})` },
      subAttributes: { name: { type: 'string', column: 'g.name' }, weight: { type: 'number', column: 'g.weight' } },
    },
  },
};

function compile(filter: string, leading: unknown[] = ['org']): { sql: string; values: unknown[] } {
  const params = new SqlParameters(leading);
  const sql = compileFilter(parseFilter(filter), THING, params);
  return { sql, values: params.values };
}

/** THING with `label` prefix-indexed: a B-tree on lower(t.label) COLLATE "C" (resource-definition.ts). */
const INDEXED: ScimResourceDefinition = { ...THING, attributes: { ...THING.attributes, label: { type: 'string', column: 't.label', prefixIndexed: true } } };

function refusal(filter: string): string {
  try {
    compile(filter);
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe('INVALID_FILTER');
    return (error as DomainError).detail;
  }
  throw new Error(`${filter} was accepted`);
}

describe('SCIM filter to SQL', () => {
  describe('sw on a prefix-indexed attribute: an index range, bound, so that a generic plan scans it', () => {
    const RANGE =
      '(lower(t.label) COLLATE "C" >= lower($2::text) AND lower(t.label) COLLATE "C" < (left(lower($2::text), -1) || chr(ascii(right(lower($2::text), 1)) + 1)))';
    const indexed = (filter: string) => {
      const params = new SqlParameters(['org']);
      return { sql: compileFilter(parseFilter(filter), INDEXED, params), values: params.values };
    };

    it.each([
      ['label sw "Ab"', RANGE, ['Ab']],
      // LIKE metacharacters are plain characters of a range: the value is bound as typed (DECISIONS 7).
      ['label sw "a%_\\\\"', RANGE, ['a%_\\']],
      ['not (label sw "Ab")', `((${RANGE}) IS NOT TRUE)`, ['Ab']],
      // No range without a last character, or when its successor would be a surrogate or beyond U+10FFFF.
      ['label sw ""', "(lower(t.label) LIKE lower($2::text) ESCAPE '\\')", ['%']],
      ['label sw "a\uD7FF"', "(lower(t.label) LIKE lower($2::text) ESCAPE '\\')", ['a\uD7FF%']],
      ['label sw "a\uDBFF\uDFFF"', "(lower(t.label) LIKE lower($2::text) ESCAPE '\\')", ['a\u{10FFFF}%']],
      // co and ew keep their LIKE (the trigram index serves them).
      ['label co "Ab"', "(lower(t.label) LIKE lower($2::text) ESCAPE '\\')", ['%Ab%']],
    ])('%s', (filter, sql, values) => {
      expect(indexed(filter)).toEqual({ sql, values: ['org', ...values] });
    });
  });

  it.each([
    ['label eq "Red"', '(lower(t.label) = lower($2::text))', ['Red']],
    ['label ne "Red"', '(lower(t.label) IS DISTINCT FROM lower($2::text))', ['Red']],
    ['label co "r%d_"', "(lower(t.label) LIKE lower($2::text) ESCAPE '\\')", ['%r\\%d\\_%']],
    ['label sw "R"', "(lower(t.label) LIKE lower($2::text) ESCAPE '\\')", ['R%']],
    ['label ew "d"', "(lower(t.label) LIKE lower($2::text) ESCAPE '\\')", ['%d']],
    ['label gt "m"', '(lower(t.label) > lower($2::text))', ['m']],
    ['label ge "m"', '(lower(t.label) >= lower($2::text))', ['m']],
    ['label lt "m"', '(lower(t.label) < lower($2::text))', ['m']],
    ['label le "m"', '(lower(t.label) <= lower($2::text))', ['m']],
    ['code eq "AbC"', '(t.code = $2::text)', ['AbC']],
    ['code co "\\\\"', "(t.code LIKE $2::text ESCAPE '\\')", ['%\\\\%']],
    ['label pr', "(t.label IS NOT NULL AND t.label <> '')", []],
    ['label eq null', '(t.label IS NULL)', []],
    ['label ne null', '(t.label IS NOT NULL)', []],
    ['size eq 3', '(t.size = $2::numeric)', [3]],
    ['size ne 3', '(t.size IS DISTINCT FROM $2::numeric)', [3]],
    ['size gt 2.5', '(t.size > $2::numeric)', [2.5]],
    ['size pr', '(t.size IS NOT NULL)', []],
    ['active eq true', '(t.active = $2)', [true]],
    ['active ne false', '(t.active IS DISTINCT FROM $2)', [false]],
    ['meta.created ge "2026-01-01T00:00:00Z"', '(t.created_at >= $2::timestamptz)', ['2026-01-01T00:00:00Z']],
    ['meta.created lt "2026-01-01T10:00:00.123+02:00"', '(t.created_at < $2::timestamptz)', ['2026-01-01T10:00:00.123+02:00']],
    // the edges of the calendar PostgreSQL's timestamptz takes as written (DECISIONS 7)
    ['meta.created gt "2024-02-29T23:59:59+14:59"', '(t.created_at > $2::timestamptz)', ['2024-02-29T23:59:59+14:59']],
    ['meta.created gt "0001-01-01T00:00:00Z"', '(t.created_at > $2::timestamptz)', ['0001-01-01T00:00:00Z']],
    ['meta.created lt "9999-12-31T23:59:59.999999999-14:59"', '(t.created_at < $2::timestamptz)', ['9999-12-31T23:59:59.999999999-14:59']],
    ['meta pr', '(t.created_at IS NOT NULL)', []],
    // case-insensitive attribute names (RFC 7643 2.1) and the schema URN prefix
    ['LABEL eq "x"', '(lower(t.label) = lower($2::text))', ['x']],
    ['urn:example:Thing:meta.CREATED gt "2026-01-01T00:00:00Z"', '(t.created_at > $2::timestamptz)', ['2026-01-01T00:00:00Z']],
    // logic
    ['label pr and size pr', "((t.label IS NOT NULL AND t.label <> '') AND (t.size IS NOT NULL))", []],
    ['label pr or size pr', "((t.label IS NOT NULL AND t.label <> '') OR (t.size IS NOT NULL))", []],
    ['not (size eq 1)', '(((t.size = $2::numeric)) IS NOT TRUE)', [1]],
    ['(size eq 1 or size eq 2) and code eq "c"', '(((t.size = $2::numeric) OR (t.size = $3::numeric)) AND (t.code = $4::text))', [1, 2, 'c']],
    // multi-valued: a sub-attribute alone, and a value path that keeps both conditions on one value
    ['tags.name eq "a"', 'EXISTS (SELECT 1 FROM tags g WHERE g.thing_id = t.id AND (lower(g.name) = lower($2::text)))', ['a']],
    ['tags pr', 'EXISTS (SELECT 1 FROM tags g WHERE g.thing_id = t.id AND TRUE)', []],
    [
      'tags[name eq "a" and weight gt 1]',
      'EXISTS (SELECT 1 FROM tags g WHERE g.thing_id = t.id AND ((lower(g.name) = lower($2::text)) AND (g.weight > $3::numeric)))',
      ['a', 1],
    ],
    ['tags[not (name eq "a")]', 'EXISTS (SELECT 1 FROM tags g WHERE g.thing_id = t.id AND (((lower(g.name) = lower($2::text))) IS NOT TRUE))', ['a']],
  ])('%s', (filter, sql, values) => {
    expect(compile(filter)).toEqual({ sql, values: ['org', ...values] });
  });

  it('an injection attempt is a bound value, never SQL text', () => {
    const attack = `x' OR '1'='1'; DROP TABLE things; --`;
    const { sql, values } = compile(`label eq ${JSON.stringify(attack)} or code co ${JSON.stringify(attack)}`);
    expect(sql).toBe("((lower(t.label) = lower($2::text)) OR (t.code LIKE $3::text ESCAPE '\\'))");
    expect(sql).not.toContain('DROP');
    expect(values).toEqual(['org', attack, `%${attack}%`]);
  });

  it('placeholders continue after the leading parameters', () => {
    expect(compile('size eq 1', ['a', 'b', 'c'])).toEqual({ sql: '(t.size = $4::numeric)', values: ['a', 'b', 'c', 1] });
  });

  it('escapeLike escapes %, _ and the escape character', () => {
    expect(escapeLike('50%_off\\')).toBe('50\\%\\_off\\\\');
  });

  it.each([
    [
      'colour eq "red"',
      /"colour" is not an attribute of this resource that can be filtered; use one of id, label, code, size, active, meta.created, tags.name, tags.weight/,
    ],
    ['meta.updated gt "2026-01-01T00:00:00Z"', /"meta.updated" is not an attribute/],
    ['urn:other:Thing:label eq "x"', /"urn:other:Thing:label" is not an attribute/],
    ['notes eq "x"', /"notes" is returned but cannot be filtered on/],
    ['meta.location pr', /"meta.location" is returned but cannot be filtered on/],
    ['meta eq "x"', /"meta" is a complex attribute; compare one of its sub-attributes \(meta.created, meta.location\)/],
    ['label eq 5', /"label" is a string; put the value in double quotes \(found 5\)/],
    ['label eq true', /"label" is a string; put the value in double quotes \(found true\)/],
    ['size eq "5"', /"size" is a number; compare it with a number, not "5"/],
    ['size co 5', /"size" is a number; co applies only to strings/],
    ['active eq "true"', /"active" is a boolean; compare it with true or false/],
    ['active gt true', /only eq and ne apply to it/],
    ['meta.created gt "yesterday"', /"meta.created" is a date-time; compare it with an ISO 8601 string/],
    ['meta.created gt "2026-01-01"', /is a date-time/],
    ['meta.created gt "2026-13-45T99:00:00Z"', /is a date-time/],
    // Date.parse rolls these over or takes them; PostgreSQL refuses them, so the filter does (DECISIONS 7).
    ...[
      ['2026-02-30T00:00:00Z', '2026-02 has no day 30'],
      ['2025-02-29T00:00:00Z', '2025-02 has no day 29'],
      ['2026-04-31T00:00:00Z', '2026-04 has no day 31'],
      ['2026-01-00T00:00:00Z', '2026-01 has no day 00'],
      ['0000-01-01T00:00:00Z', 'there is no year 0000'],
      ['2026-00-10T00:00:00Z', 'there is no month 00'],
      ['2026-01-01T24:00:00Z', 'there is no hour 24'],
      ['2026-01-01T23:60:00Z', 'there is no minute 60'],
      ['2026-01-01T23:59:60Z', 'there is no second 60'],
      ['2026-01-01T00:00:00+15:00', 'the offset +15:00 is beyond 14:59'],
      ['2026-01-01T00:00:00-02:60', 'the offset -02:60 is beyond 14:59'],
    ].map(([value, reason]): [string, string] => [
      `meta.created gt "${value}"`,
      `Invalid filter: "meta.created" is a date-time; "${value}" is not a real one (${reason}). Compare it with an RFC 3339 date-time such as ` +
        '"2026-01-31T12:00:00.000Z": year 0001 to 9999, a day its month has, hours 00 to 23, minutes and seconds 00 to 59, Z or an offset up to 14:59.',
    ]),
    ['meta.created sw "2026-01-01T00:00:00Z"', /"meta.created" is a date-time; sw applies only to strings/],
    ['label gt null', /"label gt null" compares with null; only eq and ne/],
    ['label[name pr]', /"label\[...\]" needs a multi-valued complex attribute; "label" is not one/],
    ['meta[created pr]', /needs a multi-valued complex attribute; "meta" is not one/],
    ['tags[colour eq "x"]', /"colour" is not an attribute of this resource inside tags\[...\] that can be filtered; use one of name, weight/],
    ['tags[tags.name eq "x"]', /"tags.name" is not an attribute of this resource inside tags/],
  ])('refuses %s', (filter, detail) => {
    expect(refusal(filter)).toMatch(detail);
  });
});

describe('compileFilter with an indexed multi-valued sub-attribute', () => {
  const INDEXED: ScimResourceDefinition = {
    ...THING,
    attributes: {
      ...THING.attributes,
      tags: {
        type: 'complex',
        multiValued: {
          exists: (condition) => `EXISTS (SELECT 1 FROM tags g WHERE g.thing_id = t.id AND ${condition})`,
          indexed: { name: 'lower(t.tag_names)' },
        },
        subAttributes: { name: { type: 'string', column: 'g.name' }, weight: { type: 'number', column: 'g.weight' } },
      },
    },
  };
  const compileIndexed = (filter: string) => {
    const params = new SqlParameters([]);
    return { sql: compileFilter(parseFilter(filter), INDEXED, params), values: params.values };
  };

  it('adds the indexable LIKE before the exact EXISTS for string comparisons', () => {
    expect(compileIndexed('tags.name co "A_b"')).toEqual({
      sql: `(lower(t.tag_names) LIKE lower($2::text) ESCAPE '\\' AND EXISTS (SELECT 1 FROM tags g WHERE g.thing_id = t.id AND (lower(g.name) LIKE lower($1::text) ESCAPE '\\')))`,
      values: ['%A\\_b%', '%A\\_b%'],
    });
    expect(compileIndexed('tags.name eq "x"').sql).toMatch(/^\(lower\(t.tag_names\) LIKE .* AND EXISTS/);
  });

  it('leaves it out where it cannot hold: ne, numbers, inside brackets, a quote or backslash in the value', () => {
    for (const filter of ['tags.name ne "x"', 'tags.weight gt 2', 'tags[name co "x"]', 'tags.name co "a\\"b"', 'tags.name pr']) {
      expect(compileIndexed(filter).sql).not.toContain('tag_names');
    }
  });

  it('a reference inside a complex attribute filters by its dotted name; undeclared deeper paths are refused', () => {
    const request: ScimResourceDefinition = {
      schema: 'urn:example:Request',
      uniqueOrder: 'r.id',
      attributes: {
        target: { type: 'complex', subAttributes: { device: { type: 'string' }, 'device.value': { type: 'string', column: 'r.device_id::text' } } },
      },
    };
    const params = new SqlParameters([]);
    expect(compileFilter(parseFilter('target.device.value eq "D1"'), request, params)).toBe('(lower(r.device_id::text) = lower($1::text))');
    expect(params.values).toEqual(['D1']);
    expect(() => compileFilter(parseFilter('target.device.id eq "D1"'), request, new SqlParameters([]))).toThrow(/"target.device.id" is not an attribute/);
    expect(() => compileFilter(parseFilter('meta.created.value eq "x"'), THING, new SqlParameters([]))).toThrow(/"meta.created.value" is not an attribute/);
  });
});
