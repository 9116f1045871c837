import { applyDecorators } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiQuery, SchemaObject } from '@nestjs/swagger';
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
