/**
 * What a resource declares so that the search component can filter, sort and project it: its
 * attributes (RFC 7643 section 2), and for each filterable one the SQL expression it maps to. The SQL
 * expressions are constants written by the resource's developer, never built from input; values
 * from a request only ever reach SQL as bind parameters (filter-sql.ts).
 */
export type ScimScalarType = 'string' | 'number' | 'boolean' | 'dateTime';

export interface ScimScalarAttribute {
  type: ScimScalarType;
  /** SQL expression of the attribute, e.g. `d.status`; absent: returned and projectable, but not filterable or sortable. */
  column?: string;
  /** Strings only: compare as written (true) or case-insensitively (false, RFC 7643 default). */
  caseExact?: boolean;
  /**
   * Case-insensitive strings that are never NULL only: a B-tree index holds `lower(column) COLLATE
   * "C"` after the resource's scope columns (e.g. `(org_id, (lower(user_name) COLLATE "C"))`). `sw`
   * then becomes a range on it, and sortBy orders by it (code-point order of the lower-cased value),
   * so a page of a prefix search reads only its own rows and the total is counted from the index
   * (DECISIONS 9).
   */
  prefixIndexed?: boolean;
  /** `always`: attributes/excludedAttributes cannot drop it (RFC 7643 2.4, e.g. `id`). */
  returned?: 'always' | 'default';
}

export interface ScimComplexAttribute {
  type: 'complex';
  subAttributes: Readonly<Record<string, ScimScalarAttribute>>;
  /**
   * A multi-valued complex attribute stored in its own table: the SQL that is true when some value
   * of the row satisfies `condition`, e.g.
   * `(condition) => \`EXISTS (SELECT 1 FROM device_external_ids e WHERE e.device_id = d.id AND ${condition})\``.
   */
  multiValued?: {
    exists: (condition: string) => string;
    /**
     * Per sub-attribute, an SQL expression of the row holding every value of it lower-cased (e.g.
     * `lower(jsonb_path_query_array(u.emails, '$[*].value')::text)`), with a trigram index on it: a
     * string comparison on that sub-attribute then also requires `expression LIKE '%value%'`, which
     * the index answers, before the exact EXISTS decides.
     */
    indexed?: Readonly<Record<string, string>>;
  };
  returned?: 'always' | 'default';
}

export type ScimAttribute = ScimScalarAttribute | ScimComplexAttribute;

export interface ScimResourceDefinition {
  /** The core schema URN; attribute paths may be prefixed with it (RFC 7644 3.10). */
  schema: string;
  attributes: Readonly<Record<string, ScimAttribute>>;
  /** A unique SQL expression: the order when there is no sortBy, and the tie-breaker after it, so pages are stable. */
  uniqueOrder: string;
  /** The default order (before the tie-breaker) when sortBy is absent, e.g. `d.created_at`. */
  defaultOrder?: string;
}

/** An attribute path resolved against a definition, with its canonical spelling. */
export type ResolvedPath =
  | {
      kind: 'scalar';
      name: string;
      attribute: ScimScalarAttribute;
      within?: { name: string; exists: (condition: string) => string; indexed?: string };
    }
  | { kind: 'complex'; name: string; attribute: ScimComplexAttribute };

/**
 * The `meta` attribute of every resource (RFC 7643 3.1): created and lastModified filter and sort on
 * the row's timestamps; location, resourceType and version are returned only.
 */
export function metaAttribute(row: string): ScimComplexAttribute {
  return {
    type: 'complex',
    subAttributes: {
      created: { type: 'dateTime', column: `${row}.created_at` },
      lastModified: { type: 'dateTime', column: `${row}.updated_at` },
      location: { type: 'string' },
      resourceType: { type: 'string' },
      version: { type: 'string' },
    },
  };
}

export const isComplex = (attribute: ScimAttribute): attribute is ScimComplexAttribute => attribute.type === 'complex';

const findKey = <T>(record: Readonly<Record<string, T>>, name: string): string | undefined => {
  const lower = name.toLowerCase();
  return Object.keys(record).find((key) => key.toLowerCase() === lower);
};

/**
 * Resolves `path` (case-insensitively, RFC 7643 2.1; optionally prefixed with the schema URN) to a
 * declared attribute, or undefined. `parent` resolves a sub-attribute name inside a value filter.
 */
export function resolvePath(definition: ScimResourceDefinition, path: string, parent?: ResolvedPath & { kind: 'complex' }): ResolvedPath | undefined {
  let rest = path;
  const prefix = `${definition.schema.toLowerCase()}:`;
  if (rest.toLowerCase().startsWith(prefix)) rest = rest.slice(prefix.length);
  if (rest.includes(':')) return undefined;
  const parts = rest.split('.');
  if (parent) {
    // A sub-attribute of a reference inside a complex attribute is declared by its dotted name ('device.value').
    const key = findKey(parent.attribute.subAttributes, rest);
    if (!key) return undefined;
    const multiValued = parent.attribute.multiValued;
    const within = multiValued ? { name: parent.name, exists: multiValued.exists, indexed: multiValued.indexed?.[key] } : undefined;
    return { kind: 'scalar', name: `${parent.name}.${key}`, attribute: parent.attribute.subAttributes[key], within };
  }
  const topKey = findKey(definition.attributes, parts[0]);
  if (!topKey || parts.length > 3) return undefined;
  const top = definition.attributes[topKey];
  if (parts.length === 1) return isComplex(top) ? { kind: 'complex', name: topKey, attribute: top } : { kind: 'scalar', name: topKey, attribute: top };
  if (!isComplex(top)) return undefined;
  return resolvePath(definition, parts.slice(1).join('.'), { kind: 'complex', name: topKey, attribute: top });
}

/** Every filterable path of a definition, for error details ("filterable: ..."). */
export function filterablePaths(definition: ScimResourceDefinition): string[] {
  const paths: string[] = [];
  for (const [name, attribute] of Object.entries(definition.attributes)) {
    if (isComplex(attribute)) {
      for (const [sub, subAttribute] of Object.entries(attribute.subAttributes)) if (subAttribute.column) paths.push(`${name}.${sub}`);
    } else if (attribute.column) {
      paths.push(name);
    }
  }
  return paths;
}

/** Every sortable path: filterable single-valued scalars (a multi-valued attribute has no one value to sort by). */
export function sortablePaths(definition: ScimResourceDefinition): string[] {
  return filterablePaths(definition).filter((path) => {
    const resolved = resolvePath(definition, path);
    return resolved?.kind === 'scalar' && !resolved.within;
  });
}
