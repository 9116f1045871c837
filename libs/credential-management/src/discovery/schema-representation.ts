import { ScimAttribute, ScimResourceDefinition, isComplex } from '@app/common';

/** What a resource says about itself beyond its search definition, for its RFC 7643 section 7 schema. */
export interface ResourceSchema {
  id: string;
  name: string;
  definition: ScimResourceDefinition;
  required: string[];
  readOnly: string[];
  unique: string[];
  multiValued: string[];
}

/** A resource's schema (RFC 7643 section 7), from the declaration its searches already use: one source for both. */
export function schemaRepresentation(resource: ResourceSchema, location: string) {
  const attribute = (name: string, declared: ScimAttribute, top: boolean): Record<string, unknown> => ({
    name,
    type: declared.type,
    multiValued: top && resource.multiValued.includes(name),
    required: top && resource.required.includes(name),
    ...(declared.type === 'string' ? { caseExact: !isComplex(declared) && declared.caseExact === true } : {}),
    mutability: top && resource.readOnly.includes(name) ? 'readOnly' : 'readWrite',
    returned: declared.returned ?? 'default',
    uniqueness: top && resource.unique.includes(name) ? 'server' : 'none',
    ...(isComplex(declared) ? { subAttributes: Object.entries(declared.subAttributes).map(([sub, subDeclared]) => attribute(sub, subDeclared, false)) } : {}),
  });
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
    id: resource.id,
    name: resource.name,
    attributes: Object.entries(resource.definition.attributes)
      .filter(([name]) => name !== 'meta' && name !== 'id')
      .map(([name, declared]) => attribute(name, declared, true)),
    meta: { resourceType: 'Schema', location },
  };
}
