import { DomainError } from '../domain-error';
import { FilterNode } from '../scim-search/filter-ast';
import { parseFilter } from '../scim-search/filter-parser';

/**
 * RFC 7644 3.5.2 PATCH, applied to a resource's writable view (plain JSON): the resource then
 * validates the result exactly as a PUT body, so one set of rules decides what may be stored. Paths
 * `attr`, `attr.sub`, `attr[filter]`, `attr[filter].sub`, each optionally prefixed by a schema URN;
 * without a path the value's attributes are applied one by one (some identity providers also send
 * `"name.givenName"` keys there). Attribute names match case-insensitively (RFC 7643 2.1).
 */
export const PATCH_OP_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const MAX_PATCH_OPERATIONS = 100;

export interface PatchTarget {
  /** The core schema URN: a path may start with it. */
  coreSchema: string;
  /** Extension URNs: top-level keys of the view, a path `urn:...:attr` reaches inside. */
  extensions: readonly string[];
  /** Every writable top-level attribute (spelling as declared). */
  attributes: readonly string[];
}

type Json = Record<string, unknown>;
type Op = 'add' | 'replace' | 'remove';

interface ParsedPath {
  attribute: string;
  filter?: FilterNode;
  sub?: string;
  /** The extension the attribute lives in. */
  extension?: string;
}

const PATH = /^([A-Za-z$][\w$-]*)(?:\[(.+)\])?(?:\.([A-Za-z$][\w$-]*))?$/s;

export function applyPatch(view: Json, body: unknown, target: PatchTarget): Json {
  const operations = readOperations(body);
  let result = structuredClone(view);
  for (const [index, operation] of operations.entries()) result = applyOne(result, operation, target, index + 1);
  return result;
}

function readOperations(body: unknown): { op: Op; path?: string; value?: unknown }[] {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new DomainError('INVALID_SYNTAX', 'The PATCH body must be a JSON object (RFC 7644 PatchOp).');
  const entries = Object.fromEntries(Object.entries(body as Json).map(([key, value]) => [key.toLowerCase(), value]));
  const schemas = entries.schemas;
  if (!Array.isArray(schemas) || !schemas.includes(PATCH_OP_SCHEMA)) {
    throw new DomainError('INVALID_SYNTAX', `Invalid PatchOp: schemas must contain "${PATCH_OP_SCHEMA}".`);
  }
  const unknown = Object.keys(body as Json).filter((key) => !['schemas', 'operations'].includes(key.toLowerCase()));
  if (unknown.length > 0)
    throw new DomainError('INVALID_SYNTAX', `Invalid PatchOp: attribute "${unknown[0]}" is not part of a PatchOp; send schemas and Operations.`);
  const operations = entries.operations;
  if (!Array.isArray(operations) || operations.length === 0) throw new DomainError('INVALID_SYNTAX', 'Invalid PatchOp: Operations must be a non-empty array.');
  if (operations.length > MAX_PATCH_OPERATIONS)
    throw new DomainError('INVALID_SYNTAX', `Invalid PatchOp: at most ${MAX_PATCH_OPERATIONS} Operations per request.`);
  return operations.map((raw, index) => {
    const where = `Operations[${index}]`;
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
      throw new DomainError('INVALID_SYNTAX', `Invalid PatchOp: ${where} must be an object {op, path, value}.`);
    const fields = Object.fromEntries(Object.entries(raw as Json).map(([key, value]) => [key.toLowerCase(), value]));
    const extra = Object.keys(raw as Json).filter((key) => !['op', 'path', 'value'].includes(key.toLowerCase()));
    if (extra.length > 0) throw new DomainError('INVALID_SYNTAX', `Invalid PatchOp: ${where}.${extra[0]} is not part of an operation; use op, path and value.`);
    const op = typeof fields.op === 'string' ? fields.op.toLowerCase() : undefined;
    if (op !== 'add' && op !== 'replace' && op !== 'remove')
      throw new DomainError('INVALID_SYNTAX', `Invalid PatchOp: ${where}.op must be "add", "replace" or "remove".`);
    if (fields.path !== undefined && (typeof fields.path !== 'string' || fields.path.length === 0 || fields.path.length > 1024)) {
      throw new DomainError('INVALID_PATH', `Invalid PatchOp: ${where}.path must be a non-empty attribute path such as "name.givenName".`);
    }
    if (op === 'remove' && fields.path === undefined)
      throw new DomainError('NO_TARGET', `Invalid PatchOp: ${where} is a remove without a path; name what to remove.`);
    if (op !== 'remove' && fields.value === undefined) throw new DomainError('INVALID_SYNTAX', `Invalid PatchOp: ${where} (${op}) needs a value.`);
    return { op, path: fields.path as string | undefined, value: fields.value };
  });
}

function applyOne(view: Json, operation: { op: Op; path?: string; value?: unknown }, target: PatchTarget, number: number): Json {
  if (operation.path === undefined) {
    const value = operation.value;
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new DomainError('INVALID_SYNTAX', `Invalid PatchOp: operation ${number} has no path, so its value must be an object of attributes.`);
    }
    let result = view;
    for (const [key, each] of Object.entries(value as Json)) {
      const extension = findName(target.extensions, key);
      if (extension && each !== null && typeof each === 'object' && !Array.isArray(each)) {
        // `{"urn:...:enterprise:2.0:User": {"department": "x"}}`: each attribute of the extension.
        for (const [sub, subValue] of Object.entries(each as Json)) result = applyPath(result, operation.op, `${extension}:${sub}`, subValue, target, number);
      } else {
        result = applyPath(result, operation.op, key, each, target, number);
      }
    }
    return result;
  }
  return applyPath(view, operation.op, operation.path, operation.value, target, number);
}

function applyPath(view: Json, op: Op, path: string, value: unknown, target: PatchTarget, number: number): Json {
  const parsed = parsePath(path, target, number);
  const container: Json = parsed.extension ? ({ ...((view[parsed.extension] as Json | null) ?? {}) } as Json) : view;
  const key = findName(Object.keys(container), parsed.attribute) ?? parsed.attribute;
  const current = container[key];

  if (parsed.filter) {
    if (current !== undefined && current !== null && !Array.isArray(current)) {
      throw new DomainError('INVALID_PATH', `Invalid PatchOp: operation ${number} filters "${parsed.attribute}", which is not multi-valued.`);
    }
    const list = ((current as Json[] | undefined) ?? []).map((item) => ({ ...item }));
    const matches = list.map((item) => matchesFilter(item, parsed.filter!));
    if (!matches.includes(true)) {
      if (op === 'remove') throw new DomainError('NO_TARGET', `Invalid PatchOp: operation ${number}: no value of "${parsed.attribute}" matches ${path}.`);
      // add/replace of `emails[type eq "work"].value` with no work address yet: create that value.
      const seed = equalities(parsed.filter);
      if (!seed) throw new DomainError('NO_TARGET', `Invalid PatchOp: operation ${number}: no value of "${parsed.attribute}" matches ${path}.`);
      list.push(parsed.sub ? { ...seed, [parsed.sub]: value } : { ...seed, ...(value as Json) });
    } else if (op === 'remove') {
      container[key] = parsed.sub ? list.map((item, i) => (matches[i] ? withoutKey(item, parsed.sub!) : item)) : list.filter((_, i) => !matches[i]);
      return settle(view, parsed, container);
    } else {
      for (const [i, item] of list.entries()) {
        if (!matches[i]) continue;
        if (parsed.sub) item[findName(Object.keys(item), parsed.sub) ?? parsed.sub] = value;
        else if (value !== null && typeof value === 'object' && !Array.isArray(value)) Object.assign(item, value);
        else throw new DomainError('INVALID_SYNTAX', `Invalid PatchOp: operation ${number}: the value for ${path} must be an object.`);
      }
    }
    container[key] = list;
    return settle(view, parsed, container);
  }

  if (parsed.sub) {
    if (Array.isArray(current)) {
      throw new DomainError(
        'INVALID_PATH',
        `Invalid PatchOp: operation ${number}: "${parsed.attribute}" is multi-valued; select values with a filter, e.g. ${parsed.attribute}[type eq "work"].${parsed.sub}.`,
      );
    }
    const complex: Json = { ...((current as Json | null | undefined) ?? {}) };
    const subKey = findName(Object.keys(complex), parsed.sub) ?? parsed.sub;
    if (op === 'remove') delete complex[subKey];
    else complex[subKey] = value;
    container[key] = complex;
    return settle(view, parsed, container);
  }

  if (op === 'remove') delete container[key];
  else if (op === 'add' && Array.isArray(current) && Array.isArray(value))
    container[key] = [...current, ...value.filter((v) => !current.some((c) => sameValue(c, v)))];
  else if (op === 'add' && Array.isArray(current) && value !== null && typeof value === 'object') container[key] = [...current, value];
  else if (op === 'add' && isObject(current) && isObject(value)) container[key] = { ...current, ...value };
  else container[key] = value;
  return settle(view, parsed, container);
}

function settle(view: Json, parsed: ParsedPath, container: Json): Json {
  return parsed.extension ? { ...view, [parsed.extension]: container } : { ...container };
}

function parsePath(path: string, target: PatchTarget, number: number): ParsedPath {
  let rest = path;
  let extension: string | undefined;
  const lower = path.toLowerCase();
  if (lower.startsWith(`${target.coreSchema.toLowerCase()}:`)) rest = path.slice(target.coreSchema.length + 1);
  else {
    for (const urn of target.extensions) {
      if (lower === urn.toLowerCase()) return { attribute: urn };
      if (lower.startsWith(`${urn.toLowerCase()}:`)) {
        extension = urn;
        rest = path.slice(urn.length + 1);
      }
    }
  }
  // `name.givenName` without brackets, or `emails[type eq "work"].value`.
  const match = PATH.exec(rest);
  if (!match)
    throw new DomainError(
      'INVALID_PATH',
      `Invalid PatchOp: operation ${number}: "${path.slice(0, 200)}" is not an attribute path (attr, attr.sub or attr[filter].sub).`,
    );
  const [, attribute, filterText, sub] = match;
  if (!extension) {
    const declared = findName(target.attributes, attribute);
    if (!declared) {
      throw new DomainError(
        'INVALID_PATH',
        `Invalid PatchOp: operation ${number}: "${attribute}" is not a writable attribute of this resource; writable: ${target.attributes.join(', ')}.`,
      );
    }
    return { attribute: declared, sub, filter: filterText === undefined ? undefined : parsePathFilter(filterText, number) };
  }
  return { attribute, sub, extension, filter: filterText === undefined ? undefined : parsePathFilter(filterText, number) };
}

function parsePathFilter(text: string, number: number): FilterNode {
  try {
    return parseFilter(text);
  } catch (error) {
    if (error instanceof DomainError) throw new DomainError('INVALID_PATH', `Invalid PatchOp: operation ${number}: ${error.detail}`);
    throw error;
  }
}

/** The sub-attributes a filter of plain equalities pins down (`type eq "work"`), to seed a new value. */
function equalities(node: FilterNode): Json | undefined {
  if (node.kind === 'compare' && node.op === 'eq') return { [node.path]: node.value };
  if (node.kind === 'and') {
    const left = equalities(node.left);
    const right = equalities(node.right);
    return left && right ? { ...left, ...right } : undefined;
  }
  return undefined;
}

/** In-memory evaluation of a value filter on one value of a multi-valued attribute. */
export function matchesFilter(item: Json, node: FilterNode): boolean {
  switch (node.kind) {
    case 'and':
      return matchesFilter(item, node.left) && matchesFilter(item, node.right);
    case 'or':
      return matchesFilter(item, node.left) || matchesFilter(item, node.right);
    case 'not':
      return !matchesFilter(item, node.filter);
    case 'valuePath':
      return false;
    case 'present': {
      const value = lookup(item, node.path);
      return value !== undefined && value !== null && value !== '';
    }
    case 'compare': {
      const value = lookup(item, node.path);
      const fold = (v: unknown) => (typeof v === 'string' ? v.toLowerCase() : v);
      const left = fold(value);
      const right = fold(node.value);
      switch (node.op) {
        case 'eq':
          return left === right || (left === undefined && right === null);
        case 'ne':
          return left !== right;
        case 'co':
          return typeof left === 'string' && typeof right === 'string' && left.includes(right);
        case 'sw':
          return typeof left === 'string' && typeof right === 'string' && left.startsWith(right);
        case 'ew':
          return typeof left === 'string' && typeof right === 'string' && left.endsWith(right);
        case 'gt':
          return typeof left === typeof right && (left as number) > (right as number);
        case 'ge':
          return typeof left === typeof right && (left as number) >= (right as number);
        case 'lt':
          return typeof left === typeof right && (left as number) < (right as number);
        case 'le':
          return typeof left === typeof right && (left as number) <= (right as number);
      }
    }
  }
}

function lookup(item: Json, path: string): unknown {
  const key = findName(Object.keys(item), path);
  return key === undefined ? undefined : item[key];
}

function findName(names: readonly string[], name: string): string | undefined {
  const lower = name.toLowerCase();
  return names.find((candidate) => candidate.toLowerCase() === lower);
}

function withoutKey(item: Json, key: string): Json {
  const found = findName(Object.keys(item), key);
  if (found === undefined) return item;
  const { [found]: _removed, ...rest } = item;
  return rest;
}

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
