import { DomainError } from '../domain-error';
import { FilterNode } from './filter-ast';
import { MAX_FILTER_DEPTH, MAX_FILTER_LENGTH, parseFilter } from './filter-parser';

const cmp = (path: string, op: string, value: unknown) => ({ kind: 'compare', path, op, value });
const pr = (path: string) => ({ kind: 'present', path });
const and = (left: unknown, right: unknown) => ({ kind: 'and', left, right });
const or = (left: unknown, right: unknown) => ({ kind: 'or', left, right });
const not = (filter: unknown) => ({ kind: 'not', filter });
const valuePath = (path: string, filter: unknown) => ({ kind: 'valuePath', path, filter });

/** RFC 7644 3.4.2.2, form by form: every accepted filter and the tree it gives. */
const ACCEPTED: [string, unknown][] = [
  // each comparison operator, with each kind of value
  ['userName eq "bjensen"', cmp('userName', 'eq', 'bjensen')],
  ['status.status ne "ISSUED"', cmp('status.status', 'ne', 'ISSUED')],
  ['name.familyName co "O\'Malley"', cmp('name.familyName', 'co', "O'Malley")],
  ['userName sw "J"', cmp('userName', 'sw', 'J')],
  ['userName ew "son"', cmp('userName', 'ew', 'son')],
  ['meta.lastModified gt "2011-05-13T04:42:34Z"', cmp('meta.lastModified', 'gt', '2011-05-13T04:42:34Z')],
  ['meta.lastModified ge "2011-05-13T04:42:34Z"', cmp('meta.lastModified', 'ge', '2011-05-13T04:42:34Z')],
  ['meta.lastModified lt "2011-05-13T04:42:34Z"', cmp('meta.lastModified', 'lt', '2011-05-13T04:42:34Z')],
  ['meta.lastModified le "2011-05-13T04:42:34Z"', cmp('meta.lastModified', 'le', '2011-05-13T04:42:34Z')],
  ['title pr', pr('title')],
  ['count eq 42', cmp('count', 'eq', 42)],
  ['count gt -1.5e2', cmp('count', 'gt', -150)],
  ['count le 0', cmp('count', 'le', 0)],
  ['active eq true', cmp('active', 'eq', true)],
  ['active ne false', cmp('active', 'ne', false)],
  ['title eq null', cmp('title', 'eq', null)],
  // operators and logical words are case-insensitive; attribute case is kept for resolution later
  ['userName EQ "x"', cmp('userName', 'eq', 'x')],
  ['title PR and active Eq TRUE', and(pr('title'), cmp('active', 'eq', true))],
  ['NOT (title pr)', not(pr('title'))],
  // JSON string escapes
  ['displayName eq "a \\"quoted\\" \\\\ word"', cmp('displayName', 'eq', 'a "quoted" \\ word')],
  ['displayName eq "\\u00e9t\\u00E9"', cmp('displayName', 'eq', 'été')],
  ['displayName eq ""', cmp('displayName', 'eq', '')],
  ['displayName eq "100%_done"', cmp('displayName', 'eq', '100%_done')],
  // and binds tighter than or; both are left-associative
  ['a pr and b pr', and(pr('a'), pr('b'))],
  ['a pr or b pr', or(pr('a'), pr('b'))],
  ['a pr or b pr and c pr', or(pr('a'), and(pr('b'), pr('c')))],
  ['a pr and b pr or c pr', or(and(pr('a'), pr('b')), pr('c'))],
  ['a pr and b pr and c pr', and(and(pr('a'), pr('b')), pr('c'))],
  ['a pr or b pr or c pr', or(or(pr('a'), pr('b')), pr('c'))],
  // parentheses
  ['(a pr or b pr) and c pr', and(or(pr('a'), pr('b')), pr('c'))],
  ['a pr and (b pr or c pr)', and(pr('a'), or(pr('b'), pr('c')))],
  ['((a pr))', pr('a')],
  ['( a pr )', pr('a')],
  // not
  ['not (a pr)', not(pr('a'))],
  ['not(a pr)', not(pr('a'))],
  ['not (a pr or b pr) and c pr', and(not(or(pr('a'), pr('b'))), pr('c'))],
  ['not (not (a eq "x"))', not(not(cmp('a', 'eq', 'x')))],
  // value paths (multi-valued complex attributes)
  ['emails[type eq "work" and value co "@example.com"]', valuePath('emails', and(cmp('type', 'eq', 'work'), cmp('value', 'co', '@example.com')))],
  [
    'externalIds[CUID eq "1"] or externalIds[ATR sw "3B"]',
    or(valuePath('externalIds', cmp('CUID', 'eq', '1')), valuePath('externalIds', cmp('ATR', 'sw', '3B'))),
  ],
  ['emails[not (type eq "work")]', valuePath('emails', not(cmp('type', 'eq', 'work')))],
  ['emails[type pr]', valuePath('emails', pr('type'))],
  // schema URN prefixes and sub-attributes
  ['urn:vendor:scim:api:cms:1.0:Device:externalIds.CUID eq "7"', cmp('urn:vendor:scim:api:cms:1.0:Device:externalIds.CUID', 'eq', '7')],
  ['members.$ref pr', pr('members.$ref')],
  // whitespace of any kind between tokens
  ['  a\teq\n"x"  ', cmp('a', 'eq', 'x')],
];

/** Every refused form, with what the detail must say. */
const REFUSED: [string, RegExp][] = [
  ['', /empty/],
  ['   ', /empty/],
  ['userName', /expected an operator .* found the end of the filter/],
  ['userName is "x"', /expected an operator \(pr, eq, ne, co, sw, ew, gt, ge, lt, le\) after "userName", found "is" at position 10/],
  ['userName eq', /expected a value after "userName eq".*found the end/],
  ['userName eq bjensen', /expected a value after "userName eq": a string in double quotes.*found "bjensen"/],
  ["userName eq 'bjensen'", /unexpected character "'" at position 13/],
  ['userName eq "open', /string starting at position 13 is not closed/],
  ['userName eq "bad \\x escape"', /invalid escape sequence/],
  ['userName eq "raw\nnewline"', /not closed or holds a raw control character/],
  ['userName eq "x" and', /expected an attribute name, found the end/],
  ['userName eq "x" or or b pr', /expected an attribute name, found "or"/],
  ['and pr', /expected an attribute name, found "and"/],
  ['userName eq "x" userName pr', /expected "and", "or" or the end of the filter, found "userName"/],
  ['(a pr', /expected "\)", found the end/],
  ['a pr)', /no unmatched "\)"/],
  ['not a pr', /expected "\(" after "not"/],
  ['not (a pr', /expected "\)" closing "not \("/],
  ['()', /expected an attribute name, found "\)"/],
  ['emails[type eq "work"', /expected "]" closing the value filter/],
  ['emails[type eq "a"] eq "b"', /expected "and", "or" or the end of the filter, found "eq"/],
  ['emails[addresses[type pr]]', /inside another one/],
  ['emails.type[value pr]', /multi-valued attribute, not to the sub-attribute "emails.type"/],
  ['a.b.c.d eq "x"', /"a.b.c.d" at position 1 is not an attribute path/],
  ['1abc eq "x"', /expected an attribute name, found "1"/],
  ['a eq 01', /expected "and", "or" or the end of the filter, found "1"/],
  ['a eq "x"; DROP TABLE devices', /unexpected character ";"/],
  ['a eq "x" -- comment', /expected "and", "or" or the end of the filter, found "--"|unexpected character "-"/],
  ['a eq @', /unexpected character "@"/],
  [`a eq "${'x'.repeat(MAX_FILTER_LENGTH)}"`, /longer than 4096 characters/],
  [`${'('.repeat(MAX_FILTER_DEPTH + 1)}a pr${')'.repeat(MAX_FILTER_DEPTH + 1)}`, /more than 32 nested expressions/],
  [`${'not ('.repeat(MAX_FILTER_DEPTH + 1)}a pr${')'.repeat(MAX_FILTER_DEPTH + 1)}`, /more than 32 nested expressions/],
];

describe('SCIM filter parser (RFC 7644 3.4.2.2)', () => {
  it.each(ACCEPTED)('parses %j', (text, tree) => {
    expect(parseFilter(text)).toEqual(tree);
  });

  it.each(REFUSED)('refuses %j with invalidFilter', (text, detail) => {
    let error: unknown;
    try {
      parseFilter(text);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe('INVALID_FILTER');
    expect((error as DomainError).detail).toMatch(/^Invalid filter: /);
    expect((error as DomainError).detail).toMatch(detail);
  });

  it('nests up to the depth limit', () => {
    const depth = MAX_FILTER_DEPTH - 1;
    let expected: FilterNode = { kind: 'present', path: 'a' };
    for (let i = 0; i < depth; i++) expected = { kind: 'not', filter: expected };
    expect(parseFilter(`${'not ('.repeat(depth)}a pr${')'.repeat(depth)}`)).toEqual(expected);
  });
});
