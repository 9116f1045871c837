import { keepVersion, versionOf } from '../http/etag';
import { invalidValue } from '../domain-error';
import { Page, parsePage } from '../scim';
import { parseBody, z } from '../validation';
import { FilterNode } from './filter-ast';
import { parseFilter } from './filter-parser';
import { SqlParameters, compileFilter } from './filter-sql';
import { ScimResourceDefinition, ScimScalarAttribute, isComplex, resolvePath, sortablePaths } from './resource-definition';

/**
 * The SCIM search request (RFC 7644 3.4.2 query parameters, 3.4.3 POST .search body) turned into
 * what a repository needs: a parsed filter, the page, the order, and the attributes to return.
 * startIndex is 1-based and below 1 reads as 1, count defaults to 100 and is clamped to 1000, sortBy
 * is checked against the resource's sortable attributes (DECISIONS 7 and 9).
 */
export const SCIM_SEARCH_REQUEST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';

export interface ScimSearch {
  filter?: FilterNode;
  page: Page;
  sort?: { name: string; attribute: ScimScalarAttribute & { column: string } };
  descending: boolean;
  /** Canonical attribute paths to return (with the always-returned ones), or undefined for the default set. */
  attributes?: string[];
  /** Canonical attribute paths to leave out. */
  excludedAttributes?: string[];
}

const searchRequestSchema = z
  .object({
    schemas: z.array(z.string()).refine((schemas) => schemas.includes(SCIM_SEARCH_REQUEST_SCHEMA), { message: `must contain "${SCIM_SEARCH_REQUEST_SCHEMA}"` }),
    filter: z.string().optional(),
    startIndex: z.number().int('must be a whole number').optional(),
    count: z.number().int('must be a whole number').optional(),
    sortBy: z.string().optional(),
    sortOrder: z.string().optional(),
    attributes: z.array(z.string()).optional(),
    excludedAttributes: z.array(z.string()).optional(),
  })
  .strict();

interface RawSearch {
  filter?: string;
  startIndex?: unknown;
  count?: unknown;
  sortBy?: string;
  sortOrder?: string;
  attributes?: string[];
  excludedAttributes?: string[];
}

/** POST {Resource}/.search: a SearchRequest body (RFC 7644 3.4.3). */
export function searchFromBody(body: unknown, definition: ScimResourceDefinition): ScimSearch {
  return prepareSearch(parseBody(searchRequestSchema, body, 'SearchRequest'), definition);
}

/** GET {Resource}?filter=...: the same parameters as query values; attributes are comma-separated (RFC 7644 3.4.2). */
export function searchFromQuery(query: Record<string, unknown>, definition: ScimResourceDefinition): ScimSearch {
  const text = (name: string): string | undefined => {
    const value = query[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'string') throw invalidValue(`Query parameter ${name} must be given once.`);
    return value;
  };
  const list = (name: string) =>
    text(name)
      ?.split(',')
      .map((item) => item.trim())
      .filter(Boolean);
  return prepareSearch(
    {
      filter: text('filter'),
      startIndex: text('startIndex'),
      count: text('count'),
      sortBy: text('sortBy'),
      sortOrder: text('sortOrder'),
      attributes: list('attributes'),
      excludedAttributes: list('excludedAttributes'),
    },
    definition,
  );
}

/** Only `attributes`/`excludedAttributes` (GET of one resource, RFC 7644 3.9). */
export function projectionFromQuery(query: Record<string, unknown>, definition: ScimResourceDefinition): Pick<ScimSearch, 'attributes' | 'excludedAttributes'> {
  if (query.attributes === undefined && query.excludedAttributes === undefined) return {};
  const { attributes, excludedAttributes } = searchFromQuery({ attributes: query.attributes, excludedAttributes: query.excludedAttributes }, definition);
  return { attributes, excludedAttributes };
}

function prepareSearch(raw: RawSearch, definition: ScimResourceDefinition): ScimSearch {
  const filter = raw.filter === undefined ? undefined : parseFilter(raw.filter);
  const page = parsePage({ startIndex: raw.startIndex, count: raw.count });
  const sort = raw.sortBy === undefined ? undefined : sortAttribute(raw.sortBy, definition);
  const descending = sortOrder(raw.sortOrder);
  if (raw.attributes && raw.excludedAttributes) {
    throw invalidValue('Send attributes or excludedAttributes, not both (RFC 7644 3.4.2.5).');
  }
  return {
    filter,
    page,
    sort,
    descending,
    attributes: raw.attributes && canonicalPaths('attributes', raw.attributes, definition),
    excludedAttributes: raw.excludedAttributes && canonicalPaths('excludedAttributes', raw.excludedAttributes, definition),
  };
}

function sortAttribute(sortBy: string, definition: ScimResourceDefinition): ScimSearch['sort'] {
  const resolved = resolvePath(definition, sortBy);
  if (resolved?.kind !== 'scalar' || !resolved.attribute.column || resolved.within) {
    throw invalidValue(
      `sortBy "${sortBy.slice(0, 100)}" is not an attribute this resource can be sorted by; use one of ${sortablePaths(definition).join(', ')}.`,
    );
  }
  return { name: resolved.name, attribute: resolved.attribute as ScimScalarAttribute & { column: string } };
}

function sortOrder(value: string | undefined): boolean {
  if (value === undefined) return false;
  const order = value.toLowerCase();
  if (order !== 'ascending' && order !== 'descending') throw invalidValue(`sortOrder must be "ascending" or "descending", not "${value.slice(0, 40)}".`);
  return order === 'descending';
}

/** `schemas` and the declared attributes (with their sub-attributes); anything else is a 400 naming it. */
function canonicalPaths(parameter: string, paths: string[], definition: ScimResourceDefinition): string[] {
  const unknown: string[] = [];
  const canonical = paths.flatMap((path) => {
    if (path.toLowerCase() === 'schemas') return ['schemas'];
    const resolved = resolvePath(definition, path);
    if (!resolved) unknown.push(path);
    return resolved ? [resolved.name] : [];
  });
  if (unknown.length > 0) {
    throw invalidValue(
      `${parameter}: ${unknown.map((p) => `"${p.slice(0, 100)}"`).join(', ')} ${unknown.length > 1 ? 'are not attributes' : 'is not an attribute'} of this resource.`,
    );
  }
  return canonical;
}

/** The SQL pieces of a search: WHERE condition (TRUE without a filter), ORDER BY, LIMIT and OFFSET placeholders. */
export interface SearchSql {
  where: string;
  orderBy: string;
  limit: string;
  offset: string;
  /**
   * The ORDER BY is an index's order (a prefix-indexed sort attribute), so the LIMIT stops at the
   * page's last row: the total is then counted on its own (Database.searchPage), not by a window
   * over every matching row, which would read them all.
   */
  indexOrdered: boolean;
}

export function searchSql(search: ScimSearch, definition: ScimResourceDefinition, params: SqlParameters): SearchSql {
  const where = search.filter ? compileFilter(search.filter, definition, params) : 'TRUE';
  const direction = search.descending ? 'DESC' : 'ASC';
  let orderBy: string;
  let indexOrdered = false;
  if (search.sort) {
    const { attribute } = search.sort;
    indexOrdered = attribute.type === 'string' && !attribute.caseExact && !!attribute.prefixIndexed;
    if (indexOrdered) {
      // As its index sorts, so that a page stops at its last row; never NULL, so no NULLS LAST,
      // which a descending (backward) scan of the index could not give.
      orderBy = `lower(${attribute.column}) COLLATE "C" ${direction}, ${definition.uniqueOrder} ${direction}`;
    } else {
      const expression = attribute.type === 'string' && !attribute.caseExact ? `lower(${attribute.column})` : attribute.column;
      // Resources without a value come last either way; the unique tie-breaker keeps pages stable.
      orderBy = `${expression} ${direction} NULLS LAST, ${definition.uniqueOrder} ${direction}`;
    }
  } else {
    orderBy = [definition.defaultOrder, definition.uniqueOrder].filter(Boolean).join(', ');
  }
  return { where, orderBy, limit: params.add(search.page.count), offset: params.add(search.page.startIndex - 1), indexOrdered };
}

/**
 * Applies attributes / excludedAttributes (RFC 7644 3.4.2.5) to one rendered resource, whose keys are
 * the declared attribute names. `id`, `schemas` and attributes declared `returned: always` stay.
 */
export function projectResource<T extends Record<string, unknown>>(
  resource: T,
  definition: ScimResourceDefinition,
  search: Pick<ScimSearch, 'attributes' | 'excludedAttributes'>,
): Partial<T> {
  if (!search.attributes && !search.excludedAttributes) return resource;
  return keepVersion(projectAttributes(resource, definition, search), versionOf(resource));
}

function projectAttributes<T extends Record<string, unknown>>(
  resource: T,
  definition: ScimResourceDefinition,
  search: Pick<ScimSearch, 'attributes' | 'excludedAttributes'>,
): Partial<T> {
  const always = new Set([
    'schemas',
    'id',
    ...Object.entries(definition.attributes)
      .filter(([, a]) => a.returned === 'always')
      .map(([name]) => name),
  ]);
  const out: Record<string, unknown> = {};
  if (search.attributes) {
    for (const key of Object.keys(resource)) {
      if (always.has(key) || search.attributes.includes(key)) {
        out[key] = resource[key];
        continue;
      }
      const subs = search.attributes.filter((p) => p.startsWith(`${key}.`)).map((p) => p.slice(key.length + 1));
      if (subs.length > 0 && resource[key] !== undefined) out[key] = pick(resource[key], subs, true);
    }
    return out as Partial<T>;
  }
  const excluded = search.excludedAttributes!;
  for (const key of Object.keys(resource)) {
    if (!always.has(key) && excluded.includes(key)) continue;
    const declared = definition.attributes[key];
    const subs = excluded.filter((p) => p.startsWith(`${key}.`)).map((p) => p.slice(key.length + 1));
    out[key] = subs.length > 0 && declared && isComplex(declared) && declared.returned !== 'always' ? pick(resource[key], subs, false) : resource[key];
  }
  return out as Partial<T>;
}

/** Keeps (`keep`) or drops the named sub-attributes of a complex value or of each value of a multi-valued one. */
function pick(value: unknown, subs: string[], keep: boolean): unknown {
  if (Array.isArray(value)) return value.map((item) => pick(item, subs, keep));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).filter(([sub]) => subs.includes(sub) === keep));
}
