/**
 * The reusable SCIM search component (DECISIONS 7 and 9): filter parser, filter-to-SQL translation
 * over a resource's declared attributes, paging, sorting and attribute projection. Every `.search`
 * entry point and every filtered list uses it; see libs/device for a resource that declares itself.
 */
export * from './filter-ast';
export * from './filter-parser';
export * from './resource-definition';
export * from './filter-sql';
export * from './search-request';
