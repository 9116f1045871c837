import { applyDecorators } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiQuery, ApiResponse, SchemaObject } from '@nestjs/swagger';
import { ScimResourceDefinition, ScimScalarAttribute, isComplex } from '../scim-search/resource-definition';
import { z } from '../validation';

/**
 * OpenAPI descriptions of the admin API (/api-docs). Bodies are validated by zod schemas in the
 * controllers (parseBody), so the documented schema is generated from the same schema and cannot
 * drift from what is enforced.
 */
export function ApiJsonBody(schema: z.ZodType, example?: Record<string, unknown>): MethodDecorator {
  const jsonSchema = z.toJSONSchema(schema, { target: 'openapi-3.0', unrepresentable: 'any' }) as SchemaObject;
  return ApiBody({ required: false, schema: example ? { ...jsonSchema, example } : jsonSchema });
}

/** A certificate upload: PEM as application/x-pem-file or text/plain, or JSON {pem} (DECISIONS 11). */
export function ApiPemBody(): MethodDecorator {
  return applyDecorators(
    ApiConsumes('application/x-pem-file', 'text/plain', 'application/json'),
    ApiBody({
      schema: {
        oneOf: [
          { type: 'string', description: 'One X.509 certificate in PEM form, without its chain or key.' },
          { type: 'object', properties: { pem: { type: 'string' } }, required: ['pem'], additionalProperties: false },
        ],
        example: '-----BEGIN CERTIFICATE-----\nMIIB...\n-----END CERTIFICATE-----\n',
      },
    }),
  );
}

/** SCIM paging of every admin list (RFC 7644 3.4.2.4; DECISIONS 7): startIndex from 1, count clamped to 1000. */
export function ApiPaging(): MethodDecorator {
  return applyDecorators(
    ApiQuery({ name: 'startIndex', required: false, schema: { type: 'integer', minimum: 1, default: 1 } }),
    ApiQuery({ name: 'count', required: false, schema: { type: 'integer', minimum: 0, maximum: 1000, default: 100 } }),
  );
}

/** Attributes of a resource that hold several values, where its definition does not say so itself. */
export interface ScimResponseOptions {
  /** 200 (default) or 201 (created). */
  status?: 200 | 201;
  /** The answer is a ListResponse of the resource. */
  list?: boolean;
  /** Complex attributes that are arrays (a definition marks only those it filters through a table). */
  multiValued?: readonly string[];
  /** Attributes beside the definition's, e.g. a schema-URN extension. */
  extra?: Record<string, SchemaObject>;
}

/** The JSON schema of a SCIM resource, from the same declaration its searches and /Schemas use. */
export function scimResourceSchema(definition: ScimResourceDefinition, options: ScimResponseOptions = {}): SchemaObject {
  const scalar = (attribute: ScimScalarAttribute): SchemaObject =>
    attribute.type === 'dateTime' ? { type: 'string', format: 'date-time' } : { type: attribute.type === 'number' ? 'number' : attribute.type };
  const properties: Record<string, SchemaObject> = { schemas: { type: 'array', items: { type: 'string' }, example: [definition.schema] } };
  for (const [name, attribute] of Object.entries(definition.attributes)) {
    if (!isComplex(attribute)) {
      properties[name] = scalar(attribute);
      continue;
    }
    // `$ref` (RFC 7643 2.3.7) is left out of `properties`, where OpenAPI tools would read it as a reference.
    const subAttributes = Object.entries(attribute.subAttributes).filter(([sub]) => sub !== '$ref');
    // A reference inside a complex attribute is declared by dotted names ('device.value'): an object here.
    const nested = (sub: string) => subAttributes.filter(([other]) => other.startsWith(`${sub}.`));
    const object: SchemaObject = {
      type: 'object',
      properties: Object.fromEntries(
        subAttributes
          .filter(([sub]) => !sub.includes('.'))
          .map(([sub, subAttribute]) => {
            const inner = nested(sub);
            if (inner.length === 0) return [sub, scalar(subAttribute)];
            return [sub, { type: 'object', properties: Object.fromEntries(inner.map(([name, declared]) => [name.slice(sub.length + 1), scalar(declared)])) }];
          }),
      ),
      ...(subAttributes.length < Object.keys(attribute.subAttributes).length ? { description: 'also $ref, the URI of the referenced resource' } : {}),
    };
    properties[name] = attribute.multiValued || options.multiValued?.includes(name) ? { type: 'array', items: object } : object;
  }
  return { type: 'object', required: ['schemas', 'id'], properties: { ...properties, ...options.extra } };
}

/** The body of POST {Resource}/.search: a SCIM SearchRequest (RFC 7644 3.4.3). */
export function ApiSearchBody(example: string): MethodDecorator {
  return ApiBody({
    schema: {
      type: 'object',
      required: ['schemas'],
      properties: {
        schemas: { type: 'array', items: { type: 'string', enum: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'] } },
        filter: { type: 'string', example },
        startIndex: { type: 'integer', minimum: 1 },
        count: { type: 'integer', minimum: 0, maximum: 1000 },
        sortBy: { type: 'string' },
        sortOrder: { type: 'string', enum: ['ascending', 'descending'] },
        attributes: { type: 'array', items: { type: 'string' } },
        excludedAttributes: { type: 'array', items: { type: 'string' } },
      },
    },
  });
}

/** `meta` of an answer that no search definition describes (RFC 7643 3.1). */
export const META_RESPONSE_SCHEMA: SchemaObject = {
  type: 'object',
  properties: {
    resourceType: { type: 'string' },
    created: { type: 'string', format: 'date-time' },
    lastModified: { type: 'string', format: 'date-time' },
    location: { type: 'string' },
    version: { type: 'string' },
  },
};

/** A SCIM ListResponse of `item` (RFC 7644 3.4.2). */
export function scimListSchema(item: SchemaObject): SchemaObject {
  return {
    type: 'object',
    required: ['schemas', 'totalResults', 'Resources'],
    properties: {
      schemas: { type: 'array', items: { type: 'string' }, example: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'] },
      totalResults: { type: 'integer' },
      itemsPerPage: { type: 'integer' },
      startIndex: { type: 'integer' },
      Resources: { type: 'array', items: item },
    },
  };
}

/** Declares a route's success answer: one resource (or a ListResponse of it) of `definition`, in application/scim+json. */
export function ApiScimResponse(definition: ScimResourceDefinition, options: ScimResponseOptions = {}): MethodDecorator {
  return ApiSchemaResponse(options.list ? scimListSchema(scimResourceSchema(definition, options)) : scimResourceSchema(definition, options), options.status);
}

/** Declares a route's success answer with a schema written for it (answers no definition describes, such as Stats). */
export function ApiSchemaResponse(schema: SchemaObject, status: 200 | 201 = 200): MethodDecorator {
  return ApiResponse({
    status,
    description: status === 201 ? 'Created; Location names it.' : 'OK',
    content: { 'application/scim+json': { schema }, 'application/json': { schema } },
  });
}
