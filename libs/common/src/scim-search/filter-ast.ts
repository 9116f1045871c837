/**
 * The syntax tree of a SCIM filter (RFC 7644 section 3.4.2.2), independent of any resource: the
 * parser builds it from text, and filter-sql.ts checks its attribute paths against a resource's
 * declared attributes and turns it into parameterised SQL.
 */
export const COMPARE_OPERATORS = ['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le'] as const;
export type CompareOperator = (typeof COMPARE_OPERATORS)[number];

/** A compValue: `false / null / true / number / string` (JSON literals). */
export type FilterValue = string | number | boolean | null;

export type FilterNode =
  | { kind: 'compare'; path: string; op: CompareOperator; value: FilterValue }
  | { kind: 'present'; path: string }
  | { kind: 'and'; left: FilterNode; right: FilterNode }
  | { kind: 'or'; left: FilterNode; right: FilterNode }
  | { kind: 'not'; filter: FilterNode }
  /** `attrPath "[" valFilter "]"`: the inner filter's paths are sub-attributes of `path`. */
  | { kind: 'valuePath'; path: string; filter: FilterNode };
