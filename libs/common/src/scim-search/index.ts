/**
 * The reusable SCIM search component (DECISIONS 7 and 9): filter parser, filter-to-SQL translation
 * over a resource's declared attributes, paging, sorting and attribute projection. Every `.search`
 * entry point and every filtered list uses it; see libs/device for a resource that declares itself.
 */
export { COMPARE_OPERATORS, type CompareOperator, type FilterNode, type FilterValue } from './filter-ast';
export { invalidFilter, MAX_FILTER_DEPTH, MAX_FILTER_LENGTH, parseFilter } from './filter-parser';
export {
  filterablePaths,
  isComplex,
  metaAttribute,
  type ResolvedPath,
  resolvePath,
  type ScimAttribute,
  type ScimComplexAttribute,
  type ScimResourceDefinition,
  type ScimScalarAttribute,
  type ScimScalarType,
  sortablePaths,
} from './resource-definition';
export { compileFilter, escapeLike, SqlParameters } from './filter-sql';
export {
  projectionFromQuery,
  projectResource,
  SCIM_SEARCH_REQUEST_SCHEMA,
  type ScimSearch,
  searchFromBody,
  searchFromQuery,
  type SearchSql,
  searchSql,
} from './search-request';
